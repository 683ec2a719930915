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
                   summaries instead of raw partition labels     hook to choose them
initval_checks     ``pymc.sampling.mcmc.make_initial_point_fns_  none: no hook sees the
                   per_chain`` wrapped: partition ``initvals``   per-chain ``initvals``
                   checked before PyMC builds starting points    before the first draw
                                                                 (steps see chain 0 only)
object_mode_       Python warnings filter for PyTensor's         Python's warnings filter;
warnings           "Numba will use object mode" notice, for our  PyTensor has no per-op
                   ops only                                      switch
log_likelihood     ``pymc.stats.log_density.compute_log_         none: PyMC evaluates each
                   likelihood`` wrapped (and the names           observed variable's own
                   ``pm.compute_log_likelihood``, ``pymc.stats.  elementwise logp, one
                   compute_log_likelihood``): pointwise leave-   joint term for a collapsed
                   one-out terms for collapsed likelihoods       likelihood
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

import hashlib
import importlib
import inspect
import re
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np
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
    """Validate user ``initvals`` for partition variables (length, integers, range)."""
    from pymc_partitions.distributions.partition import partition_size, validate_labels

    partitions = _partition_rvs(model)
    if not partitions:
        return
    per_chain = overrides if isinstance(overrides, list | tuple) else [overrides]
    for chain, override in enumerate(per_chain):
        if not override:
            continue
        for key, value in override.items():
            if isinstance(value, str):
                continue  # a PyMC strategy ("prior", "support_point"), not labels
            for rv in partitions:
                if key is rv or key is model.rvs_to_values[rv] or key == rv.name:
                    chain_txt = f" for chain {chain}" if len(per_chain) > 1 else ""
                    where = f"initvals['{rv.name}']{chain_txt}"
                    labels = validate_labels(np.asarray(value), partition_size(rv), where)
                    rv.owner.op.check_support(labels, rv.owner, where)


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
    from pymc_partitions.step_methods import Gibbs

    register_step_methods([Gibbs])


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
        if model is not None and overrides is not None:
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


PATCHES = [
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
            "variables plus the label-invariant summaries. Re-check that the wrapped "
            "function reads only model.free_RVs and model.deterministics, and that "
            "_sample_return calls it by the module-level name."
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
                    "(idata, *, var_names=None, extend_inferencedata=True, model=None, "
                    "sample_dims=('chain', 'draw'), progressbar=True, compile_kwargs=None)",
                    "f2dad7bdedccfa0a"),
                "pymc.sampling.mcmc:_sample_return": "44573f06c6a755aa",
            },
            "6.4": {
                "pymc.stats.log_density:compute_log_likelihood": (
                    "(idata, *, var_names=None, extend_inferencedata=True, model=None, "
                    "sample_dims=('chain', 'draw'), progressbar=True, backend=None, "
                    "compile_kwargs=None)",
                    "e9bae995f3bcab21"),
                "pymc.sampling.mcmc:_sample_return": "636bbc93162fee48",
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
