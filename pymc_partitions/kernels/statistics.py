"""Per-block statistics of a labelling, over the K non-empty blocks only.

What the collapsed likelihoods' PyTensor log densities
(:mod:`pymc_partitions.distributions.statistics`) and the hyperparameter slice
step read once per partition: O(N D) loops without NumPy's per-call overhead
(at N = 300, D = 2, NumPy's bincount-based version cost ~60 µs, these ~3 µs).
They allocate their outputs (numba's runtime), so they are plain ``njit``
functions, not allocation-free entries.
"""

import math

import numpy as np
from numba import njit

allocating = njit(cache=True)


@allocating
def compact_labels(labels, n):
    """``(ok, idx, sizes)`` for an (N,) integer label vector of n possible blocks:
    ``idx`` (N,) int64 numbers the non-empty blocks 0..K-1 in order of their
    labels, ``sizes`` (K,) float64 their sizes; labels outside [0, n) are clipped
    to it and make ``ok`` False."""
    counts = np.zeros(max(n, 1), dtype=np.int64)
    ok = True
    top = max(n - 1, 0)
    for i in range(labels.shape[0]):
        label = labels[i]
        if label < 0:
            label = 0
            ok = False
        elif label > top:
            label = top
            ok = False
        counts[label] += 1
    remap = np.empty(counts.shape[0], dtype=np.int64)
    K = 0
    for label in range(counts.shape[0]):
        if counts[label] > 0:
            remap[label] = K
            K += 1
    sizes = np.empty(K, dtype=np.float64)
    for label in range(counts.shape[0]):
        if counts[label] > 0:
            sizes[remap[label]] = counts[label]
    idx = np.empty(labels.shape[0], dtype=np.int64)
    for i in range(labels.shape[0]):
        idx[i] = remap[min(max(labels[i], 0), top)]
    return ok, idx, sizes


@allocating
def block_sums(idx, K, x):
    """(K, C) float64 sums by block of the rows of ``x`` (N, C) (any real dtype),
    ``idx`` (N,) int64 block numbers in [0, K)."""
    out = np.zeros((K, x.shape[1]), dtype=np.float64)
    for i in range(x.shape[0]):
        k = idx[i]
        for c in range(x.shape[1]):
            out[k, c] += x[i, c]
    return out


@allocating
def block_moments(idx, sizes, x):
    """``(mean, m2)``, each (K, D) float64: block means and centred sums of squares
    sum_i (x_id - mean_kd)^2 of ``x`` (N, D) float64 (two passes: no cancellation)."""
    K = sizes.shape[0]
    mean = block_sums(idx, K, x)
    for k in range(K):
        for d in range(x.shape[1]):
            mean[k, d] /= sizes[k]
    m2 = np.zeros((K, x.shape[1]), dtype=np.float64)
    for i in range(x.shape[0]):
        k = idx[i]
        for d in range(x.shape[1]):
            r = x[i, d] - mean[k, d]
            m2[k, d] += r * r
    return mean, m2


@allocating
def block_scatter(idx, mean, x):
    """(K, D, D) float64 centred scatter matrices sum_i (x_i - mean_k)(x_i - mean_k)^T
    of ``x`` (N, D) float64 given the (K, D) block means."""
    K, D = mean.shape
    out = np.zeros((K, D, D), dtype=np.float64)
    r = np.empty(D, dtype=np.float64)
    for i in range(x.shape[0]):
        k = idx[i]
        for d in range(D):
            r[d] = x[i, d] - mean[k, d]
        for d in range(D):
            for e in range(D):
                out[k, d, e] += r[d] * r[e]
    return out


# --- The statistics ops' native implementations -----------------------------------
# One function per op of distributions.statistics, ``(labels, *data) -> (ok, *stats)``
# with the op's outputs (``ok`` and scalars as 0-d arrays). PyTensor's numba backend
# runs these (hooks.numba_block_statistics) instead of the op's Python ``perform``,
# which it could only call in object mode. They recompute from the labels at every
# call: the memo of ``perform`` lives in Python objects, and an O(N D) loop here
# costs about what its comparison of the labels' bytes does.


@allocating
def _repeat_sizes(sizes, D):
    m = np.empty((sizes.shape[0], D), dtype=np.float64)
    for k in range(sizes.shape[0]):
        for d in range(D):
            m[k, d] = sizes[k]
    return m


@allocating
def _are_counts(x):
    for v in np.ascontiguousarray(x).ravel():
        if not (v >= 0.0 and v == math.floor(v) and math.isfinite(v)):
            return False
    return True


@allocating
def _sum_log_factorials(x):
    total = 0.0
    for v in np.ascontiguousarray(x).ravel():
        total += math.lgamma(v + 1.0)
    return total


@allocating
def normal_moments_op(labels, data):
    """NormalMoments: ``ok, m (K, D), mean (K, D), m2 (K, D)`` of ``data`` (N, D)."""
    ok, idx, sizes = compact_labels(labels, labels.shape[0])
    mean, m2 = block_moments(idx, sizes, np.ascontiguousarray(data))
    return np.array(ok), _repeat_sizes(sizes, data.shape[1]), mean, m2


@allocating
def binary_sums_op(labels, data):
    """BinarySums: ``ok, m (K, D), ones (K, D)``; ``ok`` also requires 0/1 data."""
    ok, idx, sizes = compact_labels(labels, labels.shape[0])
    for v in np.ascontiguousarray(data).ravel():
        if v != 0.0 and v != 1.0:
            ok = False
            break
    ones = block_sums(idx, sizes.shape[0], data)
    return np.array(ok), _repeat_sizes(sizes, data.shape[1]), ones


@allocating
def count_sums_op(labels, data):
    """CountSums: ``ok, m (K, D), sums (K, D), log_factorials ()``; the last is
    sum log x! over all entries (0 when the data are not counts)."""
    ok, idx, sizes = compact_labels(labels, labels.shape[0])
    counts = _are_counts(data)
    log_fact = _sum_log_factorials(data) if counts else 0.0
    sums = block_sums(idx, sizes.shape[0], data)
    return (np.array(ok and counts), _repeat_sizes(sizes, data.shape[1]), sums,
            np.array(log_fact))


@allocating
def count_matrices_op(labels, data, totals):
    """CountMatrices: ``ok, m (K,), counts (K, P, C), log_coefficient ()`` of
    ``data`` (N, P, C) with row totals ``totals`` (N, P)."""
    ok, idx, sizes = compact_labels(labels, labels.shape[0])
    N, P, C = data.shape
    counts_ok = _are_counts(data) and totals.shape[0] == N and totals.shape[1] == P
    log_coef = 0.0
    if counts_ok:
        for i in range(N):
            for p in range(P):
                row = 0.0
                for c in range(C):
                    row += data[i, p, c]
                if row != totals[i, p]:
                    counts_ok = False
                log_coef += math.lgamma(row + 1.0)
        log_coef = log_coef - _sum_log_factorials(data) if counts_ok else 0.0
    flat = np.ascontiguousarray(data).reshape(N, P * C)
    sums = block_sums(idx, sizes.shape[0], flat).reshape(sizes.shape[0], P, C)
    return np.array(ok and counts_ok), sizes, sums, np.array(log_coef)


@allocating
def mean_scatter_op(labels, data):
    """MeanScatter: ``ok, m (K,), mean (K, D), scatter (K, D, D)``."""
    ok, idx, sizes = compact_labels(labels, labels.shape[0])
    mean = block_sums(idx, sizes.shape[0], data)
    for k in range(sizes.shape[0]):
        for d in range(data.shape[1]):
            mean[k, d] /= sizes[k]
    return np.array(ok), sizes, mean, block_scatter(idx, mean, np.ascontiguousarray(data))


@allocating
def edge_counts_op(labels, data):
    """EdgeCounts: ``ok, m (K,), edges (K, K)`` of a symmetric 0/1 adjacency with
    zero diagonal (``ok`` False otherwise); O(N^2) per call (no stored edge list)."""
    ok, idx, sizes = compact_labels(labels, labels.shape[0])
    K = sizes.shape[0]
    edges = np.zeros((K, K), dtype=np.float64)
    n = data.shape[0]
    square = data.ndim == 2 and data.shape[1] == n
    graph_ok = square
    if square:
        for i in range(n):
            if data[i, i] != 0.0:
                graph_ok = False
            for j in range(i + 1, n):
                v = data[i, j]
                if v != data[j, i] or (v != 0.0 and v != 1.0):
                    graph_ok = False
                if v != 0.0:
                    a = idx[i]
                    b = idx[j]
                    edges[a, b] += 1.0
                    if a != b:
                        edges[b, a] += 1.0
    return np.array(ok and graph_ok), sizes, edges


__all__ = [
    "binary_sums_op",
    "block_moments",
    "block_scatter",
    "block_sums",
    "compact_labels",
    "count_matrices_op",
    "count_sums_op",
    "edge_counts_op",
    "mean_scatter_op",
    "normal_moments_op",
]
