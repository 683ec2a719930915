"""Hook ``population_worker_errors``: an exception in a population worker process is
raised in the main process, with its chain and the worker's traceback.

Replaces ``pymc.sampling.population.PopulationStepper`` by a subclass: with worker
processes (``parallelize``), each chain's ``step.step`` is guarded before the steppers
are pickled (:class:`pymc_partitions.step_methods.worker_failure.GuardedStep`), so an
exception travels back as a
:class:`~pymc_partitions.step_methods.worker_failure.WorkerFailure` in place of the
chain's update, and ``step()`` re-raises it.

Why: PyMC's worker logs the exception and exits; the main process sees only
``EOFError``. No PyMC hook sees a worker's exception.

Relies on: ``_prepare_iter_population`` building ``PopulationStepper(steppers,
parallelize, ...)`` by the module-level name; the worker (``_run_secondary``) sending
whatever ``stepper.step`` returns; ``step()`` returning the list of received updates.
"""

from pymc_partitions.hooks._hook import Hook
from pymc_partitions.step_methods.worker_failure import GuardedStep, WorkerFailure


def _wrapper(original):
    class PopulationStepper(original):
        """PyMC's ``PopulationStepper``; with worker processes, an exception in a
        chain's step is sent back and raised in the main process
        (:mod:`pymc_partitions.hooks.population_worker_errors`)."""

        def __init__(self, steppers, parallelize, *args, **kwargs):
            if parallelize:
                for c, stepper in enumerate(steppers):
                    stepper.step = GuardedStep(stepper, c)
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


HOOK = Hook(
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
    without=(
        "with cores > 1, an exception in a population step's chain (pmp.PBC, pmp.ARM...) "
        "reaches pm.sample as a bare EOFError: rerun with cores=1 to see it."
    ),
    wrap=_wrapper,
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
)
