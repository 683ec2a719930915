r"""Coupled Gibbs sweep of two partitions: Nguyen, Trippe & Broderick (2022), Algorithm 2.

Two chains X and Y on the same target visit the items in one shared random order.
For item n (Alg. 2, lines 2-4):

1. take n out of both partitions (:func:`~.reassign.take_out`);
2. compute each chain's Gibbs conditional over its options, K + 1 and K' + 1 of them
   (:func:`~.reassign.conditional_log_weights`: the active blocks and a new block);
3. draw the pair of options (a, b) from a coupling of the two conditionals
   (:mod:`.couplings`): ``OT``, the optimal-transport coupling :math:`\psi^{OT}_\eta`
   (eqs. 4 and 6) for the partition metric d of eq. 5 (``HAMMING``) or the variation
   of information (App. I, ``VI``); or the label-based baselines ``MAXIMAL`` and
   ``COMMON_RNG`` of §5.3;
4. put n into option a in X and b in Y (:func:`~.reassign.put_in`).

The OT cost of (a, b) is :math:`d(\pi^a, \nu^b) - d(\pi(-n), \nu(-n))`, which for
eq. 5 is :math:`2|A_a| + 2|B_b| - 4|A_a \cap B_b|` (the proof of Prop. 1, App. D):
it needs the intersection counts :math:`n_{ab}` of X's and Y's blocks, kept here in
an (capacity x capacity) int32 table ``overlap`` indexed by the blocks' positions in
``state.active`` (the option order) and updated in O(1) per item and O(K) when a
block closes, never recomputed from the labels. The same updates maintain
:math:`d(X, Y)` (eq. 5) as an integer, so the chains have met exactly when it is 0.

Label order for the baselines: the reference implementation numbers each chain's
blocks in order of creation and renumbers them when a block empties (its cluster
list with deletion); ``created`` keeps each chain's slots in that order, and the
baselines see the conditionals permuted into it, the new block last.

Faithfulness (eq. 6: :math:`\psi^{OT}_\eta(X, X) = \psi^{OT}(X, X)`, the diagonal):
once X = Y the two chains make the same move for ever. Within a sweep, the OT
coupling drops the nugget for an item whenever the two partitions are equal
(distance 0) before it. The driver
(:class:`pymc_partitions.step_methods.coupled_pair.CoupledPair`) checks the maintained
distance before each sweep (O(1)) and then runs one single-chain sweep, whose result
is both chains' next state: the diagonal coupling, whatever the two chains' slot
numbering or block creation history.

Cost per item: two conditionals (2 (K + 1) ``log_pred`` calls), the coupling (OT:
the structured exact solver of :mod:`.transport` on the blocks where the chains
disagree), O(1) table updates; O(K) more when a block opens or closes.
"""

from typing import NamedTuple

import numpy as np

from pymc_partitions.kernels._jit import entry, primitive
from pymc_partitions.kernels.bookkeeping import open_new_block
from pymc_partitions.kernels.couplings import OT, sample_pair
from pymc_partitions.kernels.random import shuffle
from pymc_partitions.kernels.reassign import conditional_log_weights, put_in, take_out
from pymc_partitions.kernels.state import NO_CHOICE

# Status returned by the sweep entry (an item number >= 0 reports an item whose
# conditional had no option of positive probability).
DONE = -1  # the sweep finished
NEEDS_CAPACITY = -2  # the overlap table is full: grow it and call again (resumes)
COUPLING_FAILED = -3  # the coupling could not be drawn (workspace too small, solver)

# Fields of ``CoupledScratch.info``.
DISTANCE, POSITION = 0, 1


class CoupledScratch(NamedTuple):
    """What a coupled pair keeps between sweeps besides its two partition states.

    overlap : (capacity, capacity) int32
        ``overlap[a, b]`` = number of items in X's active block ``a`` and Y's active
        block ``b`` (positions in ``state.active``); zero outside the active ranges.
    info : (2,) int64
        ``[d(X, Y) of eq. 5, position in the visiting order of the next item]``.
    x_created, y_created : (n,) int64
        Active slots in order of creation (the baselines' labels).
    order : (n,) int64
        The shared visiting order (a permutation of 0..n-1).
    log_wx, log_wy, p, q, p_lab, q_lab : (n + 1,) float64
        Conditionals: log weights, probabilities, and both in label order.
    """

    overlap: np.ndarray
    info: np.ndarray
    x_created: np.ndarray
    y_created: np.ndarray
    order: np.ndarray
    log_wx: np.ndarray
    log_wy: np.ndarray
    p: np.ndarray
    q: np.ndarray
    p_lab: np.ndarray
    q_lab: np.ndarray


def new_scratch(n, capacity):
    """A :class:`CoupledScratch` for n items with an overlap table of ``capacity``
    rows and columns (at least the number of blocks plus one of either chain)."""
    return CoupledScratch(
        overlap=np.zeros((capacity, capacity), dtype=np.int32),
        info=np.zeros(2, dtype=np.int64),
        x_created=np.zeros(n, dtype=np.int64),
        y_created=np.zeros(n, dtype=np.int64),
        order=np.arange(n, dtype=np.int64),
        log_wx=np.empty(n + 1),
        log_wy=np.empty(n + 1),
        p=np.empty(n + 1),
        q=np.empty(n + 1),
        p_lab=np.empty(n + 1),
        q_lab=np.empty(n + 1),
    )


def grown(scratch, capacity):
    """``scratch`` with an overlap table of ``capacity`` (contents kept)."""
    old = scratch.overlap
    table = np.zeros((capacity, capacity), dtype=np.int32)
    table[: old.shape[0], : old.shape[1]] = old
    return scratch._replace(overlap=table)


@primitive
def _normalise(log_w, m, out):
    """``out[:m]`` = the probabilities of log weights ``log_w[:m]``; False if there
    is no distribution (every weight -inf, or a NaN or +inf)."""
    top = -np.inf
    for a in range(m):
        if log_w[a] > top:
            top = log_w[a]
    total = 0.0
    for a in range(m):
        w = np.exp(log_w[a] - top)
        out[a] = w
        total += w
    if not total > 0.0:
        return False
    for a in range(m):
        out[a] /= total
    return True


@primitive
def _creation_rank(created, n_created, k):
    for r in range(n_created):
        if created[r] == k:
            return r
    return -1


@primitive
def _forget_block(created, n_created, k):
    """Delete slot k from the creation list (later blocks are renumbered down)."""
    r = _creation_rank(created, n_created, k)
    for s in range(r, n_created - 1):
        created[s] = created[s + 1]


# One chain's part of an item's update (inlined for both chains: as routines, called
# with the params/stats records by value, they made the sweep ~2x slower).
@primitive
def _take_out(state, params, stats, data, i):
    return take_out(state, params, stats, data, i)


@primitive
def _weigh(state, prior_params, params, stats, data, i, log_w):
    return conditional_log_weights(state, prior_params, params, stats, data, i, log_w)


@primitive
def _take_out_both(x, y, params, stats_x, stats_y, data, i, sc):
    """Step 1: item i leaves X and Y; table and distance follow."""
    overlap, info = sc.overlap, sc.info
    kx, ky = x.labels[i], y.labels[i]
    ax, ay = x.where[kx], y.where[ky]
    size_x, size_y, both = x.sizes[kx], y.sizes[ky], overlap[ax, ay]
    # eq. 5 before minus after: (2a - 1) + (2b - 1) - 2 (2c - 1)
    info[DISTANCE] -= 2 * size_x + 2 * size_y - 4 * both
    overlap[ax, ay] = both - 1
    n_x, n_y = x.counts[0], y.counts[0]
    _take_out(x, params, stats_x, data, i)
    if x.sizes[kx] == 0:
        # close_slot moved X's last active block into position ax: move its row.
        last = n_x - 1
        for b in range(n_y):
            overlap[ax, b] = overlap[last, b]
            overlap[last, b] = 0
        _forget_block(sc.x_created, n_x, kx)
    n_x = x.counts[0]
    _take_out(y, params, stats_y, data, i)
    if y.sizes[ky] == 0:
        last = n_y - 1
        for a in range(n_x):
            overlap[a, ay] = overlap[a, last]
            overlap[a, last] = 0
        _forget_block(sc.y_created, n_y, ky)


@primitive
def _put_in(state, params, stats, data, i, option, n_options, created):
    """Step 4 for one chain: put item i into ``option`` (the last: a new block)."""
    if option == n_options - 1:
        k = open_new_block(state, params, stats)
        created[n_options - 1] = k
    else:
        k = state.active[option]
    put_in(state, params, stats, data, i, k)
    return k


@primitive
def _to_label_order(state, created, probs, m, out):
    """``out[r]`` = probability of the block created r-th (the new block last)."""
    for r in range(m - 1):
        out[r] = probs[state.where[created[r]]]
    out[m - 1] = probs[m - 1]


@primitive
def _from_label_order(state, created, r, m):
    return m - 1 if r == m - 1 else state.where[created[r]]


@primitive
def _draw_pair(x, y, m_x, m_y, coupling, metric, eta, nugget, stream, sc, ws):
    """Step 3: (a, b), option indices of X and Y, from the coupling of ``sc.p`` and
    ``sc.q``; (NO_CHOICE, NO_CHOICE) if it cannot be drawn.

    The draw itself is :func:`.couplings.sample_pair`, a routine compiled once for
    every model (nothing in it depends on the component) and linked here; what is
    inlined is only the reordering of the label-based couplings' options. One call
    site, its arguments of one type (two call sites with an int ``eta`` and the float
    nugget would compile the routine twice)."""
    if coupling == OT:
        p, q, nugget_or_eta = sc.p, sc.q, nugget
    else:
        _to_label_order(x, sc.x_created, sc.p, m_x, sc.p_lab)
        _to_label_order(y, sc.y_created, sc.q, m_y, sc.q_lab)
        p, q, nugget_or_eta = sc.p_lab, sc.q_lab, 1.0 * eta
    ra, rb = sample_pair(coupling, p, m_x, q, m_y, sc.overlap, metric, nugget_or_eta, stream,
                         ws)
    if ra == NO_CHOICE:
        return NO_CHOICE, NO_CHOICE
    if coupling == OT:  # OT's options are X's and Y's options already
        return ra, rb
    return (_from_label_order(x, sc.x_created, ra, m_x),
            _from_label_order(y, sc.y_created, rb, m_y))


@primitive
def coupled_item(x, y, prior_params, params, stats_x, stats_y, data, i, coupling, metric,
                 eta, stream, sc, ws):
    """Algorithm 2, lines 3-4, for item ``i``. Returns ``DONE``, ``i`` when a chain's
    conditional has no option of positive probability, or ``COUPLING_FAILED`` (the
    pair is then invalid)."""
    # eq. 6: no nugget while the two partitions are equal (psi^OT(X, X) is diagonal).
    nugget = eta if sc.info[DISTANCE] != 0 else 0.0
    # 1. Take i out of both chains.
    _take_out_both(x, y, params, stats_x, stats_y, data, i, sc)
    # 2. The two Gibbs conditionals (options: active blocks in position order, new last).
    m_x = _weigh(x, prior_params, params, stats_x, data, i, sc.log_wx)
    m_y = _weigh(y, prior_params, params, stats_y, data, i, sc.log_wy)
    if not _normalise(sc.log_wx, m_x, sc.p) or not _normalise(sc.log_wy, m_y, sc.q):
        return i
    # 3. Draw (a, b) from the coupling.
    a, b = _draw_pair(x, y, m_x, m_y, coupling, metric, eta, nugget, stream, sc, ws)
    if a == NO_CHOICE:
        return COUPLING_FAILED
    # 4. Put i into a in X and b in Y; table and distance follow.
    kx = _put_in(x, params, stats_x, data, i, a, m_x, sc.x_created)
    ky = _put_in(y, params, stats_y, data, i, b, m_y, sc.y_created)
    ax, ay = x.where[kx], y.where[ky]
    both = sc.overlap[ax, ay]
    # eq. 5 after minus before: (2a + 1) + (2b + 1) - 2 (2c + 1), sizes before adding
    sc.info[DISTANCE] += 2 * (x.sizes[kx] - 1) + 2 * (y.sizes[ky] - 1) - 4 * both
    sc.overlap[ax, ay] = both + 1
    return DONE


@entry
def coupled_gibbs_sweep(stream, x, y, prior_params, params, stats_x, stats_y, data, coupling,
                        metric, eta, shuffled, sc, ws):
    """One coupled Gibbs sweep (Algorithm 2) of the pair (X, Y), drawing from ``stream``.

    stream : (4,) uint64, the pair's kernel stream, advanced in place.
    x, y : PartitionState; stats_x, stats_y their component statistics (one params
        and data: the same target).
    coupling : ``couplings.OT``, ``MAXIMAL`` or ``COMMON_RNG``; metric:
        ``couplings.HAMMING`` or ``VI`` (OT only); eta : float, the nugget of eq. 6.
    shuffled : bool; True: the items in a fresh uniformly random order (one for both
        chains); False: in the order ``sc.order`` holds (a systematic scan, as the
        reference implementation sweeps).
    sc : :class:`CoupledScratch` (overlap table and distance as left by the previous
        sweep or by :func:`load_pair`); ws : the coupling's workspace
        (``transport.new_workspace``).

    Returns ``DONE`` (-1); ``NEEDS_CAPACITY`` (-2) when the next item could open a
    block beyond the overlap table (grow it with :func:`grown` and call again: the
    sweep resumes where it stopped); ``COUPLING_FAILED`` (-3) when the coupling could
    not be drawn (a workspace smaller than the problem); or the item whose
    conditional had no option of positive probability in one chain. In the last two
    cases the pair must be reloaded.
    """
    n = sc.order.shape[0]
    info = sc.info
    capacity = sc.overlap.shape[0]
    if info[POSITION] == 0 and shuffled:
        shuffle(stream, sc.order, n)
    for t in range(info[POSITION], n):
        # Each chain may open one block: positions up to K (and K') must exist.
        if x.counts[0] + 1 > capacity or y.counts[0] + 1 > capacity:
            info[POSITION] = t
            return NEEDS_CAPACITY
        status = coupled_item(x, y, prior_params, params, stats_x, stats_y, data, sc.order[t],
                              coupling, metric, eta, stream, sc, ws)
        if status != DONE:
            info[POSITION] = 0
            return status
    info[POSITION] = 0
    return DONE


@primitive
def fill_overlap(x, y, sc):
    """Fill the overlap table (zero on entry) and d(X, Y) (eq. 5) from the labels:
    O(n + K K')."""
    overlap = sc.overlap
    for i in range(x.labels.shape[0]):
        overlap[x.where[x.labels[i]], y.where[y.labels[i]]] += 1
    d = 0
    for a in range(x.counts[0]):
        s = x.sizes[x.active[a]]
        d += s * s
    for b in range(y.counts[0]):
        s = y.sizes[y.active[b]]
        d += s * s
    for a in range(x.counts[0]):
        for b in range(y.counts[0]):
            c = overlap[a, b]
            d -= 2 * c * c
    sc.info[DISTANCE] = d
    sc.info[POSITION] = 0


@primitive
def recount_created(state, created):
    """Creation order when it is not known (a loaded partition, or after block moves):
    order of first appearance, i.e. canonical label order. O(n K)."""
    n_created = 0
    for i in range(state.labels.shape[0]):
        if _creation_rank(created, n_created, state.labels[i]) < 0:
            created[n_created] = state.labels[i]
            n_created += 1


@entry
def load_pair(x, y, sc):
    """Fill the overlap table, the creation lists (canonical label order) and the
    distance d(X, Y) (eq. 5) from the two states' labels.

    Returns ``NEEDS_CAPACITY`` (-2) if the table is too small for K + 1 or K' + 1
    blocks (nothing is changed), else ``DONE``.
    """
    if x.counts[0] + 1 > sc.overlap.shape[0] or y.counts[0] + 1 > sc.overlap.shape[0]:
        return NEEDS_CAPACITY
    sc.overlap[:, :] = 0
    fill_overlap(x, y, sc)
    recount_created(x, sc.x_created)
    recount_created(y, sc.y_created)
    return DONE
