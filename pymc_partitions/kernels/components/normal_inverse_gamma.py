r"""Collapsed Normal-Inverse-Gamma likelihood: block means and variances integrated out.

Model, independently per dimension d of an item's vector :math:`x_i \in \mathbb{R}^D`:

.. math::

    \sigma^2_{kd} \sim \mathrm{InvGamma}(a_{0d}, b_{0d}), \qquad
    \mu_{kd} \mid \sigma^2_{kd} \sim \mathcal N(\mu_{0d}, \sigma^2_{kd}/\kappa_{0d}), \qquad
    x_{id} \mid z_i = k \sim \mathcal N(\mu_{kd}, \sigma^2_{kd}).

A block of m items with mean :math:`\bar x` and centred sum of squares M has the
conjugate posterior (e.g. Murphy 2007, *Conjugate Bayesian analysis of the
Gaussian distribution*, Normal-inverse-Gamma section; Gelman et al., BDA §3.3)

.. math::

    \kappa_m = \kappa_0 + m, \quad a_m = a_0 + m/2, \quad
    \mu_m = \frac{\kappa_0\mu_0 + m\bar x}{\kappa_m}, \quad
    b_m = b_0 + \frac M2 + \frac{\kappa_0 m (\bar x - \mu_0)^2}{2\kappa_m},

and a new item's predictive is Student-t with :math:`2a_m` degrees of freedom,
location :math:`\mu_m` and squared scale :math:`b_m(\kappa_m+1)/(a_m\kappa_m)`:

.. math::

    \log p(x \mid k) = \sum_d \log\frac{\Gamma(a_m + \frac12)}{\Gamma(a_m)}
      + \tfrac12 \log\frac{w_{kd}}{\pi}
      - (a_m + \tfrac12)\log\big(1 + w_{kd}(x_d - \mu_{m,d})^2\big),
    \qquad w_{kd} = \frac{\kappa_m}{2 b_m (\kappa_m + 1)}.

Statistics are the block's size, mean and M (:mod:`.welford`: centred updates, no
cancellation). Each slot caches :math:`\mu_m`, :math:`w` and the summed log
normaliser, so ``log_pred`` costs D ``log1p`` calls per (item, block): O(D). The
size-only :math:`\log\Gamma(a_m+\frac12) - \log\Gamma(a_m)` is tabulated for
m = 0..n once per change of hyperparameters; ``add``/``remove`` cost O(D).

The block's log marginal, per dimension:

.. math::

    \log\Gamma(a_m) - \log\Gamma(a_0) + a_0\log b_0 - a_m\log b_m
    + \tfrac12\log\frac{\kappa_0}{\kappa_m} - \tfrac m2\log 2\pi.
"""

import math
from typing import NamedTuple

import numpy as np

from pymc_partitions.kernels._jit import primitive
from pymc_partitions.kernels.components.base import alloc_slots, register, row_data
from pymc_partitions.kernels.components.welford import welford_add, welford_remove
from pymc_partitions.kernels.variates import log_gamma_variate, std_normal

LOG_2PI = float(np.log(2.0 * np.pi))
LOG_PI = float(np.log(np.pi))


class NIGParams(NamedTuple):
    """Hyperparameters; build with :func:`make_params`.

    mu0, kappa0, a0, b0 : (D,) float64
    by_size_lg : (n+1, D) float64, log Gamma(a_m + 1/2) - log Gamma(a_m)
    """

    mu0: np.ndarray
    kappa0: np.ndarray
    a0: np.ndarray
    b0: np.ndarray
    by_size_lg: np.ndarray
    inv_t: float = 1.0  # 1/t: a tempered target (kernels/tempering.py)


class NIGStats(NamedTuple):
    """Per-slot statistics: count (n,) int64; mean, m2 (n, D) float64 (block mean and
    centred sum of squares); caches loc, w (n, D) float64 and lognorm (n,) float64."""

    count: np.ndarray
    mean: np.ndarray
    m2: np.ndarray
    loc: np.ndarray
    w: np.ndarray
    lognorm: np.ndarray


def make_params(mu0, kappa0, a0, b0, *, n):
    """Params from (D,) arrays mu0, kappa0 (> 0), a0 (> 0), b0 (> 0), for n items."""
    from scipy.special import gammaln  # on use: kernels import numba, NumPy only
    mu0, kappa0, a0, b0 = (np.ascontiguousarray(v, dtype=np.float64) for v in (mu0, kappa0, a0, b0))
    a_m = a0[None, :] + 0.5 * np.arange(n + 1, dtype=np.float64)[:, None]
    lg = np.ascontiguousarray(gammaln(a_m + 0.5) - gammaln(a_m))
    return NIGParams(mu0, kappa0, a0, b0, lg)


make_data = row_data  # (x,) from an (N, D) float array


def alloc_stats(n_slots, n_dims, params):
    """Statistics of ``n_slots`` empty slots, caches at the prior predictive."""
    d = (n_dims,)
    return alloc_slots(NIGStats, n_slots, d, d, d, d, (), params=params, refresh=refresh)


@primitive
def _b_m(params, stats, k, d, m):
    # b_m from centred statistics: every term is non-negative, no cancellation.
    kappa0 = params.kappa0[d]
    dev = stats.mean[k, d] - params.mu0[d]
    return params.b0[d] + 0.5 * stats.m2[k, d] + 0.5 * kappa0 * m * dev * dev / (kappa0 + m)


@primitive
def refresh(params, stats, k):
    m = stats.count[k]
    acc = 0.0
    for d in range(params.mu0.shape[0]):
        kappa0 = params.kappa0[d]
        kappa_m = kappa0 + m
        b_m = _b_m(params, stats, k, d, m)
        stats.loc[k, d] = (kappa0 * params.mu0[d] + m * stats.mean[k, d]) / kappa_m
        w = kappa_m / (2.0 * b_m * (kappa_m + 1.0))
        stats.w[k, d] = w
        acc += params.by_size_lg[m, d] + 0.5 * (np.log(w) - LOG_PI)
    stats.lognorm[k] = acc


@primitive
def log_pred(params, stats, data, i, k):
    x = data[0]
    half_m = 0.5 * stats.count[k]
    acc = stats.lognorm[k]
    for d in range(x.shape[1]):
        r = x[i, d] - stats.loc[k, d]
        acc -= (params.a0[d] + half_m + 0.5) * np.log1p(stats.w[k, d] * r * r)
    return acc


@primitive
def add(params, stats, data, i, k):
    stats.count[k] += 1
    welford_add(stats.mean, stats.m2, data[0], i, k, stats.count[k])
    refresh(params, stats, k)


@primitive
def remove(params, stats, data, i, k):
    stats.count[k] -= 1
    welford_remove(stats.mean, stats.m2, data[0], i, k, stats.count[k])
    refresh(params, stats, k)


@primitive
def log_marginal(params, stats, k):
    m = stats.count[k]
    if m == 0:
        return 0.0
    acc = 0.0
    for d in range(params.mu0.shape[0]):
        a0, b0, kappa0 = params.a0[d], params.b0[d], params.kappa0[d]
        a_m = a0 + 0.5 * m
        acc += (
            math.lgamma(a_m)
            - math.lgamma(a0)
            + a0 * np.log(b0)
            - a_m * np.log(_b_m(params, stats, k, d, m))
            + 0.5 * np.log(kappa0 / (kappa0 + m))
            - 0.5 * m * LOG_2PI
        )
    return acc


# ---------------------------------------------------------------- explicit parameters
# (the sub-cluster sampler, kernels/subclusters.py; registered below, components/explicit.py)
# A block's explicit parameters are one row of a float64 array: the means mu_1..mu_D,
# the precisions 1/sigma^2_1..1/sigma^2_D, then sum_d -log(2 pi sigma^2_d)/2.


@primitive
def explicit_width(params):
    """Float64 entries per block in an explicit-parameter row: D means, D precisions,
    1 constant."""
    return 2 * params.mu0.shape[0] + 1


@primitive
def draw_explicit(params, stats, k, stream, theta, row):
    """Draw slot k's (mu_d, sigma^2_d) from the posterior (module docstring; the prior
    for an empty slot) into ``theta[row]``: 1/sigma^2_d ~ Gamma(a_m, rate b_m), then
    mu_d ~ N(mu_m, sigma^2_d / kappa_m), as :meth:`pymc_partitions.
    CollapsedNormalInverseGamma`'s ``block_posterior_draw``."""
    m = stats.count[k]
    n_dims = params.mu0.shape[0]
    acc = 0.0
    for d in range(n_dims):
        kappa0 = params.kappa0[d]
        kappa_m = kappa0 + m
        loc = (kappa0 * params.mu0[d] + m * stats.mean[k, d]) / kappa_m
        log_prec = (log_gamma_variate(stream, params.a0[d] + 0.5 * m)
                    - math.log(_b_m(params, stats, k, d, m)))
        prec = math.exp(log_prec)
        theta[row, n_dims + d] = prec
        theta[row, d] = loc + std_normal(stream) / math.sqrt(kappa_m * prec)
        acc += 0.5 * (log_prec - LOG_2PI)
    theta[row, 2 * n_dims] = acc


@primitive
def log_density_explicit(params, theta, row, data, i):
    """log prod_d N(x_id | mu_d, sigma^2_d)."""
    x = data[0]
    n_dims = x.shape[1]
    acc = theta[row, 2 * n_dims]
    for d in range(n_dims):
        r = x[i, d] - theta[row, d]
        acc -= 0.5 * r * r * theta[row, n_dims + d]
    return acc

register(
    NIGParams,
    log_pred=log_pred,
    add=add,
    remove=remove,
    refresh=refresh,
    log_marginal=log_marginal,
    explicit_width=explicit_width,
    draw_explicit=draw_explicit,
    log_density_explicit=log_density_explicit,
)
