"""Collapsed likelihoods: observed data whose per-block parameters are integrated out.

Each likelihood is a PyMC distribution (a ``RandomVariable`` op plus a
``pm.Continuous`` class) taking ``partition=`` (a partition variable such as
:class:`~pymc_partitions.CRP`) and hyperparameters that may be any PyTensor
expression, constants or free variables. Its PyTensor log density is what NUTS
differentiates for the hyperparameters; its numba component (in
:mod:`pymc_partitions.kernels.components`) is what the partition samplers use, and
tests check one against the other.

The op carries the binding the step methods need (:class:`CollapsedLikelihoodRV`):
how to turn observed data and hyperparameter values into the component's
``data`` and ``params`` records and allocate its statistics.
"""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.distributions.dist_math import check_parameters
from pytensor.tensor.random.op import RandomVariable

from pymc_partitions.distributions.partition import PartitionPriorRV, partition_size
from pymc_partitions.distributions.validation import (
    as_hyper_vector,
    check_positive,
    constant_value,
    observed_matrix,
)
from pymc_partitions.kernels.components import beta_bernoulli as bb_kernel
from pymc_partitions.kernels.components import normal as normal_kernel

LOG_2PI = float(np.log(2 * np.pi))


class CollapsedLikelihoodRV(RandomVariable):
    """Base op: inputs ``(partition, *hyperparameters)``, output the (n, D) data.

    Subclasses name their hyperparameters (``hyper_names``), which must be positive
    (``positive``), and their numba component module (``kernel``), which provides
    ``make_data(observed)``, ``make_params(*hyper_values, n=n)`` and
    ``alloc_stats(n, D, params)``. A likelihood whose data or statistics are not an
    (n, D) matrix overrides :meth:`kernel_data` / :meth:`alloc_stats`.

    Conjugate likelihoods also implement :meth:`block_posterior_draw` and
    :meth:`block_log_predictive`, which posterior analysis uses (block parameters
    given a partition, the posterior predictive density of new observations).
    """

    hyper_names: tuple = ()
    positive: tuple = ()
    binary = False
    kernel = None

    def kernel_data(self, observed):
        return self.kernel.make_data(observed)

    def kernel_params(self, values, n):
        return self.kernel.make_params(*values, n=n)

    def alloc_stats(self, n, data, params):
        """Statistics of n empty slots for the component's ``data`` record."""
        return self.kernel.alloc_stats(n, data[0].shape[1], params)

    def block_posterior_draw(self, rng, rows, hypers):
        """Draw one block's parameters from their conjugate posterior.

        rows : the block's observed rows, (m, ...) as in ``observed`` (m may be 0:
        the prior); hypers : list of hyperparameter values (numpy arrays, in
        ``hyper_names`` order). Returns a dict ``{parameter name: array}``.
        """
        raise NotImplementedError(
            f"{type(self).__name__} has no conjugate block posterior to draw from."
        )

    def block_log_predictive(self, new_rows, rows, hypers):
        """log p(new row | the block's ``rows``) for each of ``new_rows``, shape (r,).

        With ``rows`` empty, the prior predictive of a new block.
        """
        raise NotImplementedError(
            f"{type(self).__name__} has no closed-form block posterior predictive."
        )

    def check_hyper_values(self, values, owner):
        """Raise a clear error if sampled hyperparameter values are invalid."""
        for name, value in zip(self.hyper_names, values):
            if not np.all(np.isfinite(value)) or (name in self.positive and np.any(value <= 0)):
                raise ValueError(
                    f"{owner}: hyperparameter '{name}' = {value!r} is outside its support "
                    f"(must be finite{' and positive' if name in self.positive else ''}). "
                    f"Give it a prior with that support."
                )


class CollapsedLikelihood(pm.Continuous):
    """Shared construction of collapsed likelihoods: checks and broadcasting.

    Notes
    -----
    Forward draws (``pm.sample_prior_predictive``, ``pm.draw``, and
    ``pm.sample_posterior_predictive``) draw fresh block parameters from their
    prior given the partition and the hyperparameters. Under
    ``pm.sample_posterior_predictive`` this is the *mixed* predictive (Gelman, Meng &
    Stern 1996): partition and hyperparameters from the posterior, block parameters
    from the prior. It is not the predictive with block parameters from their
    posterior given the observed rows. The observed data are read when the model is
    built (a ``pm.Data`` container is read once).
    """

    def __new__(cls, name, partition, *args, observed=None, **kwargs):
        owner = f"{cls.__name__} '{name}'"
        data = cls.check_observed(observed, owner)
        check_partition(partition, data.shape[0], owner)
        hypers = cls._bind_hypers(args, kwargs, owner)
        hypers = cls.hyper_tensors(hypers, data, owner)
        return super().__new__(cls, name, partition, *hypers, observed=data, **kwargs)

    @classmethod
    def check_observed(cls, observed, owner):
        """Validated observed data with one row per item (override for other layouts)."""
        return observed_matrix(observed, owner, binary=cls.rv_op.binary)

    @classmethod
    def hyper_tensors(cls, hypers, data, owner):
        """Hyperparameter tensors from ``{name: value}``: by default each a length-D
        vector (scalars broadcast). Override for matrix or scalar hyperparameters."""
        return [as_hyper_vector(h, v, data.shape[1], owner) for h, v in hypers.items()]

    @classmethod
    def dist(cls, partition, *hypers, n_dims=None, **kwargs):
        owner = cls.__name__
        named = cls._bind_hypers(hypers, kwargs, owner)
        if n_dims is not None:
            named = {h: as_hyper_vector(h, v, n_dims, owner) for h, v in named.items()}
        else:
            named = {h: pt.atleast_1d(pt.as_tensor_variable(v)).astype("float64") for h, v in named.items()}
        return super().dist([partition, *named.values()], **kwargs)

    @classmethod
    def _bind_hypers(cls, args, kwargs, owner):
        names = cls.rv_op.hyper_names
        defaults = cls.hyper_defaults
        if len(args) > len(names):
            raise TypeError(f"{owner}: too many positional hyperparameters {args!r}.")
        values = dict(zip(names, args))
        for h in names:
            if h in kwargs:
                if h in values:
                    raise TypeError(f"{owner}: '{h}' given twice.")
                values[h] = kwargs.pop(h)
            elif h not in values:
                values[h] = defaults[h]
        for h in cls.rv_op.positive:
            check_positive(h, values[h], owner)
        return values


def check_partition(partition, n_rows, owner):
    """Check ``partition=`` is a partition variable over ``n_rows`` items."""
    node = getattr(partition, "owner", None)
    if node is None or not isinstance(node.op, PartitionPriorRV):
        raise ValueError(
            f"{owner}: 'partition' must be a partition variable created by a partition prior "
            f"such as pmp.CRP, got {partition!r}."
        )
    n = partition_size(partition)
    if n is not None and n != n_rows:
        raise ValueError(
            f"{owner}: 'observed' has {n_rows} rows but partition '{partition.name}' has "
            f"n = {n} items; they must match (one row per item)."
        )


def _segment_sums(labels, values, n):
    # Sum rows of ``values`` by block label: (n, D).
    return pt.zeros((n, values.shape[1]), dtype="float64")[labels].inc(values)


def _block_sizes_per_dim(labels, value, n):
    """Block sizes m_k repeated over the D columns of ``value``: an (n, D) float
    tensor, the shape of every other per-block, per-dimension statistic.

    Why not an (n, 1) column: the per-dimension hyperparameters are length-D
    vectors, and a constant one (a scalar broadcast to D, e.g. the default
    ``b=1.0``) would then be what broadcasts the column to (n, D). PyTensor 2's
    stabiliser ``local_log1p`` rewrites ``log(c + x)`` with c summing to 1 into
    ``log1p(x)`` allocated to the output's shape, read from the very node it
    replaces when no shape feature is attached (``rewrite_pregrad``, which PyMC
    runs before taking the gradient): the rewrite re-applies to that node forever
    and ``pm.sample`` never finishes compiling (``tests/test_compile_all_likelihoods.py``).
    With every operand of full shape, x already has the output's shape and the
    rewrite is a plain ``log1p(x)``. Costs O(n D) per evaluation, as the data's
    own segment sums do.
    """
    return _segment_sums(labels, pt.ones_like(value, dtype="float64"), n)


def _batched_rng(draw_one, rng, params, size):
    """Apply ``draw_one(rng, *core_params)`` over the batch shape (every param has one
    core dimension)."""
    params = [np.asarray(p) for p in params]
    batch = tuple(size) if size is not None else np.broadcast_shapes(*[p.shape[:-1] for p in params])
    params = [np.broadcast_to(p, batch + p.shape[-1:]) for p in params]
    draws = [draw_one(rng, *[p[idx] for p in params]) for idx in np.ndindex(*batch)]
    return np.stack(draws).reshape(batch + draws[0].shape)


# --------------------------------------------------------------------------------------
# Normal with known variance, block means integrated out
# --------------------------------------------------------------------------------------


class CollapsedNormalRV(CollapsedLikelihoodRV):
    name = "collapsed_normal"
    signature = "(n),(d),(d),(d)->(n,d)"
    dtype = "floatX"
    _print_name = ("CollapsedNormal", "\\operatorname{CollapsedNormal}")
    hyper_names = ("mu0", "tau", "sigma")
    positive = ("tau", "sigma")
    kernel = normal_kernel

    @classmethod
    def rng_fn(cls, rng, partition, mu0, tau, sigma, size):
        def draw_one(rng, z, mu0, tau, sigma):
            n_blocks = int(z.max()) + 1
            means = rng.normal(mu0, tau, size=(n_blocks, mu0.shape[0]))
            return rng.normal(means[z], sigma)

        return _batched_rng(draw_one, rng, (partition, mu0, tau, sigma), size)

    def block_posterior_draw(self, rng, rows, hypers):
        """Block mean ``mu`` (D,) from its Normal posterior: precision
        1/tau^2 + m/sigma^2, mean (mu0/tau^2 + sum(rows)/sigma^2) / precision."""
        mean, var = self._block_posterior(rows, hypers)
        return {"mu": rng.normal(mean, np.sqrt(var))}

    def block_log_predictive(self, new_rows, rows, hypers):
        """Sum over dimensions of log Normal(x_d; posterior mean, posterior variance
        + sigma_d^2) for each new row (Nguyen et al. 2022, App. M)."""
        mean, var = self._block_posterior(rows, hypers)
        v = var + np.asarray(hypers[2], dtype=np.float64) ** 2
        r = np.asarray(new_rows, dtype=np.float64) - mean
        return -0.5 * np.sum(LOG_2PI + np.log(v) + r**2 / v, axis=-1)

    @staticmethod
    def _block_posterior(rows, hypers):
        mu0, tau, sigma = (np.asarray(h, dtype=np.float64) for h in hypers)
        rows = np.asarray(rows, dtype=np.float64)
        prec = 1.0 / tau**2 + rows.shape[0] / sigma**2
        mean = (mu0 / tau**2 + rows.sum(axis=0) / sigma**2) / prec
        return mean, 1.0 / prec



collapsed_normal = CollapsedNormalRV()


class CollapsedNormal(CollapsedLikelihood):
    r"""Normal data with block means integrated out (diagonal, known variance).

    .. math::

        \mu_{kd} \sim \mathcal N(\mu_{0d}, \tau_d^2), \qquad
        y_{id} \mid z_i = k \sim \mathcal N(\mu_{kd}, \sigma_d^2)

    independently over dimensions d. The log density is the sum over blocks of the
    marginal likelihood of the block's rows (per dimension a Normal with covariance
    :math:`\sigma^2 I + \tau^2 \mathbf 1 \mathbf 1^\top`), computed from per-block
    sums and sums of squares.

    Parameters
    ----------
    partition : TensorVariable
        A partition variable (e.g. :class:`~pymc_partitions.CRP`) over the n rows.
    mu0, tau, sigma : tensor_like of float
        Prior mean and standard deviation of block means, observation noise
        standard deviation: scalars or length-D vectors, constants or random
        variables (NUTS samples them).
    observed : array_like, shape (n, D) or (n,)
        Finite data; a vector is read as D = 1 and stored as (n, 1).

    Forward draws and observed data: see :class:`CollapsedLikelihood`.
    """

    rv_op = collapsed_normal
    hyper_defaults = {"mu0": 0.0, "tau": 1.0, "sigma": 1.0}

    def logp(value, partition, mu0, tau, sigma):
        n = value.shape[0]
        labels = pt.clip(partition, 0, n - 1)
        resid = value - mu0
        m = _block_sizes_per_dim(labels, value, n)
        s = _segment_sums(labels, resid, n)
        q = _segment_sums(labels, resid**2, n)
        tau2, sigma2 = tau**2, sigma**2
        big = sigma2 + m * tau2
        per_block = (
            -0.5 * m * LOG_2PI
            - 0.5 * (m - 1) * pt.log(sigma2)
            - 0.5 * pt.log(big)
            - 0.5 * (q - tau2 * s**2 / big) / sigma2
        )
        logp = pt.sum(pt.switch(m > 0, per_block, 0.0))
        logp = pt.switch(pt.all(pt.ge(partition, 0)) & pt.all(pt.lt(partition, n)), logp, -np.inf)
        return check_parameters(logp, pt.all(tau > 0), pt.all(sigma > 0), msg="tau > 0, sigma > 0")


# --------------------------------------------------------------------------------------
# Beta-Bernoulli, block probabilities integrated out
# --------------------------------------------------------------------------------------


class CollapsedBetaBernoulliRV(CollapsedLikelihoodRV):
    name = "collapsed_beta_bernoulli"
    signature = "(n),(d),(d)->(n,d)"
    dtype = "floatX"
    _print_name = ("CollapsedBetaBernoulli", "\\operatorname{CollapsedBetaBernoulli}")
    hyper_names = ("a", "b")
    positive = ("a", "b")
    binary = True
    kernel = bb_kernel

    @classmethod
    def rng_fn(cls, rng, partition, a, b, size):
        def draw_one(rng, z, a, b):
            n_blocks = int(z.max()) + 1
            theta = rng.beta(a, b, size=(n_blocks, a.shape[0]))
            return (rng.random((z.shape[0], a.shape[0])) < theta[z]).astype(np.float64)

        return _batched_rng(draw_one, rng, (partition, a, b), size)

    def block_posterior_draw(self, rng, rows, hypers):
        """Block probabilities ``theta`` (D,) from Beta(a + c, b + m - c), with c the
        block's count of ones per feature and m its size."""
        post_a, post_b = self._block_posterior(rows, hypers)
        return {"theta": rng.beta(post_a, post_b)}

    def block_log_predictive(self, new_rows, rows, hypers):
        """Sum over features of log Bernoulli(x_d; (a_d + c_d) / (a_d + b_d + m)) for
        each new row (the Beta-Bernoulli posterior predictive, Jain & Neal 2004 §5)."""
        post_a, post_b = self._block_posterior(rows, hypers)
        x = np.asarray(new_rows, dtype=np.float64)
        log_p1 = np.log(post_a) - np.log(post_a + post_b)
        log_p0 = np.log(post_b) - np.log(post_a + post_b)
        return np.sum(x * log_p1 + (1.0 - x) * log_p0, axis=-1)

    @staticmethod
    def _block_posterior(rows, hypers):
        a, b = (np.asarray(h, dtype=np.float64) for h in hypers)
        rows = np.asarray(rows, dtype=np.float64)
        ones = rows.sum(axis=0)
        return a + ones, b + rows.shape[0] - ones



collapsed_beta_bernoulli = CollapsedBetaBernoulliRV()


class CollapsedBetaBernoulli(CollapsedLikelihood):
    r"""Binary features with block probabilities integrated out (Jain & Neal 2004, §5).

    .. math::

        \theta_{kd} \sim \mathrm{Beta}(a_d, b_d), \qquad
        y_{id} \mid z_i = k \sim \mathrm{Bernoulli}(\theta_{kd})

    The log density sums :math:`\log B(a_d + c_{kd}, b_d + m_k - c_{kd}) - \log B(a_d, b_d)`
    over blocks k and features d, with :math:`m_k` the block size and :math:`c_{kd}`
    its count of ones.

    Parameters
    ----------
    partition : TensorVariable
        A partition variable over the n rows.
    a, b : tensor_like of float
        Beta hyperparameters, > 0: scalars or length-D vectors, constants or random
        variables.
    observed : array_like of 0/1, shape (n, D) or (n,)

    Forward draws and observed data: see :class:`CollapsedLikelihood`.
    """

    rv_op = collapsed_beta_bernoulli
    hyper_defaults = {"a": 1.0, "b": 1.0}

    def logp(value, partition, a, b):
        n = value.shape[0]
        labels = pt.clip(partition, 0, n - 1)
        m = _block_sizes_per_dim(labels, value, n)
        ones = _segment_sums(labels, value, n)
        per_block = (
            pt.gammaln(a + ones)
            + pt.gammaln(b + m - ones)
            - pt.gammaln(a + b + m)
            - (pt.gammaln(a) + pt.gammaln(b) - pt.gammaln(a + b))
        )
        logp = pt.sum(pt.switch(m > 0, per_block, 0.0))
        valid = (
            pt.all(pt.eq(value, 0) | pt.eq(value, 1))
            & pt.all(pt.ge(partition, 0))
            & pt.all(pt.lt(partition, n))
        )
        logp = pt.switch(valid, logp, -np.inf)
        return check_parameters(logp, pt.all(a > 0), pt.all(b > 0), msg="a > 0, b > 0")
