"""Per-block statistics of a labelling, over the K non-empty blocks only.

What the collapsed likelihoods' PyTensor log densities
(:mod:`pymc_partitions.distributions.statistics`) and the hyperparameter slice
step read once per partition: O(N D) loops without NumPy's per-call overhead
(at N = 300, D = 2, NumPy's bincount-based version cost ~60 µs, these ~3 µs).
They allocate their outputs (numba's runtime), so they are plain ``njit``
functions, not allocation-free entries.
"""

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


__all__ = ["block_moments", "block_scatter", "block_sums", "compact_labels"]
