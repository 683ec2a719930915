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
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant
from pytensor.graph.rewriting.basic import node_rewriter
from pytensor.raise_op import CheckAndRaise
from pytensor.tensor.random.op import RandomVariable
from pytensor.tensor.rewriting.basic import register_canonicalize

from pymc_partitions.versions import ancestors
from pymc_partitions.distributions.partition import PartitionPriorRV, partition_size
from pymc_partitions.distributions.statistics import binary_sums, normal_moments
from pymc_partitions.distributions.validation import (
    as_hyper_vector,
    constant_value,
    hyper_input,
    observed_matrix,
)
from pymc_partitions.kernels.components import beta_bernoulli as bb_kernel
from pymc_partitions.kernels.components import normal as normal_kernel

LOG_2PI = float(np.log(2 * np.pi))


class CollapsedLikelihoodRV(RandomVariable):
    """Base op: inputs ``(partition, *hyperparameters, observed)``, output the data.

    Subclasses name their hyperparameters (``hyper_names``), which must be positive
    (``positive``), and their numba component module (``kernel``), which provides
    ``make_data(observed)``, ``make_params(*hyper_values, n=n)`` and
    ``alloc_stats(n, D, params)``. A likelihood whose data or statistics are not an
    (n, D) matrix overrides :meth:`kernel_data` / :meth:`alloc_stats`.

    The last input is the observed data (in a model, the very variable PyMC holds as
    the observed value: a constant, or the ``pm.Data`` container; an empty array
    for ``.dist()`` without data). It is not a parameter of the density (the logp
    ignores it) but of forward draws: see :meth:`rng_fn`. Use :meth:`hyper_params`
    for the hyperparameter inputs and :meth:`observed_param` for this one.

    The prop ``block_parameters`` says where forward draws take block parameters
    from: ``"posterior"`` (their conditional posterior given the partition, the
    hyperparameters and the observed rows), ``"prior"``, or ``"auto"``, which the
    graph rewrite :func:`collapsed_block_parameters` resolves when a function is
    compiled (posterior if the partition is given to the computation, prior if it
    is drawn in it).

    Conjugate likelihoods also implement :meth:`block_posterior_draw`,
    :meth:`block_rows` and :meth:`block_log_predictive`, which forward draws and
    posterior analysis use (block parameters given a partition, replicate rows given
    them, the posterior predictive density of new observations).
    """

    __props__ = RandomVariable.__props__ + ("block_parameters",)
    hyper_names: tuple = ()
    positive: tuple = ()
    binary = False
    kernel = None
    block_parameters = "auto"
    #: The user-facing class (set by :class:`CollapsedLikelihood`): its
    #: ``check_observed`` validates new ``pm.Data`` values.
    distribution = None

    def __init__(self, *args, block_parameters=None, **kwargs):
        super().__init__(*args, **kwargs)
        if block_parameters is not None:
            if block_parameters not in ("auto", "posterior", "prior"):
                raise ValueError(
                    f"block_parameters must be 'auto', 'posterior' or 'prior', got "
                    f"{block_parameters!r}."
                )
            self.block_parameters = block_parameters

    def __call__(self, *args, block_parameters=None, **kwargs):
        if block_parameters is not None and block_parameters != self.block_parameters:
            return self.with_block_parameters(block_parameters)(*args, **kwargs)
        return super().__call__(*args, **kwargs)

    def with_block_parameters(self, block_parameters):
        """This op with another ``block_parameters`` prop."""
        props = self._props_dict()
        props["block_parameters"] = block_parameters
        return type(self)(**props)

    def hyper_params(self, node):
        """The hyperparameter inputs of ``node`` (between partition and observed)."""
        return self.dist_params(node)[1:-1]

    def observed_param(self, node):
        """The observed-data input of ``node``."""
        return self.dist_params(node)[-1]

    # ------------------------------------------------------------------ forward draws
    def rng_fn(self, rng, partition, *args):
        """Forward draw: ``(partition, *hypers, observed, size)`` -> replicate data.

        With ``block_parameters == "posterior"`` and observed data present, each
        block's parameters are drawn from their conditional posterior given its
        observed rows (:meth:`block_posterior_draw`) and the replicate rows from
        them (:meth:`block_rows`): under ``pm.sample_posterior_predictive`` this is
        the posterior predictive p(y_rep | z, hyperparameters, y) (Gelman, Meng &
        Stern 1996). Otherwise block parameters come from their prior
        (:meth:`prior_rng_fn`).
        """
        *params, observed, size = args
        if self.block_parameters == "auto":
            raise RuntimeError(
                f"{type(self).__name__}: the forward draw was compiled without PyTensor's "
                f"canonicalize rewrites, which decide whether block parameters come from "
                f"their posterior given the observed data (partition given) or from their "
                f"prior (partition drawn). Compile with a mode that includes 'canonicalize' "
                f"(PyMC's default), or create the likelihood with predictive='mixed'."
            )
        observed = np.asarray(observed)
        if self.block_parameters == "posterior" and observed.size > 0:
            return self._replicate(rng, partition, params, observed, size)
        return self.prior_rng_fn(rng, partition, *params, size)

    @classmethod
    def prior_rng_fn(cls, rng, partition, *args):  # pragma: no cover - overridden
        """Forward draw with block parameters from their prior: ``(partition,
        *hypers, size)`` (without the observed input)."""
        raise NotImplementedError

    def _replicate(self, rng, partition, params, observed, size):
        # Batch over the leading dimensions of partition and hyperparameters (the
        # observed input has no batch dimensions).
        core = self.ndims_params[:-1]
        arrays = [np.asarray(partition)] + [np.asarray(p, dtype=np.float64) for p in params]
        batch = (
            tuple(size)
            if size is not None
            else np.broadcast_shapes(*[a.shape[: a.ndim - c] for a, c in zip(arrays, core)])
        )
        arrays = [np.broadcast_to(a, batch + a.shape[a.ndim - c :]) for a, c in zip(arrays, core)]
        observed = np.asarray(observed, dtype=np.float64)
        draws = [
            self.replicate_one(rng, arrays[0][idx], [a[idx] for a in arrays[1:]], observed)
            for idx in np.ndindex(*batch)
        ]
        return np.stack(draws).reshape(batch + draws[0].shape)

    def replicate_one(self, rng, z, hypers, observed):
        """One replicate of the data given labels ``z`` (n,), hyperparameter values
        and the observed rows: per block, parameters from their posterior given the
        block's observed rows, then the block's replicate rows."""
        z = np.asarray(z, dtype=np.int64)
        if observed.shape[0] != z.shape[0]:
            raise ValueError(
                f"{_display_name(self)}: the observed data have {observed.shape[0]} rows but "
                f"the partition has n = {z.shape[0]} items; posterior predictive draws need "
                f"one observed row per item (a changed pm.Data must keep n)."
            )
        out = np.empty(observed.shape, dtype=np.float64)
        for idx in _label_blocks(z):
            rows = observed[idx]
            out[idx] = self.block_rows(rng, self.block_posterior_draw(rng, rows, hypers), rows,
                                       hypers)
        return out

    def block_rows(self, rng, params, rows, hypers):
        """Replicate rows for one block, shaped like its observed ``rows``, given its
        parameters ``params`` (a dict from :meth:`block_posterior_draw`)."""
        raise NotImplementedError(
            f"{type(self).__name__} has no conjugate block posterior: posterior predictive "
            f"draws are not available for it; pass predictive='mixed' for block parameters "
            f"from their prior."
        )

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
    **Observed data and** ``pm.Data``. Observed data are validated when the model is
    built. A ``pm.Data`` container stays in the graph: NUTS's log density reads its
    current value, and the partition steps read it again at the start of each chain
    (validated as at construction), so ``pm.set_data`` with new values of the same
    shape gives the posterior of the new data. The shape is fixed when the model is
    built (n is the partition's number of items, D the hyperparameters' length): a
    new shape is refused with an error naming the likelihood and n; rebuild the
    model for other data sizes.

    **Forward draws.** Under ``pm.sample_posterior_predictive`` (the partition
    taken from the trace, or given) each block's parameters are drawn from their
    conditional posterior given the partition, the hyperparameters and the observed
    rows of the block, then the replicate rows from them: the posterior predictive
    p(y_rep | z, hyperparameters, y), whose replicates look like the data when the
    model fits (what ``az.plot_ppc`` expects). When the partition itself is drawn
    (``pm.sample_prior_predictive``, ``pm.draw``) block parameters come from their
    prior. ``predictive="mixed"`` makes every forward draw take block parameters
    from their prior: under ``pm.sample_posterior_predictive`` that is the *mixed*
    predictive of Gelman, Meng & Stern (1996) (partition and hyperparameters from
    the posterior, block parameters fresh), which checks the partition prior and
    hyperparameters rather than the fit of each block.

    The choice is made when PyTensor compiles the draw (the rewrite
    :func:`collapsed_block_parameters`): "posterior" when the partition is an input
    of the computation, "prior" when a random variable in it produces the partition.
    Likelihoods without a conjugate block posterior refuse posterior predictive
    draws (:class:`~pymc_partitions.KMeansEnergy` has no forward draws at all).

    ``.dist(partition, *hypers, data=None, predictive="conditional")``: ``data`` is
    the observed variable forward draws condition on (without it, block parameters
    come from their prior).
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        op = cls.__dict__.get("rv_op")
        if op is not None:
            type(op).distribution = cls

    def __new__(cls, name, partition, *args, observed=None, predictive="conditional",
                **kwargs):
        owner = f"{cls.__name__} '{name}'"
        data = cls.check_observed(observed, owner)
        check_partition(partition, data.shape[0], owner)
        observed_var = observed_input(observed, data, name, partition, owner)
        hypers = cls._bind_hypers(args, kwargs, owner)
        hypers = cls.hyper_tensors(hypers, data, owner) + cls.derived_inputs(observed_var)
        return super().__new__(
            cls, name, partition, *hypers, observed=observed_var, data=observed_var,
            predictive=predictive, **kwargs
        )

    @classmethod
    def check_observed(cls, observed, owner):
        """Validated observed data with one row per item (override for other layouts)."""
        binary = cls.rv_op.binary
        return observed_matrix(observed, owner, binary=binary, allow_bool=binary)

    @classmethod
    def hyper_tensors(cls, hypers, data, owner):
        """Hyperparameter tensors from ``{name: value}``: by default each a length-D
        vector (scalars broadcast). Override for matrix or scalar hyperparameters."""
        return [as_hyper_vector(h, v, data.shape[1], owner) for h, v in hypers.items()]

    @classmethod
    def derived_inputs(cls, observed):
        """Further op inputs computed from the observed variable (e.g. the
        Dirichlet-multinomial's totals), placed after the hyperparameters."""
        return []

    @classmethod
    def dist(cls, partition, *hypers, n_dims=None, **kwargs):
        owner = cls.__name__
        named = cls._bind_hypers(hypers, kwargs, owner)
        if n_dims is not None:
            named = {h: as_hyper_vector(h, v, n_dims, owner) for h, v in named.items()}
        else:
            named = {h: pt.atleast_1d(pt.as_tensor_variable(v)).astype("float64") for h, v in named.items()}
        return cls._rv_dist([partition, *named.values()], **kwargs)

    @classmethod
    def _rv_dist(cls, params, data=None, predictive="conditional", **kwargs):
        """``pm.Distribution.dist`` with the observed input appended.

        data : the observed variable forward draws condition on (a model passes its
        ``observed``); None: an empty array (block parameters from their prior).
        predictive : "conditional" (default) or "mixed"; see the class notes.
        """
        if predictive not in ("conditional", "mixed"):
            raise ValueError(
                f"{cls.__name__}: 'predictive' must be 'conditional' (block parameters from "
                f"their posterior given the partition and the observed data) or 'mixed' "
                f"(from their prior), got {predictive!r}."
            )
        if data is None:
            ndim = len(cls.rv_op.inputs_sig[-1])
            data = pt.constant(np.zeros((0,) * ndim), dtype="float64")
        block = "auto" if predictive == "conditional" else "prior"
        return super().dist([*params, data], block_parameters=block, **kwargs)

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
        for h in names:
            if values[h] is None and defaults[h] is None:
                continue  # a required hyperparameter: the subclass says what it needs
            values[h] = hyper_input(h, values[h], owner, positive=h in cls.rv_op.positive)
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


def observed_input(observed, data, name, partition=None, owner=None):
    """The graph variable of the observed data: PyMC's observed value and the op's
    last input (one variable, so the data are held once).

    ``pm.Data`` (a shared variable) stays symbolic, cast to float64, a vector read
    as one column (an (n, C) count array as (n, 1, C)), its shape fixed to the
    validated ``data``'s: NUTS's log density then reads the container's current
    value. Anything else becomes a constant of ``data``.
    """
    if isinstance(observed, SharedVariable):
        var = pt.as_tensor_variable(observed).astype("float64")
        if var.ndim < data.ndim:
            var = pt.expand_dims(var, 1)
        # Every evaluation (NUTS's log density, forward draws) checks the shape first,
        # with a message that says what to do.
        where = f"'{partition.name}'" if getattr(partition, "name", None) else "the partition"
        message = (
            f"{owner}: the observed pm.Data '{observed.name}' was given a new shape by "
            f"pm.set_data; it must keep the shape {data.shape} the model was built with "
            f"(partition {where} has n = {data.shape[0]} items). pm.set_data may change "
            f"the values, not the shape; rebuild the model for data of another size."
        )
        var = CheckAndRaise(ValueError, message)(var, pt.all(pt.eq(var.shape, data.shape)))
        return pt.specify_shape(var, data.shape)
    return pt.constant(data, name=name)


def observed_data(rv, value_var, owner=None):
    """The validated observed data of collapsed likelihood ``rv`` (numpy), read now.

    ``value_var`` is its observed value in the model (``model.rvs_to_values[rv]``);
    ``owner`` prefixes error messages (e.g. the step's name).
    A constant is returned as stored; a ``pm.Data`` container is read and validated
    like the data given at construction, and a shape other than the one the model
    was built with raises a ValueError naming the likelihood and the partition's n.
    """
    if isinstance(value_var, Constant):
        return np.asarray(value_var.data)
    op = rv.owner.op
    shared = [v for v in ancestors([value_var]) if isinstance(v, SharedVariable)]
    where = f"{op.distribution.__name__} '{rv.name}'"
    if len(shared) != 1:
        raise ValueError(f"{where}: the observed data must be an array or one pm.Data container.")
    where += f" (observed pm.Data '{shared[0].name}')"
    owner = f"{owner}: {where}" if owner else where
    data = op.distribution.check_observed(shared[0], owner)
    built = tuple(value_var.type.shape)
    if data.shape != built:
        z = op.dist_params(rv.owner)[0]
        raise ValueError(
            f"{owner}: the observed pm.Data '{shared[0].name}' now has shape "
            f"{np.shape(shared[0].get_value(borrow=True))} (read as {data.shape}), but the model "
            f"was built for shape {built}: partition '{z.name}' has n = {built[0]} items, fixed "
            f"when the model was built, and the hyperparameters' shapes follow the data's other "
            f"dimensions. pm.set_data may change the values, not the shape; rebuild the model "
            f"for data of another size."
        )
    return data


def _label_blocks(z):
    """Member indices of each block of the label vector ``z`` (any labelling)."""
    order = np.argsort(z, kind="stable")
    _, starts = np.unique(z[order], return_index=True)
    return np.split(order, starts[1:])


def _display_name(op):
    name = getattr(op, "_print_name", None)
    return name[0] if name else type(op).__name__


@register_canonicalize
@node_rewriter([CollapsedLikelihoodRV])
def collapsed_block_parameters(fgraph, node):
    """Resolve ``block_parameters="auto"`` of a collapsed likelihood's forward draw.

    If a random variable in the compiled graph produces the partition (prior
    predictive, ``pm.draw``), block parameters come from their prior; if the
    partition is an input (``pm.sample_posterior_predictive`` feeds the trace's
    partitions as inputs) or a constant, from their posterior given the observed
    data. Registered in ``canonicalize`` (run by PyMC's and PyTensor's default
    modes, FAST_RUN and FAST_COMPILE alike).
    """
    op = node.op
    if not isinstance(op, CollapsedLikelihoodRV) or op.block_parameters != "auto":
        return None
    partition = op.dist_params(node)[0]
    drawn = any(
        v.owner is not None and isinstance(v.owner.op, RandomVariable)
        for v in ancestors([partition])
    )
    new_op = op.with_block_parameters("prior" if drawn else "posterior")
    return new_op.make_node(*node.inputs).outputs


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
    signature = "(n),(d),(d),(d),(r,s)->(n,d)"
    dtype = "floatX"
    _print_name = ("CollapsedNormal", "\\operatorname{CollapsedNormal}")
    hyper_names = ("mu0", "tau", "sigma")
    positive = ("tau", "sigma")
    kernel = normal_kernel

    @classmethod
    def prior_rng_fn(cls, rng, partition, mu0, tau, sigma, size):
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

    def block_rows(self, rng, params, rows, hypers):
        """Rows N(mu, sigma^2) per dimension, shaped like ``rows``."""
        return rng.normal(params["mu"], np.asarray(hypers[2], dtype=np.float64), size=rows.shape)

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
        variables (:class:`~pymc_partitions.HyperSlice` by default, NUTS when other
        terms read them).
    observed : array_like, shape (n, D) or (n,)
        Finite data; a vector is read as D = 1 and stored as (n, 1).

    Forward draws and observed data: see :class:`CollapsedLikelihood`.
    """

    rv_op = collapsed_normal
    hyper_defaults = {"mu0": 0.0, "tau": 1.0, "sigma": 1.0}

    def logp(value, partition, mu0, tau, sigma, _observed):
        # From the blocks' sizes, means and centred sums of squares (memoised on
        # the labels: O(K D) per NUTS step, see pymc_partitions.distributions.statistics).
        # With d = mean - mu0, the block's quadratic form
        # (q - tau^2 s^2 / big) / sigma^2 (s, q: sum and sum of squares of x - mu0)
        # is m2 / sigma^2 + m d^2 / big.
        ok, m, mean, m2 = normal_moments(partition, value)
        d = mean - mu0
        tau2, sigma2 = tau**2, sigma**2
        big = sigma2 + m * tau2
        per_block = (
            -0.5 * m * LOG_2PI
            - 0.5 * (m - 1) * pt.log(sigma2)
            - 0.5 * pt.log(big)
            - 0.5 * (m2 / sigma2 + m * d**2 / big)
        )
        logp = pt.switch(ok, pt.sum(per_block), -np.inf)
        return check_parameters(logp, pt.all(tau > 0), pt.all(sigma > 0), msg="tau > 0, sigma > 0")


# --------------------------------------------------------------------------------------
# Beta-Bernoulli, block probabilities integrated out
# --------------------------------------------------------------------------------------


class CollapsedBetaBernoulliRV(CollapsedLikelihoodRV):
    name = "collapsed_beta_bernoulli"
    signature = "(n),(d),(d),(r,s)->(n,d)"
    dtype = "floatX"
    _print_name = ("CollapsedBetaBernoulli", "\\operatorname{CollapsedBetaBernoulli}")
    hyper_names = ("a", "b")
    positive = ("a", "b")
    binary = True
    kernel = bb_kernel

    @classmethod
    def prior_rng_fn(cls, rng, partition, a, b, size):
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

    def block_rows(self, rng, params, rows, hypers):
        """Rows of Bernoulli(theta) features, shaped like ``rows``."""
        return (rng.random(rows.shape) < params["theta"]).astype(np.float64)

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

    def logp(value, partition, a, b, _observed):
        # From block sizes and counts of ones (memoised on the labels: O(K D) per
        # NUTS step, see pymc_partitions.distributions.statistics); ``ok`` also
        # checks the data are 0/1.
        ok, m, ones = binary_sums(partition, value)
        per_block = (
            pt.gammaln(a + ones)
            + pt.gammaln(b + m - ones)
            - pt.gammaln(a + b + m)
            - (pt.gammaln(a) + pt.gammaln(b) - pt.gammaln(a + b))
        )
        logp = pt.switch(ok, pt.sum(per_block), -np.inf)
        return check_parameters(logp, pt.all(a > 0), pt.all(b > 0), msg="a > 0, b > 0")
