r"""Infinite Relational Model for a symmetric binary network (Kemp et al. 2006;
Herlau et al. 2016, §3.2), block-pair probabilities integrated out.

Model: for every unordered pair of blocks (k, l), k = l included,
:math:`\eta_{kl} \sim \mathrm{Beta}(a, b)`; for every unordered pair of distinct
nodes i < j, :math:`A_{ij} \sim \mathrm{Bernoulli}(\eta_{z_i z_j})` (no self-loops).
With :math:`E_{kl}` the number of edges between blocks k and l (within the block
for k = l) and :math:`P_{kl}` the number of node pairs (:math:`m_k m_l`, or
:math:`m_k (m_k - 1)/2` for k = l), the collapsed log likelihood is

.. math::

    \log p(A \mid z) = \sum_{k \le l}
        \log B(a + E_{kl},\, b + P_{kl} - E_{kl}) - \log B(a, b)

(Herlau et al. 2016, §3.2, with :math:`N^+ = E`, :math:`N^- = P - E`).

**Relational component.** Unlike a mixture component, a node's predictive term
depends on every block. The component keeps its own copy of each node's slot
(``stats.slot``, -1 while unassigned) and counts only *assigned* nodes: for an
unassigned node i,

.. math::

    \log p(A_{i\cdot} \mid i \in k) = \sum_{l\ \text{active}}
        \log B(a + E_{kl} + e_{il},\, b + P_{kl} - E_{kl} + m_l - e_{il})
        - \log B(a + E_{kl},\, b + P_{kl} - E_{kl})

where :math:`e_{il}` is the number of i's neighbours assigned to slot l and
:math:`m_l` the size of l (for an empty slot k every pair (k, l) is fresh:
:math:`E_{kl} = P_{kl} = 0`; the pair (k, k) gains no node pair). This is exactly
the ratio of the joint of the assigned nodes with and without i, so the chain rule
of a block move (Herlau et al. eq. 5, :mod:`..sweep_block`) and Gibbs (Neal 2000,
Alg. 3) are exact with the generic primitives.

**Cost.** i's per-block edge counts :math:`e_{i\cdot}` are computed once per node
by a walk over its neighbour list, O(degree), and cached in the stats, tagged with
the node; ``add`` and ``remove`` invalidate the cache (they change the slots it was
computed from). Each ``log_pred`` then costs O(K) Beta ratios: for a block of m <= 24
nodes one product of rising factorials and one log, else 4 log-gamma evaluations
(6 when i has edges into the block), so a Gibbs move of one node costs
O(degree + K^2). ``add``/``remove`` cost O(degree). ``log_marginal`` costs O(K).

**Memory.** The edge-count matrix E is (n, n) int64 over slots: 8 n^2 bytes
(8 MB at n = 1000, 200 MB at n = 5000). Fine up to several thousand nodes.

**log_marginal.** The generic log joint sums ``log_marginal`` over active slots,
so slot k's share is its within-block term plus half of each cross term (k, l),
l active, l != k; the shares add up to the total above. The component keeps its
own list of active slots for this (O(1) updates in ``add``/``remove``).

Nothing depends on (a, b) except through the params, so ``refresh`` has nothing to
recompute.
"""

import math
from typing import NamedTuple

import numpy as np

from pymc_partitions.kernels._jit import primitive
from pymc_partitions.kernels.components.base import register

# Positions in IRMStats.meta.
_N_ACTIVE = 0
_CACHED_NODE = 1
_N_TOUCHED = 2


class IRMParams(NamedTuple):
    """a, b : float, the Beta hyperparameters (> 0); log_beta_ab : float, log B(a, b)."""

    a: float
    b: float
    log_beta_ab: float


class IRMStats(NamedTuple):
    """Statistics over n slots; every field is int64.

    sizes : (n,) number of assigned nodes in each slot
    edges : (n, n) E[k, l] = edges between slots k != l (symmetric); E[k, k] = edges
        within slot k
    slot : (n,) slot of each node, -1 while unassigned (the component's own copy)
    active : (n,) ``active[:meta[0]]`` lists the non-empty slots
    where : (n,) position of each non-empty slot in ``active``
    ecount : (n,) edge counts of node ``meta[1]`` into each slot (valid entries: the
        slots listed in ``touched``; all others are 0)
    touched : (n,) ``touched[:meta[2]]`` lists the slots with ``ecount > 0``
    meta : (3,) [number of active slots, node whose counts ``ecount`` holds (-1:
        none), number of touched slots]
    """

    sizes: np.ndarray
    edges: np.ndarray
    slot: np.ndarray
    active: np.ndarray
    where: np.ndarray
    ecount: np.ndarray
    touched: np.ndarray
    meta: np.ndarray


def make_params(a, b, n=None):
    """Params from scalar a, b > 0 (``n`` is not needed: nothing is tabulated)."""
    a, b = float(np.asarray(a).reshape(())), float(np.asarray(b).reshape(()))
    return IRMParams(a, b, math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b))


def make_data(adjacency):
    """Data ``(indptr, indices)``: the CSR neighbour lists of a symmetric 0/1 adjacency.

    ``adjacency`` is a dense (n, n) array or a scipy.sparse matrix, already
    validated (symmetric, 0/1); the diagonal is ignored. indptr (n+1,) int64,
    indices (2 * n_edges,) int64: the neighbours of node i are
    ``indices[indptr[i]:indptr[i+1]]``.
    """
    if hasattr(adjacency, "tocoo"):
        coo = adjacency.tocoo()
        keep = (coo.data != 0) & (coo.row != coo.col)
        rows, cols = coo.row[keep].astype(np.int64), coo.col[keep].astype(np.int64)
        n = adjacency.shape[0]
        # Duplicate entries of a COO input count once.
        key = np.unique(rows * n + cols)
        rows, cols = key // n, key % n
    else:
        adjacency = np.asarray(adjacency)
        n = adjacency.shape[0]
        nz = adjacency != 0
        np.fill_diagonal(nz, False)
        rows, cols = np.nonzero(nz)
        rows, cols = rows.astype(np.int64), cols.astype(np.int64)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    return (indptr, np.ascontiguousarray(cols, dtype=np.int64))


def alloc_stats(n_slots, params=None):
    """Statistics of ``n_slots`` empty slots for a network of ``n_slots`` nodes."""
    n = n_slots
    return IRMStats(
        sizes=np.zeros(n, dtype=np.int64),
        edges=np.zeros((n, n), dtype=np.int64),
        slot=np.full(n, -1, dtype=np.int64),
        active=np.zeros(n, dtype=np.int64),
        where=np.full(n, -1, dtype=np.int64),
        ecount=np.zeros(n, dtype=np.int64),
        touched=np.zeros(n, dtype=np.int64),
        meta=np.array([0, -1, 0], dtype=np.int64),
    )


@primitive
def _log_beta(x, y):
    return math.lgamma(x) + math.lgamma(y) - math.lgamma(x + y)


# Beta ratios over at most this many new node pairs are computed as one product of
# rising factorials (2 m multiplications and one log; measured 2-4x faster than the
# 4-6 log-gamma evaluations for m <= 24); larger ones with log-gamma.
_SMALL = 24


@primitive
def _log_beta_ratio(x, y, dx, dy):
    """log B(x + dx, y + dy) - log B(x, y) for integers dx, dy >= 0.

    Equals log[(x)_dx (y)_dy / (x + y)_(dx+dy)] with rising factorials (x)_c.
    """
    m = dx + dy
    if m <= _SMALL:
        num = 1.0
        den = 1.0
        for t in range(dx):
            num *= x + t
        for t in range(dy):
            num *= y + t
        s = x + y
        for t in range(m):
            den *= s + t
        if num > 1e-280 and den < 1e280:  # else extreme hyperparameters: log-gamma below
            return math.log(num / den)
    acc = math.lgamma(x + y) - math.lgamma(x + y + m)
    if dx > 0:  # most blocks have no edge to a node: skip the pair that cancels
        acc += math.lgamma(x + dx) - math.lgamma(x)
    if dy > 0:
        acc += math.lgamma(y + dy) - math.lgamma(y)
    return acc


@primitive
def _invalidate(stats):
    """Forget the cached edge counts (O(number of slots touched))."""
    meta = stats.meta
    for t in range(meta[_N_TOUCHED]):
        stats.ecount[stats.touched[t]] = 0
    meta[_N_TOUCHED] = 0
    meta[_CACHED_NODE] = -1


@primitive
def _count_edges(stats, data, i):
    """Make ``stats.ecount`` hold node i's edge counts into every slot: O(degree)."""
    meta = stats.meta
    if meta[_CACHED_NODE] == i:
        return
    _invalidate(stats)
    indptr, indices = data[0], data[1]
    slot, ecount, touched = stats.slot, stats.ecount, stats.touched
    nt = 0
    for p in range(indptr[i], indptr[i + 1]):
        s = slot[indices[p]]
        if s >= 0:
            if ecount[s] == 0:
                touched[nt] = s
                nt += 1
            ecount[s] += 1
    meta[_N_TOUCHED] = nt
    meta[_CACHED_NODE] = i


@primitive
def log_pred(params, stats, data, i, k):
    """log p(edges between unassigned node i and the assigned nodes | i in slot k).

    Node i must be unassigned (every move removes a node before scoring it).
    O(K) log-gamma evaluations once i's edge counts are cached (O(degree) on the
    first call for a node).
    """
    _count_edges(stats, data, i)
    a, b = params.a, params.b
    sizes, edges, ecount, active = stats.sizes, stats.edges, stats.ecount, stats.active
    m_k = sizes[k]
    acc = 0.0
    for t in range(stats.meta[_N_ACTIVE]):
        l = active[t]
        e = ecount[l]
        m_l = sizes[l]
        if m_k == 0:
            acc += _log_beta_ratio(a, b, e, m_l - e)
        else:
            e_kl = edges[k, l]
            p_kl = m_k * (m_k - 1) // 2 if l == k else m_k * m_l
            acc += _log_beta_ratio(a + e_kl, b + (p_kl - e_kl), e, m_l - e)
    return acc


@primitive
def _move_edges(stats, data, i, k, sign):
    # Edges between i and the assigned nodes now count towards pairs (k, l).
    indptr, indices = data[0], data[1]
    slot, edges = stats.slot, stats.edges
    for p in range(indptr[i], indptr[i + 1]):
        s = slot[indices[p]]
        if s >= 0:
            edges[k, s] += sign
            if s != k:
                edges[s, k] += sign


@primitive
def add(params, stats, data, i, k):
    """Node i (unassigned) joins slot k: O(degree)."""
    _invalidate(stats)
    _move_edges(stats, data, i, k, 1)
    stats.slot[i] = k
    stats.sizes[k] += 1
    if stats.sizes[k] == 1:
        meta = stats.meta
        stats.active[meta[_N_ACTIVE]] = k
        stats.where[k] = meta[_N_ACTIVE]
        meta[_N_ACTIVE] += 1


@primitive
def remove(params, stats, data, i, k):
    """Node i leaves slot k and becomes unassigned: O(degree)."""
    _invalidate(stats)
    stats.slot[i] = -1
    _move_edges(stats, data, i, k, -1)
    stats.sizes[k] -= 1
    if stats.sizes[k] == 0:
        meta = stats.meta
        pos = stats.where[k]
        last = stats.active[meta[_N_ACTIVE] - 1]
        stats.active[pos] = last
        stats.where[last] = pos
        stats.where[k] = -1
        meta[_N_ACTIVE] -= 1


@primitive
def refresh(params, stats, k):
    """Nothing is cached per slot that depends on (a, b)."""
    return None


@primitive
def log_marginal(params, stats, k):
    """Slot k's share of log p(A | z): its within-block term plus half of each cross
    term with another active slot (the shares over active slots sum to the total).
    O(K) log-gamma evaluations; 0 for an empty slot."""
    m_k = stats.sizes[k]
    if m_k == 0:
        return 0.0
    a, b, lb = params.a, params.b, params.log_beta_ab
    sizes, edges, active = stats.sizes, stats.edges, stats.active
    e_kk = edges[k, k]
    p_kk = m_k * (m_k - 1) // 2
    acc = _log_beta(a + e_kk, b + (p_kk - e_kk)) - lb
    for t in range(stats.meta[_N_ACTIVE]):
        l = active[t]
        if l != k:
            e_kl = edges[k, l]
            acc += 0.5 * (_log_beta(a + e_kl, b + (m_k * sizes[l] - e_kl)) - lb)
    return acc


register(
    IRMParams,
    log_pred=log_pred,
    add=add,
    remove=remove,
    refresh=refresh,
    log_marginal=log_marginal,
)
