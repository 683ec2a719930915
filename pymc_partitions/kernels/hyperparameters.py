"""Log densities a hyperparameter update needs, from the partition's statistics.

A hyperparameter theta of a collapsed likelihood enters the model only through

.. math:: \\log p(x \\mid z, \\theta) = \\sum_k \\log p(x_k \\mid \\theta),

the sum over blocks of each block's log marginal, which every component computes
from its per-slot sufficient statistics (``log_marginal``, DESIGN §3). So once a
kernel state holds the partition, the conditional of theta costs O(K D) per
evaluation (diagonal components; O(K D^2) or O(K D^3) for dense ones), not O(N D):
:func:`log_likelihood_total`. Priors' hyperparameters need only the block sizes:
:func:`log_prior_total`. A component module may also provide the log likelihood from
the K blocks' compact statistics as plain arrays (no kernel state, no params record):
the optional ``blocks_statistics`` / ``blocks_log_likelihood`` pair
(:mod:`.components`), which the hyperparameter step uses when present.
"""

import numpy as np
from numba import njit

from pymc_partitions.kernels._jit import entry, primitive
from pymc_partitions.kernels.bookkeeping import refresh_blocks
from pymc_partitions.kernels.components import log_marginal
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
    "log_likelihood_total",
    "log_prior_total",
    "sizes_arrays",
]
