r"""Mixture of finite mixtures (MFM) partition prior: Miller & Harrison (2018).

With K ~ p_K on {1, 2, ...} components and Dirichlet_K(gamma, ..., gamma) weights,
the partition of n items into t non-empty blocks has probability (Miller & Harrison
2018, JASA, "Mixture models with a prior on the number of components": the MFM
exchangeable partition distribution)

.. math::

    p(z) = V_n(t) \prod_{c=1}^{t} \gamma^{(n_c)}, \qquad
    V_n(t) = \sum_{k \ge t} \frac{k_{(t)}}{(\gamma k)^{(n)}}\, p_K(k),

:math:`x^{(m)} = \Gamma(x+m)/\Gamma(x)` the rising and :math:`k_{(t)} = k!/(k-t)!`
the falling factorial. Gibbs type with :math:`W(m) = \gamma^{(m)}`: an item joins a
block of size m with weight :math:`m + \gamma` and opens a new block with weight
:math:`\gamma V_n(t+1)/V_n(t)` (their MFM restaurant process). A set of c items
joins a block of size m with weight :math:`\gamma^{(m+c)}/\gamma^{(m)}` and a new
block with weight :math:`\gamma^{(c)} V_n(t+1)`. log V_n(t) is tabulated for
t = 0..n+1 (so no weight is a ratio of V's that may both vanish); p_K is a finite
vector (k = 1..kmax), see :mod:`pymc_partitions.distributions.priors` for how an
infinite-support p_K is truncated.
"""

import math
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from pymc_partitions.kernels._jit import primitive
from pymc_partitions.kernels.priors.base import register


class MFMParams(NamedTuple):
    """gamma: float (> 0); log_v: (n+2,) float64, log_v[t] = log V_n(t) (-inf where
    V_n(t) = 0, i.e. t > kmax and t = n+1); log_join: (n+1,) float64,
    log_join[m] = log(m + gamma). Build with :func:`make_params`."""

    gamma: float
    log_v: np.ndarray
    log_join: np.ndarray
    inv_t: float = 1.0  # 1/t: a tempered target (kernels/tempering.py)


@lru_cache(maxsize=8)
def _log_falling(n, kmax):
    """(T+1, kmax) table of log k_(t) = log k!/(k-t)!, t = 0..T = min(n, kmax),
    k = 1..kmax; -inf where k < t. Depends only on the sizes, so it is cached."""
    T = min(n, kmax)
    t = np.arange(T + 1)[:, None]
    k = np.arange(1, kmax + 1)[None, :]
    from scipy.special import gammaln  # on use: kernels import numba, NumPy only

    out = np.full((T + 1, kmax), -np.inf)
    ok = k >= t
    vals = gammaln(k + 1.0) - gammaln(np.maximum(k - t, 0) + 1.0)
    out[ok] = np.broadcast_to(vals, out.shape)[ok]
    out.setflags(write=False)
    return out


def log_vn(gamma, log_pk, n):
    """log V_n(t) for t = 0..n+1 as an (n+2,) array.

    log_pk : (kmax,) float64, log p_K(k) for k = 1..kmax (-inf allowed).
    Cost O(min(n, kmax) kmax).
    """
    from scipy.special import gammaln, logsumexp  # on use, as above

    gamma = float(gamma)
    log_pk = np.asarray(log_pk, dtype=np.float64)
    kmax = log_pk.shape[0]
    k = np.arange(1, kmax + 1, dtype=np.float64)
    per_k = log_pk - (gammaln(gamma * k + n) - gammaln(gamma * k))
    table = _log_falling(n, kmax) + per_k[None, :]
    out = np.full(n + 2, -np.inf)
    with np.errstate(all="ignore"):
        out[: table.shape[0]] = logsumexp(table, axis=1)
    out[n + 1] = -np.inf  # more blocks than items
    return out


def make_params(gamma, log_pk, n):
    gamma = float(gamma)
    if not (np.isfinite(gamma) and gamma > 0):
        raise ValueError(f"MFM needs gamma > 0, got {gamma!r}.")
    log_join = np.log(np.arange(n + 1, dtype=np.float64) + gamma)
    return MFMParams(gamma, log_vn(gamma, log_pk, n), log_join)


@primitive
def log_prior_pred(prior_params, size, n_blocks):
    # Common term dropped: prod W of the other blocks.
    if size == 0:
        return math.log(prior_params.gamma) + prior_params.log_v[n_blocks + 1]
    return prior_params.log_join[size] + prior_params.log_v[n_blocks]


@primitive
def log_prior_block(prior_params, size, c, n_blocks):
    g = prior_params.gamma
    if size == 0:
        return math.lgamma(g + c) - math.lgamma(g) + prior_params.log_v[n_blocks + 1]
    return math.lgamma(g + size + c) - math.lgamma(g + size) + prior_params.log_v[n_blocks]


@primitive
def log_prior(prior_params, sizes, active, n_active, n):
    g = prior_params.gamma
    acc = prior_params.log_v[n_active]
    lg = math.lgamma(g)
    for a in range(n_active):
        acc += math.lgamma(g + sizes[active[a]]) - lg
    return acc


register(MFMParams, log_prior_pred=log_prior_pred, log_prior=log_prior,
         log_prior_block=log_prior_block)
