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

import numpy as np
from numba import njit

from pymc_partitions.kernels._jit import entry, primitive
from pymc_partitions.kernels.bookkeeping import assign_labels, refresh_blocks
from pymc_partitions.kernels.components import log_marginal
from pymc_partitions.kernels.components.beta_bernoulli import BetaBernoulliParams
from pymc_partitions.kernels.components.normal import LOG_2PI, NormalParams
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


# Params built inside numba for the likelihoods a hyperparameter step meets most:
# ``make_params`` in Python costs 15-60 µs of NumPy calls, several times the O(K D)
# sum it feeds, and a slice update evaluates the conditional ~5 times. Each
# builder mirrors its component's ``make_params`` (tests compare the records and
# the totals with the Python path).


@primitive
def _normal_row(params, m):
    w, prec, lognorm = params.by_size_w, params.by_size_prec, params.by_size_lognorm
    acc = 0.0
    for d in range(w.shape[1]):
        w[m, d] = 1.0 / (1.0 / params.tau2[d] + m * params.inv_sigma2[d])
        v = params.sigma2[d] + w[m, d]
        prec[m, d] = 1.0 / v
        acc += np.log(v)
    lognorm[m] = -0.5 * (LOG_2PI * w.shape[1] + acc)


@primitive
def _normal_record(mu0, tau, sigma, n):
    # Tables allocated, not filled.
    D = mu0.shape[0]
    tau2 = tau * tau
    sigma2 = sigma * sigma
    return NormalParams(mu0.copy(), tau2, sigma2, mu0 / tau2, 1.0 / sigma2,
                        np.empty((n + 1, D)), np.empty((n + 1, D)), np.empty(n + 1))


@primitive
def normal_params(mu0, tau, sigma, n):
    """:func:`pymc_partitions.kernels.components.normal.make_params` in numba:
    (D,) float64 mu0, tau, sigma; tables for block sizes 0..n."""
    params = _normal_record(mu0, tau, sigma, n)
    for m in range(n + 1):
        _normal_row(params, m)
    return params


@primitive
def normal_params_for(mu0, tau, sigma, n, state):
    """:func:`normal_params` with only the table rows the state's blocks read (their
    sizes and 0, for the new-block slot): O(K D), not O(n D). Enough for
    ``refresh_blocks`` and ``log_marginal`` on this state; nothing else."""
    params = _normal_record(mu0, tau, sigma, n)
    _normal_row(params, 0)
    for a in range(state.counts[0]):
        _normal_row(params, state.sizes[state.active[a]])
    return params


@primitive
def _all_finite(x, positive):
    for v in x:
        if not (v < np.inf and (v > 0.0 if positive else v > -np.inf)):
            return False
    return True


@allocating_entry
def normal_log_likelihood(mu0, tau, sigma, n, state, stats):
    """:func:`log_likelihood_total` of the collapsed Normal at (D,) float64 ``mu0``,
    ``tau``, ``sigma`` (tables for block sizes up to ``n``); -inf unless mu0 is
    finite and tau, sigma positive and finite (the likelihood's support)."""
    if not (_all_finite(mu0, False) and _all_finite(tau, True) and _all_finite(sigma, True)):
        return -np.inf
    return _total(state, normal_params_for(mu0, tau, sigma, n, state), stats)


@allocating_entry
def normal_assign(mu0, tau, sigma, n, state, stats, data, labels):
    """:func:`~pymc_partitions.kernels.bookkeeping.assign_labels` with the collapsed
    Normal's params built in numba (tables for block sizes up to ``n``)."""
    assign_labels(state, normal_params(mu0, tau, sigma, n), stats, data, labels)


@primitive
def beta_bernoulli_params(a, b):
    """:func:`pymc_partitions.kernels.components.beta_bernoulli.make_params` without
    ``n`` (no log tables: the components' computed path), in numba."""
    empty = np.empty((a.shape[0], 0))
    return BetaBernoulliParams(a.copy(), b.copy(), empty, empty, empty)


@allocating_entry
def beta_bernoulli_log_likelihood(a, b, state, stats):
    """:func:`log_likelihood_total` of the collapsed Beta-Bernoulli at (D,) float64
    ``a``, ``b``; -inf unless both are positive and finite."""
    if not (_all_finite(a, True) and _all_finite(b, True)):
        return -np.inf
    return _total(state, beta_bernoulli_params(a, b), stats)


@allocating_entry
def beta_bernoulli_assign(a, b, state, stats, data, labels):
    """:func:`~pymc_partitions.kernels.bookkeeping.assign_labels` with the collapsed
    Beta-Bernoulli's params built in numba."""
    assign_labels(state, beta_bernoulli_params(a, b), stats, data, labels)


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
    "beta_bernoulli_assign",
    "beta_bernoulli_log_likelihood",
    "beta_bernoulli_params",
    "log_likelihood_total",
    "log_prior_total",
    "normal_assign",
    "normal_log_likelihood",
    "normal_params",
    "normal_params_for",
    "sizes_arrays",
]
