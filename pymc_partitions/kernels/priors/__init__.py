"""Partition priors as numba primitives in the same delta form as components.

Each prior module defines, for its ``prior_params`` record class::

    log_prior_pred(prior_params, size, n_blocks) -> float
        log weight of one item joining a block of ``size`` items (``size == 0``:
        opening a new block) when the partition has ``n_blocks`` non-empty blocks;
    log_prior(prior_params, sizes, active, n_active, n) -> float
        the total log prior of the partition.

Sequential additions give the prior of any partition (the chain rule), so block
moves need nothing else.
"""

from pymc_partitions.kernels.priors import crp
from pymc_partitions.kernels.priors.base import log_prior, log_prior_pred, register

__all__ = ["crp", "log_prior", "log_prior_pred", "register"]
