r"""The worker side of the runners of many chains: what a task unpickles and runs.

:func:`pymc_partitions.coupled_estimates` and :func:`pymc_partitions.naive_estimates`
read the model in the calling process and send the workers a job (:class:`CoupledJob`,
:class:`NaiveJob`: a :class:`FrozenTarget`, h, the seeds) and a batch function
(:func:`run_coupled_batch`, :func:`run_naive_batch`). Pickles name the modules of
their classes and functions, and a worker imports those modules to unpickle them, so
they are kept apart from PyMC: this module, the pair
(:mod:`pymc_partitions.step_methods.coupled_pair`), the chain state, the estimator
and the built-in functions h import NumPy, numba and the kernels only. A worker
started by ``spawn`` or ``forkserver`` (macOS, Windows; Linux from Python 3.14) would
otherwise import PyMC and PyTensor (seconds) before its first pair.
``tests/test_coupled_estimates.py`` checks that a pair runs in a fresh interpreter
without them.
"""

import copy
import time
from dataclasses import dataclass

import numpy as np

from pymc_partitions.kernels import summarise
from pymc_partitions.kernels.random import new_stream
from pymc_partitions.partitions import canonicalize
from pymc_partitions.step_methods.coupled_pair import CoupledPair
from pymc_partitions.unbiased.estimator import PairEstimate, pair_estimate
from pymc_partitions.unbiased.executors import load_payload, task_error
from pymc_partitions.unbiased.functions import evaluate

#: Naive chain j's seed is SeedSequence(random_seed).spawn(J)[j].spawn(...)[NAIVE_CHILD]:
#: never the stream of coupled pair j under the same random_seed.
NAIVE_CHILD = 1
#: Sweeps whose labels are kept before h is evaluated on them (bounds memory).
CHUNK = 256


class FrozenTarget:
    """The partition target of a model at its starting point, without PyMC: what a
    worker needs to run :class:`CoupledPair` (``n``, :meth:`new_chain_state`,
    :meth:`kernel_args`) and nothing else. Picklable (plain arrays and records).

    Built from a :class:`PartitionTarget` whose hyperparameters are constants:
    ``values``, ``prior_params``, ``per_lik`` are the target's ``params(point)``;
    ``start_labels`` the starting partition; the kernel state of that partition is
    built once by the target and *copied* for every chain (every chain starts there:
    the paper's one-block start, or the model's ``initval``).
    """

    def __init__(self, target, point):
        self.n = target.n
        self.name = target.name
        self.values, self.prior_params, self.per_lik = target.params(point)
        self.start_labels = target.validate_labels(point[target.name])
        self._template = target.new_chain_state(self.start_labels, self.values, self.per_lik)
        self._params, _, self._data = target.kernel_args(self._template, self.values,
                                                         self.per_lik)

    def new_chain_state(self, labels, values, per_lik):
        if not np.array_equal(labels, self.start_labels):
            raise ValueError("FrozenTarget: chains start at the model's starting partition.")
        return copy.deepcopy(self._template)

    def kernel_args(self, chain, values, per_lik):
        return self._params, chain.stats, self._data


@dataclass
class CoupledJob:
    """Everything a worker needs for the pairs of one run."""

    target: FrozenTarget
    pair_options: dict
    h: object
    shape: tuple
    burn_in: int
    m: int
    max_sweeps: int | None
    entropy: object
    spawn_key: tuple
    pool_size: int

    def seed(self, index):
        return np.random.SeedSequence(self.entropy, spawn_key=(*self.spawn_key, index),
                                      pool_size=self.pool_size)

    def new_pair(self, stream):
        target = self.target
        pair = CoupledPair(target, target.values, target.prior_params, target.per_lik,
                           stream=stream, **self.pair_options)
        pair.start(target.start_labels, target.start_labels)  # X_0 = Y_0; makes X_1
        return pair


def job_of(payload):
    """The job of a task: the object itself (serial) or ``(token, bytes)``."""
    return payload if not isinstance(payload, tuple) else load_payload(*payload)


def run_pair(job, index, deadline):
    r"""One coupled pair from its seed to H_{l:m}: ``(PairEstimate, seconds, interrupted)``.

    The pair moves until it has met and reached sweep m (then X is known up to
    max(m, tau) >= max(m, tau - 1), all that H needs), or is stopped unmet-or-short
    at ``max_sweeps`` or the deadline (censored, with its meeting time if it met).
    Canonical labels are kept from sweep ``burn_in`` on (X_t for t >= l, Y_(t-1) for
    l <= t - 1 < tau - 1; with l = 0, X_0 is the start); h is evaluated on them once
    at the end. ``seconds``: the wall time of the moves and labels (h's evaluation
    not included).
    """
    start = time.perf_counter()
    pair = job.new_pair(new_stream(job.seed(index)))
    l, m, cap = job.burn_in, job.m, job.max_sweeps
    xs, x_sweeps, ys, y_sweeps = [], [], [], []
    if l == 0:  # H_{0:m} averages from X_0, the start (new_pair has made X_1 already)
        xs.append(canonicalize(job.target.start_labels))
        x_sweeps.append(0)
    interrupted = False
    while True:
        t = pair.t
        if t >= l:
            x, y, _ = pair.summaries()
            xs.append(x)
            x_sweeps.append(t)
            if not pair.met and t - 1 >= l:
                ys.append(y)
                y_sweeps.append(t - 1)
        if pair.met and t >= m:
            break
        if cap is not None and t >= cap:
            break
        if deadline is not None and time.time() >= deadline:
            interrupted = True
            break
        pair.advance()
    seconds = time.perf_counter() - start
    t = pair.t
    tau = pair.tau
    if not (pair.met and t >= m):
        return PairEstimate.censored_at(t, job.shape, meeting_time=tau), seconds, interrupted
    values = evaluate(job.h, np.stack(xs + ys))
    hx = np.full((t + 1, *job.shape), np.nan)
    hy = np.full((t, *job.shape), np.nan)
    hx[x_sweeps] = values[:len(xs)]
    hy[y_sweeps] = values[len(xs):]
    return pair_estimate(hx, hy, tau, l, m), seconds, interrupted


def run_coupled_batch(payload, batch, deadline):
    """Task: the pairs ``batch`` (indices) of a run; ``[(index, estimate, seconds,
    interrupted)]``."""
    job = job_of(payload)
    out = []
    for index in batch:
        if deadline is not None and time.time() >= deadline:  # never started
            out.append((index, PairEstimate.censored_at(0, job.shape), np.nan, True))
            continue
        try:
            out.append((index, *run_pair(job, index, deadline)))
        except Exception as exc:
            what = f"coupled pair {index} of coupled_estimates"
            if payload is job:  # serial: the traceback is already the caller's
                exc.add_note(f"(raised in {what})")
                raise
            raise task_error(exc, what) from None
    return out


@dataclass
class NaiveJob:
    coupled: CoupledJob  # the model, h and seeds (burn_in, m unused)
    wall_times: np.ndarray | None
    n_sweeps: np.ndarray | None
    discard: float


def run_chain(job, index):
    """One single chain: ``(estimate, sweeps, discarded, seconds)``.

    X_0 is the start, X_1 the pair's first single-chain move, then single-chain moves
    until ``n_sweeps[index]`` sweeps or ``wall_times[index]`` seconds of moves (at
    least one sweep); U = the mean of h(X_t) over t = floor(discard T) + 1..T.
    """
    cj = job.coupled
    seed = np.random.SeedSequence(cj.entropy, pool_size=cj.pool_size,
                                  spawn_key=(*cj.spawn_key, index, NAIVE_CHILD))
    start = time.perf_counter()
    pair = cj.new_pair(new_stream(seed))  # X_1 by the single-chain move
    x = pair._x

    def labels():
        summarise(x.state, pair.prior_params, pair.params, x.stats, x.labels, x.scratch)
        return x.labels.copy()

    values, chunk = [], [labels()]
    seconds = time.perf_counter() - start
    t = 1
    while (t < job.n_sweeps[index]) if job.n_sweeps is not None else (
            seconds < job.wall_times[index]):
        tick = time.perf_counter()
        pair._single_move()
        chunk.append(labels())
        seconds += time.perf_counter() - tick
        t += 1
        if len(chunk) == CHUNK:
            values.append(evaluate(cj.h, np.stack(chunk)))
            chunk = []
    if chunk:
        values.append(evaluate(cj.h, np.stack(chunk)))
    values = np.concatenate(values)  # h(X_1..X_T)
    discarded = int(np.floor(job.discard * t))
    return values[discarded:].mean(axis=0), t, discarded, seconds


def run_naive_batch(payload, batch, deadline):
    job = job_of(payload)
    out = []
    for index in batch:
        try:
            out.append((index, *run_chain(job, index)))
        except Exception as exc:
            what = f"naive chain {index} of naive_estimates"
            if payload is job:
                exc.add_note(f"(raised in {what})")
                raise
            raise task_error(exc, what) from None
    return out


__all__ = ["CoupledJob", "FrozenTarget", "NaiveJob", "job_of", "run_chain",
           "run_coupled_batch", "run_naive_batch", "run_pair"]
