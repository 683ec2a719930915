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

from typing import NamedTuple

import numpy as np

from pymc_partitions.analysis._draws import read_draws
from pymc_partitions.analysis.distances import compact_labels, distance_function
from pymc_partitions.analysis.similarity import coclustering_count_matrix, item_major_labels
from pymc_partitions.distributions.validation import integer_arg, number_arg, seed_arg
from pymc_partitions.kernels.random import new_stream
from pymc_partitions.kernels.salso import pair_weight_scores, salso_run
from pymc_partitions.partitions import as_labels, canonicalize

_LOSSES = {"vi": ("VI", 1), "binder": ("binder", 0)}
_CNT_LIMIT_BYTES = 2 << 30


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
    unique, counts = np.unique(draws, axis=0, return_counts=True)
    return DrawSet(unique, counts.astype(np.float64), draws, n_labels)


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


def dahl_estimate(draws_or_idata, var_name=None, loss="binder"):
    """Dahl's (2006) least-squares clustering: the draw minimising
    sum_{i<j} (1(z_i = z_j) - psm_ij)^2, i.e. the draw with the smallest expected
    Binder loss among the draws.

    draws_or_idata : ``pm.sample`` result (with ``var_name``) or int labels of shape
        (draws, n) or (chains, draws, n).
    loss : the loss in which ``expected_loss`` of the result is reported.
    Cost O(U n^2 / 2) vectorised comparisons (U distinct draws, n items).
    """
    name, _ = _loss_name(loss, "dahl_estimate")
    ds = draw_set(draws_or_idata, var_name, "dahl_estimate")
    labels = _dahl_labels(ds)
    return PointEstimate(labels, _average_loss(ds, labels, name), name, "dahl")


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
):
    """Partition minimising the posterior expected loss, by the SALSO search.

    Dahl, Johnson & Müller (2022): ``n_runs`` independent runs of sequential
    allocation (probability ``p_seq``; otherwise a uniform random start) +
    sweetening scans (at most ``max_scans``) + up to ``max_zealous`` zealous
    updates; the best run wins. Dahl's least-squares draw is also a candidate,
    so the result is never worse than it. Defaults as the R package salso.

    draws_or_idata : ``pm.sample`` result (with ``var_name``) or int labels of shape
        (draws, n) or (chains, draws, n).
    loss : "VI" (expected variation of information, computed exactly from the draws
        with incremental contingency counts) or "binder" (equal-cost Binder loss,
        from the co-clustering counts).
    max_blocks : most blocks the estimate may have; default the largest number of
        blocks among the draws (as salso). Memory for VI: 2 * U * L * max_blocks
        bytes (U distinct draws, L = most labels in a draw).
    seed : int, ``numpy.random.Generator`` or None (fresh entropy): seeds the runs'
        stream (:func:`pymc_partitions.kernels.random.new_stream`).
    Cost per scan over the items: O(n^2) for Binder, O(n U K) for VI.
    Returns a :class:`PointEstimate`.
    """
    owner = "point_estimate"
    name, kind = _loss_name(loss, owner)
    n_runs = integer_arg("n_runs", n_runs, owner, minimum=1)
    max_scans = integer_arg("max_scans", max_scans, owner, minimum=1)
    max_zealous = integer_arg("max_zealous", max_zealous, owner, minimum=0)
    p_seq = number_arg("p_seq", p_seq, owner, low=0.0, high=1.0)
    seed = seed_arg("seed", seed, owner)
    ds = draw_set(draws_or_idata, var_name, owner)
    n = ds.draws.shape[1]
    if max_blocks is None:
        max_blocks = int(n_blocks(ds.unique).max())
    max_blocks = integer_arg("max_blocks", max_blocks, owner, minimum=1)
    if max_blocks > n:
        raise ValueError(
            f"{owner}: 'max_blocks' must be an integer in [1, n={n}]; got {max_blocks!r}."
        )

    cocounts = coclustering_count_matrix(ds.draws)
    n_unique = ds.unique.shape[0]
    if kind == 1:
        need = (2.0 if n < 2**16 else 4.0) * max_blocks * n_unique * ds.n_labels
        if need > _CNT_LIMIT_BYTES:
            raise ValueError(
                f"The VI search needs {need / 2**30:.1f} GiB of contingency counts; "
                "lower 'max_blocks' or thin the draws."
            )
        labels_t = np.ascontiguousarray(ds.unique.T)
        cnt_type = np.uint16 if n < 2**16 else np.int32
        cnt = np.zeros((n_unique, ds.n_labels, max_blocks), dtype=cnt_type)
        search_counts = np.zeros((1, 1), dtype=np.int64)
    else:
        labels_t = np.zeros((n, 1), dtype=np.int64)
        # Unused by Binder; the VI search's dtype, so one compiled salso_run serves both.
        cnt = np.zeros((1, 1, max_blocks), dtype=np.uint16 if n < 2**16 else np.int32)
        search_counts = cocounts
    x = np.arange(n + 2, dtype=np.float64)
    xlogx = np.where(x > 0, x * np.log(np.maximum(x, 1.0)), 0.0)
    gtab = np.append(np.diff(xlogx), 0.0)

    c = np.empty(n, dtype=np.int64)
    size = np.empty(max_blocks, dtype=np.int64)
    order, saved, members = (np.empty(n, dtype=np.int64) for _ in range(3))
    acc = np.empty(max_blocks, dtype=np.float64)
    out_loss = np.empty(1)
    stream = new_stream(seed)  # one stream, continued from run to run
    candidates = {}
    for _ in range(int(n_runs)):
        salso_run(
            kind, float(ds.n_draws), search_counts, labels_t, ds.weights, cnt, gtab, c, size,
            order, acc, saved, members, max_blocks, float(p_seq), int(max_scans),
            int(max_zealous), stream, out_loss,
        )  # fmt: skip
        labels = canonicalize(c)
        candidates.setdefault(labels.tobytes(), labels)
    best_labels, best = None, np.inf
    for labels in candidates.values():
        value = _average_loss(ds, labels, name)
        if value < best:
            best_labels, best = labels, value
    dahl = _dahl_labels(ds, cocounts)
    dahl_value = _average_loss(ds, dahl, name)
    if dahl_value < best - 1e-12 * max(1.0, abs(best)):
        return PointEstimate(dahl, dahl_value, name, "dahl")
    return PointEstimate(best_labels, best, name, "salso")


def n_blocks(draws):
    """Number of blocks of each row of a (M, n) label array, (M,) int64."""
    ordered = np.sort(draws, axis=1)
    return (np.diff(ordered, axis=1) != 0).sum(axis=1) + 1
