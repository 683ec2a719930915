"""Partition priors as numba primitives in the same delta form as components.

Each prior module defines, for its ``prior_params`` record class::

    log_prior_pred(prior_params, size, n_blocks) -> float
        log weight of one item joining a block of ``size`` items (``size == 0``:
        opening a new block) when the other items form ``n_blocks`` non-empty blocks;
    log_prior_block(prior_params, size, c, n_blocks) -> float
        log weight of a set C of ``c`` items joining a block of ``size`` items
        (0: a new block) together, the other items forming ``n_blocks`` blocks;
    log_prior(prior_params, sizes, active, n_active, n) -> float
        the total log prior of the partition.

Both weights are defined up to a term common to all the blocks the item (or the
set) may join. Every prior here is of Gibbs type, p(z) = V(K) prod_k W(n_k) with n
fixed, so with W(0) := 1

    log_prior_pred  = log W(size + 1) - log W(size) + log V(n_blocks + [size == 0]) (- common)
    log_prior_block = log W(size + c) - log W(size) + log V(n_blocks + [size == 0]) (- common).

Why a block primitive: adding C's items one at a time and summing
``log_prior_pred`` (the chain rule) telescopes to the same value only when every
intermediate ratio V(K + 1)/V(K) is finite. For a fixed number of blocks
(V(K) = 1{K = k}) or colourings with K near q (V(K) = q!/(q - K)!) the
intermediate ratios are 0/0, so block moves (:mod:`..sweep_block`) use
``log_prior_block`` for the prior part.
"""

from pymc_partitions.kernels.priors import crp, falling_factorial, fixed_blocks, mfm, pitman_yor
from pymc_partitions.kernels.priors.base import (
    log_prior,
    log_prior_block,
    log_prior_pred,
    register,
)

__all__ = [
    "crp",
    "falling_factorial",
    "fixed_blocks",
    "log_prior",
    "log_prior_block",
    "log_prior_pred",
    "mfm",
    "pitman_yor",
    "register",
]
