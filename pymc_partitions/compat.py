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
  check of partition ``initvals`` (:func:`install_initval_checks`) and the refusal
  of non-partition steps on partitions (:func:`install_step_assignment_checks`).
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


def install_initval_checks():
    """Check ``initvals`` of partition variables before PyMC builds starting points,
    so a wrong length or an out-of-range label gets an error that names the variable
    (PyMC's own would be a PyTensor type mismatch)."""
    import pymc.sampling.mcmc as mcmc

    original = getattr(
        mcmc.make_initial_point_fns_per_chain, "__wrapped__", mcmc.make_initial_point_fns_per_chain
    )

    def make_initial_point_fns_per_chain(*args, **kwargs):
        model = kwargs.get("model")
        if model is not None:
            check_partition_initvals(model, kwargs.get("overrides"))
        return original(*args, **kwargs)

    make_initial_point_fns_per_chain.__wrapped__ = original
    mcmc.make_initial_point_fns_per_chain = make_initial_point_fns_per_chain


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


def install_step_assignment_checks():
    """Check ``pm.sample``'s step assignment: no partition variable may go to a step
    that is not a partition step (:func:`check_partition_steps`).

    Wraps ``pymc.sampling.mcmc.assign_step_methods``, which ``pm.sample`` calls
    once with the user's ``step=`` and returns the provided steps and the
    automatically selected ones; the check runs on its result (and so before any
    step is compiled or any draw is made). PyMC has no public
    hook for this: the step classes are PyMC's (or the user's), so no method of
    ours runs when one of them is given a partition.
    """
    import pymc.sampling.mcmc as mcmc

    original = getattr(mcmc.assign_step_methods, "__wrapped__", mcmc.assign_step_methods)

    def assign_step_methods(model, step=None, methods=None, *args, **kwargs):
        provided, selected = original(model, step, methods, *args, **kwargs)
        check_partition_steps(model, provided, selected)
        return provided, selected

    assign_step_methods.__wrapped__ = original
    assign_step_methods.__doc__ = original.__doc__
    mcmc.assign_step_methods = assign_step_methods


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
