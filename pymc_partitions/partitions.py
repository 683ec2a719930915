"""Plain-numpy utilities on partitions given as label vectors."""

import numpy as np


def canonicalize(labels):
    """Canonical labels of the partition ``labels`` encodes.

    Label 0 for item 0's block, new labels in order of first appearance; equal
    partitions get equal vectors. Works on the last axis of an array of label
    vectors.

    >>> canonicalize([3, 3, 1, 7, 1])
    array([0, 0, 1, 2, 1])
    """
    labels = np.asarray(labels)
    if labels.ndim > 1:
        flat = labels.reshape(-1, labels.shape[-1])
        return np.stack([canonicalize(row) for row in flat]).reshape(labels.shape)
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(first.shape[0], dtype=np.int64)
    rank[np.argsort(first)] = np.arange(first.shape[0])
    return rank[inverse.reshape(-1)]


def set_partitions(n):
    """All set partitions of n items as canonical label vectors, shape (Bell(n), n).

    Restricted growth strings in lexicographic order; Bell(7) = 877, Bell(10) = 115975.

    >>> set_partitions(3)
    array([[0, 0, 0],
           [0, 0, 1],
           [0, 1, 0],
           [0, 1, 1],
           [0, 1, 2]])
    """
    if n < 1:
        raise ValueError(f"set_partitions: 'n' must be >= 1, got {n}.")
    rows = [[0]]
    for _ in range(1, n):
        rows = [row + [k] for row in rows for k in range(max(row) + 2)]
    return np.array(rows, dtype=np.int64)
