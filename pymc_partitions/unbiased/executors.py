"""Running batches of independent chains as tasks on a ``concurrent.futures`` executor.

The runners of many coupled pairs (:func:`pymc_partitions.coupled_estimates`) and of
the naive-parallel baseline (:func:`pymc_partitions.naive_estimates`) share this:

- **Executors.** ``None``: a local :class:`~concurrent.futures.ProcessPoolExecutor`
  (``os.cpu_count()`` workers, the platform's default start method), created for the
  run and shut down after it; ``"serial"``: every task in the calling process (no
  pickling; for debugging and small runs); any
  :class:`concurrent.futures.Executor` the user passes (it stays open); a Dask
  ``distributed.Client`` (its ``get_executor(pure=False)``: a run is never served
  from Dask's cache of an earlier identical call) or its executor. Dask is imported
  by Dask's objects only: nothing here imports it.
- **One payload per run.** What every task needs (the model read once, h, the
  options) is serialised once with cloudpickle (closures and lambdas as h work) and
  sent with each task as bytes; a worker process unpickles it once per run and
  keeps it (:func:`load_payload`), not once per task.
- **Compilation.** Kernels are numba functions cached on disk (``cache=True``):
  the caller runs one warm-up move before submitting, so a cold cache is filled
  once; workers started by ``fork`` inherit the compiled code, others load it from
  the cache at their first task and keep it for the process's lifetime.
- **Errors.** An exception in a task reaches the caller as itself (its type and
  message) with a note naming the item it was raised for and the worker's
  traceback; an exception that cannot be pickled back arrives as a
  ``RuntimeError`` carrying its type, message and traceback; a worker process
  that dies (a crash, the out-of-memory killer) is reported as such, never as a
  bare ``BrokenProcessPool``. Remaining tasks are cancelled and a pool created for
  the run is shut down.
- **Time budget.** Tasks not yet started when the deadline passes are cancelled
  (their items are reported as never run); running tasks stop their items at the
  next sweep after the deadline (the task functions check it).
- **Progress.** PyMC's own progress bar (``pymc.progress_bar.create_simple_progress``
  through :func:`pymc_partitions.versions.simple_progress`: rich in a terminal or
  Jupyter, marimo's in marimo), advanced as batches finish.
"""

import concurrent.futures as cf
import itertools
import os
import pickle
import time
import traceback
from concurrent.futures.process import BrokenProcessPool

import cloudpickle

SERIAL = "serial"

# One payload per run per worker process: (token, object).
_PAYLOAD = (None, None)


def load_payload(token, blob):
    """The run's payload, unpickled at the first task of the run in this process."""
    global _PAYLOAD
    if _PAYLOAD[0] != token:
        _PAYLOAD = (token, pickle.loads(blob))
    return _PAYLOAD[1]


def dumps_payload(obj, owner):
    """``obj`` serialised for the workers (cloudpickle: closures, lambdas); a clear
    error for what cannot be sent to another process."""
    try:
        return cloudpickle.dumps(obj)
    except Exception as err:
        raise TypeError(
            f"{owner}: 'h' (or the model's data) cannot be sent to worker processes "
            f"({type(err).__name__}: {err}). Make h a plain function of the labels, or "
            f"pass executor='serial'."
        ) from err


def _is_dask_client(obj):
    return (type(obj).__module__.split(".")[0] == "distributed"
            and hasattr(obj, "get_executor") and hasattr(obj, "scheduler_info"))


class Executor:
    """The executor of one run: ``(executor, owned, n_workers)`` resolved from the
    user's argument."""

    def __init__(self, executor, owner):
        self.owned = False
        if executor is None:
            self.executor = cf.ProcessPoolExecutor()
            self.owned = True
            self.n_workers = self.executor._max_workers
        elif isinstance(executor, str) and executor == SERIAL:
            self.executor = None
            self.n_workers = 1
        elif _is_dask_client(executor):
            self.executor = executor.get_executor(pure=False)
            info = executor.scheduler_info().get("workers", {})
            self.n_workers = max(1, sum(int(w.get("nthreads", 1)) for w in info.values()))
        elif isinstance(executor, cf.Executor):
            self.executor = executor
            self.n_workers = int(getattr(executor, "_max_workers", None) or os.cpu_count() or 1)
        else:
            raise TypeError(
                f"{owner}: 'executor' must be None (a local process pool), 'serial', a "
                f"concurrent.futures.Executor (e.g. ProcessPoolExecutor(4)) or a Dask "
                f"distributed.Client (or client.get_executor()); got {executor!r}."
            )

    @property
    def serial(self):
        return self.executor is None

    def shutdown(self):
        if self.owned:
            self.executor.shutdown(wait=True, cancel_futures=True)

    def abandon(self):
        """The run stops early (Ctrl-C, an error): cancel the tasks not started and, for
        a pool created for the run, stop its workers now. A running task is a batch of
        pairs in compiled code that does not see the caller's interrupt; left alone it
        runs to its end, and the interpreter waits for it at exit (68-80 s measured for
        the README's run). A pool the user passed is theirs: its running tasks finish."""
        if not self.owned:
            return
        terminate = getattr(self.executor, "terminate_workers", None)  # Python >= 3.14
        if terminate is not None:
            terminate()
            return
        # Before 3.14 the pool has no public way to stop running workers; read them
        # before shutdown, which forgets them.
        processes = list((getattr(self.executor, "_processes", None) or {}).values())
        self.executor.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.terminate()
        for process in processes:
            process.join(timeout=10)


#: A run is split into at least this many tasks (if it has as many items).
MIN_TASKS = 100


def batches(n_items, n_workers):
    """Index ranges of the tasks: at least 4 per worker and :data:`MIN_TASKS` in all, so
    that work spreads evenly and the progress bar moves, but never empty. Results do
    not depend on the batching (each item has its own seed)."""
    n_batches = min(n_items, max(MIN_TASKS, 4 * n_workers))
    bounds = [round(i * n_items / n_batches) for i in range(n_batches + 1)]
    return [range(a, b) for a, b in itertools.pairwise(bounds) if b > a]


def task_error(exc, what):
    """In a worker: ``exc`` ready to travel back, with a note naming ``what`` (e.g.
    "coupled pair 17") and the worker's traceback (lost across processes otherwise)."""
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    note = f"(raised in {what}, process {os.getpid()}; the worker's traceback:\n{tb})"
    try:
        exc.add_note(note)
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001 - whatever fails to pickle travels as text
        return RuntimeError(f"{type(exc).__name__}: {exc}\n{note}")


def run_tasks(runner, fn, payload, item_batches, deadline, description, progressbar):
    """Run ``fn(payload, batch, deadline)`` for each batch of item indices on
    ``runner`` (an :class:`Executor`); returns ``(results, unstarted)``: the list of
    every finished batch's return value, and the item indices of batches cancelled
    at the deadline before they started."""
    # Here, not at the top: worker processes import this module (load_payload,
    # task_error) and must not import PyMC through versions.
    from pymc_partitions.versions import simple_progress

    n_items = sum(len(b) for b in item_batches)
    results, unstarted = [], []
    progress = simple_progress(progressbar)
    with progress:
        task = progress.add_task(description, completed=0, total=n_items)
        if runner.serial:
            for batch in item_batches:
                if deadline is not None and time.time() >= deadline:
                    unstarted.extend(batch)
                    continue
                results.append(fn(payload, batch, deadline))
                progress.advance(task, len(batch))
            return results, unstarted
        futures = {}
        try:
            for batch in item_batches:
                futures[runner.executor.submit(fn, payload, batch, deadline)] = batch
            pending = set(futures)
            while pending:
                timeout = None if deadline is None else max(0.0, deadline - time.time()) + 0.05
                done, pending = cf.wait(pending, timeout=timeout,
                                        return_when=cf.FIRST_COMPLETED)
                for future in done:
                    if future.cancelled():
                        unstarted.extend(futures[future])
                        continue
                    results.append(_result(future))
                    progress.advance(task, len(futures[future]))
                if deadline is not None and time.time() >= deadline:
                    for future in pending:
                        future.cancel()  # not started: cancelled; running: finishes early
        except BaseException:
            for future in futures:
                future.cancel()
            runner.abandon()
            raise
    return results, unstarted


def _result(future):
    try:
        return future.result()
    except BrokenProcessPool as err:
        raise RuntimeError(
            "a worker process of the pool died while running coupled chains (a crash in "
            "compiled code, or the operating system's out-of-memory killer): no Python "
            "exception was raised to report. Run with executor='serial' to see the "
            "error, or with fewer workers if memory is short."
        ) from err


__all__ = ["SERIAL", "Executor", "batches", "dumps_payload", "load_payload", "run_tasks",
           "task_error"]
