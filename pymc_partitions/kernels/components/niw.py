r"""Collapsed Normal-Inverse-Wishart likelihood: block mean and covariance integrated out.

Model (Murphy 2007, "Conjugate Bayesian analysis of the Gaussian distribution",
§9), for items :math:`x_i \in \mathbb R^D`:

.. math::

    \Sigma_k \sim \mathrm{IW}(\Psi_0, \nu_0), \quad
    \mu_k \mid \Sigma_k \sim \mathcal N(\mu_0, \Sigma_k/\kappa_0), \quad
    x_i \mid z_i = k \sim \mathcal N(\mu_k, \Sigma_k).

A block of m items has posterior NIW(:math:`\mu_m, \kappa_m, \nu_m, \Psi_m`) with
:math:`\kappa_m = \kappa_0 + m`, :math:`\nu_m = \nu_0 + m`,
:math:`\mu_m = (\kappa_0\mu_0 + \sum x_i)/\kappa_m` and, with :math:`r_i = x_i - \mu_0`,
:math:`\Psi_m = \Psi_0 + \sum r_i r_i^\top - (\sum r_i)(\sum r_i)^\top/\kappa_m`
(Murphy eqs. 250-254). The predictive of a new item is a Student t with
:math:`\nu_m - D + 1` degrees of freedom (Murphy eq. 258); written with the
Cholesky factor :math:`\Psi_m = L L^\top`,

.. math::

    \log p(x \mid \text{block}) = c_m - \tfrac12 \log\det\Psi_m
    - \tfrac{\nu_m + 1}{2} \log\Big(1 + \tfrac{\kappa_m}{\kappa_m + 1}
      \lVert L^{-1}(x - \mu_m)\rVert^2\Big),

    c_m = \log\Gamma\big(\tfrac{\nu_m+1}2\big) - \log\Gamma\big(\tfrac{\nu_m-D+1}2\big)
          - \tfrac D2 \log\pi - \tfrac D2 \log\tfrac{\kappa_m+1}{\kappa_m}.

The block log marginal (Murphy eq. 266) is

.. math::

    -\tfrac{mD}2\log\pi + \log\Gamma_D(\tfrac{\nu_m}2) - \log\Gamma_D(\tfrac{\nu_0}2)
    + \tfrac{\nu_0}2\log\det\Psi_0 - \tfrac{\nu_m}2\log\det\Psi_m
    + \tfrac D2 \log\tfrac{\kappa_0}{\kappa_m}.

Algorithm and cost. Each slot caches L, :math:`\mu_m`, :math:`\log\det\Psi_m` and
:math:`c_m - \tfrac12\log\det\Psi_m`; the size-only terms (:math:`c_m`, the
marginal's constants) are tabulated for m = 0..n once per change of
hyperparameters. Adding item x to a block with :math:`(\kappa, \mu)` is the
rank-one update :math:`\Psi \leftarrow \Psi + \tfrac{\kappa}{\kappa+1}(x-\mu)(x-\mu)^\top`;
removing it the downdate :math:`\Psi \leftarrow \Psi - \tfrac{\kappa}{\kappa-1}(x-\mu)(x-\mu)^\top`
(:math:`\kappa, \mu` before the removal). Both are applied to L directly
(Givens-type rank-one Cholesky update/downdate, O(D^2)); no refactorisation per
item. ``log_pred`` is one forward triangular solve, O(D^2), so a Gibbs sweep costs
O(N K D^2). The statistics also keep each block's sum and scatter about a fixed
centre (the data mean, against cancellation), O(D^2) per ``add``/``remove``; from
them ``refresh`` rebuilds :math:`\Psi_m` and refactorises it, O(D^3) per block, only
after the hyperparameters changed (or, as a fallback never expected in exact
arithmetic, if a downdate loses positive definiteness to rounding).
"""

import math
from typing import NamedTuple

import numpy as np

from pymc_partitions.kernels._jit import primitive
from pymc_partitions.kernels.components.base import alloc_slots, register, row_data
from pymc_partitions.kernels.variates import bartlett_factor, std_normal

LOG_PI = float(np.log(np.pi))
LOG_2PI = float(np.log(2.0 * np.pi))


class NIWParams(NamedTuple):
    """Hyperparameters; build with :func:`make_params`.

    mu0 : (D,) float64; kappa0, nu0 : (1,) float64; psi0, psi0_chol : (D, D) float64
    (the scale matrix and its lower Cholesky factor); logdet_psi0 : (1,) float64
    by_size_pred_const : (n+1,) float64, c_m
    by_size_pred_coef : (n+1,) float64, kappa_m / (kappa_m + 1)
    by_size_pred_pow : (n+1,) float64, (nu_m + 1) / 2
    by_size_marg_const : (n+1,) float64, the log marginal without -nu_m/2 log det Psi_m
    by_size_half_nu : (n+1,) float64, nu_m / 2
    """

    mu0: np.ndarray
    kappa0: np.ndarray
    nu0: np.ndarray
    psi0: np.ndarray
    psi0_chol: np.ndarray
    logdet_psi0: np.ndarray
    by_size_pred_const: np.ndarray
    by_size_pred_coef: np.ndarray
    by_size_pred_pow: np.ndarray
    by_size_marg_const: np.ndarray
    by_size_half_nu: np.ndarray
    inv_t: float = 1.0  # 1/t: a tempered target (kernels/tempering.py)


class NIWStats(NamedTuple):
    """Per-slot statistics and caches.

    count : (n,) int64; tsum : (n, D) float64, sum of (x - centre);
    scatter : (n, D, D) float64, sum of (x - centre)(x - centre)^T (lower triangle used);
    chol : (n, D, D) float64, lower Cholesky factor of Psi_m; mean : (n, D) float64, mu_m;
    logdet : (n,) float64, log det Psi_m; lognorm : (n,) float64, c_m - logdet/2;
    centre : (D,) float64, the data mean; work : (2, D) float64, scratch.
    """

    count: np.ndarray
    tsum: np.ndarray
    scatter: np.ndarray
    chol: np.ndarray
    mean: np.ndarray
    logdet: np.ndarray
    lognorm: np.ndarray
    centre: np.ndarray
    work: np.ndarray


def make_params(mu0, kappa0, nu0, psi0, *, n):
    """Params from mu0 (D,), kappa0 > 0, nu0 > D - 1 and Psi0 (D, D) positive definite."""
    from scipy.special import gammaln, multigammaln  # on use: kernels import numba, NumPy only
    from pymc_partitions.kernels.components.mv_normal import cholesky_or_raise

    mu0 = np.ascontiguousarray(mu0, dtype=np.float64)
    d = mu0.shape[0]
    kappa0 = float(np.asarray(kappa0).reshape(()))
    nu0 = float(np.asarray(nu0).reshape(()))
    if not (np.isfinite(kappa0) and kappa0 > 0):
        raise ValueError(f"'kappa0' must be positive and finite, got {kappa0!r}.")
    if not (np.isfinite(nu0) and nu0 > d - 1):
        raise ValueError(f"'nu0' must be > D - 1 = {d - 1}, got {nu0!r}.")
    psi0 = np.ascontiguousarray(psi0, dtype=np.float64)
    chol = cholesky_or_raise(psi0, "Psi0")
    logdet_psi0 = 2.0 * float(np.log(np.diag(chol)).sum())
    m = np.arange(n + 1, dtype=np.float64)
    kappa, nu = kappa0 + m, nu0 + m
    pred_const = (
        gammaln((nu + 1) / 2) - gammaln((nu - d + 1) / 2)
        - 0.5 * d * LOG_PI - 0.5 * d * np.log((kappa + 1) / kappa)
    )
    marg_const = (
        -0.5 * m * d * LOG_PI
        + multigammaln_vec(nu / 2, d) - multigammaln(nu0 / 2, d)
        + 0.5 * nu0 * logdet_psi0 + 0.5 * d * np.log(kappa0 / kappa)
    )
    return NIWParams(
        mu0, np.array([kappa0]), np.array([nu0]), psi0, np.ascontiguousarray(chol),
        np.array([logdet_psi0]), pred_const, kappa / (kappa + 1), (nu + 1) / 2, marg_const, nu / 2,
    )


def multigammaln_vec(a, d):
    """log Gamma_D(a) elementwise over the array ``a``."""
    from scipy.special import gammaln  # on use: kernels import numba, NumPy only
    j = np.arange(d, dtype=np.float64)
    return 0.25 * d * (d - 1) * LOG_PI + gammaln(np.asarray(a)[..., None] - 0.5 * j).sum(axis=-1)


make_data = row_data  # (x,) from an (N, D) float array


def alloc_stats(n_slots, data, params):
    """Statistics of ``n_slots`` empty slots for ``data``, caches at the prior."""
    x = data[0]
    d = x.shape[1]
    return alloc_slots(
        NIWStats, n_slots, (d,), (d, d), (d, d), (d,), (), (),
        extra=(np.ascontiguousarray(x.mean(axis=0)), np.empty((2, d))),
        params=params, refresh=refresh,
    )


@primitive
def _set_empty(params, stats, k):
    """Slot k at the prior: Psi = Psi0, mean mu0, exact zero sums. O(D^2)."""
    d = params.mu0.shape[0]
    for a in range(d):
        stats.mean[k, a] = params.mu0[a]
        stats.tsum[k, a] = 0.0
        for b in range(d):
            stats.chol[k, a, b] = params.psi0_chol[a, b]
            stats.scatter[k, a, b] = 0.0
    stats.logdet[k] = params.logdet_psi0[0]
    stats.lognorm[k] = params.by_size_pred_const[0] - 0.5 * params.logdet_psi0[0]


@primitive
def _finish(params, stats, k):
    """log det and the predictive normaliser from the diagonal of L: O(D)."""
    acc = 0.0
    for a in range(params.mu0.shape[0]):
        acc += math.log(stats.chol[k, a, a])
    stats.logdet[k] = 2.0 * acc
    stats.lognorm[k] = params.by_size_pred_const[stats.count[k]] - acc


@primitive
def _refactor(params, stats, k):
    """Psi_m of slot k from its sum and scatter, then an in-place Cholesky: O(D^3).

    With delta = centre - mu0, t = tsum + m delta and
    R = scatter + tsum delta^T + delta tsum^T + m delta delta^T (the sums of
    r = x - mu0): Psi_m = Psi0 + R - t t^T / kappa_m. Returns False if a pivot is
    not positive.
    """
    d = params.mu0.shape[0]
    m = stats.count[k]
    kappa = params.kappa0[0] + m
    L = stats.chol
    work = stats.work
    for a in range(d):
        delta = stats.centre[a] - params.mu0[a]
        work[0, a] = delta
        work[1, a] = stats.tsum[k, a] + m * delta
        stats.mean[k, a] = params.mu0[a] + work[1, a] / kappa
    for a in range(d):
        for b in range(a + 1):
            r = (
                stats.scatter[k, a, b]
                + stats.tsum[k, a] * work[0, b]
                + work[0, a] * stats.tsum[k, b]
                + m * work[0, a] * work[0, b]
            )
            L[k, a, b] = params.psi0[a, b] + r - work[1, a] * work[1, b] / kappa
        for b in range(a + 1, d):
            L[k, a, b] = 0.0
    # Cholesky-Banachiewicz, in place on the lower triangle.
    for a in range(d):
        for b in range(a + 1):
            s = L[k, a, b]
            for c in range(b):
                s -= L[k, a, c] * L[k, b, c]
            if a == b:
                if not s > 0.0:
                    return False
                L[k, a, a] = math.sqrt(s)
            else:
                L[k, a, b] = s / L[k, b, b]
    _finish(params, stats, k)
    return True


@primitive
def _rank_one(stats, k, sign):
    """L L^T + sign v v^T with v = work[0] (overwritten): O(D^2). Returns False if
    a downdate would make a pivot non-positive (L is then partly modified)."""
    L = stats.chol
    v = stats.work[0]
    d = v.shape[0]
    for a in range(d):
        lkk = L[k, a, a]
        r2 = lkk * lkk + sign * v[a] * v[a]
        if not r2 > 0.0:
            return False
        r = math.sqrt(r2)
        c = r / lkk
        s = v[a] / lkk
        L[k, a, a] = r
        for b in range(a + 1, d):
            L[k, b, a] = (L[k, b, a] + sign * s * v[b]) / c
            v[b] = c * v[b] - s * L[k, b, a]
    return True


@primitive
def _add_scatter(stats, data, i, k, sign):
    x = data[0]
    d = x.shape[1]
    for a in range(d):
        ya = x[i, a] - stats.centre[a]
        stats.tsum[k, a] += sign * ya
        for b in range(a + 1):
            stats.scatter[k, a, b] += sign * ya * (x[i, b] - stats.centre[b])


@primitive
def refresh(params, stats, k):
    if stats.count[k] == 0:
        _set_empty(params, stats, k)
    else:
        _refactor(params, stats, k)


@primitive
def log_pred(params, stats, data, i, k):
    x = data[0]
    d = x.shape[1]
    L = stats.chol
    z = stats.work[1]
    # Forward solve L z = x - mu_m; accumulate ||z||^2.
    q = 0.0
    for a in range(d):
        s = x[i, a] - stats.mean[k, a]
        for b in range(a):
            s -= L[k, a, b] * z[b]
        za = s / L[k, a, a]
        z[a] = za
        q += za * za
    m = stats.count[k]
    return stats.lognorm[k] - params.by_size_pred_pow[m] * math.log1p(
        params.by_size_pred_coef[m] * q
    )


@primitive
def add(params, stats, data, i, k):
    x = data[0]
    d = x.shape[1]
    m = stats.count[k]
    if m == 0:
        _set_empty(params, stats, k)  # a deep free slot may hold older hyperparameters
    kappa = params.kappa0[0] + m
    scale = math.sqrt(kappa / (kappa + 1.0))
    for a in range(d):
        stats.work[0, a] = scale * (x[i, a] - stats.mean[k, a])
        stats.mean[k, a] = (kappa * stats.mean[k, a] + x[i, a]) / (kappa + 1.0)
    stats.count[k] = m + 1
    _add_scatter(stats, data, i, k, 1.0)
    _rank_one(stats, k, 1.0)  # an update cannot fail
    _finish(params, stats, k)


@primitive
def remove(params, stats, data, i, k):
    x = data[0]
    d = x.shape[1]
    m = stats.count[k]
    stats.count[k] = m - 1
    if m == 1:
        # Reset exactly: no rounding residue survives in an empty slot.
        _set_empty(params, stats, k)
        return
    kappa = params.kappa0[0] + m
    scale = math.sqrt(kappa / (kappa - 1.0))
    for a in range(d):
        stats.work[0, a] = scale * (x[i, a] - stats.mean[k, a])
        stats.mean[k, a] = (kappa * stats.mean[k, a] - x[i, a]) / (kappa - 1.0)
    _add_scatter(stats, data, i, k, -1.0)
    if _rank_one(stats, k, -1.0):
        _finish(params, stats, k)
    else:
        _refactor(params, stats, k)


@primitive
def log_marginal(params, stats, k):
    m = stats.count[k]
    if m == 0:
        return 0.0
    return params.by_size_marg_const[m] - params.by_size_half_nu[m] * stats.logdet[k]


# ---------------------------------------------------------------- explicit parameters
# (the sub-cluster sampler, kernels/subclusters.py; registered below, components/explicit.py)
# A block's explicit parameters (mu, Sigma) are one row of a float64 array: mu (D
# entries), then X (D x D, X[a, j] at D + a D + j), a square root of the precision,
# Sigma^-1 = X X^T, then the log normaliser -D/2 log 2 pi + log|det X|. An item's log
# density is the normaliser - ||X^T (x_i - mu)||^2 / 2: O(D^2), no solve.
#
# Draw (Murphy 2007, eqs. 250-254; the Bartlett decomposition, kernels/variates.py):
# with Psi_m = L L^T (the slot's cached Cholesky factor) and A the Bartlett factor of
# a Wishart(I, nu_m) matrix, Sigma^-1 = L^-T A A^T L^-1 ~ Wishart(Psi_m^-1, nu_m), i.e.
# Sigma ~ IW(Psi_m, nu_m), and X = L^-T A; then mu = mu_m + L A^-T z / sqrt(kappa_m),
# z ~ N(0, I), has covariance L A^-T A^-1 L^T / kappa_m = Sigma / kappa_m. O(D^3) per
# draw (the triangular solves), all in the row itself (no scratch).


@primitive
def explicit_width(params):
    """Float64 entries per block in an explicit-parameter row: D means, D^2 entries of
    the precision's square root X, 1 constant."""
    d = params.mu0.shape[0]
    return d + d * d + 1


@primitive
def _chol_at(params, stats, k, m, a, b):
    """Entry (a, b) of the lower Cholesky factor of Psi_m for slot k (Psi0's when the
    slot is empty: a free slot's cache may hold older hyperparameters)."""
    if m == 0:
        return params.psi0_chol[a, b]
    return stats.chol[k, a, b]


@primitive
def _mean_at(params, stats, k, m, a):
    if m == 0:
        return params.mu0[a]
    return stats.mean[k, a]


@primitive
def draw_explicit(params, stats, k, stream, theta, row):
    """Draw slot k's (mu, Sigma) from the posterior NIW(mu_m, kappa_m, nu_m, Psi_m)
    (the prior NIW for an empty slot): Sigma ~ IW(Psi_m, nu_m), mu | Sigma ~
    N(mu_m, Sigma / kappa_m), the same law as :meth:`pymc_partitions.CollapsedNIW`'s
    ``block_posterior_draw``; into ``theta[row]`` (layout above)."""
    d = params.mu0.shape[0]
    m = stats.count[k]
    kappa = params.kappa0[0] + m
    nu = params.nu0[0] + m
    off = d
    log_det_a = bartlett_factor(stream, nu, d, theta, row, off)
    # w = A^-T z (back substitution with the upper triangular A^T), into theta[row, :d]
    for a in range(d - 1, -1, -1):
        s = std_normal(stream)
        for b in range(a + 1, d):
            s -= theta[row, off + b * d + a] * theta[row, b]
        theta[row, a] = s / theta[row, off + a * d + a]
    # mu = mu_m + L w / sqrt(kappa), in place from the last entry down
    scale = 1.0 / math.sqrt(kappa)
    log_det_l = 0.0
    for a in range(d - 1, -1, -1):
        acc = 0.0
        for b in range(a + 1):
            acc += _chol_at(params, stats, k, m, a, b) * theta[row, b]
        theta[row, a] = _mean_at(params, stats, k, m, a) + scale * acc
        log_det_l += math.log(_chol_at(params, stats, k, m, a, a))
    # X = L^-T A, column by column in place (back substitution with L^T)
    for j in range(d):
        for a in range(d - 1, -1, -1):
            s = theta[row, off + a * d + j]
            for b in range(a + 1, d):
                s -= _chol_at(params, stats, k, m, b, a) * theta[row, off + b * d + j]
            theta[row, off + a * d + j] = s / _chol_at(params, stats, k, m, a, a)
    theta[row, off + d * d] = -0.5 * d * LOG_2PI + log_det_a - log_det_l


@primitive
def log_density_explicit(params, theta, row, data, i):
    """log N(x_i | mu, Sigma) = constant - ||X^T (x_i - mu)||^2 / 2."""
    x = data[0]
    d = x.shape[1]
    off = d
    q = 0.0
    for j in range(d):
        s = 0.0
        for a in range(d):
            s += (x[i, a] - theta[row, a]) * theta[row, off + a * d + j]
        q += s * s
    return theta[row, off + d * d] - 0.5 * q

register(
    NIWParams,
    log_pred=log_pred,
    add=add,
    remove=remove,
    refresh=refresh,
    log_marginal=log_marginal,
    explicit_width=explicit_width,
    draw_explicit=draw_explicit,
    log_density_explicit=log_density_explicit,
)
