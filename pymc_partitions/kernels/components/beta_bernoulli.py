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

``add``/``remove`` refresh a slot's caches in O(D). The logarithms they need,
:math:`\log(a_d + c)`, :math:`\log(b_d + c)` and :math:`\log(a_d + b_d + m)` for
integers c, m in [0, n], are tabulated once per hyperparameter change (one row when
a and b are the same for every feature, else one per feature, up to
``MAX_TABLE`` entries; beyond that they are computed), so a refresh reads 3D
table entries instead of computing 3D logarithms: about 4x faster moves at
D = 20 (split-merge's restricted scans are dominated by these refreshes).
"""

import math
from typing import NamedTuple

import numpy as np

from pymc_partitions.kernels._jit import entry, primitive
from pymc_partitions.kernels.components.base import alloc_slots, register
from pymc_partitions.kernels.statistics import block_sums
from pymc_partitions.kernels.variates import log_beta_pair


class BetaBernoulliParams(NamedTuple):
    """a, b : (D,) float64 Beta hyperparameters per feature.

    log_a, log_b, log_ab : (R, n + 1) float64 tables ``log(a + c)``, ``log(b + c)``,
    ``log(a + b + c)`` for c = 0..n; R = 1 when a and b are constant over features,
    R = D otherwise; shape (R, 0) when not tabulated (no n given, or too large).
    """

    a: np.ndarray
    b: np.ndarray
    log_a: np.ndarray
    log_b: np.ndarray
    log_ab: np.ndarray
    inv_t: float = 1.0  # 1/t: a tempered target (kernels/tempering.py)


MAX_TABLE = 1 << 21  # table entries per array (16 MiB)


class BetaBernoulliStats(NamedTuple):
    """count (n,) int64; ones (n, D) int64; log0, delta (n, D) float64; sum_log0 (n,) float64."""

    count: np.ndarray
    ones: np.ndarray
    log0: np.ndarray
    delta: np.ndarray
    sum_log0: np.ndarray


def make_params(a, b, n=None):
    """Params from (D,) arrays a, b; with the number of items ``n``, the log tables."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    shared = a.size > 0 and np.all(a == a[0]) and np.all(b == b[0])
    rows_a, rows_b = (a[:1], b[:1]) if shared else (a, b)
    if n is None or rows_a.size * (n + 1) > MAX_TABLE:
        empty = np.empty((rows_a.size, 0))
        return BetaBernoulliParams(a, b, empty, empty, empty)
    c = np.arange(n + 1, dtype=np.float64)
    return BetaBernoulliParams(
        a, b,
        np.log(rows_a[:, None] + c),
        np.log(rows_b[:, None] + c),
        np.log(rows_a[:, None] + rows_b[:, None] + c),
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
    d = (n_dims,)
    return alloc_slots(BetaBernoulliStats, n_slots, d, d, d, (), dtypes={"ones": np.int64},
                       params=params, refresh=refresh)


@primitive
def refresh(params, stats, k):
    m = stats.count[k]
    acc = 0.0
    if params.log_a.shape[1] > 0:
        per_feature = params.log_a.shape[0] > 1
        for d in range(params.a.shape[0]):
            r = d if per_feature else 0
            c = stats.ones[k, d]
            log_zero = params.log_b[r, m - c]  # log(b + m - c)
            l0 = log_zero - params.log_ab[r, m]
            stats.log0[k, d] = l0
            stats.delta[k, d] = params.log_a[r, c] - log_zero
            acc += l0
    else:
        for d in range(params.a.shape[0]):
            log_zero = np.log(params.b[d] + m - stats.ones[k, d])
            l0 = log_zero - np.log(params.a[d] + params.b[d] + m)
            stats.log0[k, d] = l0
            stats.delta[k, d] = np.log(params.a[d] + stats.ones[k, d]) - log_zero
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


# ---------------------------------------------------------------- explicit parameters
# (the sub-cluster sampler, kernels/subclusters.py; registered below, components/explicit.py)
# A block's explicit parameters theta_1..theta_D are stored as one row of a float64
# array: log(theta_d / (1 - theta_d)) for each d, then sum_d log(1 - theta_d), so an
# item's log density costs its number of ones, as ``log_pred``.


@primitive
def explicit_width(params):
    """Float64 entries per block in an explicit-parameter row: D log-odds, 1 sum."""
    return params.a.shape[0] + 1


@primitive
def draw_explicit(params, stats, k, stream, theta, row):
    """Draw slot k's theta_d ~ Beta(a_d + c_d, b_d + m - c_d) (the conjugate
    posterior; the prior for an empty slot) into ``theta[row]``."""
    m = stats.count[k]
    n_dims = params.a.shape[0]
    acc = 0.0
    for d in range(n_dims):
        c = stats.ones[k, d]
        log_p, log_q = log_beta_pair(stream, params.a[d] + c, params.b[d] + m - c)
        theta[row, d] = log_p - log_q
        acc += log_q
    theta[row, n_dims] = acc


@primitive
def log_density_explicit(params, theta, row, data, i):
    """log prod_d theta_d^x_id (1 - theta_d)^(1 - x_id) of item i."""
    indptr, indices = data[1], data[2]
    acc = theta[row, params.a.shape[0]]
    for p in range(indptr[i], indptr[i + 1]):
        acc += theta[row, indices[p]]
    return acc


register(
    BetaBernoulliParams,
    log_pred=log_pred,
    add=add,
    remove=remove,
    refresh=refresh,
    log_marginal=log_marginal,
    explicit_width=explicit_width,
    draw_explicit=draw_explicit,
    log_density_explicit=log_density_explicit,
)


# --------------------------------------------------------------------- optional fast path
# The hyperparameter slice step (step_methods.hyperparameters) evaluates this
# likelihood at ~5-8 hyperparameter values per update with the partition fixed. A
# component module may provide two functions for that (optional, listed in
# kernels/components/__init__.py): ``blocks_statistics(idx, sizes, data)`` once per
# partition (idx (N,) int64 block index 0..K-1 of each item, sizes (K,) float64, data
# the component's data record) returning a tuple of plain arrays, and
# ``blocks_log_likelihood(values, statistics)`` per evaluation (values: the op's
# hyperparameter arrays in ``hyper_names`` order; -inf outside the support). No
# kernel state, no params record: ~1 µs of dispatch plus O(K D) arithmetic. Without
# them the step sums ``log_marginal`` over a kernel state (refreshed per evaluation).


def blocks_statistics(idx, sizes, data):
    """``(sizes, ones)``: (K,) block sizes and (K, D) float64 counts of ones per block
    and feature of ``data[0]``."""
    x = data[0]
    flat = np.ascontiguousarray(x).reshape(x.shape[0], -1)
    ones = block_sums(idx, sizes.shape[0], flat).reshape((sizes.shape[0],) + x.shape[1:])
    return sizes, ones


def blocks_log_likelihood(values, statistics):
    """The collapsed Beta-Bernoulli log likelihood at ``values`` = (a, b), each (D,)
    float64, from :func:`blocks_statistics`."""
    m, ones = statistics
    return float(blocks_log_likelihood_kernel(m, ones, values[0], values[1]))


@entry
def blocks_log_likelihood_kernel(m, ones, a, b):
    """sum over blocks k and features d of log B(a_d + c_kd, b_d + m_k - c_kd) -
    log B(a_d, b_d) (the block's log marginal) from (K,) float64 block sizes ``m`` and
    (K, D) counts of ones, at (D,) float64 ``a``, ``b``; -inf unless both positive and
    finite."""
    D = a.shape[0]
    for d in range(D):
        if not (0.0 < a[d] < np.inf and 0.0 < b[d] < np.inf):
            return -np.inf
    acc = 0.0
    for d in range(D):
        prior = math.lgamma(a[d]) + math.lgamma(b[d]) - math.lgamma(a[d] + b[d])
        for k in range(m.shape[0]):
            c = ones[k, d]
            acc += (math.lgamma(a[d] + c) + math.lgamma(b[d] + m[k] - c)
                    - math.lgamma(a[d] + b[d] + m[k]) - prior)
    return acc
