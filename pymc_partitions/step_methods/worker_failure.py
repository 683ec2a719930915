"""An exception raised by a population step in a worker process, carried back to the
main process (beside :mod:`.population`, whose steps PyMC runs there).

With ``cores > 1`` PyMC runs each chain of a population step in a worker process; an
exception there is logged by the worker, which exits, and ``pm.sample`` sees only
``EOFError``. :class:`GuardedStep` catches the exception in the worker and returns a
:class:`WorkerFailure` in place of the chain's update; the main process re-raises it
(:mod:`pymc_partitions.hooks.population_worker_errors` installs both around PyMC's
``PopulationStepper``).
"""

import pickle
import traceback


class WorkerFailure:
    """An exception raised by a chain's step in a population worker process, sent to
    the main process in place of the chain's update.

    Pickles the exception (or, if it cannot be pickled, its type name and message)
    with the worker's formatted traceback."""

    def __init__(self, chain, exception):
        self.chain = chain
        self.exception = exception
        self.traceback = "".join(traceback.format_exception(exception))

    def __getstate__(self):
        state = dict(self.__dict__)
        try:
            state["exception"] = pickle.dumps(self.exception)
        except Exception:  # noqa: BLE001 - whatever fails to pickle travels as text
            state["exception"] = None
            state["description"] = f"{type(self.exception).__name__}: {self.exception}"
        return state

    def __setstate__(self, state):
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


class GuardedStep:
    """``stepper.step`` that returns a :class:`WorkerFailure` instead of raising.
    Calls the class's ``step`` (the instance attribute is this guard)."""

    def __init__(self, stepper, chain):
        self.stepper, self.chain = stepper, chain

    def __call__(self, point):
        try:
            return type(self.stepper).step(self.stepper, point)
        except Exception as err:  # noqa: BLE001 - every exception goes back to the caller
            return WorkerFailure(self.chain, err)
