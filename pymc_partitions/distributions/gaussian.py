"""Dense Gaussian collapsed likelihoods: known covariances, and Normal-Inverse-Wishart.

- :class:`CollapsedMvNormal`: block means integrated out, dense known covariances
  (Nguyen et al. 2022, §2.1); kernel :mod:`pymc_partitions.kernels.components.mv_normal`.
- :class:`CollapsedNIW`: block mean and covariance integrated out under a
  Normal-Inverse-Wishart prior (Murphy 2007, §9); kernel
  :mod:`pymc_partitions.kernels.components.niw`.

Both take matrix hyperparameters, so they override the base class's
``hyper_tensors`` and ``dist`` (which broadcast every hyperparameter to a length-D
vector) and ``alloc_stats``; their PyTensor log densities are written with batched
Cholesky factorisations over the K non-empty blocks, from their sizes, means and
centred scatter matrices (memoised on the labels:
:mod:`pymc_partitions.distributions.statistics`), which NUTS differentiates.
"""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.distributions.dist_math import check_parameters
from scipy import stats as sps

from pymc_partitions.distributions.collapsed import (
    CollapsedLikelihood,
    CollapsedLikelihoodRV,
)
from pymc_partitions.distributions.statistics import mean_scatter
from pymc_partitions.distributions.validation import as_hyper_vector, constant_value
from pymc_partitions.kernels.components import mv_normal as mv_normal_kernel
from pymc_partitions.kernels.components import niw as niw_kernel
from pymc_partitions.kernels.components.mv_normal import cholesky_or_raise

LOG_2PI = float(np.log(2 * np.pi))
LOG_PI = float(np.log(np.pi))


# --------------------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------------------


def as_hyper_matrix(name, value, n_dims, owner):
    """``value`` as a (D, D) float64 tensor; a constant must be symmetric positive definite."""
    if value is None:
        raise ValueError(f"{owner}: '{name}' is required: a ({n_dims}, {n_dims}) covariance matrix.")
    var = pt.as_tensor_variable(value)
    shape = var.type.shape
    if var.ndim != 2 or any(s is not None and s != n_dims for s in shape):
        raise ValueError(
            f"{owner}: '{name}' must be a ({n_dims}, {n_dims}) matrix to match the data's "
            f"D = {n_dims} columns; got shape {tuple(shape)}."
        )
    const = constant_value(var)
    if const is not None:
        try:
            cholesky_or_raise(const, name)
        except ValueError as err:
            raise ValueError(f"{owner}: {err}") from None
    return var.astype("float64")


def as_hyper_scalar(name, value, owner):
    var = pt.as_tensor_variable(value)
    if var.ndim != 0:
        raise ValueError(f"{owner}: '{name}' must be a scalar, got {var.ndim} dimensions.")
    return var.astype("float64")


def _infer_dims(named, matrix_names, owner):
    for h in matrix_names:
        if named.get(h) is not None:
            shape = pt.as_tensor_variable(named[h]).type.shape
            if len(shape) == 2 and shape[0] is not None:
                return int(shape[0])
    raise ValueError(f"{owner}.dist: pass n_dims= (D could not be read from the matrices).")


def _batched_rng_core(draw_one, rng, params, core_ndims, size):
    """Apply ``draw_one(rng, *core_params)`` over the batch shape; ``core_ndims``
    gives each parameter's number of core dimensions."""
    params = [np.asarray(p) for p in params]
    batch_shapes = [p.shape[: p.ndim - c] for p, c in zip(params, core_ndims)]
    batch = tuple(size) if size is not None else np.broadcast_shapes(*batch_shapes)
    params = [
        np.broadcast_to(p, batch + p.shape[p.ndim - c :]) for p, c in zip(params, core_ndims)
    ]
    draws = [draw_one(rng, *[p[idx] for p in params]) for idx in np.ndindex(*batch)]
    return np.stack(draws).reshape(batch + draws[0].shape)


def _finite(x):
    return pt.all(~(pt.isnan(x) | pt.isinf(x)))


def _chol_solve(chol, b):
    """(L L^T)^{-1} b by two triangular solves (batched over leading axes). Written
    out because PyTensor 2's cho_solve has no gradient."""
    y = pt.linalg.solve_triangular(chol, b, lower=True)
    return pt.linalg.solve_triangular(pt.swapaxes(chol, -1, -2), y, lower=False)


def _block_logdet(chol):
    """log det of each matrix of a (..., D, D) stack from its Cholesky factors."""
    return 2.0 * pt.sum(pt.log(pt.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)


class _MatrixHyperLikelihood(CollapsedLikelihood):
    """Construction for likelihoods with vector, scalar and matrix hyperparameters."""

    vector_hypers: tuple = ()
    scalar_hypers: tuple = ()
    matrix_hypers: tuple = ()

    @classmethod
    def hyper_tensors(cls, hypers, data, owner):
        return cls._tensors(hypers, data.shape[1], owner)

    @classmethod
    def _tensors(cls, hypers, n_dims, owner):
        out = []
        for h, v in hypers.items():
            if h in cls.matrix_hypers:
                out.append(as_hyper_matrix(h, v, n_dims, owner))
            elif h in cls.scalar_hypers:
                out.append(as_hyper_scalar(h, v, owner))
            else:
                out.append(as_hyper_vector(h, v, n_dims, owner))
        cls._check_constants(dict(zip(hypers, out)), n_dims, owner)
        return out

    @classmethod
    def _check_constants(cls, tensors, n_dims, owner):
        """Further checks of constant hyperparameters (override)."""

    @classmethod
    def dist(cls, partition, *hypers, n_dims=None, **kwargs):
        owner = cls.__name__
        named = cls._bind_hypers(hypers, kwargs, owner)
        if n_dims is None:
            n_dims = _infer_dims(named, cls.matrix_hypers, owner)
        tensors = cls._tensors(named, n_dims, owner)
        return cls._rv_dist([partition, *tensors], **kwargs)


class _MatrixHyperRV(CollapsedLikelihoodRV):
    matrix_hypers: tuple = ()

    def alloc_stats(self, n, data, params):
        return self.kernel.alloc_stats(n, data, params)

    def check_hyper_values(self, values, owner):
        super().check_hyper_values(values, owner)
        for name, value in zip(self.hyper_names, values):
            if name in self.matrix_hypers:
                try:
                    cholesky_or_raise(value, name)
                except ValueError as err:
                    raise ValueError(
                        f"{owner}: sampled hyperparameter {err} Give it a prior on covariance "
                        f"matrices (e.g. built from pm.LKJCholeskyCov)."
                    ) from None


# --------------------------------------------------------------------------------------
# Dense Gaussian with known covariances, block means integrated out
# --------------------------------------------------------------------------------------


class CollapsedMvNormalRV(_MatrixHyperRV):
    name = "collapsed_mv_normal"
    signature = "(n),(d),(d,d),(d,d),(r,s)->(n,d)"
    dtype = "floatX"
    _print_name = ("CollapsedMvNormal", "\\operatorname{CollapsedMvNormal}")
    hyper_names = ("mu0", "Sigma0", "Sigma")
    matrix_hypers = ("Sigma0", "Sigma")
    kernel = mv_normal_kernel

    @classmethod
    def prior_rng_fn(cls, rng, partition, mu0, sigma0, sigma, size):
        def draw_one(rng, z, mu0, sigma0, sigma):
            n_blocks = int(z.max()) + 1
            d = mu0.shape[0]
            means = mu0 + rng.normal(size=(n_blocks, d)) @ np.linalg.cholesky(sigma0).T
            return means[z] + rng.normal(size=(z.shape[0], d)) @ np.linalg.cholesky(sigma).T

        return _batched_rng_core(draw_one, rng, (partition, mu0, sigma0, sigma), (1, 1, 2, 2), size)

    @staticmethod
    def _posterior(rows, hypers):
        mu0, sigma0, sigma = (np.asarray(h, dtype=np.float64) for h in hypers)
        rows = np.asarray(rows, dtype=np.float64).reshape(-1, mu0.shape[0])
        d = mu0.shape[0]
        prec0 = np.linalg.solve(sigma0, np.eye(d))
        prec = np.linalg.solve(sigma, np.eye(d))
        post_cov = np.linalg.inv(prec0 + rows.shape[0] * prec)
        post_cov = 0.5 * (post_cov + post_cov.T)
        post_mean = post_cov @ (prec0 @ mu0 + prec @ rows.sum(axis=0))
        return post_mean, post_cov, sigma

    def block_posterior_draw(self, rng, rows, hypers):
        """Block mean from N((Sigma0^-1 + m Sigma^-1)^-1 (Sigma0^-1 mu0 + Sigma^-1 sum y),
        (Sigma0^-1 + m Sigma^-1)^-1); returns ``{"mu": (D,)}``."""
        mean, cov, _ = self._posterior(rows, hypers)
        return {"mu": rng.multivariate_normal(mean, cov)}

    def block_rows(self, rng, params, rows, hypers):
        """Rows N(mu, Sigma), shaped like ``rows``."""
        chol = np.linalg.cholesky(np.asarray(hypers[2], dtype=np.float64))
        return params["mu"] + rng.normal(size=rows.shape) @ chol.T

    def block_log_predictive(self, new_rows, rows, hypers):
        """Each new row's log N(y; posterior mean, Sigma + posterior covariance), (r,)."""
        mean, cov, sigma = self._posterior(rows, hypers)
        new_rows = np.asarray(new_rows, dtype=np.float64).reshape(-1, mean.shape[0])
        return np.atleast_1d(sps.multivariate_normal(mean, sigma + cov).logpdf(new_rows))


collapsed_mv_normal = CollapsedMvNormalRV()


class CollapsedMvNormal(_MatrixHyperLikelihood):
    r"""Gaussian data with dense known covariances, block means integrated out.

    .. math::

        \mu_k \sim \mathcal N(\mu_0, \Sigma_0), \qquad
        y_i \mid z_i = k \sim \mathcal N(\mu_k, \Sigma)

    (Nguyen et al. 2022, §2.1). The m rows of a block are jointly Gaussian with
    covariance :math:`I_m \otimes \Sigma + \mathbf 1\mathbf 1^\top \otimes \Sigma_0`;
    with :math:`r_i = y_i - \mu_0`, :math:`S = \sum r_i` and
    :math:`B_m = \Sigma + m\Sigma_0`, its log density is

    .. math::

        -\tfrac{mD}2\log 2\pi - \tfrac{m-1}2\log\det\Sigma - \tfrac12\log\det B_m
        - \tfrac12\Big(\sum_i r_i^\top\Sigma^{-1}r_i
        - (\Sigma^{-1}S)^\top \Sigma_0\, B_m^{-1} S\Big),

    (using :math:`\tfrac1m(\Sigma^{-1} - B_m^{-1}) = \Sigma^{-1}\Sigma_0 B_m^{-1}`),
    computed with one batched Cholesky factorisation of the K matrices
    :math:`B_{m_k}` from the blocks' sizes, means and centred scatter matrices
    (memoised on the labels), O(K D^3) per evaluation at a fixed partition; this is
    what NUTS differentiates.

    The Gibbs kernel instead diagonalises :math:`\Sigma_0` and :math:`\Sigma`
    simultaneously (see :mod:`pymc_partitions.kernels.components.mv_normal`): O(D) per
    predictive term, O(N D^2) once per change of hyperparameters.

    Parameters
    ----------
    partition : TensorVariable
        A partition variable (e.g. :class:`~pymc_partitions.CRP`) over the n rows.
    mu0 : tensor_like of float
        Prior mean of the block means: a scalar or a length-D vector.
    Sigma0, Sigma : tensor_like of float, shape (D, D)
        Prior covariance of block means and observation covariance: symmetric
        positive definite; constants (checked) or PyTensor expressions such as
        ``chol @ chol.T`` from :func:`pm.LKJCholeskyCov`, sampled by NUTS.
    observed : array_like, shape (n, D) or (n,)
        Finite data.

    Forward draws and observed data: see :class:`CollapsedLikelihood`.
    """

    rv_op = collapsed_mv_normal
    hyper_defaults = {"mu0": 0.0, "Sigma0": None, "Sigma": None}
    vector_hypers = ("mu0",)
    matrix_hypers = ("Sigma0", "Sigma")

    def logp(value, partition, mu0, sigma0, sigma, _observed):
        n, d = value.shape[0], value.shape[1]
        # Block sizes, means and centred scatter matrices, memoised on the labels
        # (O(K D^3) per NUTS step; pymc_partitions.distributions.statistics).
        ok, m, mean, scatter = mean_scatter(partition, value)
        dev = mean - mu0  # (K, D)
        s = m[:, None] * dev  # block sums of x - mu0
        chol_sigma = pt.linalg.cholesky(sigma)
        # sum_i r_i^T Sigma^{-1} r_i over all items (r = x - mu0; blocks partition the
        # items) = tr(Sigma^{-1} sum_k scatter_k) + sum_k m_k dev_k^T Sigma^{-1} dev_k.
        within = _chol_solve(chol_sigma, pt.sum(scatter, axis=0))
        z = pt.linalg.solve_triangular(chol_sigma, (pt.sqrt(m)[:, None] * dev).T, lower=True)
        quad_items = pt.trace(within) + pt.sum(z**2)
        a = _chol_solve(chol_sigma, s.T).T  # Sigma^{-1} S_k, (K, D)
        b = sigma[None, :, :] + m[:, None, None] * sigma0[None, :, :]  # (K, D, D)
        chol_b = pt.linalg.cholesky(b)
        c = _chol_solve(chol_b, s[:, :, None])[:, :, 0]  # B_k^{-1} S_k
        quad_blocks = pt.sum(pt.dot(a, sigma0) * c)
        logdet_sigma = _block_logdet(chol_sigma)
        logdet_blocks = pt.sum((m - 1) * logdet_sigma + _block_logdet(chol_b))
        logp = -0.5 * (n * d * LOG_2PI + logdet_blocks + quad_items - quad_blocks)
        logp = pt.switch(ok, logp, -np.inf)
        return check_parameters(
            logp,
            _finite(logdet_sigma),
            _finite(_block_logdet(pt.linalg.cholesky(sigma0))),
            msg="Sigma and Sigma0 positive definite",
        )


# --------------------------------------------------------------------------------------
# Normal-Inverse-Wishart: block mean and covariance integrated out
# --------------------------------------------------------------------------------------


def _mvgammaln_ratio(a, a0, d):
    """log Gamma_D(a) - log Gamma_D(a0) (the pi terms cancel); ``a`` any shape."""
    j = pt.arange(d, dtype="float64")
    return pt.sum(pt.gammaln(a[..., None] - 0.5 * j), axis=-1) - pt.sum(pt.gammaln(a0 - 0.5 * j))


class CollapsedNIWRV(_MatrixHyperRV):
    name = "collapsed_niw"
    signature = "(n),(d),(),(),(d,d),(r,s)->(n,d)"
    dtype = "floatX"
    _print_name = ("CollapsedNIW", "\\operatorname{CollapsedNIW}")
    hyper_names = ("mu0", "kappa0", "nu0", "Psi0")
    positive = ("kappa0",)
    matrix_hypers = ("Psi0",)
    kernel = niw_kernel

    def check_hyper_values(self, values, owner):
        super().check_hyper_values(values, owner)
        d = np.asarray(values[0]).shape[0]
        if not float(values[2]) > d - 1:
            raise ValueError(
                f"{owner}: sampled hyperparameter 'nu0' = {float(values[2])!r} must be > D - 1 = "
                f"{d - 1}. Give it a prior with that support (e.g. {d - 1} + pm.Gamma(...))."
            )

    @classmethod
    def prior_rng_fn(cls, rng, partition, mu0, kappa0, nu0, psi0, size):
        def draw_one(rng, z, mu0, kappa0, nu0, psi0):
            n_blocks = int(z.max()) + 1
            d = mu0.shape[0]
            out = np.empty((z.shape[0], d))
            for k in range(n_blocks):
                cov = np.atleast_2d(sps.invwishart.rvs(df=float(nu0), scale=psi0, random_state=rng))
                chol = np.linalg.cholesky(cov)
                mu = mu0 + chol @ rng.normal(size=d) / np.sqrt(kappa0)
                rows = z == k
                out[rows] = mu + rng.normal(size=(int(rows.sum()), d)) @ chol.T
            return out

        return _batched_rng_core(
            draw_one, rng, (partition, mu0, kappa0, nu0, psi0), (1, 1, 0, 0, 2), size
        )

    @staticmethod
    def _posterior(rows, hypers):
        mu0, kappa0, nu0, psi0 = (np.asarray(h, dtype=np.float64) for h in hypers)
        d = mu0.shape[0]
        rows = np.asarray(rows, dtype=np.float64).reshape(-1, d)
        m = rows.shape[0]
        kappa, nu = float(kappa0) + m, float(nu0) + m
        r = rows - mu0
        t = r.sum(axis=0)
        psi = psi0 + r.T @ r - np.outer(t, t) / kappa
        return mu0 + t / kappa, kappa, nu, 0.5 * (psi + psi.T)

    def block_posterior_draw(self, rng, rows, hypers):
        """(mu, Sigma) from the posterior NIW(mu_m, kappa_m, nu_m, Psi_m) (Murphy 2007,
        eqs. 250-254): Sigma ~ IW(Psi_m, nu_m), mu | Sigma ~ N(mu_m, Sigma/kappa_m).
        Returns ``{"mu": (D,), "Sigma": (D, D)}``."""
        mean, kappa, nu, psi = self._posterior(rows, hypers)
        cov = np.atleast_2d(sps.invwishart.rvs(df=nu, scale=psi, random_state=rng))
        mu = rng.multivariate_normal(mean, cov / kappa)
        return {"mu": mu, "Sigma": cov}

    def block_rows(self, rng, params, rows, hypers):
        """Rows N(mu, Sigma) with the block's own (mu, Sigma), shaped like ``rows``."""
        chol = np.linalg.cholesky(params["Sigma"])
        return params["mu"] + rng.normal(size=rows.shape) @ chol.T

    def block_log_predictive(self, new_rows, rows, hypers):
        """Each new row's log Student-t density, dof nu_m - D + 1, location mu_m, shape
        Psi_m (kappa_m + 1) / (kappa_m (nu_m - D + 1)) (Murphy 2007, eq. 258), (r,)."""
        mean, kappa, nu, psi = self._posterior(rows, hypers)
        d = mean.shape[0]
        dof = nu - d + 1
        new_rows = np.asarray(new_rows, dtype=np.float64).reshape(-1, d)
        dist = sps.multivariate_t(loc=mean, shape=psi * (kappa + 1) / (kappa * dof), df=dof)
        return np.atleast_1d(dist.logpdf(new_rows))


collapsed_niw = CollapsedNIWRV()


class CollapsedNIW(_MatrixHyperLikelihood):
    r"""Gaussian data with block mean and covariance integrated out (Normal-Inverse-Wishart).

    .. math::

        \Sigma_k \sim \mathrm{IW}(\Psi_0, \nu_0), \quad
        \mu_k \mid \Sigma_k \sim \mathcal N(\mu_0, \Sigma_k/\kappa_0), \quad
        y_i \mid z_i = k \sim \mathcal N(\mu_k, \Sigma_k)

    (Murphy 2007, §9). A block of m rows with :math:`r_i = y_i - \mu_0`,
    :math:`t = \sum r_i`, :math:`\kappa_m = \kappa_0 + m`, :math:`\nu_m = \nu_0 + m` and
    :math:`\Psi_m = \Psi_0 + \sum r_i r_i^\top - t t^\top/\kappa_m` has log marginal

    .. math::

        -\tfrac{mD}2\log\pi + \log\Gamma_D(\tfrac{\nu_m}2) - \log\Gamma_D(\tfrac{\nu_0}2)
        + \tfrac{\nu_0}2\log\det\Psi_0 - \tfrac{\nu_m}2\log\det\Psi_m
        + \tfrac D2\log\tfrac{\kappa_0}{\kappa_m}

    (Murphy eq. 266), computed with a batched Cholesky factorisation of the n
    matrices :math:`\Psi_m`. The Gibbs kernel keeps each block's Cholesky factor up
    to date by rank-one updates and downdates: O(D^2) per predictive term (see
    :mod:`pymc_partitions.kernels.components.niw`).

    Parameters
    ----------
    partition : TensorVariable
        A partition variable over the n rows.
    mu0 : tensor_like of float
        Prior mean: a scalar or a length-D vector.
    kappa0 : tensor_like of float
        Prior pseudo-count of the mean, > 0 (scalar).
    nu0 : tensor_like of float
        Inverse-Wishart degrees of freedom, > D - 1 (scalar).
    Psi0 : tensor_like of float, shape (D, D)
        Inverse-Wishart scale matrix, symmetric positive definite.
    observed : array_like, shape (n, D) or (n,)
        Finite data.

    Forward draws and observed data: see :class:`CollapsedLikelihood`.
    """

    rv_op = collapsed_niw
    hyper_defaults = {"mu0": 0.0, "kappa0": 1.0, "nu0": None, "Psi0": None}
    vector_hypers = ("mu0",)
    scalar_hypers = ("kappa0", "nu0")
    matrix_hypers = ("Psi0",)

    @classmethod
    def _check_constants(cls, tensors, n_dims, owner):
        if tensors["nu0"] is None:
            raise ValueError(f"{owner}: 'nu0' is required (degrees of freedom > D - 1).")
        nu0 = constant_value(tensors["nu0"])
        if nu0 is not None and not (np.isfinite(nu0) and float(nu0) > n_dims - 1):
            raise ValueError(
                f"{owner}: 'nu0' must be > D - 1 = {n_dims - 1} (Inverse-Wishart degrees of "
                f"freedom), got {float(nu0)!r}."
            )

    @classmethod
    def _tensors(cls, hypers, n_dims, owner):
        if hypers.get("nu0") is None:
            raise ValueError(f"{owner}: 'nu0' is required (degrees of freedom > D - 1).")
        return super()._tensors(hypers, n_dims, owner)

    def logp(value, partition, mu0, kappa0, nu0, psi0, _observed):
        d = value.shape[1]
        # Block sizes, means and centred scatter matrices, memoised on the labels
        # (O(K D^3) per NUTS step; pymc_partitions.distributions.statistics). With
        # dev = mean - mu0, the posterior scale matrix psi0 + sum r r^T - t t^T / kappa
        # (r = x - mu0, t = m dev) is psi0 + scatter + (kappa0 m / kappa) dev dev^T.
        ok, m, mean, scatter = mean_scatter(partition, value)
        dev = mean - mu0
        kappa = kappa0 + m
        nu = nu0 + m
        shrink = (kappa0 * m / kappa)[:, None, None]
        psi = psi0[None] + scatter + shrink * dev[:, :, None] * dev[:, None, :]
        logdet = _block_logdet(pt.linalg.cholesky(psi))
        logdet0 = _block_logdet(pt.linalg.cholesky(psi0))
        per_block = (
            -0.5 * m * d * LOG_PI
            + _mvgammaln_ratio(0.5 * nu, 0.5 * nu0, d)
            + 0.5 * nu0 * logdet0
            - 0.5 * nu * logdet
            + 0.5 * d * (pt.log(kappa0) - pt.log(kappa))
        )
        logp = pt.switch(ok, pt.sum(per_block), -np.inf)
        return check_parameters(
            logp,
            kappa0 > 0,
            nu0 > d - 1,
            _finite(logdet0),
            msg="kappa0 > 0, nu0 > D - 1, Psi0 positive definite",
        )


__all__ = ["CollapsedMvNormal", "CollapsedNIW"]
