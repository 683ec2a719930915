r"""Collapsed Poisson-Gamma likelihood for count features: block rates integrated out.

Model, independently per feature d (Gamma with shape a and *rate* b):

.. math::

    \lambda_{kd} \sim \mathrm{Gamma}(a_d, b_d), \qquad
    x_{id} \mid z_i = k \sim \mathrm{Poisson}(\lambda_{kd}).

A block of m items with feature sums :math:`S_{kd}` has posterior
:math:`\lambda_{kd} \sim \mathrm{Gamma}(a_d + S_{kd}, b_d + m)`, and a new item's
predictive is negative binomial:

.. math::

    \log p(x \mid k) = \sum_d \Big[\log\Gamma(a_d + S_{kd} + x_d) - \log\Gamma(a_d + S_{kd})
      - \log x_d! + (a_d + S_{kd}) \log\frac{b_d + m}{b_d + m + 1} - x_d \log(b_d + m + 1)\Big].

A zero count contributes only :math:`(a_d + S_{kd})\log\frac{b_d+m}{b_d+m+1}`. Each
slot caches the sum of these terms over all features and
:math:`\log\Gamma(a_d + S_{kd})` per feature; an item's non-zero counts are stored
as CSR lists (as in :mod:`.beta_bernoulli`), so ``log_pred`` costs
O(number of non-zero counts of the item) per block, at most O(D), and ``add`` /
``remove`` O(D) multiply-adds (the size-only logarithms are tabulated for
m = 0..n once per change of hyperparameters) plus one ``lgamma`` per non-zero count.

The block's log marginal:

.. math::

    \sum_d \Big[a_d\log b_d - \log\Gamma(a_d) + \log\Gamma(a_d + S_{kd})
      - (a_d + S_{kd})\log(b_d + m)\Big] - \sum_{i \in k}\sum_d \log x_{id}!.
"""

import math
from typing import NamedTuple

import numpy as np

from pymc_partitions.kernels._jit import primitive
from pymc_partitions.kernels.components.base import alloc_slots, register
from pymc_partitions.kernels.variates import log_gamma_variate


class PoissonGammaParams(NamedTuple):
    """Hyperparameters; build with :func:`make_params`.

    a, b : (D,) float64, Gamma shape and rate
    by_size_log_ratio : (n+1, D) float64, log((b + m)/(b + m + 1))
    by_size_log_b1 : (n+1, D) float64, log(b + m + 1)
    """

    a: np.ndarray
    b: np.ndarray
    by_size_log_ratio: np.ndarray
    by_size_log_b1: np.ndarray
    inv_t: float = 1.0  # 1/t: a tempered target (kernels/tempering.py)


class PoissonGammaStats(NamedTuple):
    """count (n,) int64; sums (n, D) float64 (exact integers); lg_sum (n, D) float64,
    log Gamma(a + S); zero_part (n,) float64, sum_d (a + S) log((b+m)/(b+m+1));
    logfact (n,) float64, sum of log x! over the block's items and features."""

    count: np.ndarray
    sums: np.ndarray
    lg_sum: np.ndarray
    zero_part: np.ndarray
    logfact: np.ndarray


def make_params(a, b, *, n):
    """Params from (D,) arrays a, b (> 0) for n items."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    bm = b[None, :] + np.arange(n + 1, dtype=np.float64)[:, None]
    log_b1 = np.log(bm + 1.0)
    return PoissonGammaParams(a, b, np.ascontiguousarray(np.log(bm) - log_b1), log_b1)


def make_data(x):
    """Data ``(x, indptr, indices, logfact)`` from an (N, D) array of counts.

    x : (N, D) float64; indptr (N+1,) int64 and indices (nnz,) int64: CSR lists of
    each item's features with a non-zero count; logfact (N,) float64: sum_d log x_id!.
    """
    from scipy.special import gammaln  # on use: kernels import numba, NumPy only
    x = np.ascontiguousarray(x, dtype=np.float64)
    rows, cols = np.nonzero(x)
    indptr = np.zeros(x.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=x.shape[0]), out=indptr[1:])
    logfact = np.ascontiguousarray(gammaln(x + 1.0).sum(axis=1))
    return (x, indptr, cols.astype(np.int64), logfact)


def alloc_stats(n_slots, n_dims, params):
    d = (n_dims,)
    return alloc_slots(PoissonGammaStats, n_slots, d, d, (), (), params=params,
                       refresh=refresh)


@primitive
def _zero_part(params, stats, k):
    m = stats.count[k]
    acc = 0.0
    for d in range(params.a.shape[0]):
        acc += (params.a[d] + stats.sums[k, d]) * params.by_size_log_ratio[m, d]
    stats.zero_part[k] = acc


@primitive
def refresh(params, stats, k):
    for d in range(params.a.shape[0]):
        stats.lg_sum[k, d] = math.lgamma(params.a[d] + stats.sums[k, d])
    _zero_part(params, stats, k)


@primitive
def log_pred(params, stats, data, i, k):
    x, indptr, indices, logfact = data[0], data[1], data[2], data[3]
    m = stats.count[k]
    acc = stats.zero_part[k] - logfact[i]
    for p in range(indptr[i], indptr[i + 1]):
        d = indices[p]
        v = x[i, d]
        acc += (
            math.lgamma(params.a[d] + stats.sums[k, d] + v)
            - stats.lg_sum[k, d]
            - v * params.by_size_log_b1[m, d]
        )
    return acc


@primitive
def add(params, stats, data, i, k):
    x, indptr, indices, logfact = data[0], data[1], data[2], data[3]
    stats.count[k] += 1
    stats.logfact[k] += logfact[i]
    for p in range(indptr[i], indptr[i + 1]):
        d = indices[p]
        stats.sums[k, d] += x[i, d]
        stats.lg_sum[k, d] = math.lgamma(params.a[d] + stats.sums[k, d])
    _zero_part(params, stats, k)


@primitive
def remove(params, stats, data, i, k):
    x, indptr, indices, logfact = data[0], data[1], data[2], data[3]
    stats.count[k] -= 1
    if stats.count[k] == 0:
        stats.logfact[k] = 0.0  # exact reset: no rounding residue in an empty slot
    else:
        stats.logfact[k] -= logfact[i]
    for p in range(indptr[i], indptr[i + 1]):
        d = indices[p]
        stats.sums[k, d] -= x[i, d]  # integers: exact
        stats.lg_sum[k, d] = math.lgamma(params.a[d] + stats.sums[k, d])
    _zero_part(params, stats, k)


@primitive
def log_marginal(params, stats, k):
    m = stats.count[k]
    if m == 0:
        return 0.0
    acc = -stats.logfact[k]
    for d in range(params.a.shape[0]):
        a, b, s = params.a[d], params.b[d], stats.sums[k, d]
        acc += a * np.log(b) - math.lgamma(a) + math.lgamma(a + s) - (a + s) * np.log(b + m)
    return acc


# ---------------------------------------------------------------- explicit parameters
# (the sub-cluster sampler, kernels/subclusters.py; registered below, components/explicit.py)
# A block's explicit rates are one row of a float64 array: log lambda_1..log lambda_D,
# then -sum_d lambda_d, so an item's log density costs its number of non-zero counts
# (as ``log_pred``): -sum_d lambda_d - log x_i! + sum_{d: x_id > 0} x_id log lambda_d.


@primitive
def explicit_width(params):
    """Float64 entries per block in an explicit-parameter row: D log rates, 1 sum."""
    return params.a.shape[0] + 1


@primitive
def draw_explicit(params, stats, k, stream, theta, row):
    """Draw slot k's rates lambda_d ~ Gamma(a_d + S_kd, rate b_d + m) (the conjugate
    posterior; the prior for an empty slot) into ``theta[row]``, on the log scale
    (no underflow for small shapes)."""
    m = stats.count[k]
    n_dims = params.a.shape[0]
    acc = 0.0
    for d in range(n_dims):
        log_rate = (log_gamma_variate(stream, params.a[d] + stats.sums[k, d])
                    - math.log(params.b[d] + m))
        theta[row, d] = log_rate
        acc -= math.exp(log_rate)
    theta[row, n_dims] = acc


@primitive
def log_density_explicit(params, theta, row, data, i):
    """log prod_d Poisson(x_id | lambda_d)."""
    x, indptr, indices, logfact = data[0], data[1], data[2], data[3]
    acc = theta[row, params.a.shape[0]] - logfact[i]
    for p in range(indptr[i], indptr[i + 1]):
        d = indices[p]
        acc += x[i, d] * theta[row, d]
    return acc

register(
    PoissonGammaParams,
    log_pred=log_pred,
    add=add,
    remove=remove,
    refresh=refresh,
    log_marginal=log_marginal,
    explicit_width=explicit_width,
    draw_explicit=draw_explicit,
    log_density_explicit=log_density_explicit,
)
