r"""Chinese restaurant process prior (Ewens distribution).

.. math::

    p(z \mid \alpha) = \alpha^K \frac{\Gamma(\alpha)}{\Gamma(\alpha + n)}
    \prod_{k=1}^K \Gamma(n_k)

An item joins a block of size m with weight m and opens a new block with weight
:math:`\alpha` (Neal 2000, eq. 3.7). The log weights are tabulated by block size
(entry 0 is :math:`\log\alpha`), so a Gibbs move computes no logarithm for them.
A set of c items joins a block of size m with weight :math:`\Gamma(m+c)/\Gamma(m)`
and a new block with weight :math:`\alpha\,\Gamma(c)`.
"""

import math
from typing import NamedTuple

import numpy as np

from pymc_partitions.kernels._jit import primitive
from pymc_partitions.kernels.priors.base import register


class CRPParams(NamedTuple):
    """alpha: float, the concentration (> 0); log_weight: (n+1,) float64 with
    log_weight[0] = log alpha and log_weight[m] = log m. Build with :func:`make_params`."""

    alpha: float
    log_weight: np.ndarray
    inv_t: float = 1.0  # 1/t: a tempered target (kernels/tempering.py)


def make_params(alpha, n):
    log_weight = np.log(np.arange(n + 1, dtype=np.float64), where=np.arange(n + 1) > 0,
                        out=np.zeros(n + 1))
    log_weight[0] = np.log(alpha)
    return CRPParams(float(alpha), log_weight)


@primitive
def log_prior_pred(prior_params, size, n_blocks):
    return prior_params.log_weight[size]


@primitive
def log_prior(prior_params, sizes, active, n_active, n):
    alpha = prior_params.alpha
    acc = n_active * np.log(alpha) + math.lgamma(alpha) - math.lgamma(alpha + n)
    for a in range(n_active):
        acc += math.lgamma(sizes[active[a]])
    return acc


@primitive
def log_prior_block(prior_params, size, c, n_blocks):
    # Gibbs type with W(m) = Gamma(m), V(K) = alpha^K (times a constant); the common
    # term V(n_blocks) is dropped, so this equals the chain-rule sum of log_prior_pred.
    if size == 0:
        return prior_params.log_weight[0] + math.lgamma(c)
    return math.lgamma(size + c) - math.lgamma(size)


register(CRPParams, log_prior_pred=log_prior_pred, log_prior=log_prior,
         log_prior_block=log_prior_block)
