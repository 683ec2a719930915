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

from functools import lru_cache

import numpy as np

from pymc_partitions.kernels.priors.gibbs_type import gibbs_type, lgamma_table


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
    log_vn_t = log_vn(gamma, log_pk, n)  # (n+2,)
    log_gamma = np.log(gamma)
    join = np.log(np.arange(n + 1, dtype=np.float64) + gamma)
    new = np.append(log_gamma + log_vn_t[1:], -np.inf)  # gamma V_n(t + 1)
    # W(m) = gamma^(m) = Gamma(gamma + m) / Gamma(gamma); normalised by W(1) = gamma,
    # whose t factors go into log_v.
    lg = lgamma_table(gamma, n + 2)  # lgamma(gamma + m), m = 0..n+1
    log_w = lg - lg[1]
    log_w[0] = 0.0
    log_v = log_vn_t + np.arange(n + 2) * log_gamma
    return gibbs_type(n, join=join, stay=log_vn_t, new=new, log_v=log_v, log_w=log_w)
