"""Per-block sufficient statistics for the collapsed likelihoods' PyTensor log densities.

A collapsed likelihood's log density is a sum over blocks of a function of the
hyperparameters and the block's sufficient statistics (sizes, sums, centred sums
of squares, scatter matrices, edge counts). Computing the statistics from
``(labels, data)`` costs O(N D); everything after them costs O(K D) (O(K D^2) or
O(K D^3) for dense Gaussians). NUTS evaluates the log density and its gradient at
every leapfrog step while the partition stays fixed (the partition is a discrete
variable another step updates), so a graph that recomputed segment sums over the
N rows at every step paid O(N D) for what changes once per iteration.

:class:`BlockStatistics` is a PyTensor ``Op`` from ``(labels, *data)`` to
``(ok, *statistics of the K non-empty blocks)``, whose result is memoised on its
inputs: an evaluation whose labels (and data) equal the previous evaluation's
returns copies of the stored statistics, O(K D), after an O(N) comparison of the
labels' bytes (a ``memcmp``, ~15 µs at N = 30,000). A data input that is a graph
constant is never compared; any other data input (``pm.Data``, a value given to
``pm.logp``) is compared byte by byte against a private copy, so a new array, new
values of the same shape or an array modified in place all recompute: the memo
never serves statistics of other data. The log density and its gradient with
respect to the hyperparameters are then ordinary PyTensor graphs on the
statistics; the statistics have no gradient (labels are integers, data are
observed): the op declares its inputs disconnected.

Under PyTensor's numba backend (PyMC 6's default linker) the op runs its native
implementation instead (``kernels.statistics.<name>_op``, registered by
the hook ``hooks.numba_block_statistics``): the same outputs, recomputed from the labels at
every call, O(N D) in a compiled loop, and a graph numba can cache. The memo above
is the Python linkers' (PyMC 5's C backend).

Subclasses, one per family of statistics, say what they output
(:meth:`BlockStatistics.output_types`), what they derive from the data alone once
per data value (:meth:`BlockStatistics.prepare`: validity, data-only constants) and
from labels and data (:meth:`BlockStatistics.compute`). ``ok`` is False when a
label lies outside [0, n) or the data fail the family's check (then the
likelihoods' log density is -inf, as before); the statistics are then those of
the clipped labels.
"""

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import DisconnectedType
from pytensor.graph.basic import Apply, Constant
from pytensor.graph.op import Op
from scipy.special import gammaln

from pymc_partitions.kernels import statistics as kernels

_MEMO = "block_statistics_memo"


def compact_labels(labels, n):
    """``(labels_ok, idx, sizes)`` for a label vector of ``n`` items: ``idx`` (n,)
    int64 numbers the non-empty blocks 0..K-1 in order of their labels, ``sizes``
    (K,) float64 their sizes. Labels outside [0, n) are clipped and flagged."""
    ok, idx, sizes = kernels.compact_labels(np.ascontiguousarray(labels), n)
    return bool(ok), idx, sizes


def block_sums(idx, sizes, values):
    """Sums of the rows of ``values`` (n, ...) by block: (K, ...) float64."""
    flat = np.ascontiguousarray(values).reshape(values.shape[0], -1)
    out = kernels.block_sums(idx, sizes.shape[0], flat)
    return out.reshape((sizes.shape[0],) + values.shape[1:])


def block_moments(idx, sizes, data):
    """``(mean, m2)`` (K, D): block means and centred sums of squares (two passes,
    no cancellation)."""
    return kernels.block_moments(idx, sizes, np.ascontiguousarray(data, dtype=np.float64))


class BlockStatistics(Op):
    """``(labels (n,) int, *data) -> (ok, *statistics)``, memoised (module docstring).

    Subclasses implement :meth:`output_types`, :meth:`prepare` and :meth:`compute`.
    """

    __props__ = ()
    #: How many data inputs follow the labels.
    n_data = 1
    #: Name of the native implementation in :mod:`pymc_partitions.kernels.statistics`.
    native = None

    def make_node(self, labels, *data):
        labels = pt.as_tensor_variable(labels)
        if labels.ndim != 1 or not labels.dtype.startswith(("int", "uint")):
            raise TypeError(f"{type(self).__name__}: labels must be an integer vector, got "
                            f"{labels.type}.")
        if len(data) != self.n_data:
            raise TypeError(f"{type(self).__name__}: expected {self.n_data} data inputs.")
        data = [pt.as_tensor_variable(d).astype("float64") for d in data]
        outputs = [pt.tensor(dtype="bool", shape=())]
        outputs += [t() for t in self.output_types(*data)]
        return Apply(self, [labels, *data], outputs)

    def output_types(self, *data):  # pragma: no cover - overridden
        """The statistics' tensor types (after ``ok``)."""
        raise NotImplementedError

    def prepare(self, *data):
        """``(data_ok, prepared)`` from the data alone: whether they pass the family's
        check, and anything :meth:`compute` reuses while the data are unchanged."""
        return True, data

    def compute(self, idx, sizes, prepared):  # pragma: no cover - overridden
        """The statistics (a tuple of arrays, in :meth:`output_types` order)."""
        raise NotImplementedError

    def perform(self, node, inputs, outputs):
        labels, *data = inputs
        memo = getattr(node.tag, _MEMO, None)
        varying = [not isinstance(v, Constant) for v in node.inputs[1:]]
        if memo is None:
            memo = {"labels": None, "data": None, "prepared": None, "result": None}
            setattr(node.tag, _MEMO, memo)
        same_data = memo["data"] is not None and all(
            not vary or _same(old, new) for vary, old, new in zip(varying, memo["data"], data))
        if not same_data:
            memo["prepared"] = self.prepare(*[np.asarray(d, dtype=np.float64) for d in data])
            memo["data"] = [np.array(d, copy=True) if vary else None
                            for vary, d in zip(varying, data)]
            memo["labels"] = None
        if memo["labels"] is None or not _same(memo["labels"], labels):
            labels_ok, idx, sizes = compact_labels(labels, labels.shape[0])
            data_ok, prepared = memo["prepared"]
            stats = self.compute(idx, sizes, prepared)
            memo["result"] = (np.array(labels_ok and data_ok),) + tuple(
                np.asarray(s, dtype=np.float64) for s in stats)
            memo["labels"] = np.array(labels, copy=True)
        # Copies: a downstream op may work in place on its input buffers.
        for storage, value in zip(outputs, memo["result"]):
            storage[0] = value.copy()

    def connection_pattern(self, node):
        return [[False] * len(node.outputs) for _ in node.inputs]

    def L_op(self, inputs, outputs, output_grads):
        # Labels are integers and data observed: no gradient flows to them.
        return [DisconnectedType()() for _ in inputs]


def _same(old, new):
    """Whether two arrays hold the same bytes (same dtype and shape)."""
    new = np.asarray(new)
    return (old.shape == new.shape and old.dtype == new.dtype
            and old.tobytes() == np.ascontiguousarray(new).tobytes())


def _stat(shape):
    return lambda: pt.tensor(dtype="float64", shape=shape)


def _columns(data):
    return data.type.shape[1] if data.ndim > 1 else None


class NormalMoments(BlockStatistics):
    """(n, D) real data -> ``ok, m (K, D), mean (K, D), m2 (K, D)``: block sizes,
    means and centred sums of squares. Collapsed Normal, Normal-Inverse-Gamma,
    k-means energy.

    Why the sizes are repeated over the D columns rather than a (K, 1) column: the
    per-dimension hyperparameters are length-D vectors, and a constant one (a
    scalar broadcast to D, e.g. the default ``b=1.0``) would then be what broadcasts
    the column to (K, D). PyTensor 2's stabiliser ``local_log1p`` rewrites
    ``log(c + x)`` with c summing to 1 into ``log1p(x)`` allocated to the output's
    shape, read from the very node it replaces when no shape feature is attached
    (``rewrite_pregrad``, which PyMC runs before taking the gradient): the rewrite
    re-applies to that node forever and ``pm.sample`` never finishes compiling
    (``tests/test_compile_all_likelihoods.py``). With every operand of full shape, x
    already has the output's shape and the rewrite is a plain ``log1p(x)``. The
    same holds for :class:`BinarySums` and :class:`CountSums`.
    """

    native = "normal_moments_op"

    def output_types(self, data):
        shape = (None, _columns(data))
        return [_stat(shape)] * 3

    def compute(self, idx, sizes, prepared):
        (data,) = prepared
        mean, m2 = block_moments(idx, sizes, data)
        return np.repeat(sizes[:, None], data.shape[1], axis=1), mean, m2


class BinarySums(BlockStatistics):
    """(n, D) 0/1 data -> ``ok, m (K, D), ones (K, D)``; ``ok`` also checks the data
    are 0/1 (Beta-Bernoulli)."""

    native = "binary_sums_op"

    def output_types(self, data):
        shape = (None, _columns(data))
        return [_stat(shape)] * 2

    def prepare(self, data):
        return bool(np.all((data == 0) | (data == 1))), (data,)

    def compute(self, idx, sizes, prepared):
        (data,) = prepared
        return np.repeat(sizes[:, None], data.shape[1], axis=1), block_sums(idx, sizes, data)


def _is_counts(data):
    return bool(np.all((data >= 0) & (data == np.floor(data)) & np.isfinite(data)))


class CountSums(BlockStatistics):
    """(n, D) count data -> ``ok, m (K, D), sums (K, D), log_factorials ()``: the
    last is sum over all entries of log x!, a data-only term (Poisson-Gamma)."""

    native = "count_sums_op"

    def output_types(self, data):
        shape = (None, _columns(data))
        return [_stat(shape), _stat(shape), _stat(())]

    def prepare(self, data):
        ok = _is_counts(data)
        log_fact = float(gammaln(data + 1.0).sum()) if ok else 0.0
        return ok, (data, log_fact)

    def compute(self, idx, sizes, prepared):
        data, log_fact = prepared
        return (np.repeat(sizes[:, None], data.shape[1], axis=1), block_sums(idx, sizes, data),
                log_fact)


class CountMatrices(BlockStatistics):
    """(n, P, C) counts and (n, P) totals -> ``ok, m (K,), counts (K, P, C),
    log_coefficient ()``: the multinomial coefficients' log, summed over items and
    positions (data only); ``ok`` also checks the counts and that each item's
    row sums equal its totals (Dirichlet-multinomial)."""

    native = "count_matrices_op"

    n_data = 2

    def output_types(self, data, totals):
        return [_stat((None,)), _stat((None,) + tuple(data.type.shape[1:])), _stat(())]

    def prepare(self, data, totals):
        item_totals = data.sum(axis=2)
        ok = _is_counts(data) and item_totals.shape == totals.shape and bool(
            np.all(item_totals == totals))
        log_coef = (float(gammaln(item_totals + 1.0).sum() - gammaln(data + 1.0).sum())
                    if ok else 0.0)
        return ok, (data, log_coef)

    def compute(self, idx, sizes, prepared):
        data, log_coef = prepared
        return sizes, block_sums(idx, sizes, data), log_coef


class MeanScatter(BlockStatistics):
    """(n, D) real data -> ``ok, m (K,), mean (K, D), scatter (K, D, D)``: block sizes,
    means and centred scatter matrices sum_i (x_i - mean)(x_i - mean)^T
    (dense Gaussians: known covariances, Normal-Inverse-Wishart)."""

    native = "mean_scatter_op"

    def output_types(self, data):
        d = _columns(data)
        return [_stat((None,)), _stat((None, d)), _stat((None, d, d))]

    def compute(self, idx, sizes, prepared):
        (data,) = prepared
        mean = block_sums(idx, sizes, data) / sizes[:, None]
        return sizes, mean, kernels.block_scatter(idx, mean, data)


class EdgeCounts(BlockStatistics):
    """(n, n) adjacency -> ``ok, m (K,), edges (K, K)``: block sizes and edge counts
    between blocks k != l and within block k (diagonal); ``ok`` also checks a
    symmetric 0/1 matrix with zero diagonal (IRM). The edge list is read from the
    data once per data value; each labelling then costs O(E + K^2)."""

    native = "edge_counts_op"

    def output_types(self, data):
        return [_stat((None,)), _stat((None, None))]

    def prepare(self, data):
        ok = bool(data.ndim == 2 and data.shape[0] == data.shape[1]
                  and np.all((data == 0) | (data == 1)) and np.array_equal(data, data.T)
                  and not np.any(np.diagonal(data)))
        rows, cols = np.nonzero(np.triu(data, 1))
        return ok, (rows, cols)

    def compute(self, idx, sizes, prepared):
        rows, cols = prepared
        K = sizes.shape[0]
        a, b = idx[rows], idx[cols]
        counts = np.bincount(a * K + b, minlength=K * K).reshape(K, K).astype(np.float64)
        edges = counts + counts.T - np.diag(np.diagonal(counts))
        return sizes, edges


normal_moments = NormalMoments()
binary_sums = BinarySums()
count_sums = CountSums()
count_matrices = CountMatrices()
mean_scatter = MeanScatter()
edge_counts = EdgeCounts()

__all__ = [
    "BinarySums",
    "BlockStatistics",
    "CountMatrices",
    "CountSums",
    "EdgeCounts",
    "MeanScatter",
    "NormalMoments",
    "binary_sums",
    "block_moments",
    "block_sums",
    "compact_labels",
    "count_matrices",
    "count_sums",
    "edge_counts",
    "mean_scatter",
    "normal_moments",
]
