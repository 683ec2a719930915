"""Log densities a hyperparameter update needs, from the partition's statistics.

A hyperparameter theta of a collapsed likelihood enters the model only through

.. math:: \\log p(x \\mid z, \\theta) = \\sum_k \\log p(x_k \\mid \\theta),

the sum over blocks of each block's log marginal, which every component computes
from its per-slot sufficient statistics (``log_marginal``, DESIGN §3). So once a
kernel state holds the partition, the conditional of theta costs O(K D) per
evaluation (diagonal components; O(K D^2) or O(K D^3) for dense ones), not O(N D):
:func:`log_likelihood_total`. Priors' hyperparameters need only the block sizes:
:func:`log_prior_total`.
"""

import math

import numpy as np
from numba import njit

from pymc_partitions.kernels._jit import entry, primitive
from pymc_partitions.kernels.bookkeeping import refresh_blocks
from pymc_partitions.kernels.components import log_marginal
from pymc_partitions.kernels.components.normal import LOG_2PI
from pymc_partitions.kernels.priors import log_prior

# Entries that build their params record inside (allocation: with numba's runtime).
allocating_entry = njit(cache=True)


@entry
def log_likelihood_total(state, params, stats):
    """sum over the active slots of ``log_marginal(params, stats, k)``.

    The slots' caches are refreshed for ``params`` first (some components' log
    marginals read them, e.g. the Normal-Inverse-Wishart's cached log
    determinants), so ``params`` may differ from the hyperparameters the statistics
    were loaded with. Cost: O(K) ``refresh`` and ``log_marginal`` calls.
    Returns a float (``-inf`` or NaN for hyperparameters outside the support).
    """
    return _total(state, params, stats)


@primitive
def _total(state, params, stats):
    refresh_blocks(state, params, stats)
    acc = 0.0
    for a in range(state.counts[0]):
        acc += log_marginal(params, stats, state.active[a])
    return acc


# Log likelihoods from the compact statistics of the K non-empty blocks (plain
# arrays, as :mod:`pymc_partitions.distributions.statistics` computes them once per
# partition): no kernel state, no params record, so a call costs ~1 µs of dispatch
# plus O(K D) arithmetic; what a slice update evaluates ~5-8 times per variable.


@entry
def normal_blocks_log_likelihood(m, mean, m2, mu0, tau, sigma):
    """sum over blocks k and dimensions d of the collapsed Normal's log marginal
    (block means integrated out, CollapsedNormal's density), from (K,) float64
    block sizes ``m``, (K, D) means and centred sums of squares ``m2``, at (D,)
    float64 ``mu0``, ``tau``, ``sigma``: with dev = mean - mu0 and
    big = sigma^2 + m tau^2,
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


@entry
def beta_bernoulli_blocks_log_likelihood(m, ones, a, b):
    """sum over blocks k and features d of log B(a_d + c_kd, b_d + m_k - c_kd) -
    log B(a_d, b_d) (CollapsedBetaBernoulli's density) from (K,) float64 block sizes
    ``m`` and (K, D) counts of ones, at (D,) float64 ``a``, ``b``; -inf unless both
    positive and finite."""
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


@entry
def log_prior_total(prior_params, sizes, active, n_active, n):
    """The prior's total log probability of a partition with block sizes
    ``sizes[active[:n_active]]`` of ``n`` items (int64 arrays); the generic path for
    priors with no closed form in block sizes in the step module."""
    return log_prior(prior_params, sizes, active, n_active, n)


def sizes_arrays(sizes):
    """``(sizes, active)`` int64 arrays for :func:`log_prior_total` from the (K,)
    block sizes (slot k holds block k)."""
    sizes = np.ascontiguousarray(sizes, dtype=np.int64)
    return sizes, np.arange(sizes.shape[0], dtype=np.int64)


__all__ = [
    "beta_bernoulli_blocks_log_likelihood",
    "log_likelihood_total",
    "log_prior_total",
    "normal_blocks_log_likelihood",
    "sizes_arrays",
]
