r"""``pmp.coupled_estimates``: many independent coupled pairs on an executor, one
unbiased estimate (Nguyen, Trippe & Broderick 2022, §3.4, §5.2: "many processors,
little time"; Jacob, O'Leary & Atchadé 2020, eq. 2).

The model is read once in the calling process, by the same reading as
:class:`pmp.CoupledGibbs` (its :class:`PartitionTarget`, its options and its refusal
of free hyperparameters); the kernel state of the start is built there too and only
copied by the workers (:class:`FrozenTarget`), so a worker runs exactly the pair
that :class:`~pymc_partitions.step_methods.coupled_pair.CoupledPair` runs under
``pmp.CoupledGibbs``, with no PyMC or PyTensor work. Each pair computes its own
:math:`H_{\ell:m}` with :func:`~pymc_partitions.unbiased.pair_estimate` and the
caller aggregates them with :func:`~pymc_partitions.unbiased.aggregate`.
Executors, batches, errors, progress: :mod:`pymc_partitions.unbiased.executors`.
What the workers unpickle and run (:class:`FrozenTarget`, :class:`CoupledJob`,
:func:`run_pair`, :func:`run_coupled_batch`) is in :mod:`pymc_partitions.unbiased.worker`,
which imports no PyMC; this module reads the model and imports PyMC.
"""

import time

import numpy as np
from pymc.model import Model, modelcontext

from pymc_partitions.arguments import integer_arg, number_arg
from pymc_partitions.kernels.random import new_stream
from pymc_partitions.step_methods.coupled import CoupledGibbs
from pymc_partitions.step_methods.split_merge import PROPOSALS
from pymc_partitions.unbiased.aggregate import check_trim_ci
from pymc_partitions.unbiased.estimator import PairEstimate, check_window
from pymc_partitions.unbiased.executors import Executor, batches, dumps_payload, run_tasks
from pymc_partitions.unbiased.functions import PartitionFunction, evaluate
from pymc_partitions.unbiased.trace import _h_name

# What the workers unpickle and run lives in the PyMC-free worker module (see there);
# these names are part of this module's interface too.
from pymc_partitions.unbiased.worker import (  # noqa: F401
    CoupledJob,
    FrozenTarget,
    job_of,
    run_coupled_batch,
    run_pair,
)

#: Options of :class:`pmp.CoupledGibbs` that the runners pass on.
STEP_OPTIONS = ("metric", "eta", "scan", "split_merge", "n_restricted_scans", "n_proposals",
                "proposal")


def read_model(model, var_name, owner, options):
    """``(FrozenTarget, CoupledPair options)`` of ``model``'s partition ``var_name``,
    read as :class:`pmp.CoupledGibbs` reads it (same checks and errors)."""
    if model is None:
        model = modelcontext(None)
    if not isinstance(model, Model):
        raise TypeError(f"{owner}: 'model' must be a pm.Model, got {model!r}.")
    if not isinstance(var_name, str):
        raise TypeError(f"{owner}: 'var_name' must be the name of the partition variable "
                        f"(a str), got {var_name!r}.")
    if var_name not in model.named_vars:
        raise ValueError(f"{owner}: 'var_name' = {var_name!r} is not a variable of the model; "
                         f"its free variables are {[v.name for v in model.free_RVs]}.")
    unknown = sorted(set(options) - {"coupling", *STEP_OPTIONS})
    if unknown:
        raise TypeError(f"{owner}: unknown option(s) {unknown}; the options of the coupled "
                        f"move are {list(STEP_OPTIONS)} (as for pmp.CoupledGibbs).")
    try:
        step = CoupledGibbs([model[var_name]], model=model, **options)
    except Exception as exc:
        exc.add_note(f"(while {owner} read the model as pmp.CoupledGibbs does)")
        raise
    sm = None
    if step.split_merge:
        sm = {"n_proposals": step.n_proposals, "n_restricted_scans": step.n_restricted_scans,
              "proposal": PROPOSALS[step.proposal]}
    pair_options = {"coupling": step.coupling, "metric": step.metric, "eta": step.eta,
                    "scan": step.scan, "split_merge": sm}
    return FrozenTarget(step.target, model.initial_point()), pair_options


def run_arguments(trim, ci, progressbar, random_seed, executor, owner):
    """The arguments every runner shares, checked with errors naming them:
    ``(trim, ci, root SeedSequence, Executor)``."""
    trim, ci = check_trim_ci(trim, ci, owner)
    if not isinstance(progressbar, bool | np.bool_):
        raise TypeError(f"{owner}: 'progressbar' must be True or False, got {progressbar!r}.")
    return trim, ci, root_seed(random_seed, owner), Executor(executor, owner)


def root_seed(random_seed, owner):
    """``numpy.random.SeedSequence(random_seed)`` (None: fresh entropy, recorded in the
    result), with an error naming ``random_seed``."""
    if isinstance(random_seed, np.random.SeedSequence):
        return random_seed
    if isinstance(random_seed, bool | np.bool_ | float | np.floating):
        raise TypeError(f"{owner}: 'random_seed' must be None, a non-negative int, a sequence "
                        f"of them or a numpy.random.SeedSequence; got {random_seed!r}.")
    try:
        return np.random.SeedSequence(random_seed)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{owner}: 'random_seed' must be None, a non-negative int, a sequence "
                        f"of them or a numpy.random.SeedSequence; got {random_seed!r}.") from err


def child_seed(root, index, *extra):
    """``root.spawn(n)[index]`` without spawning n children (and, with ``extra``, a
    descendant of it), whatever ``root`` has spawned before."""
    return np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, index, *extra),
                                  pool_size=root.pool_size)


def check_h(h, start_labels, owner):
    """``h`` callable and defined at the start; returns the shape of its values."""
    if not callable(h):
        raise TypeError(
            f"{owner}: 'h' must be a function of a partition's labels (e.g. "
            f"pmp.unbiased.lcp, pmp.unbiased.co_clustering(0, 1), or your own function), "
            f"got {h!r}."
        )
    try:
        return evaluate(h, start_labels[None]).shape[1:]
    except Exception as exc:
        exc.add_note(f"(while {owner} evaluated 'h' = {_h_name(h)!r} at the starting partition)")
        raise


def check_budget(time_budget, owner):
    if time_budget is None:
        return None
    return number_arg("time_budget", time_budget, owner, low=0.0, low_open=True)


def warm_up(job, pairs=True):
    """One start and one coupled move of a throwaway pair in the calling process:
    compiles the kernels (or loads them from numba's on-disk cache) before any
    worker needs them, so a cold cache is filled once, not by every worker at once."""
    pair = job.new_pair(new_stream(0))
    if pairs:
        pair._coupled_move()


def coupled_estimates(model, var_name, h, burn_in, m, n_pairs, coupling="ot", executor=None,
                      max_sweeps=None, time_budget=None, random_seed=None, progressbar=True,
                      *, trim=0.01, ci=0.95, **options):
    r"""Unbiased estimate of the posterior mean of h(partition) from ``n_pairs``
    independent coupled pairs run in parallel (Nguyen, Trippe & Broderick 2022,
    §3.4 and §5.2; the estimator of Jacob, O'Leary & Atchadé 2020, eq. 2, lag 1).

    Each pair is the pair of :class:`pmp.CoupledGibbs`: X_0 = Y_0 = the model's
    starting partition (one block unless an ``initval`` says otherwise; the paper's
    start), X_1 by the single-chain move, then coupled moves until X_t = Y_{t-1}
    (the meeting time tau) and on to sweep m. Each gives

    .. math::

        H_{\ell:m} = \frac{1}{m-\ell+1}\sum_{t=\ell}^{m} h(X_t)
          + \sum_{t=\ell+1}^{\tau-1} \min\Big(1, \frac{t-\ell}{m-\ell+1}\Big)
            \big(h(X_t) - h(Y_{t-1})\big),

    unbiased for E[h] under the posterior; the pairs are independent, so their mean
    has an honest standard error. This runs thousands of pairs far more cheaply than
    ``pm.sample`` with one chain per pair: the model is read once, workers run only
    the numba kernels, and each pair stops as soon as its estimate is known.

    Parameters
    ----------
    model : pm.Model
        The model (None: the model in context). The partition's target must be fixed
        (hyperparameters constants), as for ``pmp.CoupledGibbs``.
    var_name : str
        The partition variable.
    h : callable
        A function of a partition's canonical labels (see
        :func:`pmp.unbiased_estimate`): a built-in (``pmp.unbiased.lcp``,
        ``co_clustering(a, b)``, ``predictive_density(model, x)``...), a
        ``PartitionFunction`` or any Python function (sent to the workers with
        cloudpickle, so closures and lambdas work). Evaluated in the workers.
    burn_in : int >= 0
        l, the first sweep averaged (0: H_{0:m}, from the start X_0 on; unbiased too,
        at a larger variance when the start is far from the posterior).
    m : int >= burn_in
        The last sweep averaged (Jacob et al. suggest m of about 10 l).
    n_pairs : int >= 1
        The number of coupled pairs (the paper's processes J).
    coupling : {"ot", "maximal", "common_rng"}, default "ot"
        As for ``pmp.CoupledGibbs``.
    executor : None, "serial", concurrent.futures.Executor or distributed.Client
        Where the pairs run, in batches (tasks of several pairs): None, a local
        ``ProcessPoolExecutor`` with one worker per core, shut down at the end;
        ``"serial"``, this process; any ``concurrent.futures.Executor`` (left open);
        a Dask ``distributed.Client`` or ``client.get_executor()`` (install the
        ``dask`` extra: ``pip install "pymc-partitions[dask]"``).
    max_sweeps : int >= m, optional
        A pair that has not met (or not reached m) by this sweep is stopped and
        censored. None: pairs run until they meet (the estimator's definition).
    time_budget : float > 0, optional
        Seconds from the start of the run (after reading the model): batches not
        started by then are cancelled, running pairs stop at their next sweep; the
        pairs not finished are censored (``interrupted`` says which). Workers compare
        against their own clock (``time.time()``): on a cluster, clocks should agree.
    random_seed : None, int, sequence of ints or numpy.random.SeedSequence
        Pair j's kernel stream comes from ``SeedSequence(random_seed).spawn(n_pairs)[j]``,
        so a seed gives bit-identical per-pair estimates serially, on a process pool of
        any size and on Dask (on machines of one architecture), whatever the batching.
        None: fresh entropy, recorded in the result's ``random_seed``.
    progressbar : bool, default True
        PyMC's progress bar over pairs.
    trim, ci : keyword-only
        As for :func:`pmp.unbiased_estimate` (trimmed proportion, interval level).
    **options
        The coupled move's other options, as for ``pmp.CoupledGibbs``: ``metric``,
        ``eta``, ``scan``, ``split_merge``, ``n_restricted_scans``, ``n_proposals``,
        ``proposal``.

    Returns
    -------
    UnbiasedEstimate
        Mean, standard error, interval, trimmed mean; per pair (index j = pair j)
        ``estimates``, ``meeting_times``, ``last_sweeps``, ``censored``; and, set by
        this runner, ``seconds`` (each pair's wall time; NaN for pairs never started;
        the per-processor times ξ^j that :func:`pmp.naive_estimates` matches),
        ``interrupted`` (pairs stopped by the time budget, started or not),
        ``random_seed`` (the entropy of the root SeedSequence) and ``wall_time``.
        Censored pairs are left out of the averages, counted in ``n_censored`` and
        announced by a :class:`CensoredPairsWarning`; ``survival()`` gives the
        meeting-time survival with them right-censored.

    Errors in a worker (for instance an h that fails on some partition) reach the
    caller as the original exception, with a note naming the pair and the worker's
    traceback; the other tasks are cancelled.
    """
    from pymc_partitions.unbiased.aggregate import aggregate

    owner = "coupled_estimates"
    burn_in, m = check_window(burn_in, m, owner)
    n_pairs = integer_arg("n_pairs", n_pairs, owner, minimum=1)
    if max_sweeps is not None:
        max_sweeps = integer_arg("max_sweeps", max_sweeps, owner, minimum=1)
        if max_sweeps < m:
            raise ValueError(f"{owner}: 'max_sweeps' = {max_sweeps} must be >= 'm' = {m} (a "
                             f"pair needs m sweeps for its estimate), or None.")
    time_budget = check_budget(time_budget, owner)
    trim, ci, root, runner = run_arguments(trim, ci, progressbar, random_seed, executor, owner)
    try:
        target, pair_options = read_model(model, var_name, owner,
                                          {"coupling": coupling, **options})
        shape = check_h(h, target.start_labels, owner)
        job = CoupledJob(target, pair_options, h, shape, burn_in, m, max_sweeps, root.entropy,
                         tuple(root.spawn_key), root.pool_size)
        payload = job
        if not runner.serial:
            payload = (f"{id(job)}-{time.time_ns()}", dumps_payload(job, owner))
            warm_up(job)
        start = time.time()
        deadline = None if time_budget is None else start + time_budget
        results, unstarted = run_tasks(runner, run_coupled_batch, payload,
                                       batches(n_pairs, runner.n_workers), deadline,
                                       "Coupled pairs", progressbar)
    finally:
        runner.shutdown()
    pairs = [None] * n_pairs
    seconds = np.full(n_pairs, np.nan)
    interrupted = np.zeros(n_pairs, dtype=bool)
    for batch in results:
        for index, estimate, secs, stopped in batch:
            pairs[index], seconds[index], interrupted[index] = estimate, secs, stopped
    for index in unstarted:
        pairs[index] = PairEstimate.censored_at(0, shape)
        interrupted[index] = True
    dims = h.dims if isinstance(h, PartitionFunction) else None
    coords = h.coords if isinstance(h, PartitionFunction) else None
    result = aggregate(pairs, burn_in, m, trim, ci, name=_h_name(h), dims=dims, coords=coords)
    result.seconds = seconds
    result.interrupted = interrupted
    result.random_seed = root.entropy
    result.wall_time = time.time() - start
    return result


__all__ = ["FrozenTarget", "coupled_estimates", "read_model", "run_pair"]
