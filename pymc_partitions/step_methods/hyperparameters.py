r"""Hyperparameter steps at the speed of the partition: ``pmp.EscobarWest`` and ``pmp.HyperSlice``.

A continuous variable theta whose only children in the model are partition priors
and collapsed likelihoods has the full conditional

.. math::

    p(\theta \mid z, y, \ldots) \propto p(\theta \mid \mathrm{parents})
    \prod_{\text{priors } z} p(z \mid \theta)
    \prod_{\text{likelihoods}} \prod_k p(y_k \mid \theta),

where each partition prior needs only the block sizes (O(K)) and each collapsed
likelihood the blocks' sufficient statistics (O(K D), :mod:`..kernels.hyperparameters`).
Both steps update theta from this conditional exactly, without a gradient, in
microseconds, where NUTS would evaluate the likelihood's PyTensor graph over all N
rows many times per iteration.

**Assignment.** ``pm.sample()`` assigns these steps by itself (their
``competence`` is IDEAL) to a continuous free variable when every term of the
model that reads it is a free partition's prior or a collapsed likelihood (through
any deterministic expression: ``alpha = pm.math.exp(log_alpha)`` is read by the
CRP as a function of ``log_alpha``). Any other term (a Normal likelihood, another
variable's prior, a Potential) leaves the variable to NUTS; ``step=`` chooses
explicitly either way, and a step given a variable it cannot update exactly
refuses it with a :class:`~pymc_partitions.PartitionModelError`.

**Which step.** :class:`EscobarWest` for a CRP concentration with a ``pm.Gamma``
prior of constant parameters read by that CRP alone (the auxiliary-variable Gibbs
update of Escobar & West 1995, §6); :class:`HyperSlice` for everything else
(Neal 2003's univariate slice sampler on the exact conditional, on the variable's
unconstrained value scale).

**The statistics.** Each :class:`HyperSlice` instance keeps its own kernel state per
likelihood it reads, rebuilt from the partition's labels when they changed since
the step's last iteration: O(N D) once per iteration (one ``add`` per item, ~0.1 µs
each), against O(N K D) per Gibbs sweep; then every evaluation of the conditional is
O(K D) (for the Normal, ~35 µs at N = 300, 3000 and 30000 alike, K = 5, D = 2; the
load ~0.1, 0.5 and 5 ms, about one sweep's item loop without the K predictive
terms; ``examples/benchmark_hyperparameters.py``). Sharing the partition step's
kernel state instead would save that load but couple two step objects that PyMC
creates, pickles (``cores>1``) and reuses across chains (PyMC 6) independently, and
PyMC runs the compound step's members in an order the user may change: the rebuild
keeps each step correct on its own.
"""

import math

import numpy as np
import pytensor
import pytensor.tensor as pt
from pymc.exceptions import NotConstantValueError
from pymc.model import Model
from pymc.pytensorf import constant_fold
from pymc.step_methods.compound import BlockedStep, Competence
from pytensor.tensor.random.basic import GammaRV

from pymc_partitions.step_methods.assignment import assigning_model
from pymc_partitions.versions import ChainSetup, ancestors, small_function_mode
from pymc_partitions.distributions.collapsed import CollapsedLikelihoodRV
from pymc_partitions.distributions.partition import CRPRV, PartitionPriorRV, partition_size
from pymc_partitions.distributions.statistics import compact_labels
from pymc_partitions.distributions.validation import integer_arg
from pymc_partitions.kernels import assign_labels, new_state
from pymc_partitions.kernels.hyperparameters import log_likelihood_total
from pymc_partitions.step_methods.base import step_arguments
from pymc_partitions.step_methods.target import (
    PartitionModelError,
    PartitionTarget,
    fast_validity,
)

# --------------------------------------------------------------------------------------
# Reading the model
# --------------------------------------------------------------------------------------


def _is_partition(rv):
    return rv.owner is not None and isinstance(rv.owner.op, PartitionPriorRV)


def _is_collapsed(rv):
    return rv.owner is not None and isinstance(rv.owner.op, CollapsedLikelihoodRV)


def reads(rv, graphs, model):
    """Whether the log density of a term with inputs ``graphs`` reads ``rv``: ``rv`` is
    an ancestor of ``graphs`` without passing through another random variable
    (another variable's value stands in its place in the model's log density)."""
    blockers = [v for v in model.free_RVs + model.observed_RVs if v is not rv]
    return any(a is rv for a in ancestors(list(graphs), blockers=blockers))


def hyper_children(model, rv):
    """``(partitions, likelihoods, others)``: the terms of ``model`` whose log
    density reads the free variable ``rv`` (other than its own prior term), split
    into free partition priors, observed collapsed likelihoods on a free partition,
    and everything else (names, for messages; potentials included)."""
    partitions, likelihoods, others = [], [], []
    free = set(model.free_RVs)
    for other in model.free_RVs + model.observed_RVs:
        if other is rv or not reads(rv, other.owner.inputs, model):
            continue
        if _is_partition(other) and other in free:
            partitions.append(other)
        elif _is_collapsed(other) and other not in free and \
                other.owner.op.dist_params(other.owner)[0] in free:
            likelihoods.append(other)
        else:
            others.append(other.name)
    for pot in model.potentials:
        if reads(rv, [pot], model):
            others.append(f"Potential '{pot.name}'")
    return partitions, likelihoods, others


def unsupported_reason(model, rv):
    """None if a hyperparameter step can update ``rv`` exactly, else why not (a
    sentence for error messages)."""
    if rv not in model.free_RVs:
        return f"'{rv.name}' is not a free random variable of the model"
    if rv.dtype not in ("float64", "float32"):
        return f"'{rv.name}' is not continuous (dtype {rv.dtype})"
    partitions, likelihoods, others = hyper_children(model, rv)
    if others:
        return (f"'{rv.name}' is also read by {', '.join(repr(o) for o in others)}, which a "
                f"hyperparameter step does not evaluate (only partition priors and collapsed "
                f"likelihoods); leave it to NUTS")
    if not partitions and not likelihoods:
        return f"no partition prior or collapsed likelihood reads '{rv.name}'"
    return None


def _strip(var):
    """``var`` without the casts and no-op views PyTensor wraps around an input."""
    from pytensor.scalar.basic import Cast, Identity
    from pytensor.tensor.elemwise import DimShuffle, Elemwise

    while var.owner is not None:
        op = var.owner.op
        if isinstance(op, Elemwise) and isinstance(op.scalar_op, Cast | Identity) or isinstance(op, DimShuffle) and var.ndim == var.owner.inputs[0].ndim:
            var = var.owner.inputs[0]
        else:
            break
    return var


def gamma_prior_of_concentration(model, rv):
    """``(a, b, crp)`` when ``rv ~ pm.Gamma(a, b)`` (shape a, rate b, constants) is
    a scalar read by one CRP alone as its concentration (Escobar & West's setting),
    else None."""
    if rv.owner is None or type(rv.owner.op) is not GammaRV or rv.ndim != 0:
        return None
    try:  # pm.Gamma(alpha, beta) holds (shape, 1 / beta)
        a, scale = (np.asarray(v, dtype=np.float64)
                    for v in constant_fold(rv.owner.op.dist_params(rv.owner)))
    except NotConstantValueError:
        return None
    if a.ndim != 0 or scale.ndim != 0:
        return None
    partitions, likelihoods, others = hyper_children(model, rv)
    if others or likelihoods or len(partitions) != 1:
        return None
    crp = partitions[0]
    if not isinstance(crp.owner.op, CRPRV) or _strip(crp.owner.op.dist_params(crp.owner)[0]) \
            is not rv:
        return None
    a, b = float(a), 1.0 / float(scale)
    if not (np.isfinite(a) and np.isfinite(b) and a > 0 and b > 0):
        return None
    return a, b, crp


def _model_of_competence():
    model = assigning_model()
    return model if isinstance(model, Model) else None


# --------------------------------------------------------------------------------------
# Partition priors' log probability from block sizes
# --------------------------------------------------------------------------------------


def prior_log_density(op, values, sizes, n):
    """log p(z | hyperparameter ``values``) of a partition with block sizes ``sizes``
    ((K,) float64) under the partition prior ``op``; -inf outside the support. The
    prior's own evaluation (``op.log_prior_from_sizes``: a closed form in block sizes
    where the prior has one, else its numba ``log_prior``)."""
    return op.log_prior_from_sizes(values, sizes, n)


def kernel_prior_log_density(op, values, sizes, n):
    """:func:`prior_log_density` through the prior's numba ``log_prior`` (any
    partition prior; builds its kernel params, e.g. the MFM's O(n kmax) table)."""
    return PartitionPriorRV.log_prior_from_sizes(op, values, sizes, n)


# --------------------------------------------------------------------------------------
# One partition's terms of the conditional
# --------------------------------------------------------------------------------------


class _PartitionTerms:
    """The terms of one partition (its prior, its collapsed likelihoods) that read
    some of the step's variables, evaluated from block sizes and statistics.

    ``target`` reads the model once (:class:`PartitionTarget`: one compiled
    function from the model's value variables to every hyperparameter of the
    partition's prior and likelihoods). Per iteration, :meth:`load` reads the
    partition from the point; :meth:`log_density` evaluates the terms reading a
    variable at given inputs of the compiled function.
    """

    def __init__(self, model, z_rv, rvs, step_name, compile_kwargs):
        # Likelihoods with explicit block parameters are listed, not refused: their
        # op's hyper_params are none of the model's variables (checked in
        # unsupported_reason: a variable they read is not ours), so no term of theirs is
        # evaluated here.
        self.target = target = PartitionTarget(model, model.rvs_to_values[z_rv], step_name,
                                               compile_kwargs, accept_explicit=True)
        self.name = target.name
        self.n = target.n
        prior_exprs = target.prior_op.dist_params(z_rv.owner)[:-1]
        #: Every hyperparameter expression of the partition, in the order of
        #: ``target``'s compiled function (prior's, then each likelihood's).
        self.exprs = list(prior_exprs) + [e for lik in target.likelihoods
                                          for e in lik.owner.op.hyper_params(lik.owner)]
        # Names of the value variables (what the point holds) of the step's variables
        # that the prior and each likelihood read.
        self.prior_reads = {model.rvs_to_values[rv].name for rv in rvs
                            if reads(rv, prior_exprs, model)}
        self.lik_reads = []  # per likelihood: names of our variables it reads
        first = 0 if target.constraint is None else 1
        # (position of its values, count, op, index of its data in target.data, name):
        # the data are read from the target at each load, which refresh_data updates
        # after pm.set_data.
        self._lik = []
        pos = target.n_prior_hypers
        for i, (lik, count) in enumerate(zip(target.likelihoods, target.hyper_counts)):
            names = {model.rvs_to_values[rv].name for rv in rvs
                     if reads(rv, lik.owner.op.hyper_params(lik.owner), model)}
            self.lik_reads.append(names)
            self._lik.append((pos, count, lik.owner.op, first + i, lik.name))
            pos += count
        self._valid = [_validity_check(op, f"'{name}'") for _, _, op, _, name in self._lik]
        self._fast = [_blocks_likelihood(op) for _, _, op, _, _ in self._lik]
        self.input_names = target.input_names
        self.start_chain()

    def reads_var(self, name):
        return name in self.prior_reads or any(name in r for r in self.lik_reads)

    def start_chain(self):
        self.target.refresh_data()  # pm.set_data between runs
        self._labels = None
        self._sizes = None
        self._states = [None] * len(self._lik)
        self._stats_template = [None] * len(self._lik)  # empty statistics, per chain

    def inputs(self, point):
        """The compiled function's inputs at ``point`` (a list, in its order)."""
        return [point[name] for name in self.input_names]

    def values(self, inputs):
        return [np.asarray(v, dtype=np.float64) for v in self.target._hyper_fn(*inputs)]

    def load(self, point, inputs):
        """Read the partition at ``point``; rebuild sizes and statistics if it changed."""
        labels = point[self.name]
        if self._labels is not None and np.array_equal(labels, self._labels):
            return
        labels = np.asarray(labels)
        if labels.dtype != np.int64 or labels.shape != (self.n,) or labels.min() < 0 \
                or labels.max() >= self.n:
            labels = self.target.validate_labels(labels)  # raises, naming the variable
        _, idx, self._sizes = compact_labels(labels, self.n)
        self._largest = int(self._sizes.max())
        values = None
        for j, (pos, count, op, where, _) in enumerate(self._lik):
            if not self.lik_reads[j]:
                continue
            data = self.target.data[where]
            if self._fast[j] is not None:
                # The K blocks' statistics as plain arrays: O(N D) NumPy, once.
                self._states[j] = self._fast[j][0](idx, self._sizes, data)
                continue
            if values is None:
                values = self.values(inputs)
            vals = values[pos:pos + count]
            state = new_state(self.n)
            if self._stats_template[j] is None:
                params = op.kernel_params(vals, self._largest)
                self._stats_template[j] = op.alloc_stats(self.n, data, params)
            # Fresh statistics: a copy of the empty template (cheaper than allocating).
            stats = type(self._stats_template[j])(*[
                f.copy() if isinstance(f, np.ndarray) else f for f in self._stats_template[j]])
            assign_labels(state, op.kernel_params(vals, self._largest), stats, data, labels)
            self._states[j] = (state, stats)
        self._labels = labels.copy()

    def log_density(self, name, values):
        """Sum of the terms reading variable ``name`` at the hyperparameter
        ``values`` (float64 arrays, in the order of :attr:`exprs`)."""
        target = self.target
        acc = 0.0
        if name in self.prior_reads:
            acc += prior_log_density(target.prior_op, values[: target.n_prior_hypers],
                                     self._sizes, self.n)
            if not acc > -np.inf:
                return -np.inf
        for j, (pos, count, op, _, lik_name) in enumerate(self._lik):
            if name not in self.lik_reads[j]:
                continue
            vals = values[pos:pos + count]
            fast = self._fast[j]
            if fast is not None:  # checks the support itself
                acc += fast[1](vals, self._states[j])
                continue
            state, stats = self._states[j]
            if not self._valid[j](vals):
                return -np.inf
            try:
                # Tables by block size up to the largest block suffice for the
                # active slots' refresh and log marginals (and cost less than n's).
                params = op.kernel_params(vals, self._largest)
            except (ValueError, FloatingPointError, np.linalg.LinAlgError):
                return -np.inf
            acc += float(log_likelihood_total(state, params, stats))
        return -np.inf if math.isnan(acc) else acc  # NaN: outside the support


def _blocks_likelihood(op):
    """``(statistics, log_likelihood)``: the optional fast path of the likelihood's
    component module (``blocks_statistics(idx, sizes, data)`` once per partition,
    ``blocks_log_likelihood(values, statistics)`` per evaluation, checking the
    support itself; :mod:`pymc_partitions.kernels.hyperparameters`), used when the
    module provides both and the op passes its values to the kernels unchanged; None
    otherwise (kernel state, ``kernel_params`` in Python, ``log_likelihood_total``)."""
    if type(op).kernel_params is not CollapsedLikelihoodRV.kernel_params:
        return None
    statistics = getattr(op.kernel, "blocks_statistics", None)
    log_likelihood = getattr(op.kernel, "blocks_log_likelihood", None)
    if statistics is None or log_likelihood is None:
        return None
    return statistics, log_likelihood


def _validity_check(op, name):
    """A function ``values -> bool``: whether the likelihood ``op`` accepts these
    hyperparameter values (:func:`~.target.fast_validity`, else the op's own
    ``check_hyper_values``, False when it raises)."""
    fast = fast_validity(op, CollapsedLikelihoodRV,
                         [h in op.positive for h in op.hyper_names])

    def valid(values):
        if fast(values):
            return True
        try:
            op.check_hyper_values(values, name)
        except ValueError:
            return False
        return True

    return valid


# --------------------------------------------------------------------------------------
# The steps
# --------------------------------------------------------------------------------------


class HyperparameterStep(ChainSetup, BlockedStep):
    """Shared construction of the hyperparameter steps: argument checks, which
    variables, the model terms that read them."""

    default_blocked = True
    stats_dtypes_shapes = {}

    def __new__(cls, *args, **kwargs):
        vars = kwargs["vars"] if "vars" in kwargs else (args[0] if args else None)
        if isinstance(vars, list | tuple) and not vars:
            raise ValueError(f"{cls.__name__}: 'vars' is empty; pass the hyperparameters, "
                             f"e.g. [alpha].")
        return super().__new__(cls, *args, **kwargs)

    def __init__(self, vars, *, model=None, blocked=True, rng=None, initial_point=None,
                 compile_kwargs=None):
        model, value_vars = step_arguments(type(self).__name__, vars, model, rng, "[alpha]")
        self.model = model
        self.vars = value_vars
        self.rvs = [model.values_to_rvs[v] for v in value_vars]
        for rv in self.rvs:
            self.check_var(model, rv)
        self._initial_rng = rng  # subclasses call self.set_rng(rng) once built

    def check_var(self, model, rv):
        """Raise a :class:`PartitionModelError` if this step cannot update ``rv`` exactly."""
        reason = unsupported_reason(model, rv)
        if reason is not None:
            raise PartitionModelError(
                f"{type(self).__name__}: 'vars': {reason}. Its conditional would miss those "
                f"terms; sample it with NUTS (pm.NUTS([{rv.name}]) or leave it to pm.sample)."
            )

    def start_chain(self, rng):
        self.tune = True

    def reset_tuning(self):
        self.tune = True


class EscobarWest(HyperparameterStep):
    r"""Gibbs update of a CRP concentration with a Gamma prior (Escobar & West 1995).

    Escobar & West (1995), *Bayesian density estimation and inference using
    mixtures* (JASA 90(430)), §6: with :math:`\alpha \sim \mathrm{Gamma}(a, b)`
    (shape a, rate b) and a partition of n items into K blocks, the CRP depends on
    alpha through :math:`\alpha^K \Gamma(\alpha)/\Gamma(\alpha+n)`; drawing

    .. math::

        \eta \mid \alpha \sim \mathrm{Beta}(\alpha + 1, n), \qquad
        \alpha \mid \eta, K \sim \pi_\eta\, \mathrm{Gamma}(a + K, b - \log\eta)
        + (1 - \pi_\eta)\, \mathrm{Gamma}(a + K - 1, b - \log\eta),

    with :math:`\pi_\eta / (1 - \pi_\eta) = (a + K - 1) / (n (b - \log\eta))`, is a
    Gibbs update of (eta, alpha) whose alpha-marginal leaves p(alpha | z) invariant:
    an exact draw given eta, O(1) after counting the blocks (O(n)).

    ``pm.sample()`` assigns it to a scalar ``alpha ~ pm.Gamma(a, b)`` with constant
    a, b whose only child is one ``pmp.CRP`` reading it directly as its
    concentration; any other prior or use of alpha goes to :class:`HyperSlice` (or
    NUTS). The new value is written in the variable's value space (``alpha_log__``
    by default) through its transform.

    Parameters
    ----------
    vars : list
        The concentration variable(s).
    model, rng, initial_point, compile_kwargs, blocked
        As for PyMC's own steps.
    """

    name = "escobar_west"

    def __init__(self, vars, **kwargs):
        super().__init__(vars, **kwargs)
        self._settings = []
        mode = small_function_mode() or None
        for value_var, rv in zip(self.vars, self.rvs):
            a, b, crp = gamma_prior_of_concentration(self.model, rv)
            # alpha <-> its value (alpha_log__ by default) through the transform.
            transform = self.model.rvs_to_transforms.get(rv)
            x = pt.dscalar("x")
            if transform is None:
                forward, backward = x, x
            else:
                forward = transform.forward(x, *rv.owner.inputs)
                backward = transform.backward(x, *rv.owner.inputs)
            forward = pytensor.function([x], pt.cast(forward, value_var.dtype), mode=mode)
            backward = pytensor.function([x], pt.cast(backward, "float64"), mode=mode)
            self._settings.append((value_var.name, self.model.rvs_to_values[crp].name, a, b,
                                   partition_size(crp), forward, backward))
        self.set_rng(self._initial_rng)

    def check_var(self, model, rv):
        if gamma_prior_of_concentration(model, rv) is None:
            raise PartitionModelError(
                f"EscobarWest: 'vars': '{rv.name}' must be a scalar pm.Gamma(a, b) with constant "
                f"a and b whose only child is one pmp.CRP reading it as its concentration "
                f"(Escobar & West's setting). Use pmp.HyperSlice([{rv.name}]) for any other prior "
                f"or use."
            )

    @staticmethod
    def competence(var, has_grad=None):
        model = _model_of_competence()
        if model is None or var not in model.free_RVs:
            return Competence.INCOMPATIBLE
        if gamma_prior_of_concentration(model, var) is not None:
            return Competence.IDEAL
        return Competence.INCOMPATIBLE

    def draw(self, alpha, K, n, a, b):
        """One Escobar-West update of ``alpha`` given K blocks of n items."""
        rng = self.rng
        eta = rng.beta(alpha + 1.0, n)
        rate = b - math.log(eta)
        odds = (a + K - 1.0) / (n * rate)
        shape = a + K if rng.random() * (1.0 + odds) < odds else a + K - 1.0
        return rng.gamma(shape, 1.0 / rate)

    def step(self, point):
        new_point = dict(point)
        for value_name, z_name, a, b, n, forward, backward in self._settings:
            labels = np.asarray(point[z_name])
            K = int(np.count_nonzero(np.bincount(labels, minlength=1)))
            alpha = float(backward(np.asarray(point[value_name], dtype=np.float64)))
            new_point[value_name] = np.asarray(forward(np.float64(self.draw(alpha, K, n, a, b))))
        return new_point, [{}]


class HyperSlice(HyperparameterStep):
    r"""Slice sampling of hyperparameters read only by partition priors and collapsed
    likelihoods, from block sizes and sufficient statistics.

    Neal (2003), *Slice sampling* (Annals of Statistics 31(3)), §4: univariate slice
    sampling with the stepping-out procedure (Fig. 3, at most ``max_steps``
    intervals of width w) and shrinkage (Fig. 5), applied to each scalar element
    of each variable in turn, on the variable's value scale (PyMC's unconstrained
    transform, e.g. ``log(sigma)``). The target of each update is the exact full
    conditional: the variable's prior term from the model (any PyMC prior,
    compiled once with its transform's Jacobian) plus every partition prior (from
    block sizes: O(K)) and collapsed likelihood (the blocks' log marginals from
    their sufficient statistics: O(K D)) that reads it. Suitable for the CRP
    concentration under any prior, Pitman-Yor's alpha and d, the MFM's gamma, and
    likelihood hyperparameters (sigma, tau, mu0 of the Normal family; a, b of
    Beta-Bernoulli and Poisson-Gamma; concentrations, ...).

    Why univariate slice sampling: no gradient, no tuning needed for exactness,
    a handful of O(K D) evaluations per variable, and robust to the conditionals'
    changing scale as the partition moves (which made NUTS's single adapted step
    size diverge). The width w of each scalar starts at ``w`` and, during tuning
    only, follows 3 times the running standard deviation of its draws; it is fixed
    afterwards, so the draws after tuning are an exact Markov chain.

    Parameters
    ----------
    vars : list
        The hyperparameters (continuous free variables; one instance updates all).
    w : float, default 1.0
        Initial slice width on the value scale.
    max_steps : int, default 20
        Stepping-out limit m (Neal 2003, Fig. 3): the slice interval is at most m w.
    model, rng, initial_point, compile_kwargs, blocked
        As for PyMC's own steps.

    Sampler statistics
    ------------------
    slice_evals : int, log-density evaluations this iteration (over all variables).

    Cost per variable: about 4 to 8 evaluations, each O(K) for a partition prior
    and O(K D) for a diagonal collapsed likelihood, plus one O(N D) rebuild of the
    statistics per iteration when the partition changed.
    """

    name = "hyper_slice"
    stats_dtypes_shapes = {"slice_evals": (np.int64, [])}

    def __init__(self, vars, w=1.0, max_steps=20, **kwargs):
        self.w0 = _positive_float("w", w, "HyperSlice")
        self.max_steps = integer_arg("max_steps", max_steps, "HyperSlice", minimum=1)
        compile_kwargs = kwargs.get("compile_kwargs")
        super().__init__(vars, **kwargs)
        model = self.model
        partitions = []
        for rv in self.rvs:
            p, liks, _ = hyper_children(model, rv)
            for z in p + [lik.owner.op.dist_params(lik.owner)[0] for lik in liks]:
                if not any(z is q for q in partitions):
                    partitions.append(z)
        self._terms = [_PartitionTerms(model, z, self.rvs, "HyperSlice", compile_kwargs)
                       for z in partitions]
        # One function per variable: its prior term (in value space, with the
        # transform's Jacobian) and the hyperparameter values of every partition
        # whose terms read it; one call per evaluation of the conditional.
        ckw = dict(compile_kwargs or {})
        ckw.setdefault("on_unused_input", "ignore")
        if small_function_mode() is not None:
            ckw.setdefault("mode", small_function_mode())
        self._conditionals = {}
        for value_var, rv in zip(self.vars, self.rvs):
            terms = [t for t in self._terms if t.reads_var(value_var.name)]
            outs = [model.logp(vars=[rv], jacobian=True, sum=True)]
            outs += model.replace_rvs_by_values([e for t in terms for e in t.exprs])
            outs = [pt.cast(o, "float64") for o in outs]
            needed = set(ancestors(outs))
            inputs = [v for v in model.value_vars if v in needed]
            fn = model.compile_fn(outs, inputs=inputs, point_fn=False, **ckw)
            fn.trust_input = True
            slices, pos = [], 1
            for t in terms:
                slices.append((t, pos, pos + len(t.exprs)))
                pos += len(t.exprs)
            self._conditionals[value_var.name] = (fn, [v.name for v in inputs], slices)
        self.set_rng(self._initial_rng)

    @staticmethod
    def competence(var, has_grad=None):
        model = _model_of_competence()
        if model is None or unsupported_reason(model, var) is not None:
            return Competence.INCOMPATIBLE
        if gamma_prior_of_concentration(model, var) is not None:
            return Competence.COMPATIBLE  # EscobarWest's
        return Competence.IDEAL

    def start_chain(self, rng):
        super().start_chain(rng)
        for terms in self._terms:
            terms.start_chain()
        # Per-chain adaptation of the widths (Welford over tuning draws), per element.
        self._width = {}
        self._moments = {}

    def log_conditional(self, values, name):
        """log p(variable ``name`` | the rest) up to a constant, at ``values``
        (dict of the current value arrays)."""
        fn, names, slices = self._conditionals[name]
        outs = fn(*[values[n] for n in names])
        acc = float(outs[0])
        if not acc > -np.inf:
            return -np.inf
        for terms, start, stop in slices:
            acc += terms.log_density(name, outs[start:stop])
            if not acc > -np.inf:
                return -np.inf
        return acc

    def step(self, point):
        values = dict(point)
        for terms in self._terms:
            terms.load(point, terms.inputs(point))
        evals = 0
        for var in self.vars:
            name = var.name
            current = np.array(values[name], dtype=var.dtype, copy=True)
            flat = current.reshape(-1)
            widths = self._width.setdefault(name, np.full(flat.shape[0], self.w0))
            for e in range(flat.shape[0]):
                def logf(x, e=e, flat=flat, name=name, shape=current.shape):
                    trial = flat.copy()
                    trial[e] = x
                    values[name] = trial.reshape(shape)
                    return self.log_conditional(values, name)

                values[name] = flat.reshape(current.shape)
                f0 = self.log_conditional(values, name)
                if not np.isfinite(f0):
                    raise ValueError(
                        f"HyperSlice: the conditional log density of '{name}' is {f0} at its "
                        f"current value {flat[e]!r}; the starting point lies outside the "
                        f"support. Check initvals and the hyperparameters' priors."
                    )
                x1, n_evals = slice_update(logf, float(flat[e]), f0, widths[e], self.max_steps,
                                           self.rng)
                evals += n_evals + 1
                flat = flat.copy()
                flat[e] = x1
                if self.tune:
                    self._adapt(name, e, x1, widths)
            values[name] = flat.reshape(current.shape)
        new_point = dict(point)
        for var in self.vars:
            new_point[var.name] = values[var.name]
        return new_point, [{"slice_evals": evals}]

    def _adapt(self, name, e, x, widths):
        """Tuning only: width = 3 x the running sd of the element's draws (Welford)."""
        m = self._moments.setdefault(name, np.zeros((widths.shape[0], 3)))
        m[e, 0] += 1.0
        delta = x - m[e, 1]
        m[e, 1] += delta / m[e, 0]
        m[e, 2] += delta * (x - m[e, 1])
        if m[e, 0] >= 10:
            sd = math.sqrt(m[e, 2] / (m[e, 0] - 1.0))
            widths[e] = max(3.0 * sd, 1e-6)


def slice_update(logf, x0, f0, w, max_steps, rng):
    """One univariate slice-sampling update (Neal 2003, Figs. 3 and 5).

    logf : log density up to a constant; x0, f0 : current point and logf(x0)
    (finite); w : interval width; max_steps : stepping-out limit m.
    Returns ``(x1, number of logf evaluations)``.
    """
    y = f0 - rng.exponential()  # log of a uniform height under f(x0)
    left = x0 - w * rng.random()
    right = left + w
    j = math.floor(max_steps * rng.random())
    k = max_steps - 1 - j
    evals = 0
    while j > 0:
        evals += 1
        if not logf(left) > y:
            break
        left -= w
        j -= 1
    while k > 0:
        evals += 1
        if not logf(right) > y:
            break
        right += w
        k -= 1
    while True:
        x1 = left + rng.random() * (right - left)
        evals += 1
        if logf(x1) > y:
            return x1, evals
        if x1 < x0:
            left = x1
        else:
            right = x1
        if right - left <= 1e-12 * (1.0 + abs(x0)):
            # Only a discontinuous density at x0 gets here; x0 is in the slice.
            return x0, evals


def _positive_float(name, value, owner):
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | float | np.number):
        raise TypeError(f"{owner}: '{name}' must be a positive number, got {value!r}.")
    value = float(value)
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"{owner}: '{name}' must be a positive finite number, got {value!r}.")
    return value


__all__ = [
    "EscobarWest",
    "HyperSlice",
    "HyperparameterStep",
    "gamma_prior_of_concentration",
    "hyper_children",
    "kernel_prior_log_density",
    "prior_log_density",
    "slice_update",
    "unsupported_reason",
]
