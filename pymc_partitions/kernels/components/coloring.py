r"""Proper-colouring constraint on a vertex partition: no edge inside a block.

The distribution over vertex partitions induced by the uniform distribution on
proper q-colourings of a graph G (Nguyen et al. 2022, App. G.1, eq. 15) is

.. math:: p(z) \propto 1\{\text{no edge of } G \text{ lies within a block of } z\}\;
    \frac{q!}{(q - K)!}.

This component is the indicator factor, written as a likelihood component: an
item i may join slot k only if none of its neighbours is in slot k,

.. math:: \log p(i \mid k) = -\infty \text{ if a neighbour of } i \text{ is in } k, \text{ else } 0,

and the falling factorial is the prior
(:mod:`pymc_partitions.kernels.priors.falling_factorial`). The component keeps
its own copy of every vertex's slot, so ``log_pred`` reads i's neighbours (O(deg i))
and never a block's members; it also counts the edges inside each slot
(``add``/``remove``: O(deg i)), which gives ``log_marginal`` in O(1).

Data ``(indptr, indices)``: the graph as CSR adjacency lists, each (undirected)
edge listed at both ends, no self-loops (see :func:`make_data`).
"""

from typing import NamedTuple

import numpy as np

from pymc_partitions.kernels._jit import primitive
from pymc_partitions.kernels.components.base import register


class ColoringParams(NamedTuple):
    """q: int, the number of colours (the constraint itself does not use it)."""

    q: int
    inv_t: float = 1.0  # 1/t: a tempered target (kernels/tempering.py)


class ColoringStats(NamedTuple):
    """slot: (n,) int64, each vertex's slot (-1 while unassigned);
    inner: (n,) int64, the number of edges inside each slot."""

    slot: np.ndarray
    inner: np.ndarray


def make_params(q, n=None):
    return ColoringParams(int(q))


def make_data(edges, n):
    """CSR adjacency ``(indptr (n+1,) int64, indices (2m,) int64)`` from an (m, 2)
    integer edge list of an undirected simple graph on vertices 0..n-1."""
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    both = np.concatenate([edges, edges[:, ::-1]])
    order = np.lexsort((both[:, 1], both[:, 0]))
    both = both[order]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(both[:, 0], minlength=n), out=indptr[1:])
    return (indptr, np.ascontiguousarray(both[:, 1]))


def alloc_stats(n_slots, n_items):
    return ColoringStats(np.full(n_items, -1, dtype=np.int64), np.zeros(n_slots, dtype=np.int64))


@primitive
def _neighbours_in(stats, data, i, k):
    indptr, indices = data[0], data[1]
    count = 0
    for p in range(indptr[i], indptr[i + 1]):
        if stats.slot[indices[p]] == k:
            count += 1
    return count


@primitive
def log_pred(params, stats, data, i, k):
    indptr, indices = data[0], data[1]
    for p in range(indptr[i], indptr[i + 1]):
        if stats.slot[indices[p]] == k:
            return -np.inf
    return 0.0


@primitive
def add(params, stats, data, i, k):
    stats.inner[k] += _neighbours_in(stats, data, i, k)
    stats.slot[i] = k


@primitive
def remove(params, stats, data, i, k):
    stats.slot[i] = -1
    stats.inner[k] -= _neighbours_in(stats, data, i, k)


@primitive
def refresh(params, stats, k):
    pass


@primitive
def log_marginal(params, stats, k):
    return -np.inf if stats.inner[k] > 0 else 0.0


register(
    ColoringParams,
    log_pred=log_pred,
    add=add,
    remove=remove,
    refresh=refresh,
    log_marginal=log_marginal,
)
