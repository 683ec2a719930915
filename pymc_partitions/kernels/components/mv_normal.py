r"""Collapsed dense Gaussian likelihood with known covariances: block means integrated out.

Model (Nguyen et al. 2022, §2.1, the conjugate Gaussian DPMM), for items
:math:`x_i \in \mathbb R^D`:

.. math::

    \mu_k \sim \mathcal N(\mu_0, \Sigma_0), \qquad
    x_i \mid z_i = k \sim \mathcal N(\mu_k, \Sigma),

with :math:`\Sigma_0, \Sigma` dense symmetric positive definite (D, D) matrices.

Algorithm (simultaneous diagonalisation). With :math:`\Sigma = L L^\top` (Cholesky)
and the eigendecomposition :math:`L^{-1} \Sigma_0 L^{-\top} = Q \Lambda Q^\top`,
the matrix :math:`W = L^{-\top} Q` satisfies :math:`W^\top \Sigma W = I` and
:math:`W^\top \Sigma_0 W = \Lambda = \mathrm{diag}(\lambda)`. In the coordinates
:math:`u_i = W^\top x_i` the model is the *diagonal* one of
:mod:`.normal` with :math:`\tau_d^2 = \lambda_d`, :math:`\sigma_d^2 = 1` and prior
mean :math:`W^\top \mu_0`; densities pick up the Jacobian
:math:`|\det W| = \det(\Sigma)^{-1/2}` per item. Hence, as in :mod:`.normal`, the
size-only quantities (posterior variance :math:`1/(1/\lambda_d + m)`, predictive
precision, log normaliser including :math:`-\tfrac12\log\det\Sigma`, and the block
log-marginal constant) are tabulated for m = 0..n once per change of
hyperparameters, each slot caches its predictive mean in the u basis, and

- ``log_pred``: O(D) (D multiply-adds, no logarithm);
- ``add`` / ``remove``: O(D) (block sum of u, the scalar
  :math:`\sum_{i \in k} \lVert u_i\rVert^2`, the item's slot);
- per change of hyperparameters: ``make_params`` O(D^3 + n D) (Cholesky,
  eigendecomposition, tables), then the first ``refresh`` of a chain's statistics
  re-transforms the data, O(N D^2), and rebuilds every slot's sums from the
  item-to-slot map the statistics keep, O(N D); further ``refresh`` calls are O(D).

So a Gibbs sweep costs O(N K D), as for the diagonal Normal.

Why the statistics hold the transformed data: ``u`` depends on the
hyperparameters (through W) but the component's ``data`` record is built once from
the observed matrix, and ``refresh(params, stats, k)`` is the only hook called after
the hyperparameters change (:func:`pymc_partitions.kernels.bookkeeping.refresh_blocks`).
The params carry ``stamp``, a hash of W's bytes; the statistics remember the stamp
their ``u`` was computed with, and ``refresh`` recomputes ``u`` and the slot sums
when the stamps differ. A content hash (not a counter) stays valid when params and
statistics are pickled to worker processes.

Block log marginal (m items, :math:`s = \sum_{i\in k} u_i - m\,W^\top\mu_0`,
:math:`q = \sum_{i\in k}\lVert u_i - W^\top\mu_0\rVert^2`):

.. math::

    -\tfrac m2 (D \log 2\pi + \log\det\Sigma) - \tfrac12 \sum_d \log(1 + m\lambda_d)
    - \tfrac12\Big(q - \sum_d \frac{\lambda_d s_d^2}{1 + m\lambda_d}\Big).
"""

import hashlib
import math
from typing import NamedTuple

import numpy as np

from pymc_partitions.kernels._jit import primitive
from pymc_partitions.kernels.components.base import (
    alloc_slots,
    refresh_slots,
    register,
    row_data,
)
from pymc_partitions.kernels.variates import std_normal

LOG_2PI = float(np.log(2.0 * np.pi))


class MvNormalParams(NamedTuple):
    """Hyperparameters; build with :func:`make_params`.

    W : (D, D) float64, the simultaneous diagonaliser (u = W^T x)
    lam : (D,) float64, prior variances of the block mean in the u basis
    m0 : (D,) float64, W^T mu0
    m0_over_lam : (D,) float64
    by_size_w : (n+1, D) float64, posterior variance 1/(1/lam + m) of a block mean (u basis)
    by_size_prec : (n+1, D) float64, predictive precision 1/(1 + w_m)
    by_size_lognorm : (n+1,) float64, predictive log normaliser incl. -log det(Sigma)/2
    by_size_logmarg : (n+1,) float64, size-only part of a block's log marginal
    stamp : (1,) int64, hash of W (identifies the basis the statistics' u are in)
    """

    W: np.ndarray
    lam: np.ndarray
    m0: np.ndarray
    m0_over_lam: np.ndarray
    by_size_w: np.ndarray
    by_size_prec: np.ndarray
    by_size_lognorm: np.ndarray
    by_size_logmarg: np.ndarray
    stamp: np.ndarray
    inv_t: float = 1.0  # 1/t: a tempered target (kernels/tempering.py)


class MvNormalStats(NamedTuple):
    """Per-slot statistics and the data in the current basis.

    count : (n,) int64; usum : (n, D) float64, sum of u over the slot's items;
    uq : (n,) float64, sum of ||u_i||^2 over the slot's items;
    mean, prec : (n, D) float64 and lognorm : (n,) float64, predictive caches;
    x : (N, D) float64, the observed data (a reference to ``data[0]``);
    u : (N, D) float64, x W; q : (N,) float64, ||u_i||^2;
    slot_of : (N,) int64, each item's slot or -1;
    stamp : (1,) int64, params stamp ``u`` was computed with.
    """

    count: np.ndarray
    usum: np.ndarray
    uq: np.ndarray
    mean: np.ndarray
    prec: np.ndarray
    lognorm: np.ndarray
    x: np.ndarray
    u: np.ndarray
    q: np.ndarray
    slot_of: np.ndarray
    stamp: np.ndarray


def cholesky_or_raise(matrix, name):
    """Cholesky factor of a symmetric positive definite matrix; ValueError naming
    ``name`` otherwise."""
    matrix = np.asarray(matrix, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"'{name}' must be a square (D, D) matrix, got shape {matrix.shape}.")
    if not np.all(np.isfinite(matrix)):
        raise ValueError(f"'{name}' contains NaN or inf.")
    scale = max(float(np.abs(matrix).max()), 1e-300)
    if np.abs(matrix - matrix.T).max() > 1e-10 * scale:
        raise ValueError(f"'{name}' must be symmetric (it is not, up to 1e-10 relative).")
    try:
        return np.linalg.cholesky(matrix)
    except np.linalg.LinAlgError:
        raise ValueError(
            f"'{name}' must be positive definite (its Cholesky factorisation failed). "
            f"Pass a covariance matrix, e.g. built from pm.LKJCholeskyCov."
        ) from None


def simultaneous_diagonaliser(sigma0, sigma):
    """(W, lam, log det Sigma) with W^T Sigma W = I and W^T Sigma0 W = diag(lam)."""
    chol = cholesky_or_raise(sigma, "Sigma")
    cholesky_or_raise(sigma0, "Sigma0")
    inv_chol = np.linalg.solve(chol, np.eye(chol.shape[0]))
    a = inv_chol @ sigma0 @ inv_chol.T
    lam, q = np.linalg.eigh(0.5 * (a + a.T))
    if np.any(lam <= 0):
        raise ValueError("'Sigma0' must be positive definite (a generalised eigenvalue is <= 0).")
    w = inv_chol.T @ q
    return np.ascontiguousarray(w), lam, 2.0 * float(np.log(np.diag(chol)).sum())


def make_params(mu0, sigma0, sigma, *, n):
    """Params from mu0 (D,), Sigma0 (D, D), Sigma (D, D), for n items. O(D^3 + n D)."""
    mu0 = np.ascontiguousarray(mu0, dtype=np.float64)
    w, lam, logdet_sigma = simultaneous_diagonaliser(sigma0, sigma)
    d = mu0.shape[0]
    m0 = w.T @ mu0
    sizes = np.arange(n + 1, dtype=np.float64)[:, None]
    post_var = 1.0 / (1.0 / lam + sizes)
    v = 1.0 + post_var
    lognorm = -0.5 * (LOG_2PI * d + logdet_sigma + np.log(v).sum(axis=1))
    logmarg = -0.5 * sizes[:, 0] * (LOG_2PI * d + logdet_sigma) - 0.5 * np.log1p(
        sizes * lam
    ).sum(axis=1)
    digest = hashlib.blake2b(w.tobytes(), digest_size=8).digest()
    stamp = np.array([int.from_bytes(digest, "little", signed=True)], dtype=np.int64)
    return MvNormalParams(
        w, lam, m0, m0 / lam, post_var, 1.0 / v, lognorm, logmarg, stamp
    )


make_data = row_data  # (x,) from an (N, D) float array


def alloc_stats(n_slots, data, params):
    """Statistics of ``n_slots`` empty slots over ``data`` (its x is referenced, not
    copied), caches at the prior predictive and u in the basis of ``params``."""
    x = data[0]
    n_items, d = x.shape
    stats = alloc_slots(
        MvNormalStats, n_slots, (d,), (), (d,), (d,), (),
        extra=(x, np.empty((n_items, d)), np.empty(n_items),
               np.full(n_items, -1, dtype=np.int64), np.zeros(1, dtype=np.int64)),
    )
    stats.stamp[0] = ~params.stamp[0]  # differs: forces the transform on the first refresh
    refresh_slots(params, stats, refresh)
    return stats


@primitive
def _rebasis(params, stats):
    """u = x W, q = ||u||^2, and every slot's sums rebuilt from ``slot_of``: O(N D^2)."""
    x, u, w = stats.x, stats.u, params.W
    n_items, d = x.shape
    for i in range(n_items):
        qi = 0.0
        for b in range(d):
            acc = 0.0
            for a in range(d):
                acc += x[i, a] * w[a, b]
            u[i, b] = acc
            qi += acc * acc
        stats.q[i] = qi
    for k in range(stats.count.shape[0]):
        stats.uq[k] = 0.0
        for b in range(d):
            stats.usum[k, b] = 0.0
    for i in range(n_items):
        k = stats.slot_of[i]
        if k >= 0:
            for b in range(d):
                stats.usum[k, b] += u[i, b]
            stats.uq[k] += stats.q[i]
    stats.stamp[0] = params.stamp[0]


@primitive
def _cache(params, stats, k):
    m = stats.count[k]
    for d in range(params.m0.shape[0]):
        stats.mean[k, d] = (params.m0_over_lam[d] + stats.usum[k, d]) * params.by_size_w[m, d]
        stats.prec[k, d] = params.by_size_prec[m, d]
    stats.lognorm[k] = params.by_size_lognorm[m]


@primitive
def refresh(params, stats, k):
    if stats.stamp[0] != params.stamp[0]:
        _rebasis(params, stats)
    _cache(params, stats, k)


@primitive
def log_pred(params, stats, data, i, k):
    u = stats.u
    acc = stats.lognorm[k]
    for d in range(u.shape[1]):
        r = u[i, d] - stats.mean[k, d]
        acc -= 0.5 * r * r * stats.prec[k, d]
    return acc


@primitive
def add(params, stats, data, i, k):
    if stats.stamp[0] != params.stamp[0]:
        # statistics kept aside while the hyperparameters changed (the sub-cluster
        # sampler's two launch slots): u and the sums to the current basis first
        _rebasis(params, stats)
    u = stats.u
    stats.count[k] += 1
    for d in range(u.shape[1]):
        stats.usum[k, d] += u[i, d]
    stats.uq[k] += stats.q[i]
    stats.slot_of[i] = k
    _cache(params, stats, k)


@primitive
def remove(params, stats, data, i, k):
    u = stats.u
    stats.count[k] -= 1
    stats.slot_of[i] = -1
    if stats.count[k] == 0:
        # Reset exactly: no rounding residue survives in an empty slot.
        for d in range(u.shape[1]):
            stats.usum[k, d] = 0.0
        stats.uq[k] = 0.0
    else:
        for d in range(u.shape[1]):
            stats.usum[k, d] -= u[i, d]
        stats.uq[k] -= stats.q[i]
    _cache(params, stats, k)


@primitive
def log_marginal(params, stats, k):
    m = stats.count[k]
    if m == 0:
        return 0.0
    # q = sum ||u_i - m0||^2 = uq - 2 m0.usum + m ||m0||^2; s = usum - m m0.
    acc = params.by_size_logmarg[m]
    quad = stats.uq[k]
    for d in range(params.m0.shape[0]):
        m0, lam = params.m0[d], params.lam[d]
        s = stats.usum[k, d] - m * m0
        quad += -2.0 * m0 * stats.usum[k, d] + m * m0 * m0 - lam * s * s / (1.0 + m * lam)
    return acc - 0.5 * quad


# ---------------------------------------------------------------- explicit parameters
# (the sub-cluster sampler, kernels/subclusters.py; registered below, components/explicit.py)
# A block's explicit parameters are one row of a float64 array: its mean in the u
# basis, nu = W^T mu (D entries; mu = W^{-T} nu), then the log normaliser
# -(D log 2 pi + log det Sigma)/2. In that basis the posterior of nu is diagonal
# (module docstring): nu_d ~ N((m0_d/lam_d + sum_k u_d) w_m, w_m), w_m = 1/(1/lam_d + m);
# an item's log density is the normaliser - ||W^T x_i - nu||^2 / 2, O(D^2) (its u_i
# is in the statistics, which the density does not receive).


@primitive
def explicit_width(params):
    """Float64 entries per block in an explicit-parameter row: D means (u basis), 1
    constant."""
    return params.m0.shape[0] + 1


@primitive
def draw_explicit(params, stats, k, stream, theta, row):
    """Draw slot k's mean nu = W^T mu from its posterior given the slot's statistics
    (the prior N(W^T mu0, diag(lam)) for an empty slot) into ``theta[row]``; the same
    posterior as :meth:`pymc_partitions.CollapsedMvNormal`'s ``block_posterior_draw``
    (N((Sigma0^-1 + m Sigma^-1)^-1 (Sigma0^-1 mu0 + Sigma^-1 sum x), ...)), in the basis
    where it is diagonal."""
    if stats.stamp[0] != params.stamp[0]:
        _rebasis(params, stats)  # statistics built under other hyperparameters
    m = stats.count[k]
    n_dims = params.m0.shape[0]
    # by_size_lognorm[0] = -(D log 2 pi + log det Sigma + sum_d log(1 + lam_d)) / 2
    acc = params.by_size_lognorm[0]
    for d in range(n_dims):
        w = params.by_size_w[m, d]
        mean = (params.m0_over_lam[d] + stats.usum[k, d]) * w
        theta[row, d] = mean + math.sqrt(w) * std_normal(stream)
        acc += 0.5 * math.log1p(params.lam[d])
    theta[row, n_dims] = acc


@primitive
def log_density_explicit(params, theta, row, data, i):
    """log N(x_i | mu, Sigma) = constant - ||W^T x_i - nu||^2 / 2 (W^T Sigma W = I)."""
    x, w = data[0], params.W
    n_dims = x.shape[1]
    acc = 0.0
    for b in range(n_dims):
        u = 0.0
        for a in range(n_dims):
            u += x[i, a] * w[a, b]
        r = u - theta[row, b]
        acc += r * r
    return theta[row, n_dims] - 0.5 * acc

register(
    MvNormalParams,
    log_pred=log_pred,
    add=add,
    remove=remove,
    refresh=refresh,
    log_marginal=log_marginal,
    explicit_width=explicit_width,
    draw_explicit=draw_explicit,
    log_density_explicit=log_density_explicit,
)
