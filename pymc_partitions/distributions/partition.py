"""Random-partition variables: the partition priors (DESIGN §2, §4).

A partition of n items is an int64 vector of *canonical* labels: label 0 for
item 0's block, new labels in order of first appearance, so equal partitions have
equal label vectors. :class:`CRP` is the Chinese restaurant process (Ewens
distribution).

Each partition variable created in a model also adds label-invariant summaries as
``pm.Deterministic`` variables, so the posterior holds statistics whose R-hat and
ESS mean something (raw labels switch): ``{name}_n_clusters``,
``{name}_largest_cluster_frac`` and ``{name}_entropy`` (entropy of the block-size
proportions). Pass ``summaries=False`` to leave them out.
"""

import functools
import math

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.distributions.dist_math import check_parameters
from pymc.distributions.shape_utils import rv_size_is_none
from pytensor.tensor import get_vector_length
from pytensor.tensor.random.op import RandomVariable

from pymc_partitions._lazy import load_api
from pymc_partitions.distributions.validation import (
    constant_integer,
    constant_value,
    hyper_input,
)
from pymc_partitions.kernels.hyperparameters import log_prior_total, sizes_arrays
from pymc_partitions.kernels.priors import crp as crp_kernel
from pymc_partitions.partitions import as_labels


def partition_size(rv):
    """The number of items n of a partition variable, or None if n is not a constant."""
    n = constant_value(rv.owner.op.dist_params(rv.owner)[-1])
    return None if n is None else int(n)


def validate_labels(labels, n, where):
    """Check a label vector for a partition of ``n`` items; return it as int64.

    ``where`` names the variable and where the labels came from, for the error.
    Any labelling is accepted (the partition it encodes is what counts).
    """
    labels = as_labels(labels, where, None)
    if labels.shape != (n,):
        raise ValueError(
            f"{where} must be a vector of n = {n} labels, got shape {labels.shape}."
        )
    if labels.min() < 0 or labels.max() >= n:
        raise ValueError(
            f"{where} has labels outside [0, {n}): min {labels.min()}, max {labels.max()}. "
            f"Use labels in 0..n-1 (any labelling of the partition works)."
        )
    return labels


def block_sizes(labels, n):
    """Sizes of the blocks of ``labels`` (values in [0, n)) as a length-n float vector."""
    return pt.zeros((n,), dtype="float64")[labels].inc(1.0)


def labels_in_range(labels, n):
    """Symbolic check that every label lies in [0, n)."""
    return pt.all(pt.ge(labels, 0)) & pt.all(pt.lt(labels, n))


def scalar_n(n):
    """The number of items as a scalar (PyMC broadcasts ``n`` with ``size``)."""
    n = pt.as_tensor_variable(n)
    return n if n.ndim == 0 else n.flatten()[0]


def start_value(size, core, *batch_params):
    """A starting partition (``support_point``) of shape ``batch + (n,)``, int64.

    ``core`` is an expression of shape ``(..., n)``; it is broadcast against the
    batch shapes of ``batch_params`` (scalar parameters per partition) and, when
    given, ``size``. Built from the parameters only, never from the random
    variable: PyMC compiles its initial-point function in FAST_COMPILE mode, so
    ``pt.zeros_like(rv)`` or ``rv.shape`` there evaluates the variable, i.e. runs a
    forward draw from the prior (O(n K) for a CRP, 35-56 s at n = 10^6) only to
    throw it away (issue 33, item 3).
    """
    value = pt.as_tensor_variable(core).astype("int64")
    for param in batch_params:
        value = value + pt.zeros_like(param, dtype="int64")[..., None]
    if not rv_size_is_none(size):
        batch = [size[i] for i in range(get_vector_length(size))]
        value = pt.full((*batch, value.shape[-1]), value, dtype="int64")
    return value


def partition_summaries(labels):
    """Label-invariant statistics of a partition (PyTensor expressions).

    Returns a dict: ``n_clusters`` (int64), ``largest_cluster_frac`` and ``entropy``
    (entropy of the block-size proportions, nats).
    """
    n = labels.shape[-1]
    sizes = block_sizes(pt.clip(labels, 0, n - 1), n)
    frac = sizes / n
    safe = pt.switch(frac > 0, frac, 1.0)
    return {
        "n_clusters": pt.sum(sizes > 0).astype("int64"),
        "largest_cluster_frac": pt.max(sizes) / n,
        "entropy": -pt.sum(frac * pt.log(safe)),
    }


class PartitionPriorRV(RandomVariable):
    """Base op of partition priors; step methods recognise partitions by this type.

    Inputs are ``(*hyperparameters, n)``. Subclasses name the hyperparameters
    (``hyper_names``) and bind them to their numba prior: ``kernel_prior_params(values, n)``.
    """

    dtype = "int64"
    hyper_names: tuple = ()

    def predictive_log_weights(self, values, sizes):
        """Log probabilities that a new item joins each existing block or a new one.

        values : the prior's hyperparameter values (``hyper_names`` order);
        sizes : (K,) sizes of the blocks of a partition of n items. Returns (K + 1,)
        normalised log weights: the K existing blocks in order, then a new block (the
        prior's prediction rule, used for posterior predictive densities).
        """
        raise NotImplementedError(
            f"{type(self).__name__} has no prediction rule (predictive_log_weights) for a new item."
        )

    def check_hyper_values(self, values, owner):
        for name, value in zip(self.hyper_names, values):
            if not np.all(np.isfinite(value)) or np.any(value <= 0):
                raise ValueError(
                    f"{owner}: '{name}' = {value!r} is outside its support (must be positive and "
                    f"finite). Give it a prior with positive support, e.g. pm.Gamma."
                )

    def log_prior_from_sizes(self, values, sizes, n):
        """log p(z | hyperparameter ``values``) of a partition of ``n`` items with
        block sizes ``sizes`` ((K,) integer-valued, int64 or float64); -inf outside
        the support (never raises for bad values).

        The one Python-side evaluation of each prior (the hyperparameter steps'
        conditionals, MallowsGibbs' ``log_joint``). Default: the prior's numba
        ``log_prior`` (:mod:`pymc_partitions.kernels.priors`) through
        ``kernel_prior_params``. Priors with a closed form in block sizes override it
        with NumPy (no kernel params to build per evaluation: the MFM's are an
        O(n kmax) table). The model's log density is the PyTensor graph of each
        prior's ``logp`` (differentiable in the hyperparameters, and the tests'
        oracle): a third form by necessity, not a copy to remove."""
        try:
            self.check_hyper_values(values, "prior")
            prior_params = self.kernel_prior_params(values, n)
        except (ValueError, FloatingPointError):
            return -np.inf
        s, active = sizes_arrays(sizes)
        return float(log_prior_total(prior_params, s, active, s.shape[0], n))

    def check_support(self, labels, node, where):
        """Raise a ValueError (naming ``where``) if the partition ``labels`` (int64,
        range-checked) has probability zero under this prior. Called on starting
        partitions (``initvals``, points a step did not write). Default: none is."""

    def constraint_component(self, node):
        """None, or the :class:`ConstraintComponent` of a prior whose support is
        restricted beyond block sizes (e.g. proper graph colourings). Its kernel
        component is combined with the collapsed likelihoods, and with it a
        partition may be sampled without any likelihood (the prior is the target)."""
        return None


class ConstraintComponent:
    """A prior's constraint as a kernel component (see
    :meth:`PartitionPriorRV.constraint_component`).

    params, data : the component's kernel records; alloc : ``alloc(n)`` returns
    statistics for n empty slots.
    """

    def __init__(self, params, data, alloc):
        self.params = params
        self.data = data
        self.alloc = alloc


class PartitionPrior(pm.Discrete):
    """Base class of partition-prior distributions (adds the label-invariant summaries).

    A model variable is *one* partition of n items: its hyperparameters named in
    ``scalar_args`` must be scalars, and ``size``, ``shape`` and ``dims`` may only
    describe the one item axis (a vector of hyperparameters or a ``size`` would
    make a batch of partitions, which no partition step samples; ``.dist`` still
    draws batches forward). An ``initval`` of labels is checked like ``initvals``
    of ``pm.sample`` (length n, integer labels in [0, n), in the prior's support).
    """

    #: Arguments of ``dist`` that must be scalars for a model variable.
    scalar_args: tuple = ()

    def __new__(cls, name, *args, summaries=True, **kwargs):
        # A model with a partition needs our steps registered and PyMC patched, even
        # when the user imported submodules only (the package imports its API lazily).
        load_api()

        owner = f"{cls.__name__} '{name}'"
        _check_one_partition(cls, owner, args, kwargs)
        initval = kwargs.pop("initval", None)
        rv = super().__new__(cls, name, *args, **kwargs)
        if initval is not None and not isinstance(initval, str):
            where = f"{owner}: 'initval'"
            labels = validate_labels(initval, partition_size(rv), where)
            rv.owner.op.check_support(labels, rv.owner, where)
            pm.modelcontext(None).set_initval(rv, labels)
        elif initval is not None:
            pm.modelcontext(None).set_initval(rv, initval)
        if summaries:
            for stat, expr in partition_summaries(rv).items():
                pm.Deterministic(f"{name}_{stat}", expr)
        return rv


def _check_one_partition(cls, owner, args, kwargs):
    """Refuse arguments that would make a model variable a batch of partitions."""
    import inspect

    try:
        bound = inspect.signature(cls.dist).bind_partial(*args, **kwargs).arguments
    except TypeError as err:
        raise TypeError(f"{owner}: {err}") from None
    fix = (
        f"A partition variable is one partition of n items; for several partitions create "
        f"several variables (forward draws of a batch: pmp.{cls.__name__}.dist)."
    )
    for arg in cls.scalar_args:
        value = bound.get(arg)
        if value is None or isinstance(value, str):
            continue
        try:
            ndim = np.ndim(getattr(value, "values", value)) if not hasattr(value, "type") \
                else value.type.ndim
        except (TypeError, ValueError):  # ragged and other bad values: dist names them
            continue
        if ndim != 0:
            raise ValueError(f"{owner}: '{arg}' must be a scalar, got {ndim} dimensions. {fix}")
    extra = kwargs.get("kwargs", {})
    size = kwargs.get("size", extra.get("size"))
    if size is not None and np.size(size) != 0:
        raise ValueError(f"{owner}: 'size' is not supported (got {size!r}). {fix}")
    shape = kwargs.get("shape")
    if shape is not None and np.ndim(shape) == 1 and len(shape) != 1:
        raise ValueError(
            f"{owner}: 'shape' must be (n,), the one item axis; got {tuple(shape)!r}. {fix}"
        )
    n = constant_value(bound["n"]) if bound.get("n") is not None else None
    if shape is not None and n is not None and np.ndim(shape) == 1 and n.ndim == 0 \
            and shape[0] is not None and int(shape[0]) != int(n):
        raise ValueError(f"{owner}: 'shape' {tuple(shape)!r} does not match n = {int(n)}; "
                         f"pass shape=(n,) or leave it out.")
    dims = kwargs.get("dims")
    if dims is not None and not isinstance(dims, str) and len(dims) != 1:
        raise ValueError(
            f"{owner}: 'dims' must name the one item axis, got {tuple(dims)!r}. {fix}"
        )


class CRPRV(PartitionPriorRV):
    """Random partition of n items under the Chinese restaurant process."""

    name = "crp"
    signature = "(),()->(n)"
    _print_name = ("CRP", "\\operatorname{CRP}")
    hyper_names = ("alpha",)

    def kernel_prior_params(self, values, n):
        return crp_kernel.make_params(float(values[0]), n)

    def log_prior_from_sizes(self, values, sizes, n):
        """Ewens (:func:`ewens_log_prior`); -inf unless alpha is positive and finite."""
        alpha = float(values[0])
        if not (np.isfinite(alpha) and alpha > 0):
            return -np.inf
        return ewens_log_prior(alpha, sizes, n)

    def predictive_log_weights(self, values, sizes):
        """CRP prediction rule: log n_k / (n + alpha) for block k, log alpha / (n + alpha)
        for a new block (Neal 2000 eq. 3.7; Nguyen et al. 2022, App. M)."""
        alpha = float(np.asarray(values[0]))
        sizes = np.asarray(sizes, dtype=np.float64)
        log_w = np.log(np.append(sizes, alpha))
        return log_w - np.log(sizes.sum() + alpha)

    def _supp_shape_from_params(self, dist_params, param_shapes=None):
        n = dist_params[1]
        return (n if n.ndim == 0 else n.flatten()[0],)

    @classmethod
    def rng_fn(cls, rng, alpha, n, size):
        alpha = np.asarray(alpha, dtype=np.float64)
        return batched_draws(lambda n, a: crp_draw(rng, float(a), n), n, size, alpha)


crp = CRPRV()


def batched_draws(draw, n, size, *params):
    """Partitions for a batch of parameter values: int64, shape ``batch + (n,)``.

    ``batch`` is ``size`` or, without it, the broadcast shape of ``params``; entry
    ``idx`` is ``draw(n, *(p[idx] for p in params))``, the params broadcast to the
    batch, drawn in C order. ``n`` may come broadcast with the params; one value is
    used. Shared by the ``rng_fn`` of every partition prior.
    """
    n = int(np.asarray(n).ravel()[0])
    batch = tuple(size) if size is not None else np.broadcast_shapes(*map(np.shape, params))
    params = [np.broadcast_to(p, batch) for p in params]
    out = np.empty(batch + (n,), dtype=np.int64)
    for idx in np.ndindex(*batch):
        out[idx] = draw(n, *[p[idx] for p in params])
    return out


def crp_draw(rng, alpha, n):
    """One CRP partition, exactly, in O(n) NumPy: the Blackwell-MacQueen urn.

    Item i (0-based) opens a new block with probability alpha / (i + alpha); otherwise
    it copies the block of an earlier item chosen uniformly, which puts it in block k
    with probability (i / (i + alpha)) (n_k / i) = n_k / (i + alpha), the sequential
    seating rule (Neal 2000, eq. 3.7). Labels come out canonical. See
    :func:`urn_labels` for how the copies are resolved."""
    i = np.arange(n, dtype=np.float64)
    new = rng.random(n) * (i + alpha) < alpha
    new[0] = True
    parent = np.minimum((rng.random(n) * i).astype(np.int64), np.arange(n) - 1)
    return urn_labels(new, parent)


def urn_labels(new, parent, block=None):
    """Canonical labels of an urn scheme: item i opens block K_i (the number of blocks
    among items 0..i-1) where ``new[i]``; else, where ``block`` is given and
    ``block[i] >= 0``, it joins block ``block[i]`` (< K_i); else it copies the label of
    item ``parent[i] < i``. Copies are resolved by pointer jumping (log of the longest
    chain of copies rounds of O(n) gathers)."""
    n = new.shape[0]
    label = np.where(new, np.cumsum(new) - 1, -1)
    if block is not None:
        label = np.where(~new & (block >= 0), block, label)
    fixed = label >= 0
    ptr = np.where(fixed, np.arange(n), parent)
    while True:
        nxt = ptr[ptr]
        if np.array_equal(nxt, ptr):
            break
        ptr = nxt
    return label[ptr].astype(np.int64)


def ewens_log_prior(alpha, sizes, n):
    r"""The Ewens log probability from block sizes, in Python floats:
    :math:`K \log\alpha + \log\Gamma(\alpha) - \log\Gamma(\alpha + n) + \sum_k
    \log\Gamma(n_k)` (the Ewens distribution, DESIGN §4; ``sizes`` (K,) the block
    sizes, integer-valued, alpha > 0).

    CPython's ``math.lgamma`` of each size, summed by Python's ``sum`` in block order:
    the arithmetic MallowsGibbs' ``log_joint`` always used, so its recorded
    statistics stay bit for bit. The lgamma values come from a table by size (built
    once per n), so a call costs O(K) look-ups and one Python sum (~2 µs at K = 50)."""
    terms = _lgamma_by_size(int(n))[np.asarray(sizes, dtype=np.int64)].tolist()
    return (len(terms) * math.log(alpha) + math.lgamma(alpha) - math.lgamma(alpha + n)
            + float(sum(terms)))


@functools.lru_cache(maxsize=16)
def _lgamma_by_size(n):
    """(n + 1,) float64: ``math.lgamma(m)`` for m = 1..n (entry 0 unused, 0.0)."""
    return np.array([0.0] + [math.lgamma(m) for m in range(1, n + 1)])


def ewens_logp(labels, alpha, n):
    r"""Ewens log probability of the partition the labels encode.

    .. math:: K \log\alpha + \log\Gamma(\alpha) - \log\Gamma(\alpha+n) + \sum_k \log\Gamma(n_k)

    Labels are read as a partition: any relabelling has the same value. Labels
    outside [0, n) give -inf.
    """
    n_items = labels.shape[-1]
    sizes = block_sizes(pt.clip(labels, 0, n_items - 1), n_items)
    occupied = sizes > 0
    n_blocks = pt.sum(occupied)
    logp = (
        n_blocks * pt.log(alpha)
        + pt.gammaln(alpha)
        - pt.gammaln(alpha + n_items)
        + pt.sum(pt.switch(occupied, pt.gammaln(pt.switch(occupied, sizes, 1.0)), 0.0))
    )
    valid = labels_in_range(labels, n_items) & pt.eq(n_items, n)
    return pt.switch(valid, logp, -np.inf)


class CRP(PartitionPrior):
    r"""Chinese restaurant process: a random partition of ``n`` items.

    .. math::

        p(z \mid \alpha) = \alpha^K \frac{\Gamma(\alpha)}{\Gamma(\alpha+n)}
        \prod_{k=1}^{K} \Gamma(n_k)

    (the Ewens distribution; Neal 2000 eq. 3.7 gives its sequential form).

    Parameters
    ----------
    alpha : tensor_like of float
        Concentration, > 0. May be a random variable (e.g. ``pm.Gamma``):
        ``pm.sample`` updates it with :class:`~pymc_partitions.EscobarWest` (a Gamma
        prior) or :class:`~pymc_partitions.HyperSlice`, or NUTS when other terms read
        it (the log probability is differentiable in alpha).
    n : int
        Number of items (a constant).
    summaries : bool, default True
        Add the label-invariant summaries ``{name}_n_clusters``,
        ``{name}_largest_cluster_frac`` and ``{name}_entropy`` as Deterministics.

    Notes
    -----
    The value is an int64 vector of canonical labels (label 0 for item 0's block,
    new labels in order of first appearance); forward draws (``pm.draw``,
    ``pm.sample_prior_predictive``) use sequential seating, vectorised as an urn
    (O(n) NumPy: 10^6 items in well under a second), and are canonical. The
    log probability accepts any labels in [0, n) and evaluates the partition they
    encode. ``support_point`` is the one-block partition: every chain starts there
    unless ``pm.sample(initvals=...)`` gives starts or ``initval="prior"`` asks for a
    draw from the prior per chain (seeded by ``random_seed``). The one-block start was
    measured not to trap :class:`pymc_partitions.Gibbs`; NUTS divergences of the
    hyperparameters come from p(alpha, sigma | z, y) changing with z, not from the
    start (README, "Starting partitions and divergences"). ``pm.sample`` samples a
    CRP with :class:`pymc_partitions.Gibbs` unless told otherwise.

    Examples
    --------
    >>> import pymc as pm, pymc_partitions as pmp
    >>> with pm.Model():
    ...     alpha = pm.Gamma("alpha", 1.0, 1.0)
    ...     z = pmp.CRP("z", alpha=alpha, n=10)
    """

    rv_op = crp
    scalar_args = ("alpha",)

    @classmethod
    def dist(cls, alpha, n, **kwargs):
        owner = "CRP"
        n_value = constant_integer("n", n, owner, minimum=1)
        alpha = hyper_input("alpha", alpha, owner, positive=True)
        if constant_value(alpha) is not None:
            alpha = pt.as_tensor_variable(np.asarray(constant_value(alpha), dtype=np.float64))
        return super().dist([alpha, pt.constant(n_value, dtype="int64")], **kwargs)

    def support_point(rv, size, alpha, n):
        return start_value(size, pt.zeros((scalar_n(n),), dtype="int64"), alpha)

    def logp(value, alpha, n):
        logp = ewens_logp(value, alpha, n)
        return check_parameters(logp, alpha > 0, msg="alpha > 0")
