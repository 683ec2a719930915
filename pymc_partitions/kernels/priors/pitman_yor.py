r"""Pitman-Yor (two-parameter) partition prior.

.. math::

    p(z \mid \alpha, d) = \frac{\prod_{i=1}^{K-1} (\alpha + i d)}{(\alpha + 1)_{n-1}}
    \prod_{k=1}^{K} (1 - d)_{n_k - 1},
    \qquad 0 \le d < 1,\ \alpha > -d

(Pitman 1995; Pitman & Yor 1997), with :math:`(x)_m = \Gamma(x+m)/\Gamma(x)` the
rising factorial. It is of Gibbs type, :math:`V(K) = \prod_{i<K}(\alpha+id)/(\alpha+1)_{n-1}`,
:math:`W(m) = (1-d)_{m-1}`. An item joins a block of size m with weight
:math:`m - d` and opens a new block with weight :math:`\alpha + K d` (K blocks
among the other items); ``d = 0`` is the CRP. A set of c items joins a block of
size m with weight :math:`\Gamma(m+c-d)/\Gamma(m-d)` and a new block with weight
:math:`(\alpha + K d)\,\Gamma(c-d)/\Gamma(1-d)`. The per-item log weights are
tabulated.
"""

import math
from typing import NamedTuple

import numpy as np

from pymc_partitions.kernels._jit import primitive
from pymc_partitions.kernels.priors.base import register


class PitmanYorParams(NamedTuple):
    """alpha, d: float (0 <= d < 1, alpha > -d);
    log_join: (n+1,) float64, log_join[m] = log(m - d) (entry 0 unused);
    log_new: (n+2,) float64, log_new[K] = log(alpha + K d) for K >= 1, log_new[0] = 0
    (a first block: the only choice). Build with :func:`make_params`."""

    alpha: float
    d: float
    log_join: np.ndarray
    log_new: np.ndarray
    inv_t: float = 1.0  # 1/t: a tempered target (kernels/tempering.py)


def make_params(alpha, d, n):
    alpha, d = float(alpha), float(d)
    if not (0.0 <= d < 1.0) or not alpha > -d or not np.isfinite(alpha):
        raise ValueError(
            f"Pitman-Yor needs 0 <= d < 1 and alpha > -d; got alpha = {alpha!r}, d = {d!r}."
        )
    m = np.arange(n + 1, dtype=np.float64)
    log_join = np.zeros(n + 1)
    log_join[1:] = np.log(m[1:] - d)
    K = np.arange(n + 2, dtype=np.float64)
    log_new = np.zeros(n + 2)
    log_new[1:] = np.log(alpha + K[1:] * d)
    return PitmanYorParams(alpha, d, log_join, log_new)


@primitive
def log_prior_pred(prior_params, size, n_blocks):
    if size == 0:
        return prior_params.log_new[n_blocks]
    return prior_params.log_join[size]


@primitive
def log_prior_block(prior_params, size, c, n_blocks):
    # Common term dropped: V(n_blocks) prod W of the other blocks (V ratios are
    # finite here, so this equals the chain-rule sum of log_prior_pred).
    d = prior_params.d
    if size == 0:
        return prior_params.log_new[n_blocks] + math.lgamma(c - d) - math.lgamma(1.0 - d)
    return math.lgamma(size + c - d) - math.lgamma(size - d)


@primitive
def log_prior(prior_params, sizes, active, n_active, n):
    alpha, d = prior_params.alpha, prior_params.d
    acc = math.lgamma(alpha + 1.0) - math.lgamma(alpha + n)
    for K in range(1, n_active):
        acc += prior_params.log_new[K]
    lg1 = math.lgamma(1.0 - d)
    for a in range(n_active):
        acc += math.lgamma(sizes[active[a]] - d) - lg1
    return acc


register(PitmanYorParams, log_prior_pred=log_prior_pred, log_prior=log_prior,
         log_prior_block=log_prior_block)
