"""Posterior similarity (co-clustering) matrix.

psm[i, j] = (1/M) sum_m 1(z_i^(m) = z_j^(m)), the posterior probability that
items i and j share a block, estimated from M draws. Computed by
:func:`pymc_partitions.kernels.contingency.coclustering_counts`: labels are
transposed to an (n, M) array of the narrowest unsigned type, so one pair costs
one contiguous vector comparison; the matrix is filled tile by tile (tiles of
``block_size`` items, upper triangle only, mirrored) so the rows being compared
stay in cache. Memory: the (n, M) label copy and the (n, n) result, never a
(M, n, n) array; float32 by default (4 n^2 bytes: 16 MB at n = 2000).
"""

import numpy as np

from pymc_partitions.analysis._draws import read_draws
from pymc_partitions.analysis.distances import compact_labels
from pymc_partitions.distributions.validation import integer_arg
from pymc_partitions.kernels.contingency import coclustering_counts
from pymc_partitions.partitions import as_array

_TILE_BYTES = 1 << 18  # label rows of one tile: ~256 KB, an L2 cache


def item_major_labels(draws):
    """(n, M) C-contiguous labels in the narrowest unsigned type (uint8 up to 256 labels)."""
    labels, size = compact_labels(draws)
    for dtype in (np.uint8, np.uint16, np.uint32):
        if size <= np.iinfo(dtype).max + 1:
            return np.ascontiguousarray(labels.T.astype(dtype))
    return np.ascontiguousarray(labels.T)


def similarity_matrix(draws_or_idata, var_name=None, items=None, dtype=np.float32, block_size=None):
    """Posterior similarity matrix of a partition's draws.

    draws_or_idata : ``pm.sample`` result (with ``var_name``) or int labels of shape
        (draws, n) or (chains, draws, n); chains are pooled.
    items : optional 1-D int indices; the result is then psm[items][:, items], and
        only that is computed (O(p^2 M) for p items): the way to look at part of a
        large problem.
    dtype : float dtype of the result (float32 default, float64 for exact sums).
    block_size : tile size in items (default from the number of draws so one tile's
        label rows take ~256 KB, between 16 and 512 items).
    Returns an array of shape (p, p), p = n or len(items), symmetric with unit
    diagonal. A result of more than half the available memory (p^2 x 4 bytes for
    float32: 37 GiB at n = 10^5) is refused with a MemoryError naming the size it
    would need and the available memory, before anything is allocated.
    """
    owner = "similarity_matrix"
    draws = read_draws(draws_or_idata, var_name, owner=owner)
    n = draws.shape[1]
    if items is None:
        items = np.arange(n, dtype=np.int64)
    else:
        items = as_array(items, "items", owner, "a 1-D array of integer item indices")
        if items.ndim != 1 or not (np.issubdtype(items.dtype, np.integer) or items.size == 0):
            raise ValueError(f"{owner}: 'items' must be a 1-D array of integer item indices.")
        if items.size and (items.min() < -n or items.max() >= n):
            raise ValueError(f"{owner}: 'items' must index items in [0, {n}).")
        items = np.where(items < 0, items + n, items).astype(np.int64)
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        dtype = None
    if dtype is None or dtype.kind != "f":
        raise ValueError(f"{owner}: 'dtype' must be a float dtype (np.float32, np.float64).")
    p = items.shape[0]
    _check_fits(p, dtype, n, owner)
    labels_t = item_major_labels(draws)
    m = draws.shape[0]
    if block_size is None:
        block_size = min(512, max(16, _TILE_BYTES // max(1, m * labels_t.itemsize)))
    block_size = integer_arg("block_size", block_size, owner, minimum=1)
    block_size = min(block_size, max(p, 1))
    out = np.empty((p, p), dtype=dtype)
    tile = np.empty((block_size, block_size), dtype=np.int64)
    for r0 in range(0, p, block_size):
        rows = items[r0 : r0 + block_size]
        for c0 in range(r0, p, block_size):
            cols = items[c0 : c0 + block_size]
            t = tile[: rows.shape[0], : cols.shape[0]]
            coclustering_counts(labels_t, rows, cols, c0 == r0, t)
            out[r0 : r0 + rows.shape[0], c0 : c0 + cols.shape[0]] = t / m
            if c0 != r0:
                out[c0 : c0 + cols.shape[0], r0 : r0 + rows.shape[0]] = (t / m).T
    return out


def _check_fits(p, dtype, n, owner):
    """Refuse a (p, p) result that does not fit in memory, with the size it needs."""
    from pymc_partitions.trace_size import available_memory, format_bytes

    need = float(p) * p * dtype.itemsize
    available = available_memory()
    if available is not None and need > available / 2:
        raise MemoryError(
            f"{owner}: the {p} x {p} similarity matrix needs {format_bytes(need)} "
            f"({np.dtype(dtype).name}), more than half the available memory "
            f"({format_bytes(available)}). Pass items= (a subset of the {n} items, e.g. "
            f"rng.choice({n}, 5000, replace=False), or the items of one block of a point "
            f"estimate); for a point estimate or credible ball of all items use "
            f"pmp.point_estimate / pmp.credible_ball, which work from the draws."
        )


def coclustering_count_matrix(draws):
    """Exact integer co-clustering counts N_ij of (M, n) draws, int64 (n, n)."""
    labels_t = item_major_labels(draws)
    n = draws.shape[1]
    items = np.arange(n, dtype=np.int64)
    out = np.empty((n, n), dtype=np.int64)
    coclustering_counts(labels_t, items, items, True, out)
    return out
