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

**Cost: incremental block-pair terms.** Write :math:`x = a + E_{kl}`,
:math:`y = b + P_{kl} - E_{kl}` for the pair (k, l). i's term for l splits into the
term of a node with *no* edge into l and a correction for its :math:`e = e_{il}`
edges,

.. math::

    \log\frac{B(x + e,\, y + m_l - e)}{B(x, y)}
      = \underbrace{\log\frac{B(x,\, y + m_l)}{B(x, y)}}_{T_{kl}}
      + \log\frac{(x)_e}{(y + m_l - e)_e}

(rising factorials :math:`(x)_e`; the correction vanishes for e = 0). The table
:math:`T_{kl}` (``stats.t0``; for an empty slot k the vector
:math:`F_l = \log B(a, b + m_l) - \log B(a, b)`, ``stats.fresh``) depends only on the
pair's counts and :math:`m_l`, so it does not change while a node is out and changes
only in the row and column of a slot a node left or joined: ``add``/``remove`` mark
the slot dirty (O(1)), and the next ``log_pred`` recomputes the dirty rows and
columns, O(K) Beta ratios per dirty slot, two slots per Gibbs move. i's per-block
edge counts :math:`e_{i\cdot}` are gathered once per node by a walk over its
neighbour list, O(degree), and cached, tagged with the node (``add``/``remove``
invalidate them). Each ``log_pred`` then costs K additions of cached :math:`T_{kl}`
plus one correction per block l holding a neighbour of i (:math:`t_i` of them,
typically a few: about 5 of K = 26 on Hagmann), each a product of 2 e factors and
one log. A Gibbs move of one node thus costs O(degree + K^2 additions + K Beta
ratios + K t_i logs), against O(K^2) Beta ratios recomputed from scratch
(``examples/benchmark_irm.py`` measures both against the arithmetic floor).
``add``/``remove`` cost O(degree). ``log_marginal`` costs O(K).

The cached terms are tagged with the (a, b) they were computed from
(``stats.cache_ab``); ``log_pred`` recomputes every row when the params differ, so a
new draw of the hyperparameters needs no ``refresh``.

**Memory.** The edge-count matrix E (int64) and the term table T (float64) are
(n, n) over slots: 16 n^2 bytes (16 MB at n = 1000, 400 MB at n = 5000). Fine up to
several thousand nodes.

**log_marginal.** The generic log joint sums ``log_marginal`` over active slots,
so slot k's share is its within-block term plus half of each cross term (k, l),
l active, l != k; the shares add up to the total above. The component keeps its
own list of active slots for this (O(1) updates in ``add``/``remove``).

``refresh`` has nothing to do: the (a, b) tag above detects new hyperparameters.
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
_N_DIRTY = 3
_UNDO_NODE = 4
_UNDO_SLOT = 5


class IRMParams(NamedTuple):
    """a, b : float, the Beta hyperparameters (> 0); log_beta_ab : float, log B(a, b)."""

    a: float
    b: float
    log_beta_ab: float
    inv_t: float = 1.0  # 1/t: a tempered target (kernels/tempering.py)


class IRMStats(NamedTuple):
    """Statistics over n slots; int64 fields unless stated.

    sizes : (n,) number of assigned nodes in each slot
    edges : (n, n) E[k, l] = edges between slots k != l (symmetric); E[k, k] = edges
        within slot k
    slot : (n,) slot of each node, -1 while unassigned (the component's own copy)
    active : (n,) ``active[:meta[0]]`` lists the non-empty slots
    where : (n,) position of each non-empty slot in ``active``
    ecount : (n,) edge counts of node ``meta[1]`` into each slot (valid entries: the
        slots listed in ``touched``; all others are 0)
    touched : (n,) ``touched[:meta[2]]`` lists the slots with ``ecount > 0``
    t0 : (n, n) float64, T[k, l] = log B(a + E_kl, b + P_kl - E_kl + m_l) -
        log B(a + E_kl, b + P_kl - E_kl), the term of a node with no edge into l
        joining k (valid for active k, l once no slot is dirty)
    fresh : (n,) float64, F[l] = log B(a, b + m_l) - log B(a, b), the same for an
        empty k (valid for active l once no slot is dirty)
    dirty : (n,) 1 + position of the slot in ``dirty_list``, 0 if clean
    dirty_list : (n,) ``dirty_list[:meta[3]]`` lists the slots whose row and column
        of ``t0`` (and ``fresh`` entry) are stale
    cache_ab : (2,) float64, the (a, b) ``t0`` and ``fresh`` were computed with (NaN:
        never)
    undo : (2, n) float64, slot ``meta[5]``'s row and column of ``t0`` (over active
        slots) saved when node ``meta[4]`` left it with no slot dirty; undo_fresh :
        (1,) float64, its ``fresh`` entry (see :func:`add`)
    meta : (6,) [number of active slots, node whose counts ``ecount`` holds (-1:
        none), number of touched slots, number of dirty slots, node and slot of the
        saved terms (-1: none)]
    """

    sizes: np.ndarray
    edges: np.ndarray
    slot: np.ndarray
    active: np.ndarray
    where: np.ndarray
    ecount: np.ndarray
    touched: np.ndarray
    t0: np.ndarray
    fresh: np.ndarray
    dirty: np.ndarray
    dirty_list: np.ndarray
    cache_ab: np.ndarray
    undo: np.ndarray
    undo_fresh: np.ndarray
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
        t0=np.zeros((n, n), dtype=np.float64),
        fresh=np.zeros(n, dtype=np.float64),
        dirty=np.zeros(n, dtype=np.int64),
        dirty_list=np.zeros(n, dtype=np.int64),
        cache_ab=np.full(2, np.nan),
        undo=np.zeros((2, n), dtype=np.float64),
        undo_fresh=np.zeros(1, dtype=np.float64),
        meta=np.array([0, -1, 0, 0, -1, -1], dtype=np.int64),
    )


@primitive
def _log_beta(x, y):
    return math.lgamma(x) + math.lgamma(y) - math.lgamma(x + y)


# Rising-factorial ratios of at most this many factors are computed as products (2 c
# multiplications and one log; measured 2-4x faster than 4 log-gamma evaluations for
# c <= 24); longer ones with log-gamma.
_SMALL = 24


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
def _rising_ratio(x, z, c):
    """log[(x)_c / (z)_c] for an integer c >= 0 (rising factorials): a product of 2 c
    factors and one log for c <= 24, else 4 log-gamma evaluations."""
    if c == 0:
        return 0.0
    if c <= _SMALL:
        num = 1.0
        den = 1.0
        for t in range(c):
            num *= x + t
            den *= z + t
        if 1e-280 < num < 1e280 and 1e-280 < den < 1e280:  # else extreme (a, b)
            return math.log(num / den)
    return math.lgamma(x + c) - math.lgamma(x) - math.lgamma(z + c) + math.lgamma(z)


@primitive
def _no_edge_term(y, s, m, base):
    """log[(y)_m / (s)_m] given base = lgamma(s) - lgamma(y): 2 log-gamma evaluations
    for m > 24, else the product of :func:`_rising_ratio`."""
    if m <= _SMALL:
        return _rising_ratio(y, s, m)
    return math.lgamma(y + m) - math.lgamma(s + m) + base


@primitive
def _mark_dirty(stats, k):
    """Slot k's pair counts or size changed: its row and column of ``t0`` are stale."""
    if stats.dirty[k] == 0:
        nd = stats.meta[_N_DIRTY]
        stats.dirty_list[nd] = k
        stats.dirty[k] = nd + 1
        stats.meta[_N_DIRTY] = nd + 1


@primitive
def _clean(params, stats):
    """Recompute the stale rows and columns of ``t0`` and entries of ``fresh``:
    O(K) Beta ratios per dirty slot (all slots if (a, b) changed)."""
    a, b = params.a, params.b
    meta, active, sizes, edges = stats.meta, stats.active, stats.sizes, stats.edges
    t0, fresh, dirty, dirty_list = stats.t0, stats.fresh, stats.dirty, stats.dirty_list
    if stats.cache_ab[0] != a or stats.cache_ab[1] != b:
        meta[_UNDO_NODE] = -1  # saved terms of the old (a, b)
        for t in range(meta[_N_ACTIVE]):
            _mark_dirty(stats, active[t])
        stats.cache_ab[0] = a
        stats.cache_ab[1] = b
    nd = meta[_N_DIRTY]
    for p in range(nd):
        d = dirty_list[p]
        m_d = sizes[d]
        if m_d == 0:  # a closed slot: its row is not read until it reopens (dirty)
            continue
        fresh[d] = _rising_ratio(b, a + b, m_d)
        for t in range(meta[_N_ACTIVE]):
            l = active[t]
            if 0 < dirty[l] <= p:  # the pair was done in l's pass
                continue
            m_l = sizes[l]
            e_dl = edges[d, l]
            p_dl = m_d * (m_d - 1) // 2 if l == d else m_d * m_l
            y = b + (p_dl - e_dl)
            s = a + e_dl + y
            if m_l > _SMALL or (l != d and m_d > _SMALL):
                # Share lgamma(s) - lgamma(y) between the two directions.
                base = math.lgamma(s) - math.lgamma(y)
                t0[d, l] = _no_edge_term(y, s, m_l, base)
                if l != d:
                    t0[l, d] = _no_edge_term(y, s, m_d, base)
            else:
                t0[d, l] = _rising_ratio(y, s, m_l)
                if l != d:
                    t0[l, d] = _rising_ratio(y, s, m_d)
    for p in range(nd):
        dirty[dirty_list[p]] = 0
    meta[_N_DIRTY] = 0


@primitive
def log_pred(params, stats, data, i, k):
    """log p(edges between unassigned node i and the assigned nodes | i in slot k).

    Node i must be unassigned (every move removes a node before scoring it). K
    additions of cached no-edge terms plus one rising-factorial correction per block
    holding a neighbour of i, once i's edge counts are gathered (O(degree) on the
    first call for a node) and the stale terms recomputed (O(K) per slot changed
    since the last call).
    """
    _count_edges(stats, data, i)
    _clean(params, stats)
    a, b = params.a, params.b
    sizes, edges, ecount, active = stats.sizes, stats.edges, stats.ecount, stats.active
    touched = stats.touched
    n_active, n_touched = stats.meta[_N_ACTIVE], stats.meta[_N_TOUCHED]
    m_k = sizes[k]
    acc = 0.0
    if m_k == 0:
        fresh = stats.fresh
        for t in range(n_active):
            acc += fresh[active[t]]
        for t in range(n_touched):
            l = touched[t]
            e = ecount[l]
            acc += _rising_ratio(a, b + (sizes[l] - e), e)
    else:
        row = stats.t0[k]
        for t in range(n_active):
            acc += row[active[t]]
        for t in range(n_touched):
            l = touched[t]
            e = ecount[l]
            e_kl = edges[k, l]
            p_kl = m_k * (m_k - 1) // 2 if l == k else m_k * sizes[l]
            acc += _rising_ratio(a + e_kl, b + (p_kl - e_kl) + (sizes[l] - e), e)
    return acc


@primitive
def log_pred_block(params, stats, data, items, k):
    r"""log p(edges of the unassigned nodes C = ``items`` | C joins slot k): the ratio
    of the joints of the assigned nodes with and without C (Herlau et al. 2016, eq. 5
    for a block move), in closed form. With :math:`e_{Cl}` C's edges into slot l,
    :math:`E_{CC}` the edges within C and c = |C|, every pair (k, l) gains
    :math:`e_{Cl}` edges and :math:`c\, m_l` node pairs, the pair (k, k) also
    :math:`E_{CC}` edges and c(c - 1)/2 pairs:

    .. math::

        \sum_{l\ \text{active}} \log\frac{B(x_{kl} + \Delta E_{kl},\,
        y_{kl} + \Delta P_{kl} - \Delta E_{kl})}{B(x_{kl}, y_{kl})}

    (:math:`x = a + E`, :math:`y = b + P - E`; for an empty slot k every pair is fresh
    and the within-C pair is added). Cost O(sum of C's degrees + K) log-gamma
    evaluations, against the chain rule's c ``log_pred``/``add``/``remove`` calls, each
    ``add`` making slot k's cached terms stale (O(K) Beta ratios to rebuild). One
    node: :func:`log_pred`. Leaves the statistics as they were (``ecount`` is used as
    scratch and cleared).
    """
    c = items.shape[0]
    if c == 1:
        return log_pred(params, stats, data, items[0], k)
    a, b = params.a, params.b
    indptr, indices = data[0], data[1]
    slot, sizes, edges, active = stats.slot, stats.sizes, stats.edges, stats.active
    ecount, touched = stats.ecount, stats.touched
    _invalidate(stats)
    # C's edges into each slot (ecount, listed in touched) and within C (each seen
    # from both ends). C's nodes are unassigned (-1); -2 marks them for the walk.
    for t in range(c):
        slot[items[t]] = -2
    nt = 0
    within_twice = 0
    for t in range(c):
        h = items[t]
        for p in range(indptr[h], indptr[h + 1]):
            s = slot[indices[p]]
            if s >= 0:
                if ecount[s] == 0:
                    touched[nt] = s
                    nt += 1
                ecount[s] += 1
            elif s == -2:
                within_twice += 1
    for t in range(c):
        slot[items[t]] = -1
    stats.meta[_N_TOUCHED] = nt  # so _invalidate clears ecount on the next call
    e_cc = within_twice // 2
    p_cc = c * (c - 1) // 2
    m_k = sizes[k]
    acc = 0.0
    for t in range(stats.meta[_N_ACTIVE]):
        l = active[t]
        if m_k == 0:
            e_kl, p_kl = 0, 0
        else:
            e_kl = edges[k, l]
            p_kl = m_k * (m_k - 1) // 2 if l == k else m_k * sizes[l]
        d_e = ecount[l] + (e_cc if l == k else 0)
        d_p = c * sizes[l] + (p_cc if l == k else 0)
        x = a + e_kl
        y = b + (p_kl - e_kl)
        acc += _log_beta(x + d_e, y + (d_p - d_e)) - _log_beta(x, y)
    if m_k == 0:  # the fresh pair (k, k) of C with itself
        acc += _log_beta(a + e_cc, b + (p_cc - e_cc)) - params.log_beta_ab
    _invalidate(stats)
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
def _save_terms(params, stats, i, k):
    """Node i is about to leave slot k, which stays active: if no slot is dirty, save
    k's row and column of ``t0`` and its ``fresh`` entry (O(K) copies) so that
    :func:`add` can put them back if i returns to k before anything else changes."""
    meta = stats.meta
    meta[_UNDO_NODE] = -1
    if (meta[_N_DIRTY] > 0 or stats.sizes[k] < 2
            or stats.cache_ab[0] != params.a or stats.cache_ab[1] != params.b):
        return
    t0, undo, active = stats.t0, stats.undo, stats.active
    for t in range(meta[_N_ACTIVE]):
        l = active[t]
        undo[0, l] = t0[k, l]
        undo[1, l] = t0[l, k]
    stats.undo_fresh[0] = stats.fresh[k]
    meta[_UNDO_NODE] = i
    meta[_UNDO_SLOT] = k


@primitive
def _restore_terms(stats, k):
    """Node ``meta[4]`` is back in slot k = ``meta[5]`` and nothing else changed since
    it left: every count is as when the terms were saved, so they are put back (the
    values a recomputation would give, bit for bit) and no slot is dirty."""
    meta = stats.meta
    t0, undo, active = stats.t0, stats.undo, stats.active
    for t in range(meta[_N_ACTIVE]):
        l = active[t]
        t0[k, l] = undo[0, l]
        t0[l, k] = undo[1, l]
    stats.fresh[k] = stats.undo_fresh[0]
    if stats.dirty[k] > 0:  # k is the only dirty slot (none was when i left)
        stats.dirty[k] = 0
        meta[_N_DIRTY] = 0
    meta[_UNDO_NODE] = -1


@primitive
def add(params, stats, data, i, k):
    """Node i (unassigned) joins slot k: O(degree). A node returning to the slot it
    just left, with nothing else changed since (the common outcome of a Gibbs move
    or of an ARM move of an item that stays), gets the slot's saved cached terms
    back instead of making them stale: the next move needs no O(K) recomputation."""
    _invalidate(stats)
    meta = stats.meta
    returning = (meta[_UNDO_NODE] == i and meta[_UNDO_SLOT] == k
                 and stats.cache_ab[0] == params.a and stats.cache_ab[1] == params.b)
    meta[_UNDO_NODE] = -1
    if not returning:
        _mark_dirty(stats, k)
    _move_edges(stats, data, i, k, 1)
    stats.slot[i] = k
    stats.sizes[k] += 1
    if stats.sizes[k] == 1:
        stats.active[meta[_N_ACTIVE]] = k
        stats.where[k] = meta[_N_ACTIVE]
        meta[_N_ACTIVE] += 1
    if returning:
        _restore_terms(stats, k)


@primitive
def remove(params, stats, data, i, k):
    """Node i leaves slot k and becomes unassigned: O(degree), plus O(K) copies when
    no slot is dirty (:func:`_save_terms`)."""
    _invalidate(stats)
    _save_terms(params, stats, i, k)
    _mark_dirty(stats, k)
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
    """Nothing to do: the cached terms carry the (a, b) they were computed with and
    ``log_pred`` recomputes them when the params differ."""
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
    log_pred_block=log_pred_block,
)
