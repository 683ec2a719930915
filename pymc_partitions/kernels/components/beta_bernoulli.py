r"""Collapsed Beta-Bernoulli likelihood for binary features (Jain & Neal 2004, §5).

Model, independently per feature d:

.. math::

    \theta_{kd} \sim \mathrm{Beta}(a_d, b_d), \qquad
    x_{id} \mid z_i = k \sim \mathrm{Bernoulli}(\theta_{kd}).

A block of m items, :math:`c_d` of which have feature d on, predicts it on for a new
item with probability :math:`(a_d + c_d)/(a_d + b_d + m)`. Each slot caches
:math:`L^0_{kd} = \log P(x_d = 0)`, :math:`\Delta_{kd} = \log P(x_d = 1) - L^0_{kd}`
and :math:`\sum_d L^0_{kd}`, so

.. math:: \log p(x_i \mid k) = \sum_d L^0_{kd} + \sum_{d:\,x_{id}=1} \Delta_{kd}

costs O(number of ones of item i) per block: items' ones are stored as CSR lists.
The block's log marginal is :math:`\sum_d \log B(a_d + c_d, b_d + m - c_d) - \log B(a_d, b_d)`.
"""

import math
from typing import NamedTuple

import numpy as np

from pymc_partitions.kernels._jit import primitive
from pymc_partitions.kernels.components.base import register


class BetaBernoulliParams(NamedTuple):
    """a, b : (D,) float64 Beta hyperparameters per feature."""

    a: np.ndarray
    b: np.ndarray


class BetaBernoulliStats(NamedTuple):
    """count (n,) int64; ones (n, D) int64; log0, delta (n, D) float64; sum_log0 (n,) float64."""

    count: np.ndarray
    ones: np.ndarray
    log0: np.ndarray
    delta: np.ndarray
    sum_log0: np.ndarray


def make_params(a, b, n=None):
    """Params from (D,) arrays a, b (``n`` is not needed: nothing is tabulated)."""
    return BetaBernoulliParams(
        np.ascontiguousarray(a, dtype=np.float64), np.ascontiguousarray(b, dtype=np.float64)
    )


def make_data(x):
    """Data ``(x, indptr, indices)`` from an (N, D) 0/1 array: x as int8 and the CSR
    lists (indptr (N+1,) int64, indices (nnz,) int64) of each item's features equal to 1."""
    x = np.ascontiguousarray(x, dtype=np.int8)
    rows, cols = np.nonzero(x)
    indptr = np.zeros(x.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=x.shape[0]), out=indptr[1:])
    return (x, indptr, cols.astype(np.int64))


def alloc_stats(n_slots, n_dims, params):
    stats = BetaBernoulliStats(
        np.zeros(n_slots, dtype=np.int64),
        np.zeros((n_slots, n_dims), dtype=np.int64),
        np.zeros((n_slots, n_dims)),
        np.zeros((n_slots, n_dims)),
        np.zeros(n_slots),
    )
    for k in range(n_slots):
        refresh(params, stats, k)
    return stats


@primitive
def refresh(params, stats, k):
    m = stats.count[k]
    acc = 0.0
    for d in range(params.a.shape[0]):
        log_den = np.log(params.a[d] + params.b[d] + m)
        l0 = np.log(params.b[d] + m - stats.ones[k, d]) - log_den
        stats.log0[k, d] = l0
        stats.delta[k, d] = np.log(params.a[d] + stats.ones[k, d]) - log_den - l0
        acc += l0
    stats.sum_log0[k] = acc


@primitive
def log_pred(params, stats, data, i, k):
    indptr, indices = data[1], data[2]
    acc = stats.sum_log0[k]
    for p in range(indptr[i], indptr[i + 1]):
        acc += stats.delta[k, indices[p]]
    return acc


@primitive
def add(params, stats, data, i, k):
    indptr, indices = data[1], data[2]
    stats.count[k] += 1
    for p in range(indptr[i], indptr[i + 1]):
        stats.ones[k, indices[p]] += 1
    refresh(params, stats, k)


@primitive
def remove(params, stats, data, i, k):
    indptr, indices = data[1], data[2]
    stats.count[k] -= 1
    for p in range(indptr[i], indptr[i + 1]):
        stats.ones[k, indices[p]] -= 1
    refresh(params, stats, k)


@primitive
def _log_beta(x, y):
    return math.lgamma(x) + math.lgamma(y) - math.lgamma(x + y)


@primitive
def log_marginal(params, stats, k):
    m = stats.count[k]
    if m == 0:
        return 0.0
    acc = 0.0
    for d in range(params.a.shape[0]):
        c = stats.ones[k, d]
        acc += _log_beta(params.a[d] + c, params.b[d] + m - c) - _log_beta(params.a[d], params.b[d])
    return acc


register(
    BetaBernoulliParams,
    log_pred=log_pred,
    add=add,
    remove=remove,
    refresh=refresh,
    log_marginal=log_marginal,
)
