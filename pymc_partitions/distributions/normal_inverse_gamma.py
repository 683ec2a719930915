"""Collapsed Normal-Inverse-Gamma likelihood: unknown block means and variances."""

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.dist_math import check_parameters
from scipy.special import gammaln

from pymc_partitions.distributions.collapsed import (
    CollapsedLikelihood,
    CollapsedLikelihoodRV,
    _batched_rng,
)
from pymc_partitions.distributions.statistics import normal_moments
from pymc_partitions.kernels.components import normal_inverse_gamma as nig_kernel

LOG_2PI = float(np.log(2 * np.pi))


def _as_rows(rows, n_dims):
    rows = np.asarray(rows, dtype=np.float64)
    return rows.reshape(-1, n_dims)


class CollapsedNormalInverseGammaRV(CollapsedLikelihoodRV):
    name = "collapsed_normal_inverse_gamma"
    signature = "(n),(d),(d),(d),(d),(r,s)->(n,d)"
    dtype = "floatX"
    _print_name = (
        "CollapsedNormalInverseGamma",
        "\\operatorname{CollapsedNormalInverseGamma}",
    )
    hyper_names = ("mu0", "kappa0", "a0", "b0")
    positive = ("kappa0", "a0", "b0")
    kernel = nig_kernel

    @classmethod
    def prior_rng_fn(cls, rng, partition, mu0, kappa0, a0, b0, size):
        def draw_one(rng, z, mu0, kappa0, a0, b0):
            shape = (int(z.max()) + 1, mu0.shape[0])
            sigma2 = 1.0 / rng.gamma(a0, 1.0 / b0, size=shape)
            mu = rng.normal(mu0, np.sqrt(sigma2 / kappa0))
            return rng.normal(mu[z], np.sqrt(sigma2[z]))

        return _batched_rng(draw_one, rng, (partition, mu0, kappa0, a0, b0), size)

    @staticmethod
    def _posterior(rows, hypers):
        mu0, kappa0, a0, b0 = (np.asarray(h, dtype=np.float64) for h in hypers[:4])
        rows = _as_rows(rows, mu0.shape[0])
        m = rows.shape[0]
        mean = rows.mean(axis=0) if m else np.zeros_like(mu0)
        m2 = ((rows - mean) ** 2).sum(axis=0)
        kappa_m = kappa0 + m
        loc = (kappa0 * mu0 + m * mean) / kappa_m
        b_m = b0 + 0.5 * m2 + 0.5 * kappa0 * m * (mean - mu0) ** 2 / kappa_m
        return loc, kappa_m, a0 + 0.5 * m, b_m

    def block_posterior_draw(self, rng, rows, hypers):
        """Draw ``{"mu": (D,), "sigma2": (D,)}`` from the block's Normal-Inverse-Gamma
        posterior given its rows ((m, D); m = 0 draws from the prior)."""
        loc, kappa_m, a_m, b_m = self._posterior(rows, hypers)
        sigma2 = 1.0 / rng.gamma(a_m, 1.0 / b_m)
        return {"mu": rng.normal(loc, np.sqrt(sigma2 / kappa_m)), "sigma2": sigma2}

    def block_rows(self, rng, params, rows, hypers):
        """Rows N(mu, sigma2) per dimension, shaped like ``rows``."""
        return rng.normal(params["mu"], np.sqrt(params["sigma2"]), size=rows.shape)

    def block_log_predictive(self, new_rows, rows, hypers):
        """Student-t posterior predictive log density of each new row, shape (r,)."""
        loc, kappa_m, a_m, b_m = self._posterior(rows, hypers)
        new_rows = _as_rows(new_rows, loc.shape[0])
        w = kappa_m / (2.0 * b_m * (kappa_m + 1.0))
        per_dim = (
            gammaln(a_m + 0.5)
            - gammaln(a_m)
            + 0.5 * np.log(w / np.pi)
            - (a_m + 0.5) * np.log1p(w * (new_rows - loc) ** 2)
        )
        return per_dim.sum(axis=1)


collapsed_normal_inverse_gamma = CollapsedNormalInverseGammaRV()


class CollapsedNormalInverseGamma(CollapsedLikelihood):
    r"""Normal data with unknown block means *and* variances integrated out.

    Independently per block k and dimension d (Normal-Inverse-Gamma prior):

    .. math::

        \sigma^2_{kd} \sim \mathrm{InvGamma}(a_{0d}, b_{0d}), \qquad
        \mu_{kd} \mid \sigma^2_{kd} \sim \mathcal N(\mu_{0d}, \sigma^2_{kd}/\kappa_{0d}), \qquad
        y_{id} \mid z_i = k \sim \mathcal N(\mu_{kd}, \sigma^2_{kd}).

    The log density is the sum over blocks and dimensions of the block's marginal
    likelihood

    .. math::

        \log\Gamma(a_m) - \log\Gamma(a_0) + a_0\log b_0 - a_m\log b_m
        + \tfrac12\log\frac{\kappa_0}{\kappa_m} - \tfrac m2\log 2\pi,

    :math:`\kappa_m = \kappa_0 + m`, :math:`a_m = a_0 + m/2`,
    :math:`b_m = b_0 + \tfrac12\sum_{i\in k}(y_{id} - \bar y_{kd})^2 +
    \frac{\kappa_0 m (\bar y_{kd} - \mu_0)^2}{2\kappa_m}`, computed from centred
    block statistics (no cancellation). A new item's predictive is Student-t with
    :math:`2a_m` degrees of freedom; the sampler's kernel costs O(D) per (item,
    block) (:mod:`pymc_partitions.kernels.components.normal_inverse_gamma`).

    Parameters
    ----------
    partition : TensorVariable
        A partition variable (e.g. :class:`~pymc_partitions.CRP`) over the n rows.
    mu0 : tensor_like of float
        Prior mean of the block means.
    kappa0, a0, b0 : tensor_like of float, > 0
        Prior pseudo-count of the means, shape and scale of the inverse-gamma prior
        of the variances.
    observed : array_like, shape (n, D) or (n,)
        Finite data; a vector is read as D = 1 and stored as (n, 1).

    All hyperparameters are scalars or length-D vectors, constants or random
    variables (:class:`~pymc_partitions.HyperSlice` by default, NUTS when other
    terms read them). Forward draws and observed data: see
    :class:`~pymc_partitions.distributions.CollapsedLikelihood`.
    """

    rv_op = collapsed_normal_inverse_gamma
    hyper_defaults = {"mu0": 0.0, "kappa0": 1.0, "a0": 1.0, "b0": 1.0}

    def logp(value, partition, mu0, kappa0, a0, b0, _observed):
        # Block sizes, means, centred sums of squares: memoised on the labels
        # (O(K D) per NUTS step; pymc_partitions.distributions.statistics).
        ok, m, mean, m2 = normal_moments(partition, value)
        kappa_m = kappa0 + m
        a_m = a0 + 0.5 * m
        b_m = b0 + 0.5 * m2 + 0.5 * kappa0 * m * (mean - mu0) ** 2 / kappa_m
        per_block = (
            pt.gammaln(a_m)
            - pt.gammaln(a0)
            + a0 * pt.log(b0)
            - a_m * pt.log(b_m)
            + 0.5 * pt.log(kappa0 / kappa_m)
            - 0.5 * m * LOG_2PI
        )
        logp = pt.switch(ok, pt.sum(per_block), -np.inf)
        return check_parameters(
            logp,
            pt.all(kappa0 > 0),
            pt.all(a0 > 0),
            pt.all(b0 > 0),
            msg="kappa0 > 0, a0 > 0, b0 > 0",
        )
