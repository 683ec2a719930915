"""Everything that differs between the supported stacks lives here (DESIGN §4).

- PyMC 5 gives a step its chain's generator with ``set_rng(rng)``; PyMC 6 with
  ``setup_chain(rng, tune, draws)`` and may reuse one instance for several chains.
  :class:`ChainSetup` answers both and calls ``self.start_chain(rng)``, where steps
  create their per-chain state (never in ``__init__``: with ``cores=1`` PyMC
  shallow-copies steps between chains, so anything made there is shared).
- ``pm.sample`` returns ``arviz.InferenceData`` (ArviZ < 1) or ``xarray.DataTree``
  (ArviZ >= 1): :func:`posterior_dataset` reads the posterior from either.
- Registration of our steps with ``pm.sample``'s automatic assignment, the
  partition-aware convergence checks (:func:`install_convergence_checks`), the
  check of partition ``initvals`` (:func:`install_initval_checks`) and pointwise
  leave-one-out terms for collapsed likelihoods in ``pm.compute_log_likelihood``
  (:func:`install_log_likelihood`).
- ``ancestors`` moved from ``pytensor.graph.basic`` to ``pytensor.graph.traversal``.
- PyTensor 3 runs forward draws through numba and warns that it falls back to
  object mode for Python ``rng_fn`` methods; ours are Python by design (a draw is
  a sequential loop either way), so :func:`quiet_object_mode_warnings` silences
  that warning for our ops only.
- PyTensor 3 compiles with its numba linker by default; small per-iteration
  functions (the hyperparameter reader) call 3x faster through the C virtual
  machine, so :func:`small_function_mode` asks for it where it exists.
"""

from types import SimpleNamespace

import numpy as np
import pymc
from pymc.util import get_random_generator

try:  # PyTensor >= 2.3x
    from pytensor.graph.traversal import ancestors  # noqa: F401
except ImportError:  # pragma: no cover
    from pytensor.graph.basic import ancestors  # noqa: F401

def quiet_object_mode_warnings(op_names):
    """Silence PyTensor 3's object-mode notice for the named random-variable ops."""
    import warnings

    pattern = "|".join(op_names)
    warnings.filterwarnings(
        "ignore",
        message=rf"Numba will use object mode to run ({pattern})",
        category=UserWarning,
    )


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


def register_step_methods(classes):
    """Append our step classes to PyMC's registry (append, never rebind: PyMC
    holds references to the list object)."""
    registry = pymc.step_methods.STEP_METHODS
    for cls in classes:
        if cls not in registry:
            registry.append(cls)


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


def install_convergence_checks():
    """Make ``pm.sample``'s convergence checks label-invariant for partition variables.

    PyMC computes R-hat and ESS on every free variable in the posterior. For a
    partition, the labels of one item are not a meaningful scalar across draws
    (label switching; canonical labels jump when a block splits), so those checks
    raise false alarms. The wrapper runs PyMC's own checks with each partition
    variable replaced by its label-invariant summaries (``{z}_n_clusters``,
    ``{z}_largest_cluster_frac``, ``{z}_entropy``): the warnings a user sees are
    about quantities whose R-hat means something. Models without partitions go
    through PyMC's function unchanged.
    """
    import pymc.sampling.mcmc as mcmc

    original = getattr(mcmc.run_convergence_checks, "__wrapped__", mcmc.run_convergence_checks)

    def run_convergence_checks(idata, model):
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

    run_convergence_checks.__wrapped__ = original
    run_convergence_checks.__doc__ = install_convergence_checks.__doc__
    mcmc.run_convergence_checks = run_convergence_checks


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
            for rv in partitions:
                if key is rv or key is model.rvs_to_values[rv] or key == rv.name:
                    chain_txt = f" for chain {chain}" if len(per_chain) > 1 else ""
                    where = f"initvals['{rv.name}']{chain_txt}"
                    labels = validate_labels(np.asarray(value), partition_size(rv), where)
                    rv.owner.op.check_support(labels, rv.owner, where)


def install_initval_checks():
    """Check ``initvals`` of partition variables before PyMC builds starting points,
    so a wrong length or an out-of-range label gets an error that names the variable
    (PyMC's own would be a PyTensor type mismatch)."""
    import pymc.sampling.mcmc as mcmc

    original = getattr(
        mcmc.make_initial_point_fns_per_chain, "__wrapped__", mcmc.make_initial_point_fns_per_chain
    )

    def make_initial_point_fns_per_chain(*args, **kwargs):
        model, overrides = kwargs.get("model"), kwargs.get("overrides")
        if model is not None and overrides is not None:
            check_partition_initvals(model, overrides)
        return original(*args, **kwargs)

    make_initial_point_fns_per_chain.__wrapped__ = original
    mcmc.make_initial_point_fns_per_chain = make_initial_point_fns_per_chain


def install_log_likelihood():
    """Make ``pm.compute_log_likelihood`` (and so ``pm.sample(idata_kwargs={"log_likelihood":
    True})``) give pointwise leave-one-out terms for collapsed likelihoods.

    PyMC evaluates each observed variable's elementwise log density; a collapsed
    likelihood's is one joint term per draw, with which ``az.loo`` / ``az.compare``
    run without a warning and mean nothing. The wrapper hands the collapsed
    likelihoods to :func:`pymc_partitions.analysis.loo.pymc_compute_log_likelihood`
    (the conditionals log p(y_i | y_-i, z, theta)) and every other observed variable to
    PyMC's function. PyMC calls it as ``pymc.stats.log_density.compute_log_likelihood``
    (``pm.sample`` and ``to_inference_data`` import it at call time); the names
    ``pm.compute_log_likelihood`` and ``pymc.stats.compute_log_likelihood`` are bound
    at PyMC's import, so each name still bound to PyMC's function is rebound. Same
    signature on PyMC 5 and 6 (keyword-only after ``idata``; PyMC 6 adds ``backend``,
    passed through).
    """
    import pymc.stats
    from pymc.stats import log_density

    original = getattr(
        log_density.compute_log_likelihood, "__wrapped__", log_density.compute_log_likelihood
    )

    def compute_log_likelihood(idata, **kwargs):
        from pymc_partitions.analysis.loo import pymc_compute_log_likelihood

        return pymc_compute_log_likelihood(original, idata, **kwargs)

    compute_log_likelihood.__wrapped__ = original
    compute_log_likelihood.__doc__ = original.__doc__
    for module in (log_density, pymc.stats, pymc):
        bound = getattr(module, "compute_log_likelihood", None)
        if bound is original or getattr(bound, "__wrapped__", None) is original:
            module.compute_log_likelihood = compute_log_likelihood


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
