"""Which steps may update a partition, and which model PyMC is assigning steps for.

Two pieces of the step layer that ``pm.sample``'s step assignment needs and PyMC gives
no public way to reach; :mod:`pymc_partitions.hooks.step_assignment_checks` calls them
from around ``pymc.sampling.mcmc.assign_step_methods``:

- :func:`check_partition_steps` refuses a partition given to a step that is not a
  partition step (``pm.Metropolis``...), with the reason and the fix.
- :func:`assigning_model`: PyMC calls a step class's ``competence(var, has_grad)`` with
  the random variable alone, but whether a hyperparameter step is exact depends on
  which other terms of the model read the variable. The hook sets the model for the
  duration of the assignment (:func:`assigning`); without the hook, ``competence``
  sees the model in context only (``pm.sample`` inside ``with model:``), else none.
"""

import contextlib
import contextvars

import pymc

from pymc_partitions.distributions.model_terms import partition_rvs
from pymc_partitions.step_methods.base import PartitionStep
from pymc_partitions.step_methods.target import PartitionModelError

#: The model whose variables ``assign_step_methods`` is assigning (set by
#: :func:`assigning`).
_ASSIGNING_MODEL = contextvars.ContextVar("pmp_assigning_model", default=None)


@contextlib.contextmanager
def assigning(model):
    """Within the block, :func:`assigning_model` returns ``model``."""
    token = _ASSIGNING_MODEL.set(model)
    try:
        yield model
    finally:
        _ASSIGNING_MODEL.reset(token)


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


def flat_steps(steps):
    """The step instances of ``steps``, those inside a ``CompoundStep`` included."""
    for step in steps:
        if hasattr(step, "methods"):  # CompoundStep
            yield from flat_steps(step.methods)
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
    partitions = {model.rvs_to_values[rv]: rv.name for rv in partition_rvs(model)}
    if not partitions:
        return
    assigned = [(type(step).__name__, type(step), step.vars) for step in
                flat_steps(provided_steps)]
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
