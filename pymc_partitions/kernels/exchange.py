r"""PBC random exchange: Goswami, Liu & Wong (2005), §3.6, acceptance eq. (11).

A population of N members on a temperature ladder :math:`t_1 > \dots > t_N`, rung
r sampling :math:`f_r(z) \propto \pi(z)^{1/t_r}`. One update picks a rung i
uniformly and a neighbour j = i ± 1 with probability 1/2 each (the end rungs their
only neighbour, probability 1), and proposes to exchange the two rungs' partitions;
accept with probability :math:`\min(1, r_{re})`, eq. (11):

.. math::

    r_{re} = \frac{f_i(x_j) f_j(x_i)}{f_i(x_i) f_j(x_j)}
             \frac{T_{i,j}(y, x)}{T_{i,j}(x, y)}
           = \exp\bigl[(1/t_i - 1/t_j)(\log\pi(x_j) - \log\pi(x_i))\bigr].

The proposal term: :math:`T_{i,j}(x, y) = p(I_1 = i) p(I_2 = j \mid I_1 = i) +
p(I_1 = j) p(I_2 = i \mid I_1 = j)` depends on the rungs only, never on the
partitions, so :math:`T_{i,j}(y, x) = T_{i,j}(x, y)`: it cancels (checked, not
assumed: the selection reads no state). :math:`\log\pi` is the *untempered* log
target (``bookkeeping.log_joint`` with untempered params), so
:math:`-\log\pi = H` up to a constant, the paper's energy, and the ratio is the
paper's :math:`\exp[(H(x_i) - H(x_j))(1/t_i - 1/t_j)]`.

Representation. The states do not move: ``member_of_rung[r]`` is the index of the
member (kernel state) at rung r, and an accepted exchange swaps two entries. The
statistics and caches of a state do not depend on its temperature (the tempering
wrapper passes ``add``/``remove``/``refresh`` through), so nothing is recomputed.
``log_targets[m]`` is member m's untempered log target, maintained by the caller.

Randomness: from a :mod:`~pymc_partitions.kernels.random` stream, per update: the
rung i, the side (only for an inner rung), the acceptance uniform.
"""

import numpy as np

from pymc_partitions.kernels._jit import entry, primitive
from pymc_partitions.kernels.random import bounded, uniform


@primitive
def uniform_neighbour(stream, n_rungs, i):
    """A uniform neighbour of rung i (the end rungs' only one; one uniform drawn for
    an inner rung). Needs n_rungs >= 2. Also the crossovers' I_2 (§3.4)."""
    if i == 0:
        return 1
    if i == n_rungs - 1:
        return n_rungs - 2
    return i - 1 if uniform(stream) < 0.5 else i + 1


@primitive
def choose_pair(stream, n_rungs):
    """§3.6's selection: i uniform on the rungs, j a uniform neighbour (the end rungs'
    only one). Needs n_rungs >= 2. Returns ``(i, j)``."""
    i = bounded(stream, n_rungs)
    return i, uniform_neighbour(stream, n_rungs, i)


@primitive
def exchange_log_ratio(inv_temps, log_targets, member_of_rung, i, j):
    """log r_re of eq. (11) for exchanging the partitions of rungs i and j."""
    diff = log_targets[member_of_rung[j]] - log_targets[member_of_rung[i]]
    return (inv_temps[i] - inv_temps[j]) * diff


@primitive
def exchange_update(stream, inv_temps, log_targets, member_of_rung):
    """One §3.6 random exchange. Returns ``(lower rung of the pair, accepted)``;
    a NaN ratio (two -inf log targets) is a rejection."""
    i, j = choose_pair(stream, inv_temps.shape[0])
    log_ratio = exchange_log_ratio(inv_temps, log_targets, member_of_rung, i, j)
    accept = np.log(uniform(stream)) < log_ratio
    if accept:
        m = member_of_rung[i]
        member_of_rung[i] = member_of_rung[j]
        member_of_rung[j] = m
    return min(i, j), accept


@entry
def run_exchanges(stream, n_updates, inv_temps, log_targets, member_of_rung, proposed,
                  accepted):
    """``n_updates`` random exchanges (Algorithm 4.1 step 2 runs N of them).

    inv_temps : (N,) float64, 1/t_r of each rung (decreasing temperatures: increasing
        inverse temperatures, though the kernel does not rely on the order).
    log_targets : (N,) float64, untempered log target of each member.
    member_of_rung : (N,) int64, a permutation; swapped in place on acceptance.
    proposed, accepted : (N - 1,) int64, incremented at the lower rung of the pair
        (index r counts exchanges between rungs r and r + 1).
    With N < 2 nothing happens.
    """
    if inv_temps.shape[0] < 2:
        return
    for _ in range(n_updates):
        r, accept = exchange_update(stream, inv_temps, log_targets, member_of_rung)
        proposed[r] += 1
        if accept:
            accepted[r] += 1


__all__ = ["choose_pair", "exchange_log_ratio", "exchange_update", "run_exchanges"]
