"""Collapsed likelihoods for count data: Poisson-Gamma features and
Dirichlet-multinomial count matrices (motifs)."""

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.dist_math import check_parameters
from scipy.special import gammaln

from pymc_partitions.distributions.collapsed import (
    CollapsedLikelihood,
    CollapsedLikelihoodRV,
    _batched_rng,
)
from pymc_partitions.distributions.statistics import count_matrices, count_sums
from pymc_partitions.distributions.validation import (
    hyper_input,
    observed_matrix,
    observed_value,
)
from pymc_partitions.kernels.components import dirichlet_multinomial as dm_kernel
from pymc_partitions.kernels.components import poisson_gamma as pg_kernel
from pymc_partitions.partitions import as_array


def check_counts(data, owner):
    """Raise a ValueError naming ``observed`` unless ``data`` holds non-negative integers."""
    bad = (data < 0) | (data != np.round(data))
    if np.any(bad):
        where = tuple(int(v) for v in np.argwhere(bad)[0])
        raise ValueError(
            f"{owner}: 'observed' must hold non-negative integer counts; found "
            f"{float(data[where])!r} at index {where}. Pass raw counts (not rates, "
            f"normalised or centred values)."
        )
    return data


# --------------------------------------------------------------------------------------
# Poisson-Gamma: count features, block rates integrated out
# --------------------------------------------------------------------------------------


class CollapsedPoissonGammaRV(CollapsedLikelihoodRV):
    name = "collapsed_poisson_gamma"
    signature = "(n),(d),(d),(r,s)->(n,d)"
    dtype = "floatX"
    _print_name = ("CollapsedPoissonGamma", "\\operatorname{CollapsedPoissonGamma}")
    hyper_names = ("a", "b")
    positive = ("a", "b")
    kernel = pg_kernel

    @classmethod
    def prior_rng_fn(cls, rng, partition, a, b, size):
        def draw_one(rng, z, a, b):
            rate = rng.gamma(a, 1.0 / b, size=(int(z.max()) + 1, a.shape[0]))
            return rng.poisson(rate[z]).astype(np.float64)

        return _batched_rng(draw_one, rng, (partition, a, b), size)

    @staticmethod
    def _posterior(rows, hypers):
        a, b = (np.asarray(h, dtype=np.float64) for h in hypers[:2])
        rows = np.asarray(rows, dtype=np.float64).reshape(-1, a.shape[0])
        return a + rows.sum(axis=0), b + rows.shape[0]

    def block_posterior_draw(self, rng, rows, hypers):
        """Draw ``{"rate": (D,)}`` from the block's Gamma posterior
        Gamma(a + S, b + m) given its rows ((m, D) counts; m = 0: the prior)."""
        shape, rate = self._posterior(rows, hypers)
        return {"rate": rng.gamma(shape, 1.0 / rate)}

    def block_rows(self, rng, params, rows, hypers):
        """Rows of Poisson(rate) counts, shaped like ``rows``."""
        return rng.poisson(params["rate"], size=rows.shape).astype(np.float64)

    def block_log_predictive(self, new_rows, rows, hypers):
        """Negative-binomial posterior predictive log probability of each new row, (r,)."""
        shape, rate = self._posterior(rows, hypers)
        x = np.asarray(new_rows, dtype=np.float64).reshape(-1, shape.shape[0])
        per_dim = (
            gammaln(shape + x)
            - gammaln(shape)
            - gammaln(x + 1.0)
            + shape * np.log(rate / (rate + 1.0))
            - x * np.log(rate + 1.0)
        )
        return per_dim.sum(axis=1)


collapsed_poisson_gamma = CollapsedPoissonGammaRV()


class CollapsedPoissonGamma(CollapsedLikelihood):
    r"""Count features with block rates integrated out (Poisson-Gamma).

    .. math::

        \lambda_{kd} \sim \mathrm{Gamma}(a_d, b_d)\ \text{(shape, rate)}, \qquad
        x_{id} \mid z_i = k \sim \mathrm{Poisson}(\lambda_{kd}).

    The log density sums over blocks k and features d

    .. math::

        a_d\log b_d - \log\Gamma(a_d) + \log\Gamma(a_d + S_{kd}) - (a_d + S_{kd})\log(b_d + m_k)

    (:math:`m_k` the block size, :math:`S_{kd}` its feature sums) and subtracts
    :math:`\sum_{i,d}\log x_{id}!`: it is the probability of the observed counts. A
    new item's predictive is negative binomial; the sampler's kernel costs
    O(number of non-zero counts) per (item, block), at most O(D)
    (:mod:`pymc_partitions.kernels.components.poisson_gamma`).

    Parameters
    ----------
    partition : TensorVariable
        A partition variable over the n rows.
    a, b : tensor_like of float, > 0
        Gamma shape and rate of the block rates: scalars or length-D vectors,
        constants or random variables.
    observed : array_like of non-negative integers, shape (n, D) or (n,)

    Forward draws and observed data: see
    :class:`~pymc_partitions.distributions.CollapsedLikelihood`.
    """

    rv_op = collapsed_poisson_gamma
    hyper_defaults = {"a": 1.0, "b": 1.0}

    @classmethod
    def check_observed(cls, observed, owner):
        return check_counts(observed_matrix(observed, owner), owner)

    def logp(value, partition, a, b, _observed):
        # Block sizes and sums, and sum log x!, memoised on the labels and data (O(K D)
        # per NUTS step; pymc_partitions.distributions.statistics); ``ok`` also checks
        # the data are counts.
        ok, m, s, log_factorials = count_sums(partition, value)
        per_block = a * pt.log(b) - pt.gammaln(a) + pt.gammaln(a + s) - (a + s) * pt.log(b + m)
        logp = pt.switch(ok, pt.sum(per_block) - log_factorials, -np.inf)
        return check_parameters(logp, pt.all(a > 0), pt.all(b > 0), msg="a > 0, b > 0")


# --------------------------------------------------------------------------------------
# Dirichlet-multinomial: count matrices (positions x categories)
# --------------------------------------------------------------------------------------


def observed_counts_3d(observed, owner):
    """The observed count matrices as an (n, P, C) float array, validated.

    An (n, C) array is one position per item and is stored as (n, 1, C).
    """
    what = "an (n, P, C) or (n, C) array of counts, or pm.Data"
    data = as_array(observed_value(observed, owner, what), "observed", owner, what)
    if data.ndim == 2:
        data = data[:, None, :]
    if data.ndim != 3:
        raise ValueError(
            f"{owner}: 'observed' must be an (n, P, C) array of count matrices (positions x "
            f"categories) or an (n, C) array of count vectors; got shape {data.shape}."
        )
    if 0 in data.shape:
        raise ValueError(f"{owner}: 'observed' is empty (shape {data.shape}).")
    if data.dtype.kind not in "iufb":
        raise ValueError(f"{owner}: 'observed' must hold real numbers, got dtype {data.dtype}.")
    data = data.astype(np.float64)
    if not np.all(np.isfinite(data)):
        where = tuple(int(v) for v in np.argwhere(~np.isfinite(data))[0])
        raise ValueError(
            f"{owner}: 'observed' contains NaN or inf (first at index {where}). Remove or "
            f"impute those entries; collapsed likelihoods need complete data."
        )
    return check_counts(data, owner)


def concentration_matrix(value, n_positions, n_categories, owner):
    """``value`` (scalar, (C,) or (P, C)) broadcast to a (P, C) float64 tensor."""
    var = pt.as_tensor_variable(value)
    want = (n_positions, n_categories)
    if var.ndim > 2:
        raise ValueError(
            f"{owner}: 'concentration' must be a scalar, a length-C vector or a (P, C) matrix; "
            f"got {var.ndim} dimensions."
        )
    static = var.type.shape
    expected = want[2 - var.ndim :]
    for got, need in zip(static, expected):
        if got is not None and got not in (1, need):
            raise ValueError(
                f"{owner}: 'concentration' has shape {tuple(static)} but the data have P = "
                f"{n_positions} positions and C = {n_categories} categories; pass a scalar, a "
                f"length-{n_categories} vector or a ({n_positions}, {n_categories}) matrix."
            )
    return pt.as_tensor_variable(pt.broadcast_to(var.astype("float64"), want))


class CollapsedDirichletMultinomialRV(CollapsedLikelihoodRV):
    """Inputs ``(partition, concentration (P, C), total_count (n, P))``.

    ``total_count`` holds each item's per-position totals :math:`d_{ip}`: the
    multinomial model is conditional on them (Goswami et al. eq. 20), forward draws
    need them, and the log density is -inf for data whose totals differ. In a model
    they are read from ``observed``. The binding to the kernel reads only the
    concentration.
    """

    name = "collapsed_dirichlet_multinomial"
    signature = "(n),(p,c),(n,p),(r,s,t)->(n,p,c)"
    dtype = "floatX"
    _print_name = (
        "CollapsedDirichletMultinomial",
        "\\operatorname{CollapsedDirichletMultinomial}",
    )
    hyper_names = ("concentration",)
    positive = ("concentration",)
    kernel = dm_kernel

    def kernel_params(self, values, n):
        return dm_kernel.make_params(values[0])

    def alloc_stats(self, n, data, params):
        return dm_kernel.alloc_stats(n, data[0].shape[1], data[0].shape[2], params)

    @classmethod
    def prior_rng_fn(cls, rng, partition, concentration, total_count, size):
        params = [np.asarray(partition), np.asarray(concentration, dtype=np.float64),
                  np.asarray(total_count)]
        core = [1, 2, 2]
        batch = tuple(size) if size is not None else np.broadcast_shapes(
            *[p.shape[: p.ndim - c] for p, c in zip(params, core)]
        )
        params = [np.broadcast_to(p, batch + p.shape[p.ndim - c :]) for p, c in zip(params, core)]
        draws = [cls._draw_one(rng, *[p[idx] for p in params]) for idx in np.ndindex(*batch)]
        return np.stack(draws).reshape(batch + draws[0].shape)

    @staticmethod
    def _draw_one(rng, z, conc, totals):
        n_blocks = int(z.max()) + 1
        n_pos, n_cat = conc.shape
        theta = np.stack([rng.dirichlet(conc[p], size=n_blocks) for p in range(n_pos)], axis=1)
        out = np.empty((z.shape[0], n_pos, n_cat))
        totals = np.rint(totals).astype(np.int64)
        for i in range(z.shape[0]):
            for p in range(n_pos):
                out[i, p] = rng.multinomial(totals[i, p], theta[z[i], p])
        return out

    @staticmethod
    def _posterior(rows, hypers):
        conc = np.asarray(hypers[0], dtype=np.float64)
        rows = np.asarray(rows, dtype=np.float64).reshape((-1,) + conc.shape)
        return conc + rows.sum(axis=0)

    def block_posterior_draw(self, rng, rows, hypers):
        """Draw ``{"theta": (P, C)}``, each position's category probabilities, from
        the block's Dirichlet posterior given its rows ((m, P, C); m = 0: the prior).
        ``hypers`` starts with the (P, C) concentration; further entries (the
        totals) are ignored."""
        post = self._posterior(rows, hypers)
        return {"theta": np.stack([rng.dirichlet(post[p]) for p in range(post.shape[0])])}

    def block_rows(self, rng, params, rows, hypers):
        """Count matrices Multinomial(d_ip, theta_p) with each row's observed position
        totals d_ip (the model conditions on them), shaped like ``rows`` (m, P, C)."""
        totals = np.rint(rows.sum(axis=2)).astype(np.int64)
        out = np.empty(rows.shape)
        for p in range(rows.shape[1]):
            out[:, p] = rng.multinomial(totals[:, p], params["theta"][p])
        return out

    def block_log_predictive(self, new_rows, rows, hypers):
        """Dirichlet-multinomial posterior predictive log probability of each new
        count matrix (with its multinomial coefficient), shape (r,)."""
        post = self._posterior(rows, hypers)
        y = np.asarray(new_rows, dtype=np.float64).reshape((-1,) + post.shape)
        tot = y.sum(axis=2)
        post_sum = post.sum(axis=1)
        per_item = (
            gammaln(tot + 1.0).sum(axis=1)
            - gammaln(y + 1.0).sum(axis=(1, 2))
            + (gammaln(post_sum) - gammaln(post_sum + tot)).sum(axis=1)
            + (gammaln(post + y) - gammaln(post)).sum(axis=(1, 2))
        )
        return per_item


collapsed_dirichlet_multinomial = CollapsedDirichletMultinomialRV()


class CollapsedDirichletMultinomial(CollapsedLikelihood):
    r"""Count matrices (positions x categories) with per-block, per-position
    category probabilities integrated out: a product of Dirichlet-multinomials.

    Goswami, Liu & Wong (2005), §7.2, eqs. 20-23 (motif clustering): item i is a
    P x C count matrix (e.g. a DNA motif, 8 positions x A, C, G, T) with position
    totals :math:`d_{ip}`;

    .. math::

        \theta_{kp} \sim \mathrm{Dirichlet}(c_{p\cdot}), \qquad
        Y_{ip\cdot} \mid z_i = k \sim \mathrm{Multinomial}(d_{ip}, \theta_{kp}).

    The log density is eq. 22: the probability of the **count matrices given their
    totals, with the multinomial coefficients** :math:`d_{ip}!/\prod_c Y_{ipc}!`.
    Those coefficients do not depend on the partition (the posterior over
    partitions equals that of the sequences, whose likelihood lacks them), and the
    sampler's kernel includes them too, so the model's log density and the kernel's
    log joint agree. Per block:

    .. math::

        \sum_p \Big[\log\Gamma(A_p) - \log\Gamma(T_{kp} + A_p)
          + \sum_c \log\Gamma(X_{kpc} + c_{pc}) - \log\Gamma(c_{pc})\Big],

    :math:`X_{kpc}` the block's counts, :math:`T_{kp}` its totals,
    :math:`A_p = \sum_c c_{pc}`. Kernel cost: O(P + non-zero counts of the item) per
    (item, block), at most O(P C)
    (:mod:`pymc_partitions.kernels.components.dirichlet_multinomial`).

    Parameters
    ----------
    partition : TensorVariable
        A partition variable over the n items.
    concentration : tensor_like of float, > 0
        Dirichlet concentrations: a scalar (Goswami et al.'s symmetric c), a length-C
        vector (the same for every position) or a (P, C) matrix; a constant or a
        random variable (:class:`~pymc_partitions.HyperSlice` by default, NUTS when
        other terms read it).
    observed : array_like of non-negative integers, shape (n, P, C) or (n, C)
        Count matrices; an (n, C) array is one position per item and is stored as
        (n, 1, C). Each item's position totals :math:`d_{ip}` are taken from it
        (they need not be equal across positions or items).

    Notes
    -----
    Forward draws keep each item's observed totals; block probabilities come from
    their posterior given the partition and the observed rows under
    ``pm.sample_posterior_predictive``, from their prior in prior draws (see
    :class:`~pymc_partitions.distributions.CollapsedLikelihood`). The op's third
    input is the (n, P) array of totals, computed from ``observed`` (so it follows
    ``pm.Data``). For :meth:`dist`, pass it as
    ``total_count`` (and ``n_categories`` when the concentration is a scalar).
    """

    rv_op = collapsed_dirichlet_multinomial
    hyper_defaults = {"concentration": 1.0}

    @classmethod
    def check_observed(cls, observed, owner):
        return observed_counts_3d(observed, owner)

    @classmethod
    def hyper_tensors(cls, hypers, data, owner):
        return [concentration_matrix(hypers["concentration"], data.shape[1], data.shape[2], owner)]

    @classmethod
    def derived_inputs(cls, observed):
        """The (n, P) totals, from the observed variable (so they follow pm.Data)."""
        return [observed.sum(axis=2)]

    @classmethod
    def dist(cls, partition, concentration, total_count, n_categories=None, **kwargs):
        owner = cls.__name__
        concentration = hyper_input("concentration", concentration, owner, positive=True)
        total = pt.as_tensor_variable(
            hyper_input("total_count", total_count, owner)).astype("float64")
        if total.ndim == 1:
            total = total[:, None]
        if total.ndim != 2:
            raise ValueError(f"{owner}: 'total_count' must be an (n, P) array of totals.")
        conc = pt.as_tensor_variable(concentration).astype("float64")
        if conc.ndim < 2:
            n_pos = total.type.shape[1]
            n_cat = n_categories if conc.ndim == 0 else (conc.type.shape[0] or n_categories)
            if n_pos is None or n_cat is None:
                raise ValueError(
                    f"{owner}: give 'concentration' as a (P, C) matrix, or 'n_categories' and a "
                    f"'total_count' of static shape (n, P)."
                )
            conc = concentration_matrix(conc, n_pos, int(n_cat), owner)
        return cls._rv_dist([partition, conc, total], **kwargs)

    def logp(value, partition, concentration, total_count, _observed):
        # Per-block count matrices and the multinomial coefficients, memoised on the
        # labels and data (O(K P C) per NUTS step; pymc_partitions.distributions.
        # statistics); ``ok`` also checks counts whose row sums are the totals.
        ok, _, counts, log_coef = count_matrices(partition, value, total_count)
        totals = counts.sum(axis=2)
        conc_sum = concentration.sum(axis=1)
        per_block = (
            pt.sum(pt.gammaln(counts + concentration) - pt.gammaln(concentration), axis=(1, 2))
            + pt.sum(pt.gammaln(conc_sum) - pt.gammaln(totals + conc_sum), axis=1)
        )
        logp = pt.switch(ok, pt.sum(per_block) + log_coef, -np.inf)
        return check_parameters(logp, pt.all(concentration > 0), msg="concentration > 0")
