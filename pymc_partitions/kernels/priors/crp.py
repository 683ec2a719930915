r"""Chinese restaurant process prior (Ewens distribution).

.. math::

    p(z \mid \alpha) = \alpha^K \frac{\Gamma(\alpha)}{\Gamma(\alpha + n)}
    \prod_{k=1}^K \Gamma(n_k)

An item joins a block of size m with weight m and opens a new block with weight
:math:`\alpha` (Neal 2000, eq. 3.7).
"""

import math
from typing import NamedTuple

import numpy as np

from pymc_partitions.kernels._jit import primitive
from pymc_partitions.kernels.priors.base import register


class CRPParams(NamedTuple):
    """alpha: float, the concentration (> 0)."""

    alpha: float


@primitive
def log_prior_pred(prior_params, size, n_blocks):
    if size > 0:
        return np.log(size)
    return np.log(prior_params.alpha)


@primitive
def log_prior(prior_params, sizes, active, n_active, n):
    alpha = prior_params.alpha
    acc = n_active * np.log(alpha) + math.lgamma(alpha) - math.lgamma(alpha + n)
    for a in range(n_active):
        acc += math.lgamma(sizes[active[a]])
    return acc


register(CRPParams, log_prior_pred=log_prior_pred, log_prior=log_prior)
