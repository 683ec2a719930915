r"""Uniform prior over the partitions of n items with exactly k blocks.

.. math:: p(z) = \frac{1\{K = k\}}{S(n, k)}

with :math:`S(n, k)` the Stirling number of the second kind (the number of such
partitions). Goswami, Liu & Wong (2007), §7.3, eq. 24, restrict the cluster
indicators to S = 5 sub-clusters with this indicator. Gibbs type with W = 1 and
V(K) = 1{K = k}: an item may join an existing block only while the other items form
k blocks, and must open a new one when they form k - 1 (an item alone in its block
stays alone), so no Gibbs move opens or empties a block. The weights are the
absolute values of V (0 or -inf), not ratios: V(K + 1)/V(K) is 0/0 for K != k.
"""

from typing import NamedTuple

import numpy as np

from pymc_partitions.kernels._jit import primitive
from pymc_partitions.kernels.priors.base import register


class FixedBlocksParams(NamedTuple):
    """k: int, the number of blocks (1 <= k <= n); log_norm: float, -log S(n, k).
    Build with :func:`make_params`."""

    k: int
    log_norm: float
    inv_t: float = 1.0  # 1/t: a tempered target (kernels/tempering.py)


def log_stirling2(n, k):
    """log S(n, k), the Stirling number of the second kind, by the recursion
    S(m, j) = j S(m-1, j) + S(m-1, j-1) in log space; -inf when k > n or k < 1 <= n."""
    if k < 0 or k > n:
        return -np.inf
    row = np.full(k + 1, -np.inf)
    row[0] = 0.0  # S(0, 0) = 1
    for _ in range(n):
        new = np.full(k + 1, -np.inf)
        j = np.arange(1, k + 1)
        new[1:] = np.logaddexp(np.log(j) + row[1:], row[:-1])
        row = new
    return float(row[k])


def make_params(k, n):
    k, n = int(k), int(n)
    if not 1 <= k <= n:
        raise ValueError(f"FixedBlocks needs 1 <= k <= n; got k = {k}, n = {n}.")
    return FixedBlocksParams(k, -log_stirling2(n, k))


@primitive
def _log_v(prior_params, n_blocks):
    return 0.0 if n_blocks == prior_params.k else -np.inf


@primitive
def log_prior_pred(prior_params, size, n_blocks):
    if size == 0:
        return _log_v(prior_params, n_blocks + 1)
    return _log_v(prior_params, n_blocks)


@primitive
def log_prior_block(prior_params, size, c, n_blocks):
    return log_prior_pred(prior_params, size, n_blocks)


@primitive
def log_prior(prior_params, sizes, active, n_active, n):
    if n_active == prior_params.k:
        return prior_params.log_norm
    return -np.inf


register(FixedBlocksParams, log_prior_pred=log_prior_pred, log_prior=log_prior,
         log_prior_block=log_prior_block)
