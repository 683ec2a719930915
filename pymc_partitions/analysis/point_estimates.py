"""Point estimates of a partition from its posterior draws.

- :func:`point_estimate`: the partition minimising the posterior expected loss
  (expected VI or Binder loss), found by the SALSO greedy search of Dahl,
  Johnson & Müller (2022, JCGS) — kernel in :mod:`pymc_partitions.kernels.salso`.
- :func:`dahl_estimate`: Dahl's (2006) least-squares draw, the posterior draw
  closest in squared error to the posterior similarity matrix (equivalently the
  draw with the smallest expected Binder loss).

The expected loss is estimated by the average over the M draws:
E[L(c)] ~ (1/M) sum_m L(c, z^(m)). Its units follow :mod:`.distances`: VI in bits,
Binder as the number of discordant item pairs. The search result is compared
with Dahl's draw under the exact same average, and never returned if worse.
"""

import functools
import hashlib
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numba
import numpy as np

from pymc_partitions.analysis._draws import read_draws
from pymc_partitions.analysis.distances import compact_labels, distance_function
from pymc_partitions.analysis.similarity import coclustering_count_matrix, item_major_labels
from pymc_partitions.distributions.validation import integer_arg, number_arg, seed_arg
from pymc_partitions.kernels.random import new_stream
from pymc_partitions.kernels.salso import draw_pair_counts, pair_weight_scores, salso_runs
from pymc_partitions.partitions import as_labels, canonicalize

class SearchBudgetWarning(UserWarning):
    """point_estimate stopped its search on the ``seconds`` budget."""


_LOSSES = {"vi": ("VI", 1), "binder": ("binder", 0)}
_CNT_LIMIT_BYTES = 2 << 30
_MATRIX_LIMIT_BYTES = 2 << 30
_GAP_LIMIT_BYTES = 1 << 30


class PointEstimate(NamedTuple):
    """A point estimate of a partition.

    labels : (n,) int64 canonical labels
    expected_loss : float, posterior expected loss estimated from the draws
        (VI in bits; Binder as the expected number of discordant pairs)
    loss : "VI" or "binder", the loss ``expected_loss`` refers to
    method : "salso" (search result), "dahl" (Dahl's least-squares draw; from
        :func:`point_estimate` only when that draw was strictly better than every run)
    """

    labels: np.ndarray
    expected_loss: float
    loss: str
    method: str


def _loss_name(loss, owner="point_estimate"):
    key = loss.lower() if isinstance(loss, str) else None
    if key not in _LOSSES:
        raise ValueError(f"{owner}: 'loss' = {loss!r} is not supported: use 'VI' or 'binder'.")
    return _LOSSES[key]


class DrawSet(NamedTuple):
    """Distinct draws with multiplicities: the posterior as the estimators see it.

    unique : (U, n) int64 labels in [0, n_labels); weights : (U,) float64 counts
    (sum M); draws : (M, n) the compact labels of all draws.
    """

    unique: np.ndarray
    weights: np.ndarray
    draws: np.ndarray
    n_labels: int

    @property
    def n_draws(self):
        return self.draws.shape[0]


def draw_set(draws_or_idata, var_name=None, owner="draw_set"):
    """Read the draws and keep each distinct partition once, with its count."""
    draws, n_labels = compact_labels(read_draws(draws_or_idata, var_name, owner=owner))
    unique, counts = unique_rows(draws)
    return DrawSet(unique, counts.astype(np.float64), draws, n_labels)


def unique_rows(rows):
    """``np.unique(rows, axis=0, return_counts=True)`` for (M, n) non-negative int64
    rows, in O(M n): rows are grouped by a hash of their bytes (equality checked),
    then the distinct ones sorted lexicographically as ``np.unique`` does.
    (``np.unique`` sorts the M rows as n-field records: 2 s at M = 100, n = 10^5.)"""
    index, first, counts = {}, [], []
    for r in range(rows.shape[0]):
        key = hashlib.blake2b(rows[r].tobytes(), digest_size=16).digest()
        hits = index.setdefault(key, [])
        for u in hits:
            if np.array_equal(rows[first[u]], rows[r]):
                counts[u] += 1
                break
        else:
            hits.append(len(first))
            first.append(r)
            counts.append(1)

    def compare(u, v):
        differ = np.flatnonzero(rows[first[u]] != rows[first[v]])
        return int(np.sign(rows[first[u], differ[0]] - rows[first[v], differ[0]]))

    order = sorted(range(len(first)), key=functools.cmp_to_key(compare))
    return rows[np.asarray(first, dtype=np.int64)[order]], np.asarray(counts)[order]


def _average_loss(ds, labels, name):
    values = distance_function(name)(ds.unique, labels)
    return float(np.dot(ds.weights, values) / ds.n_draws)


def expected_loss(draws_or_idata, labels, var_name=None, loss="VI"):
    """Posterior expected loss of the partition ``labels``: mean distance to the draws."""
    owner = "expected_loss"
    name, _ = _loss_name(loss, owner)
    ds = draw_set(draws_or_idata, var_name, owner)
    labels = as_labels(getattr(labels, "labels", labels), "labels", owner)
    if labels.shape != (ds.draws.shape[1],):
        raise ValueError(
            f"{owner}: 'labels' must have shape ({ds.draws.shape[1]},) to match the draws; "
            f"got {labels.shape}."
        )
    return _average_loss(ds, labels, name)


def _dahl_labels(ds, cocounts=None):
    if cocounts is None:
        cocounts = coclustering_count_matrix(ds.draws)
    scores = np.empty(ds.unique.shape[0], dtype=np.int64)
    pair_weight_scores(item_major_labels(ds.unique), cocounts, ds.n_draws, scores)
    return canonicalize(ds.unique[int(np.argmin(scores))])


def dahl_estimate(draws_or_idata, var_name=None, loss="binder", method="auto"):
    """Dahl's (2006) least-squares clustering: the draw minimising
    sum_{i<j} (1(z_i = z_j) - psm_ij)^2, i.e. the draw with the smallest expected
    Binder loss among the draws.

    draws_or_idata : ``pm.sample`` result (with ``var_name``) or int labels of shape
        (draws, n) or (chains, draws, n).
    loss : the loss in which ``expected_loss`` of the result is reported.
    method : as :func:`point_estimate`: "matrix" costs O(U n^2 / 2) vectorised
        comparisons and 8 n^2 bytes (U distinct draws, n items), "draws" O(U^2 n / 2)
        and no n x n array; "auto" picks as there. The same draw either way.
    """
    owner = "dahl_estimate"
    name, _ = _loss_name(loss, owner)
    ds = draw_set(draws_or_idata, var_name, owner)
    if _method_name(method, ds.draws.shape[1], ds.unique.shape[0], owner) == "matrix":
        labels = _dahl_labels(ds)
        return PointEstimate(labels, _average_loss(ds, labels, name), name, "dahl")
    labels, value = _dahl_from_draws(ds, name)
    return PointEstimate(labels, value, name, "dahl")


def point_estimate(
    draws_or_idata,
    var_name=None,
    loss="VI",
    n_runs=16,
    seed=None,
    max_blocks=None,
    max_zealous=10,
    p_seq=0.5,
    max_scans=50,
    method="auto",
    seconds=None,
    group_items=True,
):
    """Partition minimising the posterior expected loss, by the SALSO search.

    Dahl, Johnson & Müller (2022): ``n_runs`` independent runs of sequential
    allocation (probability ``p_seq``; otherwise a uniform random start) +
    sweetening scans (at most ``max_scans``) + up to ``max_zealous`` zealous
    updates; the best run wins. Dahl's least-squares draw is also a candidate,
    so the result is never worse than it. Defaults as the R package salso. The runs
    go in parallel, on as many threads as numba's (``numba.set_num_threads``; as
    salso's ``nCores``), each on its own random stream (:func:`run_streams`), so the result
    for a given ``seed`` is the same whatever the number of threads. The search
    skips work it can prove changes nothing (:mod:`pymc_partitions.kernels.salso`:
    zealous updates that restore the partition, items that cannot move): the moves
    are the paper's.

    draws_or_idata : ``pm.sample`` result (with ``var_name``) or int labels of shape
        (draws, n) or (chains, draws, n).
    loss : "VI" (expected variation of information, computed exactly from the draws
        with incremental contingency counts) or "binder" (equal-cost Binder loss,
        from the co-clustering counts).
    max_blocks : most blocks the estimate may have; default the largest number of
        blocks among the draws (as salso). Memory for VI, per thread: 2 * U * L *
        max_blocks bytes (4 from N = 65536 items; U distinct draws, L = most labels
        in a draw) and 8 * G * max_blocks bytes (G distinct item rows; above 1 GiB in
        all, the search evaluates every item in every scan instead).
    seed : int, ``numpy.random.Generator`` or None (fresh entropy): seeds the runs'
        streams (:func:`pymc_partitions.kernels.random.new_stream`).
    method : "auto" (default), "draws" or "matrix": how the expected loss is read.
        "draws" keeps, for every distinct draw, its contingency table against the
        candidate partition, updated as items move (both losses; as the R package
        salso, which works from the draws): O(n U K) per scan over the items and
        2 U L max_blocks bytes, never an n x n array. "matrix" forms the n x n
        co-clustering counts (8 n^2 bytes: 80 GB at n = 10^5) and scans Binder in
        O(n^2); it is faster only for few items and many distinct draws. "auto"
        takes "matrix" when n <= min(U, 2000) and "draws" otherwise. Both give the
        same estimate for the same seed with ``group_items=False`` (same search, same
        random stream; VI searches the draws either way).
    seconds : None (default: no limit, the whole search) or a time budget in seconds,
        as salso's ``seconds``, counted from the call: once it has passed, no further
        run or zealous update starts (the first run's steps 1-2 always complete) and a
        :class:`SearchBudgetWarning` says how many runs were done. The result then
        depends on the machine's speed, not only on ``seed``. With a budget the runs
        go one at a time (on the same streams: within the budget, the same result).
    group_items : True (default): items with the same label in every draw are moved
        as one in the search from the draws (every local optimum of single-item moves
        keeps them together; see :mod:`pymc_partitions.kernels.salso`), shortening
        each scan to the G distinct item rows. Not in Dahl, Johnson & Müller or
        salso; False searches item by item (then "draws" and "matrix" take the
        same steps on the same stream).
    Cost per scan over the items: O(n U K) from the draws; O(n^2) for Binder from
    the matrix. Dahl's draw costs O(U^2 n) from the draws, O(U n^2) from the matrix.
    Returns a :class:`PointEstimate`.
    """
    owner = "point_estimate"
    name, kind = _loss_name(loss, owner)
    n_runs = integer_arg("n_runs", n_runs, owner, minimum=1)
    max_scans = integer_arg("max_scans", max_scans, owner, minimum=1)
    max_zealous = integer_arg("max_zealous", max_zealous, owner, minimum=0)
    p_seq = number_arg("p_seq", p_seq, owner, low=0.0, high=1.0)
    seed = seed_arg("seed", seed, owner)
    if seconds is not None:
        seconds = number_arg("seconds", seconds, owner, low=0.0, low_open=True)
    started = time.monotonic()
    ds = draw_set(draws_or_idata, var_name, owner)
    n = ds.draws.shape[1]
    if max_blocks is None:
        max_blocks = int(n_blocks(ds.unique).max())
    max_blocks = integer_arg("max_blocks", max_blocks, owner, minimum=1)
    if max_blocks > n:
        raise ValueError(
            f"{owner}: 'max_blocks' must be an integer in [1, n={n}]; got {max_blocks!r}."
        )

    n_unique = ds.unique.shape[0]
    method = _method_name(method, n, n_unique, owner)
    # Runs in parallel, one slot of buffers per thread (numba's thread count; all runs at
    # once without a budget; with one, a run or zealous update per call, so Python can stop).
    slots = 1 if seconds is not None else max(1, min(n_runs, numba.get_num_threads()))
    # Both paths run the same kernel on the same random streams; their block deltas are
    # equal (Binder: integers, exact in float64), so item by item (group_items=False)
    # they return the same estimate.
    cocounts = coclustering_count_matrix(ds.draws) if method == "matrix" else None
    if kind == 1 or method == "draws":
        _check_counts_memory(slots * max_blocks, n_unique, ds.n_labels, n, owner)
        labels_t = np.ascontiguousarray(ds.unique.T)
        cnt = np.zeros((slots, n_unique, ds.n_labels, max_blocks), dtype=_count_dtype(n))
        search_counts = np.zeros((1, 1), dtype=np.int64)
        search_kind = 1
    else:
        labels_t = np.zeros((n, 1), dtype=np.int64)
        # Unused by Binder; the VI search's dtype, so one compiled kernel serves both.
        cnt = np.zeros((slots, 1, 1, max_blocks), dtype=_count_dtype(n))
        search_counts = cocounts
        search_kind = 0
    ftab, gtab = _loss_tables(n, kind)
    # Items with the same label in every draw are searched as one (kernels/salso.py):
    # groups in the order of their first item, so without repeats nothing changes.
    use_groups = search_kind == 1 and group_items
    groups = _group_items(ds.unique.T) if method == "draws" or use_groups else None
    if use_groups:
        labels_t, item_w, group_of = groups
    else:
        item_w, group_of = np.ones(labels_t.shape[0], dtype=np.int64), None
    n_search = labels_t.shape[0] if search_kind == 1 else n

    c, order, saved, members = (np.empty((slots, n_search), dtype=np.int64) for _ in range(4))
    size = np.empty((slots, max_blocks), dtype=np.int64)
    acc = np.empty((slots, max_blocks), dtype=np.float64)
    margin = np.empty((slots, n_search))
    # the sweetening's gaps (kernels/salso.py); too large, (1, 1) turns the skipping off
    small = 8.0 * slots * n_search * max_blocks <= _GAP_LIMIT_BYTES
    gap = np.empty((slots, n_search, max_blocks) if small else (slots, 1, 1))
    drift = np.empty((slots, max_blocks))
    state = np.zeros((slots, 2))
    streams = run_streams(seed, n_runs)
    runs_c = np.empty((n_runs, n_search), dtype=np.int64)
    runs_loss = np.empty(n_runs)
    fixed = (search_kind, float(ds.n_draws), search_counts, labels_t, item_w, ds.weights, gtab,
             ftab, max_blocks, float(p_seq), int(max_scans))
    buffers = (cnt, c, size, order, acc, saved, members, margin, gap, drift, state)
    budget_hit = False
    done = n_runs
    if seconds is None:
        outputs = (streams, runs_c, runs_loss, *buffers)
        if slots == 1:
            salso_runs(*fixed, int(max_zealous), 0, 1, *outputs)
        else:  # the kernel releases the GIL: one thread per slot of buffers
            with ThreadPoolExecutor(slots) as pool:
                futures = [pool.submit(salso_runs, *fixed, int(max_zealous), t, t + 1, *outputs)
                           for t in range(slots)]
                for future in futures:
                    future.result()
    else:
        deadline = started + seconds
        for run in range(n_runs):
            if run > 0 and time.monotonic() > deadline:
                budget_hit, done = True, run
                break
            one = (streams[run:run + 1], runs_c[run:run + 1], runs_loss[run:run + 1])
            salso_runs(*fixed, 0, 0, 1, *one, *buffers)  # steps 1-2
            for _ in range(int(max_zealous)):
                if time.monotonic() > deadline:
                    budget_hit = True
                    break
                salso_runs(*fixed, -1, 0, 1, *one, *buffers)
            if budget_hit:
                done = run + 1
                break
    candidates = {}
    for run in range(done):
        run_c = runs_c[run]
        labels = canonicalize(run_c if group_of is None else run_c[group_of])
        candidates.setdefault(labels.tobytes(), labels)
    if budget_hit:
        warnings.warn(
            f"point_estimate: the time budget seconds={seconds:g} ran out after {done} of "
            f"{n_runs} runs (zealous updates included); the best partition found is "
            f"returned. Raise 'seconds' (or lower 'n_runs' / 'max_zealous') for a fuller "
            f"search.",
            SearchBudgetWarning,
            stacklevel=2,
        )
    best_labels, best = None, np.inf
    for labels in candidates.values():
        value = _average_loss(ds, labels, name)
        if value < best:
            best_labels, best = labels, value
    if method == "matrix":
        dahl = _dahl_labels(ds, cocounts)
        dahl_value = _average_loss(ds, dahl, name)
    else:
        dahl, dahl_value = _dahl_from_draws(ds, name, groups)
    if dahl_value < best - 1e-12 * max(1.0, abs(best)):
        return PointEstimate(dahl, dahl_value, name, "dahl")
    return PointEstimate(best_labels, best, name, "salso")


def run_streams(seed, n_runs):
    """(n_runs, 4) uint64: one :mod:`~pymc_partitions.kernels.random` stream per SALSO
    run, from children of one ``SeedSequence`` (``spawn``) whose entropy is the stream
    :func:`~pymc_partitions.kernels.random.new_stream` makes of ``seed``: run r's
    stream depends on ``seed`` and r only, so runs may go in parallel."""
    root = np.random.SeedSequence([int(w) for w in new_stream(seed)])
    return np.stack([new_stream(child) for child in root.spawn(n_runs)])


_METHODS = ("auto", "draws", "matrix")
#: "auto" uses the n x n co-clustering counts only up to this many items.
MATRIX_MAX_ITEMS = 2000


def _method_name(method, n, n_unique, owner):
    if not isinstance(method, str) or method.lower() not in _METHODS:
        raise ValueError(
            f"{owner}: 'method' = {method!r} is not supported: use 'auto', 'draws' (contingency "
            f"tables of the draws, no n x n array) or 'matrix' (n x n co-clustering counts)."
        )
    method = method.lower()
    if method == "auto":
        # the matrix pays O(U n^2) to build and O(n) per item move; the draws O(U K) per move
        return "matrix" if n <= min(n_unique, MATRIX_MAX_ITEMS) else "draws"
    if method == "matrix":
        _check_matrix_memory(n, owner)
    return method


def _check_matrix_memory(n, owner):
    need = 8.0 * n * n
    if need > _MATRIX_LIMIT_BYTES:
        raise ValueError(
            f"{owner}: method='matrix' needs an n x n int64 co-clustering matrix of "
            f"{need / 2**30:.1f} GiB for n = {n} items (limit {_MATRIX_LIMIT_BYTES / 2**30:.0f} "
            f"GiB). Use method='draws' (or 'auto'), which works from the draws."
        )


def _check_counts_memory(max_blocks, n_unique, n_labels, n, owner):
    need = np.dtype(_count_dtype(n)).itemsize * float(max_blocks) * n_unique * n_labels
    if need > _CNT_LIMIT_BYTES:
        raise ValueError(
            f"{owner}: the search needs {need / 2**30:.1f} GiB of contingency counts "
            f"({n_unique} distinct draws x {n_labels} labels x max_blocks = {max_blocks}); "
            "lower 'max_blocks' or thin the draws."
        )


def _count_dtype(n):
    return np.uint16 if n < 2**16 else np.int32


def _loss_tables(n, kind):
    """(f, g) for x = 0..n+1: f(x) the loss's function of a block or cell size, g(x) =
    f(x + 1) - f(x) the change when an item joins. VI f(x) = x log x; Binder f(x) =
    x (x - 1) / 2, the pairs in a block, so g(x) = x (Dahl, Johnson & Müller 2022, §3:
    both losses are sums of f over the contingency table's cells and margins; with
    f(0) = f(1) = 0 an empty block gains 0)."""
    x = np.arange(n + 2, dtype=np.float64)
    if kind == 0:
        f = x * (x - 1.0) / 2.0
    else:
        f = np.where(x > 0, x * np.log(np.maximum(x, 1.0)), 0.0)
    return f, np.append(np.diff(f), 0.0)


def _group_items(labels_t):
    """Rows of (n, U) item-major labels grouped when equal: (distinct rows in the order
    of their first item, (G,) int64 counts, (n,) group of each item)."""
    rows = np.ascontiguousarray(labels_t)
    keys = rows.view(np.dtype((np.void, rows.itemsize * rows.shape[1]))).ravel()
    _, first, inverse, counts = np.unique(keys, return_index=True, return_inverse=True,
                                          return_counts=True)
    by_first = np.argsort(first)
    rank = np.empty_like(by_first)
    rank[by_first] = np.arange(by_first.shape[0])
    return (np.ascontiguousarray(rows[first[by_first]]), counts[by_first].astype(np.int64),
            rank[inverse.ravel()])


def _dahl_from_draws(ds, name, groups=None):
    """Dahl's draw without the n x n matrix: the distinct draw with the smallest
    expected Binder loss, from the pairs each two distinct draws share
    (:func:`~pymc_partitions.kernels.salso.draw_pair_counts`, O(U^2 G / 2) for G
    distinct item rows; ``groups`` = :func:`_group_items` of the draws if known). The
    scores are the integers :func:`pair_weight_scores` gives, so the argmin (the first
    of tied draws) is the matrix path's."""
    rows, item_w, _ = _group_items(ds.unique.T) if groups is None else groups
    n_unique = ds.unique.shape[0]
    shared = np.empty((n_unique, n_unique), dtype=np.int64)
    draw_pair_counts(np.ascontiguousarray(rows.T), item_w,
                     np.zeros((ds.n_labels, ds.n_labels), np.int64), shared)
    weights = ds.weights.astype(np.int64)
    scores = int(weights.sum()) * np.diag(shared) - 2 * (shared @ weights)
    labels = canonicalize(ds.unique[int(np.argmin(scores))])
    return labels, _average_loss(ds, labels, name)


def n_blocks(draws):
    """Number of blocks of each row of a (M, n) label array, (M,) int64."""
    draws = np.asarray(draws)
    if draws.min() >= 0 and draws.max() < 4 * draws.shape[1]:  # compact labels: count them
        return np.array([np.count_nonzero(np.bincount(row)) for row in draws], dtype=np.int64)
    ordered = np.sort(draws, axis=1)
    return (np.diff(ordered, axis=1) != 0).sum(axis=1) + 1
