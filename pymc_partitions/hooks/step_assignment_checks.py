"""Hook ``step_assignment_checks``: no partition goes to a step that is not a partition
step, and the steps' ``competence`` sees the model being assigned.

Wraps ``pymc.sampling.mcmc.assign_step_methods``: PyMC's function runs inside
:func:`pymc_partitions.step_methods.assignment.assigning` (so a step class's
``competence`` can ask :func:`~pymc_partitions.step_methods.assignment.assigning_model`
which model it is), then
:func:`~pymc_partitions.step_methods.assignment.check_partition_steps` runs on its
result (provided steps, ``{step class: value variables}``), before any step is compiled
or any draw is made.

Why: ``pm.sample(step=pm.Metropolis([z]))`` ran and the partition never moved (PyMC's
steps move labels as an integer vector: wrong target, invalid proposals); the step
classes are PyMC's or the user's, so nothing of ours runs when one gets a partition.
And PyMC calls ``competence(var, has_grad)`` with the variable alone, no model.

Relies on: ``assign_step_methods(model, step=None, methods=None)`` returning
``(provided steps, {step class: value vars})``; ``sample`` calling it by the
module-level name.
"""

import inspect

from pymc_partitions.hooks._hook import Hook
from pymc_partitions.step_methods.assignment import assigning, check_partition_steps


def _wrapper(original):
    signature = inspect.signature(original)

    def assign_step_methods(*args, **kwargs):
        """PyMC's function with the model visible to ``competence``, then the partition
        step check (:mod:`pymc_partitions.hooks.step_assignment_checks`)."""
        model = signature.bind_partial(*args, **kwargs).arguments["model"]
        with assigning(model):
            provided, selected = original(*args, **kwargs)
        check_partition_steps(model, provided, selected)
        return provided, selected

    return assign_step_methods


HOOK = Hook(
    name="step_assignment_checks",
    why=(
        "pm.sample(step=pm.Metropolis([z])) ran and the partition never moved (PyMC's "
        "steps move labels as an integer vector: wrong target, invalid proposals); the "
        "wrapper refuses any non-partition step on a partition. Re-check that "
        "assign_step_methods returns (provided steps, {step class: value vars}) and that "
        "sample calls it by the module-level name."
    ),
    without=(
        "a partition given to a PyMC step (step=pm.Metropolis([z])...) samples a wrong "
        "distribution without an error (use pmp.Gibbs / pmp.SplitMerge), and "
        "pm.sample(model=m) outside `with m:` does not pick pmp.EscobarWest, "
        "pmp.HyperSlice or pmp.MallowsGibbs by itself."
    ),
    wrap=_wrapper,
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
)
