"""Everything that differs between the supported stacks lives here (DESIGN §4),
and everything the plugin changes in PyMC or PyTensor at import: one table, :data:`PATCHES`.

Stack differences
-----------------
- PyMC 5 gives a step its chain's generator with ``set_rng(rng)``; PyMC 6 with
  ``setup_chain(rng, tune, draws)`` and may reuse one instance for several chains.
  :class:`ChainSetup` answers both and calls ``self.start_chain(rng)``, where steps
  create their per-chain state (never in ``__init__``: with ``cores=1`` PyMC
  shallow-copies steps between chains, so anything made there is shared).
- ``pm.sample`` returns ``arviz.InferenceData`` (ArviZ < 1) or ``xarray.DataTree``
  (ArviZ >= 1): :func:`posterior_dataset` reads the posterior from either.
- ``ancestors`` moved from ``pytensor.graph.basic`` to ``pytensor.graph.traversal``.
- PyMC's progress bars live in ``pymc.progress_bar`` in PyMC 5.28 and 6.x
  (``pymc.util`` before): :func:`simple_progress` finds them.
- PyTensor 3 compiles with its numba linker by default; small per-iteration
  functions (the hyperparameter reader) call 3x faster through the C virtual
  machine, so :func:`small_function_mode` asks for it where it exists.

Changes made at import (:data:`PATCHES`, installed by :func:`install_patches`)
------------------------------------------------------------------------------
================== ============================================= ==========================
entry              what changes                                  public extension point?
================== ============================================= ==========================
step_methods       our steps appended to                         yes: the documented
                   ``pymc.step_methods.STEP_METHODS``            registration (append,
                                                                 never rebind)
convergence_checks ``pymc.sampling.mcmc.run_convergence_checks`` none: PyMC checks every
                   wrapped: R-hat/ESS on label-invariant         free variable and has no
                   summaries instead of raw partition labels;    hook to choose them, nor
                   first our steps' checks of the finished run   one after sampling
                   (ARM chains that never had background)
initval_checks     ``pymc.sampling.mcmc.make_initial_point_fns_  none: no hook sees the
                   per_chain`` wrapped: partition ``initvals``   per-chain ``initvals``
                   checked before PyMC builds starting points    before the first draw
                                                                 (steps see chain 0 only)
object_mode_       Python warnings filter for PyTensor's         Python's warnings filter;
warnings           "Numba will use object mode" notice, for our  PyTensor has no per-op
                   ops only                                      switch
step_assignment_   ``pymc.sampling.mcmc.assign_step_methods``    none: the step classes are
checks             wrapped: a partition given to a step that is  PyMC's or the user's, so
                   not a partition step (``pm.Metropolis``...)   nothing of ours runs when
                   is refused with the reason and the fix; the   one gets a partition; and
                   model is made visible to ``competence``       ``competence`` sees only
                   (:func:`assigning_model`)                     the variable
log_likelihood     ``pymc.stats.log_density.compute_log_         none: PyMC evaluates each
                   likelihood`` wrapped (and the names           observed variable's own
                   ``pm.compute_log_likelihood``, ``pymc.stats.  elementwise logp, one
                   compute_log_likelihood``): pointwise leave-   joint term for a collapsed
                   one-out terms for collapsed likelihoods       likelihood
sample_checks      ``pymc.sampling.mcmc.sample`` wrapped (and    none: PyMC reads
                   ``pm.sample``): ``idata_kwargs=               ``idata_kwargs`` only
                   {"log_likelihood": ...}`` asking for a        after the last draw
                   GeneralizedMallows term is refused before
                   the first draw (``pm.compute_log_likelihood``
                   refuses it with the same message); a
                   warning when the stored partition labels
                   would need too much memory
                   (:mod:`.trace_size`)
gradient_logp      ``Model.logp_dlogp_function`` wrapped: an     none: PyMC's gradient
                   observed term whose log density cannot be     steps compile the whole
                   evaluated (an op's ``logp_unavailable``:      model's log density and
                   GeneralizedMallows above 7 items) and that    have no hook to leave a
                   does not depend on the step's variables is    term out
                   left out, with a warning
population_worker_ ``pymc.sampling.population.``                 none: PyMC's worker logs
errors             ``PopulationStepper`` subclassed: with        the exception and exits;
                   worker processes, an exception in a chain's   the main process sees
                   step is sent back and raised in the main      only ``EOFError``
                   process with the chain and its traceback
================== ============================================= ==========================

The partition's default start is *not* a patch: it is the priors' ``support_point``
(:mod:`.distributions.partition`), overridden through PyMC's own ``initvals`` /
``initval``.

Each entry names why it exists, the PyMC/PyTensor functions it relies on
(``relies_on``) and, per reviewed version, a fingerprint of each of them
(signature and a hash of the source). ``tests/test_compat.py`` fails when the
running version is not recorded or a fingerprint differs, naming the function and
what to re-check. Public entries (documented mechanisms) are tested by behaviour.

**Adding a hook** is one entry. For a wrapper::

    def _my_wrapper(original):
        def replacement(*args, **kwargs):
            ...  # our part, then
            return original(*args, **kwargs)
        return replacement

    PATCHES.append(Patch(
        name="my_hook",
        why="what it changes and why no public extension point does it",
        wrap=_my_wrapper,
        targets=("pymc.some.module:function",       # the first one gives the original
                 "pymc.other.module:function"),     # every name PyMC calls it by
        relies_on=("pymc.some.module:function",     # the wrapped function and every
                   "pymc.other.module:caller"),     # caller that looks it up by name
    ))

(a non-wrapping change gives ``install=`` instead of ``wrap=``/``targets=``). Then
run ``python -c "from pymc_partitions import compat; compat.print_fingerprints()"``
on each supported stack and paste what it prints into the entry's ``fingerprints``;
the tests pick the entry up by themselves. The replacement gets ``__wrapped__`` (PyMC's function) and
``__pmp_patch__`` (the entry's name); installing twice wraps once.
"""

import contextvars
import hashlib
import importlib
import inspect
import re
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace

import pymc
from pymc.util import get_random_generator

try:  # PyTensor >= 2.3x
    from pytensor.graph.traversal import ancestors  # noqa: F401
except ImportError:  # pragma: no cover
    from pytensor.graph.basic import ancestors  # noqa: F401


def small_function_mode():
    """Compilation mode for small functions called once per iteration.

    Measured on this project's hyperparameter reader: PyTensor 3 default (numba
    linker) ~15 us per call, ``"CVM"`` ~5 us; PyTensor 2 default is already the C VM.
    """
    import pytensor

    if int(pytensor.__version__.split(".")[0]) >= 3:
        return "CVM"
    return None


def simple_progress(progressbar=True):
    """PyMC's simple progress bar (``with bar: task = bar.add_task(description,
    completed=0, total=n); bar.advance(task, k)``): ``pymc.progress_bar.
    create_simple_progress`` (PyMC 5.28, 6.x; rich in a terminal or Jupyter, marimo's in
    marimo), else ``pymc.util.CustomProgress`` (older PyMC 5), whose rich progress
    has the same methods. ``progressbar=False``: a bar that shows nothing."""
    try:
        from pymc.progress_bar import create_simple_progress
    except ImportError:  # pragma: no cover - older PyMC 5
        from pymc.util import CustomProgress

        return CustomProgress(disable=not progressbar)
    return create_simple_progress(progressbar=bool(progressbar))


class ChainSetup:
    """Mixin: per-chain set-up for both PyMC 5 (``set_rng``) and PyMC 6 (``setup_chain``)."""

    def set_rng(self, rng):
        self.rng = get_random_generator(rng, copy=False)
        self.start_chain(self.rng)

    def setup_chain(self, rng, tune, draws):
        self.rng = get_random_generator(rng, copy=False)
        self.start_chain(self.rng)

    def start_chain(self, rng):  # pragma: no cover - overridden
        """Create the per-chain state. Called once per chain before its first step."""


def posterior_dataset(idata):
    """The posterior group of a ``pm.sample`` result as an ``xarray.Dataset``."""
    post = idata["posterior"]
    return post.to_dataset() if hasattr(post, "to_dataset") else post


def add_posterior_variables(idata, variables):
    """Add ``xarray.DataArray`` variables (dims starting with chain, draw) to the
    posterior group of an ``InferenceData`` or ``DataTree``, in place."""
    post = idata["posterior"]
    for name, value in variables.items():
        post[name] = value
    return idata


def _partition_rvs(model):
    from pymc_partitions.distributions.partition import PartitionPriorRV

    return [
        rv
        for rv in model.free_RVs
        if rv.owner is not None and isinstance(rv.owner.op, PartitionPriorRV)
    ]


def check_partition_initvals(model, overrides):
    """Validate the starting partitions of ``pm.sample``: the ``initvals`` overrides
    (a dict, or a list/tuple of dicts or None, one per chain; keys the variable,
    its value variable or its name) and the model's own initial values
    (``initval=`` / ``model.set_initval``) of partitions no override replaces.
    Length, integer labels, range and the prior's support are checked; other forms
    of ``initvals`` (e.g. a list of label arrays) get a TypeError saying which
    form PyMC accepts."""
    from pymc_partitions.distributions.partition import partition_size, validate_labels

    partitions = _partition_rvs(model)
    if not partitions:
        return
    if overrides is None or isinstance(overrides, dict):
        per_chain = [overrides]
    elif isinstance(overrides, list | tuple) and all(
        o is None or isinstance(o, dict) for o in overrides
    ):
        per_chain = list(overrides)
    else:
        name = partitions[0].name
        raise TypeError(
            f"initvals must be a dict {{variable name: value}} for all chains, or a list of "
            f"such dicts (one per chain); got {type(overrides).__name__} "
            f"{_short_repr(overrides)}. For partition '{name}': "
            f"initvals=[{{'{name}': labels_0}}, {{'{name}': labels_1}}, ...]."
        )

    def check(rv, value, where):
        labels = validate_labels(value, partition_size(rv), where)
        rv.owner.op.check_support(labels, rv.owner, where)

    for rv in partitions:
        keys = (rv, model.rvs_to_values[rv], rv.name)
        for chain, override in enumerate(per_chain):
            found = [value for key, value in (override or {}).items() if _is_key(key, keys)]
            chain_txt = f" for chain {chain}" if len(per_chain) > 1 else ""
            for value in found:
                if value is not None and not isinstance(value, str):
                    check(rv, value, f"initvals['{rv.name}']{chain_txt}")
            if not found:
                value = model.rvs_to_initial_values.get(rv)
                if value is not None and not isinstance(value, str) and hasattr(value, "shape") \
                        and not hasattr(value, "owner"):
                    check(rv, value, f"The initial value of '{rv.name}' (initval= or "
                                     f"model.set_initval)")


def _is_key(key, keys):
    return any(key is k for k in keys[:2]) or (isinstance(key, str) and key == keys[2])


def _short_repr(value, limit=60):
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def group_dataset(idata, name):
    """Group ``name`` of an ``InferenceData`` / ``DataTree`` as an ``xarray.Dataset``."""
    group = idata[name]
    return group.to_dataset() if hasattr(group, "to_dataset") else group


def add_group(idata, name, dataset):
    """Add (or replace) group ``name`` holding ``dataset`` in place; returns ``idata``.

    ArviZ < 1: ``InferenceData.add_groups``; ArviZ >= 1: a child node of the ``DataTree``.
    """
    if hasattr(idata, "add_groups"):
        if name in idata.groups():
            delattr(idata, name)
        idata.add_groups({name: dataset})
    else:
        import xarray as xr

        idata[name] = xr.DataTree(dataset)
    return idata


# --------------------------------------------------------------------------------------
# Changes made at import: the table (see the module docstring)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Patch:
    """One change the plugin makes to PyMC or PyTensor at import (an entry of :data:`PATCHES`).

    name : short id, used in messages and as the replacement's ``__pmp_patch__``.
    why : what changes and why no public extension point does it.
    wrap : ``original -> replacement`` for a function replaced by a wrapper, bound at
        every ``targets`` name ("module:attribute"; the first gives the original).
    install : for an entry that is not a wrapper, the function making the change
        (idempotent).
    relies_on : "module:qualname" of the functions whose code the entry relies on.
    package : the distribution whose version keys ``fingerprints``.
    fingerprints : ``{"major.minor" or exact version: {relies_on name: (signature,
        source hash) for the patched function, source hash for the others}}``, as
        printed by :func:`print_fingerprints`; the versions reviewed for this entry.
    public : the change goes through a documented mechanism (tested by behaviour, no
        fingerprints).
    """

    name: str
    why: str
    wrap: Callable | None = None
    targets: tuple = ()
    install: Callable | None = None
    relies_on: tuple = ()
    package: str = "pymc"
    fingerprints: dict = field(default_factory=dict)
    public: bool = False


def _resolve(dotted):
    """``"package.module:attr.sub"`` -> the object (importing the module)."""
    module, _, qualname = dotted.partition(":")
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _signature_text(func):
    """The signature without annotations (stable across typing-only edits)."""
    sig = inspect.signature(func)
    params = [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()]
    return str(sig.replace(parameters=params, return_annotation=inspect.Signature.empty))


def fingerprint(dotted):
    """``(signature, sha256 of the source [:16])`` of the function named ``dotted``."""
    func = inspect.unwrap(_resolve(dotted), stop=lambda f: not hasattr(f, "__pmp_patch__"))
    source = inspect.getsource(func)
    return _signature_text(func), hashlib.sha256(source.encode()).hexdigest()[:16]


def package_version(package):
    return importlib.import_module(package).__version__


def recorded_fingerprints(patch):
    """The fingerprints recorded for the running version (exact, then major.minor), or None."""
    version = package_version(patch.package)
    minor = ".".join(version.split(".")[:2])
    return patch.fingerprints.get(version, patch.fingerprints.get(minor))


def _install_wrapper(patch):
    module_name, _, attr = patch.targets[0].partition(":")
    current = getattr(importlib.import_module(module_name), attr, None)
    if current is None:
        warnings.warn(
            f"pymc_partitions: {patch.targets[0]} not found in {patch.package} "
            f"{package_version(patch.package)}; '{patch.name}' is not installed ({patch.why})",
            RuntimeWarning,
            stacklevel=3,
        )
        return
    original = current.__wrapped__ if getattr(current, "__pmp_patch__", None) == patch.name else current
    replacement = patch.wrap(original)
    replacement.__wrapped__ = original
    replacement.__pmp_patch__ = patch.name
    for target in patch.targets:
        module_name, _, attr = target.partition(":")
        module = importlib.import_module(module_name)
        bound = getattr(module, attr, None)
        if bound is original or getattr(bound, "__pmp_patch__", None) == patch.name:
            setattr(module, attr, replacement)


def install_patches(names=None):
    """Install the entries of :data:`PATCHES` (all, or those named); idempotent."""
    for patch in PATCHES:
        if names is None or patch.name in names:
            if patch.wrap is not None:
                _install_wrapper(patch)
            else:
                patch.install()


# --- step_methods: the documented registration -------------------------------------------


def register_step_methods(classes):
    """Append our step classes to PyMC's registry (append, never rebind: PyMC
    holds references to the list object)."""
    registry = pymc.step_methods.STEP_METHODS
    for cls in classes:
        if cls not in registry:
            registry.append(cls)


def _register_our_steps():
    from pymc_partitions.step_methods import EscobarWest, Gibbs, HyperSlice, MallowsGibbs

    # EscobarWest before HyperSlice: both are IDEAL for a CRP concentration with a
    # Gamma prior, and PyMC keeps the first of equally competent steps. MallowsGibbs
    # is IDEAL exactly for a partition observed by a GeneralizedMallows, where Gibbs
    # declares itself INCOMPATIBLE.
    register_step_methods([Gibbs, MallowsGibbs, EscobarWest, HyperSlice])


# --- convergence_checks ------------------------------------------------------------------


def _convergence_checks_wrapper(original):
    def run_convergence_checks(idata, model):
        """PyMC's convergence checks with each partition variable replaced by its
        label-invariant summaries (``{z}_n_clusters``, ``{z}_largest_cluster_frac``,
        ``{z}_entropy``); models without partitions go through PyMC's function
        unchanged. See :func:`install_convergence_checks`."""
        partitions = _partition_rvs(model)
        if not partitions:
            return original(idata, model)
        _partition_sampler_checks(idata, model)
        names = {rv.name for rv in partitions}
        summaries = [
            det
            for det in model.deterministics
            if any(det.name.startswith(f"{p}_") for p in names)
        ]
        kept = [rv for rv in model.free_RVs if rv.name not in names] + summaries
        view = SimpleNamespace(free_RVs=kept, deterministics=model.deterministics)
        return original(idata, view)

    return run_convergence_checks


def _partition_sampler_checks(idata, model):
    """Our steps' own checks of a finished ``pm.sample`` run (they warn, never raise),
    in PyMC's main process whatever ``cores``: ARM chains that never had background
    information (:func:`pymc_partitions.step_methods.arm.warn_chains_without_background`)."""
    from pymc_partitions.step_methods.arm import warn_chains_without_background

    warn_chains_without_background(idata, model)


def install_convergence_checks():
    """Make ``pm.sample``'s convergence checks label-invariant for partition variables.

    PyMC computes R-hat and ESS on every free variable in the posterior. For a
    partition, the labels of one item are not a meaningful scalar across draws
    (label switching; canonical labels jump when a block splits), so those checks
    raise false alarms. The wrapper runs PyMC's own checks with each partition
    variable replaced by its label-invariant summaries: the warnings a user sees are
    about quantities whose R-hat means something.
    """
    install_patches(["convergence_checks"])


# --- initval_checks ----------------------------------------------------------------------


def _initval_checks_wrapper(original):
    signature = inspect.signature(original)

    def make_initial_point_fns_per_chain(*args, **kwargs):
        """PyMC's function, after :func:`check_partition_initvals` on the overrides."""
        bound = signature.bind_partial(*args, **kwargs).arguments
        model, overrides = bound.get("model"), bound.get("overrides")
        if model is not None:  # also the model's own initval= of partitions
            check_partition_initvals(model, overrides)
        return original(*args, **kwargs)

    return make_initial_point_fns_per_chain


def install_initval_checks():
    """Check ``initvals`` of partition variables before PyMC builds starting points,
    so a wrong length or an out-of-range label gets an error that names the variable
    (PyMC's own would be a PyTensor type mismatch)."""
    install_patches(["initval_checks"])


# --- object_mode_warnings ----------------------------------------------------------------


def quiet_object_mode_warnings(op_names):
    """Silence PyTensor's object-mode notice for the named random-variable ops."""
    pattern = "|".join(re.escape(name) for name in op_names)
    warnings.filterwarnings(
        "ignore",
        message=rf"Numba will use object mode to run ({pattern})\{{",
        category=UserWarning,
    )


def our_random_variable_names():
    """``{op.name}_rv`` of every random-variable op defined in :mod:`pymc_partitions.distributions`
    (how PyTensor prints them), found from the loaded modules so a new one needs no list."""
    from pytensor.tensor.random.op import RandomVariable

    names = set()
    for module_name, module in list(sys.modules.items()):
        if module_name.startswith("pymc_partitions.distributions") and module is not None:
            for value in vars(module).values():
                if isinstance(value, RandomVariable):
                    names.add(f"{value.name}_rv")
    return sorted(names)


def _quiet_our_object_mode_warnings():
    quiet_object_mode_warnings(our_random_variable_names())


# --- numba_block_statistics: native numba code for the statistics ops ------------------


def _register_numba_block_statistics():
    """Give PyTensor's numba backend a native implementation of every
    :class:`~pymc_partitions.distributions.statistics.BlockStatistics` op (the functions
    ``kernels.statistics.<op>_op``), through the backend's documented dispatcher.

    Without it the backend runs the op's Python ``perform`` in object mode, and a graph
    holding an object-mode op gets no cache key: every model's logp and gradient were
    compiled anew by numba, about 1-3.6 s per model on PyMC 6. The salt added to the
    op's default cache key is a hash of the kernels' source, so an edit there is never
    served a stale compiled graph.
    """
    from pytensor.link.numba.dispatch.basic import register_funcify_default_op_cache_key

    from pymc_partitions.distributions.statistics import BlockStatistics
    from pymc_partitions.kernels import statistics as kernels

    salt = int(hashlib.sha256(inspect.getsource(kernels).encode()).hexdigest()[:12], 16)

    @register_funcify_default_op_cache_key(BlockStatistics)
    def numba_funcify_block_statistics(op, node=None, **kwargs):
        return getattr(kernels, op.native), salt


# --- step_assignment_checks: refuse non-partition steps on partitions ------------------


def _flat_steps(steps):
    for step in steps:
        if hasattr(step, "methods"):  # CompoundStep
            yield from _flat_steps(step.methods)
        else:
            yield step


def check_partition_steps(model, provided_steps, selected_steps):
    """Refuse any step that is not a partition step but would update a partition.

    ``provided_steps``: the step instances the user passed (inside a
    ``CompoundStep`` too); ``selected_steps``: ``{step class: value variables}`` of
    PyMC's automatic assignment. PyMC's own steps (``pm.Metropolis``,
    ``pm.BinaryGibbsMetropolis``, ...) move the labels as an integer vector: they
    target p(labels) = p(partition) over label vectors, which weights a partition
    with K blocks by its n!/(n-K)! labellings (a wrong posterior), and most of their
    proposals leave [0, n) or the prior's support (the chain may never move). All
    without a word, so this is an error, not a warning: a
    :class:`pymc_partitions.PartitionModelError` naming the variable, the step and
    the fix (``pmp.Gibbs`` / ``pmp.SplitMerge``).
    """
    from pymc_partitions.step_methods.base import PartitionStep
    from pymc_partitions.step_methods.target import PartitionModelError

    partitions = {model.rvs_to_values[rv]: rv.name for rv in _partition_rvs(model)}
    if not partitions:
        return
    assigned = [(type(step).__name__, type(step), step.vars) for step in
                _flat_steps(provided_steps)]
    assigned += [(f"{cls.__name__} (assigned automatically)", cls, vars)
                 for cls, vars in selected_steps.items()]
    for label, cls, vars in assigned:
        if isinstance(cls, type) and issubclass(cls, PartitionStep):
            continue
        names = [partitions[v] for v in vars if v in partitions]
        if names:
            first = names[0]
            raise PartitionModelError(
                f"Partition variable(s) {names} are assigned to the step {label}, which does not "
                f"sample partitions: it moves the labels as an integer vector, so it targets the "
                f"wrong distribution (a partition with K blocks has n!/(n-K)! label vectors, "
                f"each given the partition's probability) and mostly proposes invalid labels "
                f"(the chain may never move). "
                f"Use a partition step: step=[pmp.Gibbs([{first}]), ...] or "
                f"pmp.SplitMerge([{first}]), and give the step only the other variables "
                f"(or leave them out of step= and let pm.sample assign them)."
            )


def _step_assignment_wrapper(original):
    """Check ``pm.sample``'s step assignment: no partition variable may go to a step
    that is not a partition step (:func:`check_partition_steps`).

    ``pm.sample`` calls ``assign_step_methods`` once with the user's ``step=``; it
    returns the provided steps and the automatically selected ones, and the check
    runs on that result (before any step is compiled or any draw is made).
    """
    signature = inspect.signature(original)

    def assign_step_methods(*args, **kwargs):
        model = signature.bind_partial(*args, **kwargs).arguments["model"]
        token = _ASSIGNING_MODEL.set(model)
        try:
            provided, selected = original(*args, **kwargs)
        finally:
            _ASSIGNING_MODEL.reset(token)
        check_partition_steps(model, provided, selected)
        return provided, selected

    return assign_step_methods


#: The model whose variables ``assign_step_methods`` is assigning (set by the
#: wrapper around it): PyMC calls a step class's ``competence(var, has_grad)`` with
#: the random variable alone, but whether a hyperparameter step is exact depends on
#: which other terms of the model read the variable.
_ASSIGNING_MODEL = contextvars.ContextVar("pmp_assigning_model", default=None)


def assigning_model():
    """The model ``pm.sample`` is assigning step methods for (inside a step class's
    ``competence``), else the model in context, else None."""
    model = _ASSIGNING_MODEL.get()
    if model is not None:
        return model
    try:
        return pymc.modelcontext(None)
    except TypeError:
        return None


def install_step_assignment_checks():
    """Install the ``step_assignment_checks`` entry of :data:`PATCHES` (idempotent)."""
    install_patches(["step_assignment_checks"])


# --- log_likelihood: pointwise leave-one-out terms ---------------------------------------


def _log_likelihood_wrapper(original):
    """``pm.compute_log_likelihood`` (and so ``pm.sample(idata_kwargs={"log_likelihood":
    True})``) with pointwise leave-one-out terms for collapsed likelihoods.

    PyMC evaluates each observed variable's elementwise log density; a collapsed
    likelihood's is one joint term per draw, with which ``az.loo`` / ``az.compare``
    run without a warning and mean nothing. The replacement hands the collapsed
    likelihoods to :func:`pymc_partitions.analysis.loo.pymc_compute_log_likelihood`
    and every other observed variable to PyMC's function. Same signature on PyMC 5
    and 6 (keyword-only after ``idata``; PyMC 6 adds ``backend``, passed through).
    """

    def compute_log_likelihood(idata, **kwargs):
        from pymc_partitions.analysis.loo import pymc_compute_log_likelihood

        return pymc_compute_log_likelihood(original, idata, **kwargs)

    compute_log_likelihood.__doc__ = original.__doc__
    return compute_log_likelihood


def install_log_likelihood():
    """Install the ``log_likelihood`` entry of :data:`PATCHES` (idempotent)."""
    install_patches(["log_likelihood"])


# --- sample_checks: refusals that would otherwise come after the last draw -------------


def _sample_checks_wrapper(original):
    """``pm.sample`` after the checks of its arguments that PyMC only acts on once
    every draw is made: ``idata_kwargs={"log_likelihood": ...}`` asking for the
    log-likelihood of a GeneralizedMallows
    (:func:`pymc_partitions.analysis.loo.check_log_likelihood_request`), which
    ``pm.compute_log_likelihood`` refuses, is refused before the first draw; and
    partitions whose stored labels would need more memory than is sensible get a
    warning with the size and the remedies
    (:func:`pymc_partitions.trace_size.check_trace_size`)."""
    signature = inspect.signature(original)

    def sample(*args, **kwargs):
        bound = signature.bind_partial(*args, **kwargs).arguments
        idata_kwargs = bound.get("idata_kwargs")
        requested = idata_kwargs.get("log_likelihood", False) if isinstance(
            idata_kwargs, dict) else False
        if requested is not False and requested is not None:
            from pymc_partitions.analysis.loo import check_log_likelihood_request

            model = pymc.modelcontext(bound.get("model"))
            check_log_likelihood_request(model, None if requested is True else requested)
        if bound.get("trace") is None:  # PyMC's NumPy trace: say what storing costs
            from pymc_partitions.trace_size import check_trace_size

            defaults = signature.parameters
            get = lambda key: bound.get(key, defaults[key].default)  # noqa: E731
            try:
                model = pymc.modelcontext(bound.get("model"))
            except TypeError:  # no model: PyMC's own error follows
                return original(*args, **kwargs)
            check_trace_size(
                model, draws=get("draws"), tune=get("tune"),
                chains=get("chains"), cores=get("cores"), var_names=get("var_names"),
                discard_tuned_samples=get("discard_tuned_samples"),
            )  # fmt: skip
        return original(*args, **kwargs)

    sample.__doc__ = original.__doc__
    sample.__name__ = original.__name__
    sample.__qualname__ = original.__qualname__
    sample.__module__ = original.__module__
    return sample


# --- population_worker_errors: exceptions from population workers -----------------------


class WorkerFailure:
    """An exception raised by a chain's step in a population worker process, sent to
    the main process in place of the chain's update (:func:`_population_stepper_wrapper`).

    Pickles the exception (or, if it cannot be pickled, its type name and message)
    with the worker's formatted traceback."""

    def __init__(self, chain, exception):
        import traceback

        self.chain = chain
        self.exception = exception
        self.traceback = "".join(traceback.format_exception(exception))

    def __getstate__(self):
        import pickle

        state = dict(self.__dict__)
        try:
            state["exception"] = pickle.dumps(self.exception)
        except Exception:  # noqa: BLE001 - whatever fails to pickle travels as text
            state["exception"] = None
            state["description"] = f"{type(self.exception).__name__}: {self.exception}"
        return state

    def __setstate__(self, state):
        import pickle

        description = state.pop("description", None)
        self.__dict__.update(state)
        self.received = True
        if isinstance(self.exception, bytes):
            try:
                self.exception = pickle.loads(self.exception)
            except Exception:  # noqa: BLE001 - e.g. a class the main process cannot import
                self.exception, description = None, description or "an unpicklable exception"
        if self.exception is None:
            self.exception = RuntimeError(description)

    def reraise(self):
        exc = self.exception
        if self.__dict__.get("received"):  # came through the pipe: say where it was raised
            exc.add_note(
                f"(raised by the step of chain {self.chain} in its population worker process; "
                f"the worker's traceback:)\n{self.traceback}"
            )
        raise exc


class _GuardedStep:
    """``stepper.step`` that returns a :class:`WorkerFailure` instead of raising.
    Calls the class's ``step`` (the instance attribute is this guard)."""

    def __init__(self, stepper, chain):
        self.stepper, self.chain = stepper, chain

    def __call__(self, point):
        try:
            return type(self.stepper).step(self.stepper, point)
        except Exception as err:  # noqa: BLE001 - every exception goes back to the caller
            return WorkerFailure(self.chain, err)


def _population_stepper_wrapper(original):
    class PopulationStepper(original):
        """PyMC's ``PopulationStepper``; with worker processes, an exception in a
        chain's step is sent back and raised in the main process (PyMC's worker logs
        it and exits, and the main process sees only ``EOFError``)."""

        def __init__(self, steppers, parallelize, *args, **kwargs):
            if parallelize:
                for c, stepper in enumerate(steppers):
                    stepper.step = _GuardedStep(stepper, c)
            super().__init__(steppers, parallelize, *args, **kwargs)

        def step(self, tune_stop, population):
            updates = super().step(tune_stop, population)
            for update in updates:
                if isinstance(update, WorkerFailure):
                    update.reraise()
            return updates

    PopulationStepper.__qualname__ = original.__qualname__
    PopulationStepper.__module__ = original.__module__
    return PopulationStepper


def install_population_worker_errors():
    """Install the ``population_worker_errors`` entry of :data:`PATCHES` (idempotent)."""
    install_patches(["population_worker_errors"])



# --- gradient_logp -----------------------------------------------------------------------


def _model_class():
    """The class defining ``logp_dlogp_function``: ``BaseModel`` (PyMC 6), ``Model`` (PyMC 5)."""
    from pymc.model import core

    return getattr(core, "BaseModel", core.Model)


def unavailable_logp_terms(model, grad_vars=None):
    """``[(observed variable, reason)]``: the observed variables whose op says its log
    density cannot be evaluated (``op.logp_unavailable(node)`` returns a reason) and
    whose inputs do not depend on ``grad_vars`` (value variables or their random
    variables; None: every continuous free variable)."""
    if grad_vars is None:
        moved = [v for v in model.free_RVs if v.dtype.startswith("float")]
    else:
        moved = [model.values_to_rvs.get(v, v) for v in grad_vars]
    found = []
    for rv in model.observed_RVs:
        op = getattr(rv.owner, "op", None)
        reason = op.logp_unavailable(rv.owner) if hasattr(op, "logp_unavailable") else None
        if reason is None or any(rv is f for f, _ in found):
            continue
        # a random variable among the inputs stands for its value: stop there
        depends = set(ancestors(rv.owner.inputs, blockers=list(model.basic_RVs)))
        if not any(m in depends for m in moved):
            found.append((rv, reason))
    return found


def _gradient_logp_wrapper(original):
    def logp_dlogp_function(self, grad_vars=None, tempered=False, *args, **kwargs):
        """PyMC's function; terms whose log density cannot be evaluated and that do not
        depend on ``grad_vars`` are left out (:func:`install_gradient_logp`)."""
        dropped = [] if tempered else unavailable_logp_terms(self, grad_vars)
        if not dropped:
            return original(self, grad_vars, tempered, *args, **kwargs)
        # Model.logp adds the potentials only when vars is None: name them, or every
        # pm.Potential would be dropped with the unavailable terms.
        keep = [rv for rv in self.basic_RVs if not any(rv is d for d, _ in dropped)]
        keep += list(self.potentials)
        moved = [self.values_to_rvs.get(v, v).name
                 for v in (grad_vars or self.continuous_value_vars)]
        warnings.warn(
            f"pymc_partitions: the gradient step on {moved} uses the model's log density "
            f"without {[d.name for d, _ in dropped]} ({'; '.join(r for _, r in dropped)}). "
            f"Those terms do not depend on the variables it moves, so its draws are those of "
            f"the full model; its 'lp' and 'energy' statistics leave them out.",
            UserWarning,
            stacklevel=3,
        )
        full_logp = self.logp

        def logp(vars=None, jacobian=True, sum=True):
            return full_logp(vars=keep if vars is None else vars, jacobian=jacobian, sum=sum)

        self.__dict__["logp"] = logp  # shadows the method for this call only
        try:
            return original(self, grad_vars, tempered, *args, **kwargs)
        finally:
            del self.__dict__["logp"]

    return logp_dlogp_function


def install_gradient_logp():
    """Let NUTS (any gradient step) sample variables of a model one of whose observed
    terms has a log density that cannot be evaluated but does not depend on them (the
    CRP concentration of a GeneralizedMallows model with n > 7 items): the step's log
    density leaves that term out, which changes no acceptance (the term is constant
    along the step's trajectories)."""
    cls = _model_class()
    current = cls.logp_dlogp_function
    if getattr(current, "__pmp_patch__", None) == "gradient_logp":
        return
    replacement = _gradient_logp_wrapper(current)
    replacement.__wrapped__ = current
    replacement.__pmp_patch__ = "gradient_logp"
    cls.logp_dlogp_function = replacement

PATCHES = [
    Patch(
        name="numba_block_statistics",
        why=(
            "The collapsed likelihoods' statistics ops get native numba implementations "
            "(PyTensor's numba backend, PyMC 6's default, would otherwise run their Python "
            "perform in object mode and recompile every model's graph)."
        ),
        install=_register_numba_block_statistics,
        package="pytensor",
        public=True,
    ),
    Patch(
        name="step_methods",
        why="pm.sample assigns partition variables to pmp.Gibbs (DESIGN §4).",
        install=_register_our_steps,
        public=True,
    ),
    Patch(
        name="convergence_checks",
        why=(
            "R-hat/ESS on raw partition labels are false alarms (label switching); the "
            "wrapper hands PyMC's checks a model view whose free_RVs are the other free "
            "variables plus the label-invariant summaries; before them our steps' own "
            "checks of the finished run (ARM chains without background information). "
            "Re-check that the wrapped function reads only model.free_RVs and "
            "model.deterministics, and that _sample_return calls it by the module-level "
            "name after sampling."
        ),
        wrap=_convergence_checks_wrapper,
        targets=("pymc.sampling.mcmc:run_convergence_checks",),
        relies_on=(
            "pymc.stats.convergence:run_convergence_checks",
            "pymc.sampling.mcmc:_sample_return",
        ),
        fingerprints={
            "5.28": {
                "pymc.stats.convergence:run_convergence_checks": (
                    "(idata, model)", "33f326d08dfabeb3"),
                "pymc.sampling.mcmc:_sample_return": "44573f06c6a755aa",
            },
            "6.4": {
                "pymc.stats.convergence:run_convergence_checks": (
                    "(idata, model)", "ebdbb7d4c93ab61b"),
                "pymc.sampling.mcmc:_sample_return": "636bbc93162fee48",
            },
        },
    ),
    Patch(
        name="initval_checks",
        why=(
            "initvals of a partition get an error naming the variable, the chain and what "
            "is allowed before PyMC builds starting points. Re-check the keywords model= "
            "and overrides= (a dict or one per chain) and that sample and _init_jitter "
            "call it by the module-level name."
        ),
        wrap=_initval_checks_wrapper,
        targets=("pymc.sampling.mcmc:make_initial_point_fns_per_chain",),
        relies_on=(
            "pymc.initial_point:make_initial_point_fns_per_chain",
            "pymc.sampling.mcmc:sample",
            "pymc.sampling.mcmc:_init_jitter",
        ),
        fingerprints={
            "5.28": {
                "pymc.initial_point:make_initial_point_fns_per_chain": (
                    "(*, model, overrides, jitter_rvs=None, chains)", "1ac9715fd43794a9"),
                "pymc.sampling.mcmc:sample": "bf7ebf30a6f4f8e3",
                "pymc.sampling.mcmc:_init_jitter": "e02eb9b3b8b98778",
            },
            "6.4": {
                "pymc.initial_point:make_initial_point_fns_per_chain": (
                    "(*, model, overrides, jitter_rvs=None, chains)", "918ac5750ff53402"),
                "pymc.sampling.mcmc:sample": "05d80c2830f96cff",
                "pymc.sampling.mcmc:_init_jitter": "1386cf0aa32f85b3",
            },
        },
    ),
    Patch(
        name="object_mode_warnings",
        why=(
            "PyTensor's numba backend warns that it runs Python rng_fn methods in object "
            "mode; ours are Python by design (a partition draw is a sequential loop), so "
            "the notice is silenced for our ops only. Re-check the message text."
        ),
        install=_quiet_our_object_mode_warnings,
        relies_on=("pytensor.link.numba.dispatch.basic:generate_fallback_impl",),
        package="pytensor",
        fingerprints={
            "2.38": {
                "pytensor.link.numba.dispatch.basic:generate_fallback_impl": (
                    "(op, node, storage_map=None, **kwargs)", "0d3aa085823d4c33"),
            },
            "3.3": {
                "pytensor.link.numba.dispatch.basic:generate_fallback_impl": (
                    "(op, node, storage_map=None, **kwargs)", "0d3aa085823d4c33"),
            },
        },
    ),
    Patch(
        name="step_assignment_checks",
        why=(
            "pm.sample(step=pm.Metropolis([z])) ran and the partition never moved (PyMC's "
            "steps move labels as an integer vector: wrong target, invalid proposals); the "
            "wrapper refuses any non-partition step on a partition. Re-check that "
            "assign_step_methods returns (provided steps, {step class: value vars}) and that "
            "sample calls it by the module-level name."
        ),
        wrap=_step_assignment_wrapper,
        targets=("pymc.sampling.mcmc:assign_step_methods",),
        relies_on=(
            "pymc.sampling.mcmc:assign_step_methods",
            "pymc.sampling.mcmc:sample",
        ),
        fingerprints={
            "5.28": {
                "pymc.sampling.mcmc:assign_step_methods": (
                    "(model, step=None, methods=None)", "efd648f0b4250074"),
                "pymc.sampling.mcmc:sample": "bf7ebf30a6f4f8e3",
            },
            "6.4": {
                "pymc.sampling.mcmc:assign_step_methods": (
                    "(model, step=None, methods=None)", "ef5165b2def3c61e"),
                "pymc.sampling.mcmc:sample": "05d80c2830f96cff",
            },
        },
    ),
    Patch(
        name="log_likelihood",
        why=(
            "pm.compute_log_likelihood stores one joint term per draw for a collapsed "
            "likelihood, with which az.loo runs and means nothing; the wrapper gives the "
            "pointwise leave-one-out terms (pmp.compute_log_likelihood) for collapsed "
            "likelihoods and PyMC's own values for other observed variables. Re-check the "
            "keywords (var_names, extend_inferencedata, model, sample_dims, progressbar, "
            "backend) and that the callers import it from pymc.stats.log_density at call time."
        ),
        wrap=_log_likelihood_wrapper,
        targets=(
            "pymc.stats.log_density:compute_log_likelihood",
            "pymc.stats:compute_log_likelihood",
            "pymc:compute_log_likelihood",
        ),
        relies_on=(
            "pymc.stats.log_density:compute_log_likelihood",
            "pymc.sampling.mcmc:_sample_return",
        ),
        fingerprints={
            "5.28": {
                "pymc.stats.log_density:compute_log_likelihood": (
                    ("(idata, *, var_names=None, extend_inferencedata=True, model=None, "
                     "sample_dims=('chain', 'draw'), progressbar=True, compile_kwargs=None)"),
                    "f2dad7bdedccfa0a"),
                "pymc.sampling.mcmc:_sample_return": "44573f06c6a755aa",
            },
            "6.4": {
                "pymc.stats.log_density:compute_log_likelihood": (
                    ("(idata, *, var_names=None, extend_inferencedata=True, model=None, "
                     "sample_dims=('chain', 'draw'), progressbar=True, backend=None, "
                     "compile_kwargs=None)"),
                    "e9bae995f3bcab21"),
                "pymc.sampling.mcmc:_sample_return": "636bbc93162fee48",
            },
        },
    ),
    Patch(
        name="sample_checks",
        why=(
            "pm.sample(idata_kwargs={'log_likelihood': True}) on a GeneralizedMallows model "
            "sampled to the end and then stored one joint term per draw (n <= 7 items; az.loo "
            "read it as one data point) or failed (n > 7); the wrapper refuses such a request "
            "before the first draw, with pm.compute_log_likelihood's message. PyMC's sample "
            "has no hook that sees idata_kwargs before sampling. Re-check that sample takes "
            "idata_kwargs and model by those names and passes idata_kwargs['log_likelihood'] "
            "to compute_log_likelihood as var_names (True meaning all). Also warns before "
            "the first draw when the partitions' stored labels would need too much memory "
            "(pymc_partitions.trace_size; re-check draws, tune, chains, cores, var_names, "
            "trace and discard_tuned_samples keep their meaning)."
        ),
        wrap=_sample_checks_wrapper,
        targets=(
            "pymc.sampling.mcmc:sample",
            "pymc.sampling:sample",
            "pymc:sample",
        ),
        # The others only mention a sample( (nutpie.sample, approx.sample, a
        # docstring): reviewed, none calls pm.sample.
        relies_on=(
            "pymc.sampling.mcmc:sample",
            "pymc.sampling.mcmc:_sample_external_nuts",
            "pymc.sampling.mcmc:init_nuts",
            "pymc.sampling.mcmc:instantiate_steppers",
        ),
        fingerprints={
            "5.28": {
                "pymc.sampling.mcmc:sample": (
                    ("(draws=1000, *, tune=1000, chains=None, cores=None, random_seed=None, "
                     "progressbar=True, progressbar_theme=None, quiet=False, step=None, "
                     "var_names=None, nuts_sampler='pymc', initvals=None, init='auto', "
                     "jitter_max_retries=10, n_init=200000, trace=None, "
                     "discard_tuned_samples=True, compute_convergence_checks=True, "
                     "keep_warning_stat=False, return_inferencedata=True, idata_kwargs=None, "
                     "nuts_sampler_kwargs=None, callback=None, mp_ctx=None, blas_cores='auto', "
                     "model=None, compile_kwargs=None, **kwargs)"),
                    "bf7ebf30a6f4f8e3"),
                "pymc.sampling.mcmc:_sample_external_nuts": "3f42345026c4e45e",
                "pymc.sampling.mcmc:init_nuts": "ee7de32c4a194d2b",
                "pymc.sampling.mcmc:instantiate_steppers": "979e73b766dd75fe",
            },
            "6.4": {
                "pymc.sampling.mcmc:sample": (
                    ("(draws=1000, *, tune=None, chains=None, cores=None, random_seed=None, "
                     "progressbar=True, progressbar_theme=None, quiet=False, step=None, "
                     "var_names=None, nuts_sampler=None, initvals=None, init='auto', "
                     "jitter_max_retries=10, n_init=200000, trace=None, "
                     "discard_tuned_samples=True, compute_convergence_checks=True, "
                     "keep_warning_stat=False, return_inferencedata=True, idata_kwargs=None, "
                     "nuts_sampler_kwargs=None, callback=None, mp_ctx=None, blas_cores='auto', "
                     "model=None, backend=None, compile_kwargs=None, **kwargs)"),
                    "05d80c2830f96cff"),
                "pymc.sampling.mcmc:_sample_external_nuts": "a28f7004929dbacb",
                "pymc.sampling.mcmc:init_nuts": "4d0a57e9d4b62722",
                "pymc.sampling.mcmc:instantiate_steppers": "1082078037af0581",
            },
        },
    ),
    Patch(
        name="gradient_logp",
        why=(
            "NUTS on the CRP concentration of a GeneralizedMallows model with n > 7 items "
            "failed: PyMC compiles the whole model's log density, whose GM term (a sum over "
            "n! permutations) cannot be evaluated, though it does not depend on the "
            "concentration. The wrapper leaves such terms out of a gradient step's log "
            "density. Re-check that logp_dlogp_function builds its cost from self.logp() "
            "(untempered; in PyMC 6 inside _logp_dlogp_function, which it calls) and that "
            "gradient steps obtain their function through it."
        ),
        install=install_gradient_logp,
        relies_on=(
            "pymc.model.core:Model.logp_dlogp_function",
            "pymc.step_methods.arraystep:GradientSharedStep.__init__",
        ),
        fingerprints={
            "5.28": {
                "pymc.model.core:Model.logp_dlogp_function": (
                    ("(self, grad_vars=None, tempered=False, initial_point=None, "
                     "ravel_inputs=None, **kwargs)"), "1462489ac7a23b99"),
                "pymc.step_methods.arraystep:GradientSharedStep.__init__": "0654e4c3e103b133",
            },
            "6.4": {
                "pymc.model.core:Model.logp_dlogp_function": (
                    ("(self, grad_vars=None, tempered=False, initial_point=None, "
                     "ravel_inputs=None, **kwargs)"), "a2ff79e2dc4e112f"),
                "pymc.step_methods.arraystep:GradientSharedStep.__init__": "0654e4c3e103b133",
            },
        },
    ),
    Patch(
        name="population_worker_errors",
        why=(
            "With cores > 1 a population step's chains run in worker processes; an "
            "exception there was logged in the worker and reached pm.sample as a bare "
            "EOFError. The replacement (a subclass of PopulationStepper) guards each "
            "chain's step.step before the steppers are pickled, sends the exception back "
            "in place of the update and raises it in the main process. Re-check that "
            "_prepare_iter_population builds PopulationStepper(steppers, parallelize, ...) "
            "by the module-level name, that the worker (_run_secondary) sends whatever "
            "stepper.step returns, and that step() returns the list of received updates."
        ),
        wrap=_population_stepper_wrapper,
        targets=("pymc.sampling.population:PopulationStepper",),
        relies_on=(
            "pymc.sampling.population:PopulationStepper",
            "pymc.sampling.population:_prepare_iter_population",
        ),
        fingerprints={
            "5.28": {
                "pymc.sampling.population:PopulationStepper": (
                    "(steppers, parallelize, progressbar=True)", "dd666719a14d790b"),
                "pymc.sampling.population:_prepare_iter_population": "730526f9eba8108d",
            },
            "6.4": {
                "pymc.sampling.population:PopulationStepper": (
                    "(steppers, parallelize)", "59e433150b605364"),
                "pymc.sampling.population:_prepare_iter_population": "d54349d9a9cba0b7",
            },
        },
    ),
]


def print_fingerprints():
    """Print each entry's fingerprints for the running versions, ready to paste into
    :data:`PATCHES`: ``(signature, source hash)`` for the patched function (the first
    of ``relies_on``), the source hash for the others."""
    for patch in PATCHES:
        if patch.public:
            continue
        version = ".".join(package_version(patch.package).split(".")[:2])
        print(f"{patch.name} ({patch.package} {package_version(patch.package)}):")
        print(f"    {version!r}: {{")
        for i, name in enumerate(patch.relies_on):
            value = fingerprint(name) if i == 0 else fingerprint(name)[1]
            print(f"        {name!r}: {value!r},")
        print("    },")
