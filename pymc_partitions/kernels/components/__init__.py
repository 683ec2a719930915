"""Likelihood components: collapsed block likelihoods as numba primitives.

Every component module defines, over its own arrays (DESIGN §3)::

    log_pred(params, stats, data, i, k) -> float   # log p(x_i | items in slot k)
    add(params, stats, data, i, k)                 # item i joins slot k
    remove(params, stats, data, i, k)              # item i leaves slot k
    refresh(params, stats, k)                      # recompute slot k's caches
    log_marginal(params, stats, k) -> float        # log p(x of slot k's items)

and registers them for its ``params`` record class, optionally with a sixth,
``log_pred_block(params, stats, data, items, k)`` (log p(x_C | slot k) for a set C
of unassigned items; default: the chain rule over C's items), for components whose
block term has a cheaper closed form (the IRM's). Moves call the generic
functions of :mod:`.base`, which numba resolves from the params type.

Optionally, a component module provides the hyperparameter steps' fast path, two
plain functions (not registered: called from Python, looked up on the module by
:mod:`pymc_partitions.step_methods.hyperparameters`)::

    blocks_statistics(idx, sizes, data) -> tuple of arrays   # once per partition
    blocks_log_likelihood(values, statistics) -> float       # -inf outside the support

the log likelihood from the K blocks' compact statistics, without a kernel state
(the Normal's and the Beta-Bernoulli's). Without them the step sums ``log_marginal``
over a kernel state: a new likelihood needs nothing more than its module, its
distribution class and its tests.
Statistics are updated incrementally: no primitive reads the members of a block.
"""

from pymc_partitions.kernels.components import (
    beta_bernoulli,
    coloring,
    dirichlet_multinomial,
    irm,
    kmeans_energy,
    mv_normal,
    niw,
    normal,
    normal_inverse_gamma,
    poisson_gamma,
)
from pymc_partitions.kernels.components.base import (
    Pair,
    add,
    combine,
    log_marginal,
    log_pred,
    log_pred_block,
    refresh,
    register,
    remove,
)

__all__ = [
    "Pair",
    "add",
    "beta_bernoulli",
    "coloring",
    "combine",
    "irm",
    "dirichlet_multinomial",
    "kmeans_energy",
    "log_marginal",
    "log_pred",
    "log_pred_block",
    "mv_normal",
    "niw",
    "normal",
    "normal_inverse_gamma",
    "poisson_gamma",
    "refresh",
    "register",
    "remove",
]
