r"""Falling-factorial partition weight: the number of ways to colour K blocks with
distinct colours out of q.

.. math:: q(z) = \frac{q!}{(q - K)!}\, 1\{K \le q\}

This is the prior part of the distribution over vertex partitions induced by the
uniform distribution on proper q-colourings of a graph (Nguyen et al. 2022,
App. G.1, eq. 15); the part "no edge within a block" is the colouring component
(:mod:`pymc_partitions.kernels.components.coloring`). Gibbs type with W = 1 and
V(K) = q!/(q-K)!: an item joins an existing block with weight 1 and opens a new one
with weight q - K (0 once the other items use all q colours). Weights are returned
as absolute values of log V (no ratio), which stay defined at K = q.
The total is unnormalised: the normaliser is the number of proper q-colourings
(the chromatic polynomial at q), a constant.
"""

import math
from typing import NamedTuple

import numpy as np

from pymc_partitions.kernels._jit import primitive
from pymc_partitions.kernels.priors.base import register


class FallingFactorialParams(NamedTuple):
    """q: int, the number of colours; log_v: (n+2,) float64,
    log_v[K] = log q!/(q-K)! for K <= q, -inf beyond. Build with :func:`make_params`."""

    q: int
    log_v: np.ndarray
    inv_t: float = 1.0  # 1/t: a tempered target (kernels/tempering.py)


def make_params(q, n):
    q, n = int(q), int(n)
    if q < 1:
        raise ValueError(f"The number of colours q must be a positive integer, got {q}.")
    K = np.arange(n + 2)
    log_v = np.full(n + 2, -np.inf)
    ok = K <= q
    log_v[ok] = [math.lgamma(q + 1) - math.lgamma(q - t + 1) for t in K[ok]]
    return FallingFactorialParams(q, log_v)


@primitive
def log_prior_pred(prior_params, size, n_blocks):
    if size == 0:
        return prior_params.log_v[n_blocks + 1]
    return prior_params.log_v[n_blocks]


@primitive
def log_prior_block(prior_params, size, c, n_blocks):
    return log_prior_pred(prior_params, size, n_blocks)


@primitive
def log_prior(prior_params, sizes, active, n_active, n):
    return prior_params.log_v[n_active]


register(FallingFactorialParams, log_prior_pred=log_prior_pred, log_prior=log_prior,
         log_prior_block=log_prior_block)
