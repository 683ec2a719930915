r"""PBC crossover moves: Goswami, Liu & Wong (2005), §3.2-3.5.

One module for the three crossover kinds because they share most of their code:
the intersection table of two partitions (the :math:`A_k \cap B_l` of §3.3), the
sets U and V of the (k, l) choice, the parent selection ("-r-r" or "-b-b", §4) and
the item relocation. SCSC:ONE-NEW is SCRC with a deterministic reallocation (the
paper says so in its §8), so ONE-NEW and both SCRC flavours are one update
(:func:`guided_update`) with a ``kind``; SCSC:TWO-NEW is :func:`two_new_update`.

The population (N members on rungs t_1 > ... > t_N, rung r sampling
:math:`f_r \propto \pi^{1/t_r}`) has the target :math:`\prod_r f_r(x_r)` (eq. 2);
a crossover changes one or two members at their own temperatures, so the target
part of every ratio is :math:`\sum_r (1/t_r)(\log\pi(y_r) - \log\pi(x_r))` over
the changed rungs. :math:`\log\pi` is the untempered collapsed log joint
(``bookkeeping.log_joint``), :math:`-\log\pi = H` the paper's energy.

Parent selection (§3.3, §3.4, §4), on the rungs, with the log weights
:math:`w_r = \log\pi(x_r)/s` (``-b-b``, :math:`p \propto \exp\{-H(x_r)/s\}`, s the
selection temperature) or uniform (``-r-r``).

SCSC:TWO-NEW (§3.3, eqs. 4-5)
    I_1 = i, I_2 = j (j != i), by :math:`p(I_1 = i \mid x)\,p(I_2 = j \mid x, I_1 = i)`
    (uniform without replacement, or :math:`w_i / W \cdot w_j / (W - w_i)`). A
    = x_i's blocks (rows), B = x_j's (columns). k_1, k_2 uniform without
    replacement from U = {rows meeting >= 2 columns}; l_1 uniform in V_1 = {l :
    A_{k_1} \cap B_l != {}}; l_2 uniform in V_2 = {l : A_{k_2} \cap B_l != {}, l !=
    l_1}. The cells P = A_{k_1} \cap B_{l_1} and Q = A_{k_2} \cap B_{l_2} swap
    (eq. 4): in x_i, P moves k_1 -> k_2 and Q k_2 -> k_1; in x_j, P moves l_1 -> l_2
    and Q l_2 -> l_1. The new intersection table is the old one with the contents
    of cells (k_1, l_1) and (k_2, l_2) exchanged; both stay non-empty, so every
    block stays non-empty (K and L are kept), **the zero pattern of the table is
    unchanged, and so are U, V_1, V_2**: within one assignment of the roles the
    (k, l) choice probability is the same forwards and backwards.

    But the roles are not fixed: the same swap is also proposed when I_1 = j,
    I_2 = i (x_j's blocks as the rows), with another (k, l) probability (U, V of
    the transposed table; zero when l_1 or l_2 meets a single row). The exact
    proposal probability is

    .. math::

        T(x, y) = p(I_1 = i, I_2 = j \mid x)\, q_{ij} + p(I_1 = j, I_2 = i \mid x)\, q_{ji},

    where q_{ij} sums the ordered choices (k_1, l_1, k_2, l_2) and (k_2, l_2, k_1,
    l_1) that give the same swap:
    :math:`q_{ij} = \frac{1}{|U|(|U| - 1)}\bigl[\frac{1}{|V(k_1)|\,(|V(k_2)| -
    [n_{k_2 l_1} > 0])} + \frac{1}{|V(k_2)|\,(|V(k_1)| - [n_{k_1 l_2} > 0])}\bigr]`.
    Eq. (5)'s T_{i,j} omits the q's as cancelling; they do cancel for random
    selection (p(i, j) = p(j, i) = 1/(N(N - 1)) whatever the state), not for
    Boltzmann selection, where :math:`p(i, j \mid x) = e^{w_i} e^{w_j} / (W (W -
    e^{w_i}))` differs from p(j, i | x) and both change with the children's
    energies. Ratio: :math:`r = \frac{f_i(y_i) f_j(y_j)}{f_i(x_i) f_j(x_j)}
    \frac{T(y, x)}{T(x, y)}`, T(y, x) with the same q's and y's weights.

SCSC:ONE-NEW (§3.4, eqs. 6-8) and SCRC (§3.5, eqs. 9-10)
    I_1 by p(I_1 | x); I_2 a uniform neighbour of I_1 (the end rungs' only one);
    I_3 (the parent) one of the two, uniformly or with probability
    :math:`\propto e^{w}`; the other is the child. A = the parent's blocks, B = the
    child's. k_1 uniform in U, {l_1, l_2} a uniform pair of V(k_1) (drawn without
    replacement; the move is symmetric in l_1, l_2). H = (A_{k_1} \cap B_{l_1})
    \uplus (A_{k_1} \cap B_{l_2}), m_1, m_2 the two cells' sizes. The child's H is
    reassigned between l_1 and l_2:

    - ONE-NEW: the two cells swap (eq. 6);
    - SCRC:SAME-SIZE: H_1 a uniform subset of H of size m_1 goes to l_1, the rest
      to l_2 (eq. 9 with h_1 = m_1), probability :math:`1/\binom{|H|}{m_1}`;
    - SCRC:RANDOM-SIZE: h_1 uniform on 1..|H| - 1, then H_1 a uniform subset of
      size h_1 to l_1, the rest to l_2, probability
      :math:`1/((|H| - 1)\binom{|H|}{h_1})` (the ordered draw of (l_1, l_2) gives
      the same value for either order, as :math:`\binom{|H|}{h_1} =
      \binom{|H|}{h_2}`).

    Only row k_1 of the table changes, and its cells (k_1, l_1), (k_1, l_2) stay
    non-empty, so U and V(k_1) are the same for x and y: the probability of (k_1,
    {l_1, l_2}), :math:`1/(|U| \binom{|V(k_1)|}{2})`, is the same both ways for a
    given parent. Eq. (8) sums over the child's possible parents (its neighbours
    j - 1 and j + 1) with an indicator h that y_j is a "modified child" of x_p and
    x_j; the exact proposal probability weights each possible parent p with the
    probability Q_p of producing y_j from x_j guided by x_p (its own U, V and
    reallocation probability):

    .. math::

        T_j(x, y) = \sum_{p \in \{j - 1, j + 1\}} g(p, j, x)\, Q_p(x_j \to y_j),
        \qquad Q_p = \frac{S_p(x_j \to y_j)}{|U_p| \binom{|V_p(k_1^p)|}{2}},

    g of §3.4 (the two orders of I_1, I_2, times p(I_3 = p)). The paper's h drops
    Q_p, and eq. (10) takes the reallocation ratio :math:`S(y, x)/S(x, y) =
    m_1! m_2! / (h_1! h_2!)` out of the sum; both are exact only when a single
    parent can produce y_j (an end rung, or the other neighbour cannot) or when the
    Q's are equal. Here every term is computed: Q_p is 0 unless the changed
    items lie in one block k_1^p of x_p and the two cells of that row with the
    child's labels l_1, l_2 are non-empty before and after (and, for ONE-NEW, every
    item of those cells swapped; for SAME-SIZE, the cell sizes kept). With random
    selection g(p, j, x) does not depend on the state, so for ONE-NEW and
    SAME-SIZE (Q_p the same both ways) the ratio is the target ratio alone; for
    Boltzmann selection g changes with the child's energy. A proposal equal to the
    current state (SCRC can reallocate H as it was) is accepted (ratio 1); the step
    counts the accepted crossovers that changed a partition apart
    (:func:`same_partition`).

Representation: members are kernel states (``PartitionState`` + statistics); the
moves relocate items between the existing slots of a member (a slot emptied on
the way is reopened as the same slot), so a block keeps its slot and the
intersection table is indexed by slot numbers (an (n, n) int64 scratch, only the
K x L active entries touched: O(n + K L) per table). A rejected proposal is undone
by relocating the items back.

Randomness: from a :mod:`~pymc_partitions.kernels.random` stream, per update:
the members (:func:`choose_members`), then k's, l's, the reallocation (SCRC:
h_1, then a Fisher-Yates shuffle of H), the acceptance uniform.
"""

from math import lgamma
from typing import NamedTuple

import numpy as np

from pymc_partitions.kernels._jit import entry, routine
from pymc_partitions.kernels.bookkeeping import log_joint
from pymc_partitions.kernels.components import refresh
from pymc_partitions.kernels.exchange import uniform_neighbour
from pymc_partitions.kernels.random import bounded, shuffle, uniform
from pymc_partitions.kernels.reassign import put_in, take_out
from pymc_partitions.kernels.state import open_slot, sample_log_weights, top_free_slot

# Kinds.
TWO_NEW, ONE_NEW, SCRC_SAME, SCRC_RANDOM = 0, 1, 2, 3
# Outcomes (index into the step's counters).
NO_MOVE, REJECTED, ACCEPTED, FAILED = 0, 1, 2, 3


class Outcomes(NamedTuple):
    """Layout of a (3,) int64 array of crossover outcome counters, indexed by the
    outcome a crossover returns (``FAILED`` is raised, never counted); named here,
    read by name in :func:`pymc_partitions.step_methods.info.counters`.

    Attributes
    ----------
    crossover_no_move
        Crossovers for which no move was possible.
    crossover_rejected
        Crossovers proposed and rejected.
    crossover_accepted
        Crossovers proposed and accepted.
    """

    crossover_no_move: int
    crossover_rejected: int
    crossover_accepted: int



# Compilation: the helpers are routines (compiled once per signature and called, see
# _jit), not inlined primitives: inlined at their many call sites they made each
# entry take ~30 s to compile per (component, prior) pair; the selection and table
# helpers take no component type, so they compile once for every pair.

# ------------------------------------------------------------------ selection
@routine
def _logaddexp(a, b):
    top = max(a, b)
    if top == -np.inf:
        return -np.inf
    return top + np.log(np.exp(a - top) + np.exp(b - top))


@routine
def log_total_except(lw, skip):
    """log sum_{r != skip} exp(lw[r]) (skip = -1: all)."""
    top = -np.inf
    for r in range(lw.shape[0]):
        if r != skip and lw[r] > top:
            top = lw[r]
    if top == -np.inf:
        return top
    total = 0.0
    for r in range(lw.shape[0]):
        if r != skip:
            total += np.exp(lw[r] - top)
    return top + np.log(total)


@routine
def log_pick(lw, boltzmann, i, skip):
    """log p(rung i) among the rungs other than ``skip`` (-1: none): uniform, or
    Boltzmann with log weights lw."""
    n = lw.shape[0] - (0 if skip < 0 else 1)
    if boltzmann:
        return lw[i] - log_total_except(lw, skip)
    return -np.log(n)


@routine
def log_pick_ordered_pair(lw, boltzmann, i, j):
    """§3.3: log p(I_1 = i | x) p(I_2 = j | x, I_1 = i), j drawn without replacement."""
    return log_pick(lw, boltzmann, i, -1) + log_pick(lw, boltzmann, j, i)


@routine
def log_neighbour(n_rungs, i):
    """§3.4: log p(I_2 = a given neighbour | I_1 = i): 1 at an end rung, else 1/2."""
    return 0.0 if (i == 0 or i == n_rungs - 1) else np.log(0.5)


@routine
def log_parent(lw, boltzmann, p, c):
    """§3.4: log p(I_3 = p | I_1, I_2 = {p, c})."""
    if boltzmann:
        return lw[p] - _logaddexp(lw[p], lw[c])
    return np.log(0.5)


@routine
def log_g(lw, boltzmann, p, c):
    """log g(p, c, x) of §3.4: the probability that rung p is chosen as the parent
    and its neighbour c as the child (both orders of I_1, I_2)."""
    n = lw.shape[0]
    third = log_parent(lw, boltzmann, p, c)
    first = log_pick(lw, boltzmann, p, -1) + log_neighbour(n, p) + third
    second = log_pick(lw, boltzmann, c, -1) + log_neighbour(n, c) + third
    return _logaddexp(first, second)


@routine
def draw_rung(stream, lw, boltzmann, skip, scratch):
    """A rung other than ``skip`` (-1: none), uniform or Boltzmann (lw)."""
    n = lw.shape[0]
    if not boltzmann:
        if skip < 0:
            return bounded(stream, n)
        r = bounded(stream, n - 1)
        return r + 1 if r >= skip else r
    for r in range(n):
        scratch[r] = -np.inf if r == skip else lw[r]
    chosen, _ = sample_log_weights(scratch, n, uniform(stream))
    return chosen


@routine
def fill_selection_weights(lw, log_targets, member_of_rung, inv_s):
    for r in range(lw.shape[0]):
        lw[r] = log_targets[member_of_rung[r]] * inv_s


@entry
def choose_members(stream, kind, boltzmann, inv_s, log_targets, member_of_rung, lw, scratch):
    """The rungs of one crossover: ``(i, j)`` = (I_1, I_2) for TWO-NEW (§3.3),
    (parent I_3, child) for ONE-NEW and SCRC (§3.4); ``(-1, -1)`` with fewer than 2
    rungs. lw, scratch: (N,) float64 scratch (lw receives the selection weights
    log pi(x_r)/s)."""
    n = lw.shape[0]
    if n < 2:
        return -1, -1
    fill_selection_weights(lw, log_targets, member_of_rung, inv_s)
    i = draw_rung(stream, lw, boltzmann, -1, scratch)
    if i < 0:
        return -1, -1
    if kind == TWO_NEW:
        j = draw_rung(stream, lw, boltzmann, i, scratch)
        return i, j
    j = uniform_neighbour(stream, n, i)
    if boltzmann:
        parent_i = uniform(stream) < np.exp(lw[i] - _logaddexp(lw[i], lw[j]))
    else:
        parent_i = uniform(stream) < 0.5
    return (i, j) if parent_i else (j, i)


@entry
def draw_uniform(stream):
    """One uniform on [0, 1) from ``stream`` (Algorithm 4.1's choice between mutation
    and crossover)."""
    return uniform(stream)


@entry
def same_partition(x, y, map_xy, map_yx):
    """Whether label arrays ``x`` and ``y`` ((n,) int64, labels in [0, n)) define the
    same partition of the items: a bijection between their labels. ``map_xy``,
    ``map_yx``: (n,) int64 scratch. O(n). (A crossover can be accepted without
    changing the partition: SCRC may reallocate H as it was; ONE-NEW swaps two
    whole child blocks lying in one parent block.)"""
    n = x.shape[0]
    for h in range(n):
        map_xy[x[h]] = -1
        map_yx[y[h]] = -1
    for h in range(n):
        a, b = x[h], y[h]
        if map_xy[a] < 0 and map_yx[b] < 0:
            map_xy[a] = b
            map_yx[b] = a
        elif map_xy[a] != b or map_yx[b] != a:
            return False
    return True


# ------------------------------------------------------------ intersection table
@routine
def fill_table(la, sa, lb, sb, table, rnz, cnz):
    """Counts |A_k ∩ B_l| over the active slots of partitions a (labels la, state
    sa) and b (labels lb; active slots those of state sb), and the number of
    non-empty cells per row (rnz[k]) and per column (cnz[l])."""
    ka, kb = sa.counts[0], sb.counts[0]
    for x in range(ka):
        rnz[sa.active[x]] = 0
        for y in range(kb):
            table[sa.active[x], sb.active[y]] = 0
    for y in range(kb):
        cnz[sb.active[y]] = 0
    for i in range(la.shape[0]):
        table[la[i], lb[i]] += 1
    for x in range(ka):
        k = sa.active[x]
        for y in range(kb):
            if table[k, sb.active[y]] > 0:
                rnz[k] += 1
                cnz[sb.active[y]] += 1


@routine
def gather_cell(la, lb, k, l, buf, start):
    """Append the items of the cell A_k ∩ B_l (la[h] == k and lb[h] == l), in item
    order, to ``buf`` from position ``start``; returns the position after the last."""
    end = start
    for h in range(la.shape[0]):
        if la[h] == k and lb[h] == l:
            buf[end] = h
            end += 1
    return end


@routine
def count_at_least_two(active, n_active, nz):
    count = 0
    for x in range(n_active):
        if nz[active[x]] >= 2:
            count += 1
    return count


@routine
def nth_at_least_two(active, n_active, nz, m, skip):
    """The m-th (from 0) slot of ``active`` with nz >= 2, skipping slot ``skip``."""
    for x in range(n_active):
        k = active[x]
        if k != skip and nz[k] >= 2:
            if m == 0:
                return k
            m -= 1
    return -1


@routine
def nth_nonzero_in_row(table, k, cols, n_cols, m, skip):
    """The m-th (from 0) column slot l != skip of ``cols`` with table[k, l] > 0."""
    for y in range(n_cols):
        col = cols[y]
        if col != skip and table[k, col] > 0:
            if m == 0:
                return col
            m -= 1
    return -1


@routine
def log_choose(n, k):
    return lgamma(n + 1.0) - lgamma(k + 1.0) - lgamma(n - k + 1.0)


# --------------------------------------------------------------------- moves
@routine
def relocate(state, params, stats, data, i, k):
    """Move item i to slot k (reopening k as the same slot if it was emptied on the
    way; it is then the top of the free stack, as ``open_new_block`` expects)."""
    if state.labels[i] == k:
        return
    take_out(state, params, stats, data, i)
    if state.sizes[k] == 0:
        open_slot(state, k)
        if state.counts[1] > 0:
            refresh(params, stats, top_free_slot(state))
    put_in(state, params, stats, data, i, k)


@routine
def member_log_joint(state, prior_params, params, stats):
    """``bookkeeping.log_joint`` compiled once per (component, prior) and called (a
    routine, not inlined: each move calls it up to twice)."""
    return log_joint(state, prior_params, params, stats)


@routine
def log_q_two_new(table, rnz, n_u, k1, l1, k2, l2):
    """q of the swap {(k1, l1), (k2, l2)} with the rows as A (module docstring):
    both ordered choices; -inf when it cannot be drawn in this role."""
    if n_u < 2 or rnz[k1] < 2 or rnz[k2] < 2:
        return -np.inf
    base = -np.log(n_u * (n_u - 1.0))
    first = base - np.log(rnz[k1]) - np.log(rnz[k2] - (1.0 if table[k2, l1] > 0 else 0.0))
    second = base - np.log(rnz[k2]) - np.log(rnz[k1] - (1.0 if table[k1, l2] > 0 else 0.0))
    return _logaddexp(first, second)


@routine
def log_q_two_new_transposed(table, cnz, n_u, k1, l1, k2, l2):
    """q of the same swap with the columns as A (x_j's blocks as the rows)."""
    if n_u < 2 or cnz[l1] < 2 or cnz[l2] < 2:
        return -np.inf
    base = -np.log(n_u * (n_u - 1.0))
    first = base - np.log(cnz[l1]) - np.log(cnz[l2] - (1.0 if table[k1, l2] > 0 else 0.0))
    second = base - np.log(cnz[l2]) - np.log(cnz[l1] - (1.0 if table[k2, l1] > 0 else 0.0))
    return _logaddexp(first, second)


@entry
def two_new_update(stream, ri, rj, state_i, stats_i, state_j, stats_j, prior_params, params,
                   data, inv_temps, log_targets, member_of_rung, inv_s, boltzmann, lw,
                   table, rnz, cnz, buf):
    """One SCSC:TWO-NEW (§3.3) between the members at rungs ri = I_1 and rj = I_2.

    prior_params, params: the *untempered* target (the rungs' 1/t are
    ``inv_temps``). log_targets (members' untempered log targets) must be current;
    updated on acceptance. lw: (N,) float64 scratch; table: (n, n) int64; rnz,
    cnz, buf: (n,) int64. Returns ``(outcome, log ratio)``.
    """
    la, lb = state_i.labels, state_j.labels
    fill_table(la, state_i, lb, state_j, table, rnz, cnz)
    ka, kb = state_i.counts[0], state_j.counts[0]
    n_u = count_at_least_two(state_i.active, ka, rnz)
    if n_u < 2:
        return NO_MOVE, 0.0
    k1 = nth_at_least_two(state_i.active, ka, rnz, bounded(stream, n_u), -1)
    k2 = nth_at_least_two(state_i.active, ka, rnz, bounded(stream, n_u - 1), k1)
    l1 = nth_nonzero_in_row(table, k1, state_j.active, kb, bounded(stream, rnz[k1]), -1)
    m2 = rnz[k2] - (1 if table[k2, l1] > 0 else 0)
    l2 = nth_nonzero_in_row(table, k2, state_j.active, kb, bounded(stream, m2), l1)
    u_accept = uniform(stream)
    # The (k, l) probability in either role, from x's table (= y's zero pattern).
    log_q_ij = log_q_two_new(table, rnz, n_u, k1, l1, k2, l2)
    n_u_t = count_at_least_two(state_j.active, kb, cnz)
    log_q_ji = log_q_two_new_transposed(table, cnz, n_u_t, k1, l1, k2, l2)
    # P = A_k1 ∩ B_l1 first in buf, then Q = A_k2 ∩ B_l2 (eq. 4).
    n_p = gather_cell(la, lb, k1, l1, buf, 0)
    n_pq = gather_cell(la, lb, k2, l2, buf, n_p)
    for a in range(n_p):
        relocate(state_i, params, stats_i, data, buf[a], k2)
        relocate(state_j, params, stats_j, data, buf[a], l2)
    for a in range(n_p, n_pq):
        relocate(state_i, params, stats_i, data, buf[a], k1)
        relocate(state_j, params, stats_j, data, buf[a], l1)
    mi, mj = member_of_rung[ri], member_of_rung[rj]
    old_i, old_j = log_targets[mi], log_targets[mj]
    new_i = member_log_joint(state_i, prior_params, params, stats_i)
    new_j = member_log_joint(state_j, prior_params, params, stats_j)
    log_ratio = inv_temps[ri] * (new_i - old_i) + inv_temps[rj] * (new_j - old_j)
    # Selection, forward (x's weights) and reverse (y's weights): eq. (5)'s T_{i,j}
    # with the role-dependent q's.
    fill_selection_weights(lw, log_targets, member_of_rung, inv_s)
    log_fwd = _logaddexp(log_pick_ordered_pair(lw, boltzmann, ri, rj) + log_q_ij,
                         log_pick_ordered_pair(lw, boltzmann, rj, ri) + log_q_ji)
    lw[ri] = new_i * inv_s
    lw[rj] = new_j * inv_s
    log_rev = _logaddexp(log_pick_ordered_pair(lw, boltzmann, ri, rj) + log_q_ij,
                         log_pick_ordered_pair(lw, boltzmann, rj, ri) + log_q_ji)
    if new_i == -np.inf or new_j == -np.inf:
        log_ratio = -np.inf
    else:
        log_ratio += log_rev - log_fwd
    if np.isnan(log_ratio):
        outcome = FAILED
        accept = False
    else:
        accept = np.log(u_accept) < log_ratio
        outcome = ACCEPTED if accept else REJECTED
    if accept:
        log_targets[mi] = new_i
        log_targets[mj] = new_j
    else:
        for a in range(n_p):
            relocate(state_i, params, stats_i, data, buf[a], k1)
            relocate(state_j, params, stats_j, data, buf[a], l1)
        for a in range(n_p, n_pq):
            relocate(state_i, params, stats_i, data, buf[a], k2)
            relocate(state_j, params, stats_j, data, buf[a], l2)
    return outcome, log_ratio


@routine
def guided_log_q(kind, state_p, old, new, state_c, table, rnz, cnz):
    """``(log Q_p(x_c -> y_c), log Q_p(y_c -> x_c))``: the probability that the
    guided move (ONE-NEW or SCRC ``kind``) with parent x_p (``state_p``) turns the
    child's labels ``old`` into ``new`` (module docstring); -inf both when it
    cannot. The child's active slots (``state_c``) are the same for old and new."""
    la = state_p.labels
    n = la.shape[0]
    k_p, l1, l2, n_changed = -1, -1, -1, 0
    for h in range(n):
        if old[h] != new[h]:
            n_changed += 1
            if k_p < 0:
                k_p, l1, l2 = la[h], old[h], new[h]
            elif la[h] != k_p or (old[h] != l1 and old[h] != l2) or (
                    new[h] != l1 and new[h] != l2):
                return -np.inf, -np.inf
    if n_changed == 0:
        return 0.0, 0.0
    m1 = m2 = h1 = h2 = 0
    for h in range(n):
        if la[h] == k_p:
            if old[h] == l1:
                m1 += 1
            elif old[h] == l2:
                m2 += 1
            if new[h] == l1:
                h1 += 1
            elif new[h] == l2:
                h2 += 1
    if m1 == 0 or m2 == 0 or h1 == 0 or h2 == 0:
        return -np.inf, -np.inf
    size = m1 + m2
    if kind == ONE_NEW and n_changed != size:
        return -np.inf, -np.inf
    if kind == SCRC_SAME and h1 != m1:
        return -np.inf, -np.inf
    fill_table(la, state_p, old, state_c, table, rnz, cnz)
    n_u = count_at_least_two(state_p.active, state_p.counts[0], rnz)
    v = rnz[k_p]
    base = -np.log(n_u) - np.log(v * (v - 1.0) / 2.0)
    if kind == SCRC_SAME:
        base -= log_choose(size, m1)
    if kind == SCRC_RANDOM:
        return (base - np.log(size - 1.0) - log_choose(size, h1),
                base - np.log(size - 1.0) - log_choose(size, m1))
    return base, base


@entry
def guided_update(stream, kind, rp, rc, ro, state_p, state_o, state_c, stats_c, prior_params,
                  params, data, inv_temps, log_targets, member_of_rung, inv_s, boltzmann, lw,
                  table, rnz, cnz, buf, old):
    """One SCSC:ONE-NEW (§3.4, ``kind`` ONE_NEW) or SCRC (§3.5, SCRC_SAME /
    SCRC_RANDOM) with the parent at rung rp and the child at rung rc.

    ro: the child's other neighbour rung (-1 if none), whose member (``state_o``;
    any state when ro = -1) could also have produced the proposal (eq. 8). old:
    (n,) int64 scratch (the child's labels before the move). Other arguments as
    :func:`two_new_update`. Returns ``(outcome, log ratio)``.
    """
    la, lb = state_p.labels, state_c.labels
    fill_table(la, state_p, lb, state_c, table, rnz, cnz)
    ka, kb = state_p.counts[0], state_c.counts[0]
    n_u = count_at_least_two(state_p.active, ka, rnz)
    if n_u == 0:
        return NO_MOVE, 0.0
    k1 = nth_at_least_two(state_p.active, ka, rnz, bounded(stream, n_u), -1)
    l1 = nth_nonzero_in_row(table, k1, state_c.active, kb, bounded(stream, rnz[k1]), -1)
    a = bounded(stream, rnz[k1] - 1)
    l2 = nth_nonzero_in_row(table, k1, state_c.active, kb, a, l1)
    # H, with the items of A_k1 ∩ B_l1 first (m1 of them).
    n = la.shape[0]
    m1 = gather_cell(la, lb, k1, l1, buf, 0)
    size = gather_cell(la, lb, k1, l2, buf, m1)
    if kind == ONE_NEW:
        h1 = size - m1  # the swap: the first m1 go to l2, the rest to l1
    else:
        h1 = m1 if kind == SCRC_SAME else 1 + bounded(stream, size - 1)
        shuffle(stream, buf, size)
    u_accept = uniform(stream)
    for h in range(n):
        old[h] = lb[h]
    for a in range(size):
        if kind == ONE_NEW:
            relocate(state_c, params, stats_c, data, buf[a], l2 if a < m1 else l1)
        else:
            relocate(state_c, params, stats_c, data, buf[a], l1 if a < h1 else l2)
    changed = False
    for a in range(size):
        if lb[buf[a]] != old[buf[a]]:
            changed = True
            break
    if not changed:
        return ACCEPTED, 0.0  # y = x: ratio 1
    mc = member_of_rung[rc]
    old_c = log_targets[mc]
    new_c = member_log_joint(state_c, prior_params, params, stats_c)
    log_ratio = inv_temps[rc] * (new_c - old_c)
    # Eq. (8) with Q_p in place of the indicator h, for each possible parent.
    fill_selection_weights(lw, log_targets, member_of_rung, inv_s)
    q_fwd, q_rev = guided_log_q(kind, state_p, old, lb, state_c, table, rnz, cnz)
    log_fwd = log_g(lw, boltzmann, rp, rc) + q_fwd
    q_rev_p = q_rev
    if ro >= 0:
        o_fwd, o_rev = guided_log_q(kind, state_o, old, lb, state_c, table, rnz, cnz)
        log_fwd = _logaddexp(log_fwd, log_g(lw, boltzmann, ro, rc) + o_fwd)
    lw[rc] = new_c * inv_s
    log_rev = log_g(lw, boltzmann, rp, rc) + q_rev_p
    if ro >= 0:
        log_rev = _logaddexp(log_rev, log_g(lw, boltzmann, ro, rc) + o_rev)
    if new_c == -np.inf:
        log_ratio = -np.inf
    else:
        log_ratio += log_rev - log_fwd
    if np.isnan(log_ratio):
        outcome = FAILED
        accept = False
    else:
        accept = np.log(u_accept) < log_ratio
        outcome = ACCEPTED if accept else REJECTED
    if accept:
        log_targets[mc] = new_c
    else:
        for a in range(size):
            relocate(state_c, params, stats_c, data, buf[a], old[buf[a]])
    return outcome, log_ratio


__all__ = [
    "ACCEPTED",
    "FAILED",
    "NO_MOVE",
    "ONE_NEW",
    "Outcomes",
    "REJECTED",
    "SCRC_RANDOM",
    "SCRC_SAME",
    "TWO_NEW",
    "choose_members",
    "draw_uniform",
    "guided_log_q",
    "guided_update",
    "log_g",
    "log_pick_ordered_pair",
    "two_new_update",
]
