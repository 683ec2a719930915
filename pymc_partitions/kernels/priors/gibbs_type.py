r"""Every partition prior of the library as one record type: Gibbs-type tables.

A Gibbs-type prior (Gnedin & Pitman 2006) gives a partition of n items into K blocks
of sizes :math:`n_1, \dots, n_K` the probability

.. math:: p(z) = V_n(K) \prod_{k=1}^{K} W(n_k).

The CRP (:math:`V(K) = \alpha^K \Gamma(\alpha)/\Gamma(\alpha + n)`, :math:`W(m) =
\Gamma(m)`), Pitman-Yor, a fixed number of blocks, the mixture of finite mixtures and
the colouring count :math:`q!/(q-K)!` are all of this form, so each module of this
package only *builds* a :class:`GibbsTypeParams` from its hyperparameters (its
``make_params``), and the three primitives the moves read are written once, here:

- ``log_prior_pred(size, K)``: an item joins a block of ``size`` items, the other
  items forming K blocks: ``join[size] + stay[K]``; opens a new block: ``new[K]``.
  Up to a term common to all the blocks it may join, these are
  :math:`\log W(m+1)/W(m) + \log V(K)` and :math:`\log W(1) + \log V(K+1)`; each prior
  fills the tables with whichever representative is exact and cheap: ratios of V
  where they are finite (CRP: ``new`` = log alpha, ``stay`` = 0, so a Gibbs weight is
  one table lookup, bit for bit the former CRP code), absolute values of V where the
  ratios are 0/0 (a fixed number of blocks, colourings).
- ``log_prior_block(size, c, K)``: a set of c items joins a block of ``size``:
  ``log_w[size + c] - log_w[size] + stay[K]``; a new block: ``new[K] + log_w[c]``
  (``log_w[m]`` = log W(m) - log W(1), so ``log_w[1]`` = 0). One call, never a chain
  of ``log_prior_pred`` ratios, which is 0/0 where V vanishes.
- ``log_prior(sizes, K)``: ``log_v[K] + sum_k log_w[n_k]``, with ``log_v[K]`` = log
  V_n(K) + K log W(1) (so the W(1) factors cancel): O(K) lookups.

Why one type: numba compiles a move once per (prior record type x likelihood record
type). With one prior type, a move compiles once per likelihood, and the test suite
and a user who switches priors share the compiled kernels (the tables are run-time
data). Cost: building the tables is O(n) per change of the hyperparameters, as the
CRP's weight table already was.

Tables (``n`` items): ``join`` (n+1,), ``stay``, ``new``, ``log_v`` and ``log_w``
(n+2,), all float64, C-contiguous; ``inv_t`` the inverse temperature (see
:mod:`..tempering`).
"""

from functools import lru_cache
from typing import NamedTuple

import numpy as np

from pymc_partitions.kernels._jit import primitive
from pymc_partitions.kernels.priors.base import register


class GibbsTypeParams(NamedTuple):
    """The tables of a Gibbs-type prior (module docstring); build with a prior
    module's ``make_params``."""

    join: np.ndarray
    stay: np.ndarray
    new: np.ndarray
    log_v: np.ndarray
    log_w: np.ndarray
    inv_t: float = 1.0  # 1/t: a tempered target (kernels/tempering.py)


def lgamma_table(first, n):
    """(n,) float64: ``log Gamma(first + m)`` for m = 0..n-1 (SciPy's ``gammaln``, on
    use: the kernels import numba and NumPy only)."""
    from scipy.special import gammaln

    return gammaln(first + np.arange(n, dtype=np.float64))


@lru_cache(maxsize=8)
def lgamma_of_sizes(n):
    """(n+2,) float64: 0 then ``log Gamma(m)`` for m = 1..n+1 (the CRP's log W; it does
    not depend on alpha, so alpha's updates do not recompute it). Shared: never
    written (not flagged read-only either, which numba types apart: a second compile)."""
    out = np.zeros(n + 2)
    out[1:] = lgamma_table(1.0, n + 1)
    return out


def gibbs_type(n, *, join, stay, new, log_v, log_w):
    """A :class:`GibbsTypeParams` for ``n`` items; scalars broadcast to their table."""

    def table(value, length):
        if isinstance(value, np.ndarray) and value.shape == (length,):
            return value
        out = np.empty(length)
        out[:] = value
        return out

    return GibbsTypeParams(table(join, n + 1), table(stay, n + 2), table(new, n + 2),
                           table(log_v, n + 2), table(log_w, n + 2))


@primitive
def log_prior_pred(prior_params, size, n_blocks):
    if size == 0:
        return prior_params.new[n_blocks]
    return prior_params.join[size] + prior_params.stay[n_blocks]


@primitive
def log_prior_block(prior_params, size, c, n_blocks):
    if size == 0:
        return prior_params.new[n_blocks] + prior_params.log_w[c]
    return prior_params.log_w[size + c] - prior_params.log_w[size] + prior_params.stay[n_blocks]


@primitive
def log_prior(prior_params, sizes, active, n_active, n):
    acc = prior_params.log_v[n_active]
    for a in range(n_active):
        acc += prior_params.log_w[sizes[active[a]]]
    return acc


register(GibbsTypeParams, log_prior_pred=log_prior_pred, log_prior=log_prior,
         log_prior_block=log_prior_block)
