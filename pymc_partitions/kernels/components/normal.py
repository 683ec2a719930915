r"""Collapsed diagonal Normal likelihood: block means integrated out.

Model, independently per dimension d of an item's vector :math:`x_i \in \mathbb{R}^D`:

.. math::

    \mu_{kd} \sim \mathcal N(\mu_{0d}, \tau_d^2), \qquad
    x_{id} \mid z_i = k \sim \mathcal N(\mu_{kd}, \sigma_d^2).

For a block with m items and sums :math:`S_d`, the posterior of :math:`\mu_{kd}`
has precision :math:`\lambda_m = 1/\tau_d^2 + m/\sigma_d^2` and mean
:math:`(\mu_{0d}/\tau_d^2 + S_d/\sigma_d^2)/\lambda_m`; a new item's predictive is
Normal with that mean and variance :math:`v_m = \sigma_d^2 + 1/\lambda_m` (Nguyen
et al. 2022, App. M; Neal 2000 §3). Each slot caches its predictive mean,
:math:`1/v_m` and :math:`\sum_d -\tfrac12 \log(2\pi v_m)`, so ``log_pred`` costs D
multiply-adds and no logarithm (the per-cluster cache of Nguyen et al., Prop. 2).
The size-only quantities :math:`1/\lambda_m`, :math:`1/v_m` and the log normaliser
are tabulated for m = 0..n in the params once per change of hyperparameters
(vectorised, O(n D)), so ``add`` and ``remove`` cost O(D) multiply-adds.

The block's log marginal, per dimension, with :math:`r = x - \mu_0` summed over
the block's items, is that of a Normal with covariance
:math:`\sigma^2 I + \tau^2 \mathbf{1}\mathbf{1}^\top`:

.. math::

    -\tfrac m2 \log 2\pi - \tfrac{m-1}2 \log\sigma^2 - \tfrac12\log(\sigma^2 + m\tau^2)
    - \frac{1}{2\sigma^2}\Big(\sum r^2 - \frac{\tau^2 (\sum r)^2}{\sigma^2 + m\tau^2}\Big).
"""

import math
from typing import NamedTuple

import numpy as np

from pymc_partitions.kernels._jit import entry, primitive
from pymc_partitions.kernels.components.base import alloc_slots, register, row_data
from pymc_partitions.kernels.statistics import block_moments
from pymc_partitions.kernels.variates import std_normal

LOG_2PI = float(np.log(2.0 * np.pi))


class NormalParams(NamedTuple):
    """Hyperparameters; build with :func:`make_params`.

    mu0, tau2, sigma2, mu0_over_tau2, inv_sigma2 : (D,) float64
    by_size_w : (n+1, D) float64, posterior variance 1/lambda_m of a block mean
    by_size_prec : (n+1, D) float64, predictive precision 1/v_m
    by_size_lognorm : (n+1,) float64, sum_d -log(2 pi v_m)/2
    """

    mu0: np.ndarray
    tau2: np.ndarray
    sigma2: np.ndarray
    mu0_over_tau2: np.ndarray
    inv_sigma2: np.ndarray
    by_size_w: np.ndarray
    by_size_prec: np.ndarray
    by_size_lognorm: np.ndarray
    inv_t: float = 1.0  # 1/t: a tempered target (kernels/tempering.py)


class NormalStats(NamedTuple):
    """Per-slot statistics: count (n,) int64; sums, sumsq, mean, prec (n, D) float64;
    lognorm (n,) float64. ``mean``, ``prec`` and ``lognorm`` are the predictive caches."""

    count: np.ndarray
    sums: np.ndarray
    sumsq: np.ndarray
    mean: np.ndarray
    prec: np.ndarray
    lognorm: np.ndarray


def make_params(mu0, tau, sigma, *, n):
    """Params from (D,) arrays of prior mean, prior sd and noise sd, for n items."""
    mu0 = np.ascontiguousarray(mu0, dtype=np.float64)
    tau2 = np.ascontiguousarray(tau, dtype=np.float64) ** 2
    sigma2 = np.ascontiguousarray(sigma, dtype=np.float64) ** 2
    inv_sigma2 = 1.0 / sigma2
    sizes = np.arange(n + 1, dtype=np.float64)[:, None]
    w = 1.0 / (1.0 / tau2 + sizes * inv_sigma2)
    v = sigma2 + w
    lognorm = -0.5 * (LOG_2PI * mu0.shape[0] + np.log(v).sum(axis=1))
    return NormalParams(mu0, tau2, sigma2, mu0 / tau2, inv_sigma2, w, 1.0 / v, lognorm)


make_data = row_data  # (x,) from an (N, D) float array


def alloc_stats(n_slots, n_dims, params):
    """Statistics of ``n_slots`` empty slots, caches at the prior predictive."""
    d = (n_dims,)
    stats = alloc_slots(NormalStats, n_slots, d, d, d, d, ())
    # The prior-predictive caches, vectorised (faster than ``refresh`` per slot).
    stats.mean[:] = params.mu0
    stats.prec[:] = params.by_size_prec[0]
    stats.lognorm[:] = params.by_size_lognorm[0]
    return stats


@primitive
def refresh(params, stats, k):
    m = stats.count[k]
    for d in range(params.mu0.shape[0]):
        stats.mean[k, d] = (
            params.mu0_over_tau2[d] + stats.sums[k, d] * params.inv_sigma2[d]
        ) * params.by_size_w[m, d]
        stats.prec[k, d] = params.by_size_prec[m, d]
    stats.lognorm[k] = params.by_size_lognorm[m]


@primitive
def log_pred(params, stats, data, i, k):
    x = data[0]
    acc = stats.lognorm[k]
    for d in range(x.shape[1]):
        r = x[i, d] - stats.mean[k, d]
        acc -= 0.5 * r * r * stats.prec[k, d]
    return acc


@primitive
def add(params, stats, data, i, k):
    x = data[0]
    stats.count[k] += 1
    for d in range(x.shape[1]):
        stats.sums[k, d] += x[i, d]
        stats.sumsq[k, d] += x[i, d] * x[i, d]
    refresh(params, stats, k)


@primitive
def remove(params, stats, data, i, k):
    x = data[0]
    stats.count[k] -= 1
    if stats.count[k] == 0:
        # Reset exactly: no rounding residue survives in an empty slot.
        for d in range(x.shape[1]):
            stats.sums[k, d] = 0.0
            stats.sumsq[k, d] = 0.0
    else:
        for d in range(x.shape[1]):
            stats.sums[k, d] -= x[i, d]
            stats.sumsq[k, d] -= x[i, d] * x[i, d]
    refresh(params, stats, k)


@primitive
def log_marginal(params, stats, k):
    m = stats.count[k]
    if m == 0:
        return 0.0
    acc = 0.0
    for d in range(params.mu0.shape[0]):
        mu0, tau2, sigma2 = params.mu0[d], params.tau2[d], params.sigma2[d]
        s = stats.sums[k, d] - m * mu0
        q = stats.sumsq[k, d] - 2.0 * mu0 * stats.sums[k, d] + m * mu0 * mu0
        big = sigma2 + m * tau2
        acc += (
            -0.5 * m * LOG_2PI
            - 0.5 * (m - 1) * np.log(sigma2)
            - 0.5 * np.log(big)
            - 0.5 * (q - tau2 * s * s / big) / sigma2
        )
    return acc


# ---------------------------------------------------------------- explicit parameters
# (the sub-cluster sampler, kernels/subclusters.py; registered below, components/explicit.py)
# A block's explicit parameters are one row of a float64 array: its means
# mu_1..mu_D, then the log normaliser sum_d -log(2 pi sigma_d^2)/2.


@primitive
def explicit_width(params):
    """Float64 entries per block in an explicit-parameter row: D means, 1 constant."""
    return params.mu0.shape[0] + 1


@primitive
def draw_explicit(params, stats, k, stream, theta, row):
    """Draw slot k's means from their posterior given its statistics (Normal with
    mean ``stats.mean``'s formula and variance 1/lambda_m, see the module docstring)
    into ``theta[row]``; an empty slot draws from the prior N(mu0, tau^2)."""
    m = stats.count[k]
    n_dims = params.mu0.shape[0]
    acc = 0.0
    for d in range(n_dims):
        w = params.by_size_w[m, d]
        mean = (params.mu0_over_tau2[d] + stats.sums[k, d] * params.inv_sigma2[d]) * w
        theta[row, d] = mean + math.sqrt(w) * std_normal(stream)
        acc -= 0.5 * (LOG_2PI + math.log(params.sigma2[d]))
    theta[row, n_dims] = acc


@primitive
def log_density_explicit(params, theta, row, data, i):
    """log N(x_i | mu = theta[row, :D], diag(sigma^2))."""
    x = data[0]
    n_dims = x.shape[1]
    acc = theta[row, n_dims]
    for d in range(n_dims):
        r = x[i, d] - theta[row, d]
        acc -= 0.5 * r * r * params.inv_sigma2[d]
    return acc


register(
    NormalParams,
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
    """``(sizes, mean, m2)``: (K,) block sizes, (K, D) block means and centred sums of
    squares (two passes, no cancellation) of the rows of ``data[0]``."""
    mean, m2 = block_moments(idx, sizes, np.ascontiguousarray(data[0], dtype=np.float64))
    return sizes, mean, m2


def blocks_log_likelihood(values, statistics):
    """The collapsed Normal's log likelihood at ``values`` = (mu0, tau, sigma), each
    (D,) float64, from :func:`blocks_statistics`."""
    m, mean, m2 = statistics
    return float(blocks_log_likelihood_kernel(m, mean, m2, values[0], values[1], values[2]))


@entry
def blocks_log_likelihood_kernel(m, mean, m2, mu0, tau, sigma):
    """sum over blocks k and dimensions d of the block's log marginal (module
    docstring) from (K,) float64 block sizes ``m``, (K, D) means and centred sums of
    squares ``m2``, at (D,) float64 ``mu0``, ``tau``, ``sigma``: with dev = mean - mu0
    and big = sigma^2 + m tau^2,
    -m/2 log 2 pi - (m-1)/2 log sigma^2 - 1/2 log big - 1/2 (m2/sigma^2 + m dev^2/big).
    -inf unless mu0 finite and tau, sigma positive and finite."""
    D = mu0.shape[0]
    for d in range(D):
        if not (-np.inf < mu0[d] < np.inf and 0.0 < tau[d] < np.inf
                and 0.0 < sigma[d] < np.inf):
            return -np.inf
    acc = 0.0
    for d in range(D):
        tau2 = tau[d] * tau[d]
        sigma2 = sigma[d] * sigma[d]
        log_sigma2 = np.log(sigma2)
        for k in range(m.shape[0]):
            big = sigma2 + m[k] * tau2
            dev = mean[k, d] - mu0[d]
            acc += (-0.5 * m[k] * LOG_2PI - 0.5 * (m[k] - 1.0) * log_sigma2 - 0.5 * np.log(big)
                    - 0.5 * (m2[k, d] / sigma2 + m[k] * dev * dev / big))
    return acc
