"""``pmp.coupled_estimates`` (many coupled pairs on an executor) and the naive-parallel
baseline ``pmp.naive_estimates``: the runner's pair is the reference pair of
test_coupled.py bit for bit, the same seed gives the same per-pair estimates serially,
on a process pool and on Dask, errors in workers reach the caller, a time budget
censors what it interrupts, bad arguments are named."""

import multiprocessing
import os
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pymc as pm
import pytest
from helpers import exact_posterior, normal_model

import pymc_partitions as pmp
from pymc_partitions.kernels.random import new_stream
from pymc_partitions.step_methods.target import PartitionTarget
from pymc_partitions.unbiased import CensoredPairsWarning, executors
from pymc_partitions.step_methods.coupled_pair import CoupledPair
from pymc_partitions.unbiased.runner import child_seed


def lcp(labels):  # a plain Python h (sent to workers by cloudpickle)
    return np.bincount(labels).max() / labels.shape[0]


@pytest.fixture(scope="module")
def pool():
    # Created (and its workers forked) before any Dask cluster starts threads here.
    with ProcessPoolExecutor(2) as executor:
        list(executor.map(int, range(2)))
        yield executor


@pytest.fixture(scope="module")
def model24():
    return normal_model(24, seed=5, spread=2.0, alpha=1.0)


def run(model, executor, **kwargs):
    options = {"h": pmp.unbiased.lcp, "burn_in": 2, "m": 10, "n_pairs": 12, "random_seed": 7,
               "progressbar": False}
    options.update(kwargs)
    return pmp.coupled_estimates(model, "z", executor=executor, **options)


def reference_pair(model, seed, burn_in, m, h):
    """H_{l:m} of one pair driven by hand, as test_coupled.py's reference does: the
    model read by PartitionTarget, h at every sweep."""
    target = PartitionTarget(model, model.rvs_to_values[model["z"]], "test")
    values, prior, per_lik = target.params(model.initial_point())
    pair = CoupledPair(target, values, prior, per_lik, stream=new_stream(seed))
    start = np.zeros(target.n, np.int64)
    pair.start(start, start)
    hx, hy = [h(start)], []  # X_0, the start (read by H_{0:m} only)
    while True:
        x, y, _ = pair.summaries()
        hx.append(h(x))
        hy.append(h(y))
        if pair.met and pair.t >= m:
            break
        pair.advance()
    pair.hx = np.array(hx)  # h(X_t), t = 0..T
    return pmp.unbiased.pair_estimate(pair.hx, np.array(hy), pair.tau, burn_in, m), pair


def test_pair_seeds_are_the_spawned_children():
    root = np.random.SeedSequence(123)
    children = np.random.SeedSequence(123).spawn(7)
    for i, child in enumerate(children):
        assert np.array_equal(child_seed(root, i).generate_state(4),
                              child.generate_state(4))


def test_runner_pairs_are_the_reference_pairs():
    """Pair j of the runner is the hand-driven pair with seed SeedSequence(seed).spawn[j]:
    same meeting time, same H_{l:m} to the bit (so the unbiasedness shown for the
    reference in test_coupled.py holds for the runner)."""
    model = normal_model(6, spread=2.5, alpha=0.5)
    result = pmp.coupled_estimates(model, "z", lcp, 2, 5, 8, executor="serial",
                                   random_seed=21, progressbar=False)
    for j, seed in enumerate(np.random.SeedSequence(21).spawn(8)):
        ref, pair = reference_pair(model, seed, 2, 5, lcp)
        assert result.meeting_times[j] == pair.tau
        assert result.last_sweeps[j] == pair.t
        assert result.estimates[j] == ref.value, j
    assert not result.censored.any()
    assert np.isfinite(result.seconds).all() and not result.interrupted.any()


def test_unbiased_where_the_naive_baseline_is_biased():
    """Exact E[lcp] by enumeration (n = 6, start at one block far from the posterior):
    the coupled mean over 3000 pairs (l = 1, m = 3) is within 3.5 SE of it; naive
    chains of 3 sweeps (none discarded) are off by more than 5 SE."""
    model = normal_model(6, spread=2.5, alpha=0.5)
    exact = exact_posterior(model)
    truth = float(sum(p * lcp(part) for p, part in zip(exact.p, exact.partitions)))
    coupled = pmp.coupled_estimates(model, "z", pmp.unbiased.lcp, 1, 3, 3000,
                                    executor="serial", random_seed=4, progressbar=False)
    naive = pmp.naive_estimates(model, "z", pmp.unbiased.lcp, n_sweeps=np.full(3000, 3),
                                executor="serial", random_seed=4, progressbar=False)
    assert np.all(naive.sweeps == 3) and np.all(naive.discarded == 0)
    z_coupled = (coupled.mean - truth) / coupled.std_error
    z_naive = (naive.mean - truth) / naive.std_error
    assert abs(z_coupled) < 3.5, (coupled.mean, truth, z_coupled)
    assert abs(z_naive) > 5, (naive.mean, truth, z_naive)


def test_burn_in_zero_averages_from_the_start_and_is_unbiased():
    """H_{0:m} (Jacob et al.'s estimator with k = 0) is allowed: the average starts at
    X_0, the one-block start (LCP 1, far from the posterior), the bias correction at
    sweep 1. The runner's pairs are the hand-driven reference pairs to the bit; the
    mean of 2000 pairs is within 3.5 SE of the exact E[lcp] by enumeration (n = 6),
    which the plain average of h over sweeps 0..m misses by more than 5 SE (the
    test has power)."""
    model = normal_model(6, spread=2.5, alpha=0.5)
    exact = exact_posterior(model)
    truth = float(sum(p * lcp(part) for p, part in zip(exact.p, exact.partitions)))
    m, n_pairs = 2, 2000
    result = pmp.coupled_estimates(model, "z", pmp.unbiased.lcp, 0, m, n_pairs,
                                   executor="serial", random_seed=9, progressbar=False)
    assert result.burn_in == 0 and not result.censored.any()
    plain = []
    for j, seed in enumerate(np.random.SeedSequence(9).spawn(n_pairs)[:100]):
        ref, pair = reference_pair(model, seed, 0, m, lcp)
        assert pair.hx[0] == 1.0  # h(X_0): the one-block start is in the average
        assert result.meeting_times[j] == pair.tau and result.estimates[j] == ref.value, j
        plain.append(pair.hx[: m + 1].mean())
    z = (result.mean - truth) / result.std_error
    assert abs(z) < 3.5, (result.mean, truth, z)
    z_plain = (np.mean(plain) - truth) / (np.std(plain, ddof=1) / np.sqrt(len(plain)))
    assert z_plain > 5, z_plain


def test_serial_pool_and_dask_give_identical_pair_estimates(model24, pool, monkeypatch):
    """Same seed: bit-identical per-pair estimates and meeting times serially (one pair
    per task), on a process pool of 2 workers (up to 2 pairs per task) and on a Dask
    LocalCluster of 2 workers (through the client itself and its executor); another
    seed differs."""
    distributed = pytest.importorskip("distributed")
    serial = run(model24, "serial")
    monkeypatch.setattr(executors, "MIN_TASKS", 3)
    assert max(len(b) for b in executors.batches(12, 2)) == 2
    pooled = run(model24, pool)
    monkeypatch.undo()
    assert len(np.unique(serial.estimates)) > 3  # not a trivial comparison
    assert np.array_equal(serial.estimates, pooled.estimates)
    assert np.array_equal(serial.meeting_times, pooled.meeting_times)
    # Worker threads of this process, talking over TCP on the loopback interface (so
    # tasks and results are serialised as on a real cluster).
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  protocol="tcp", host="127.0.0.1",
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        for executor in (client, client.get_executor()):
            dasked = run(model24, executor)
            assert np.array_equal(serial.estimates, dasked.estimates)
            assert np.array_equal(serial.meeting_times, dasked.meeting_times)
        with pytest.raises(ValueError, match="h refuses"):
            run(model24, client, h=refuses_three_blocks)
    other = run(model24, "serial", random_seed=8)
    assert not np.array_equal(serial.estimates, other.estimates)


def refuses_three_blocks(labels):
    if labels.max() >= 2:
        raise ValueError(f"h refuses a partition with {labels.max() + 1} blocks")
    return float(labels.max())


def test_worker_error_reaches_the_caller(model24, pool):
    """An h that fails on some partitions (fine at the start): the worker's exception
    reaches the caller with its type, message, the pair and the worker's traceback."""
    with pytest.raises(ValueError, match="h refuses a partition") as info:
        run(model24, pool, h=refuses_three_blocks)
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "coupled pair" in notes and "refuses_three_blocks" in notes
    with pytest.raises(ValueError, match="h refuses a partition") as info:
        run(model24, "serial", h=lambda z: refuses_three_blocks(z))
    assert "coupled pair" in "\n".join(info.value.__notes__)


def test_time_budget_returns_finished_pairs_and_counts_the_censored(model24, pool):
    """Serial: the pairs finished within the budget are the first ones, identical to an
    unbudgeted run; the interrupted and never-started pairs are censored and counted.
    Pool: batches not started at the deadline are cancelled (last sweep 0)."""
    kwargs = {"burn_in": 2, "m": 2000, "n_pairs": 400}
    # Compiled (or loaded) before the clock starts: a cold first pair can take the
    # whole budget on a loaded machine, and then no pair finishes.
    run(model24, "serial", **{**kwargs, "n_pairs": 1})
    with pytest.warns(CensoredPairsWarning):
        cut = run(model24, "serial", time_budget=3.0, **kwargs)
    done = ~cut.censored
    k = int(done.sum())
    assert 0 < k < 400 and cut.n_censored == 400 - k
    assert np.array_equal(done, np.arange(400) < k)  # serial: a prefix
    assert np.array_equal(cut.interrupted, cut.censored)
    assert np.all(cut.last_sweeps[k + 1:] == 0)  # never started
    full = run(model24, "serial", **{**kwargs, "n_pairs": k})
    assert np.array_equal(full.estimates, cut.estimates[:k])
    start = time.perf_counter()
    with pytest.warns(CensoredPairsWarning):
        cut = run(model24, pool, time_budget=3.0, **kwargs)
    assert time.perf_counter() - start < 15
    assert 0 < cut.n_estimates < 400
    assert np.array_equal(cut.interrupted, cut.censored)
    assert np.any(cut.last_sweeps == 0) and np.all(np.isnan(cut.seconds[cut.last_sweeps == 0]))
    assert cut.survival() is not None


def test_max_sweeps_censors_unmet_pairs(model24):
    with pytest.warns(CensoredPairsWarning):
        cut = run(model24, "serial", burn_in=1, m=6, max_sweeps=6, n_pairs=30)
    free = run(model24, "serial", burn_in=1, m=6, n_pairs=30)
    late = free.meeting_times > 6
    assert late.any() and (~late).any()
    assert np.array_equal(cut.censored, late) and not cut.interrupted.any()
    assert np.all(cut.last_sweeps[late] == 6) and np.all(cut.meeting_times[late] == -1)
    assert np.array_equal(cut.estimates[~late], free.estimates[~late])


@pytest.mark.parametrize("kwargs, error, match", [
    ({"burn_in": -1}, ValueError, "'burn_in'"),
    ({"m": 1}, ValueError, "'m'"),
    ({"n_pairs": 0}, ValueError, "'n_pairs'"),
    ({"n_pairs": 2.5}, ValueError, "'n_pairs'"),
    ({"coupling": "label"}, ValueError, "'coupling'"),
    ({"executor": 4}, TypeError, "'executor'"),
    ({"max_sweeps": 5}, ValueError, "'max_sweeps'"),
    ({"time_budget": -1.0}, ValueError, "'time_budget'"),
    ({"random_seed": 1.5}, TypeError, "'random_seed'"),
    ({"random_seed": -3}, TypeError, "'random_seed'"),
    ({"progressbar": "yes"}, TypeError, "'progressbar'"),
    ({"h": 3}, TypeError, "'h'"),
    ({"trim": 0.7}, ValueError, "'trim'"),
    ({"start": "prior"}, TypeError, "unknown option"),
    ({"eta": 2.0}, ValueError, "'eta'"),
])
def test_bad_arguments_name_the_argument(model24, kwargs, error, match):
    with pytest.raises(error, match=match):
        run(model24, "serial", **kwargs)


def test_model_errors_name_the_argument(model24):
    with pytest.raises(ValueError, match="'var_name'"):
        pmp.coupled_estimates(model24, "w", lcp, 1, 2, 2, executor="serial")
    with pytest.raises(TypeError, match="'model'"):
        pmp.coupled_estimates("model", "z", lcp, 1, 2, 2, executor="serial")
    with pm.Model() as free:
        s = pm.HalfNormal("s")
        z = pmp.CRP("z", alpha=1.0, n=4)
        pmp.CollapsedNormal("y", partition=z, sigma=s, observed=np.zeros((4, 1)))
    with pytest.raises(pmp.PartitionModelError, match="free variable"):
        pmp.coupled_estimates(free, "z", lcp, 1, 2, 2, executor="serial")


def test_naive_baseline_matches_the_coupled_wall_times_and_is_reproducible(model24, pool):
    coupled = run(model24, "serial", n_pairs=6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no censoring warning from the baseline
        naive = pmp.naive_estimates(model24, "z", lcp, coupled, executor="serial",
                                    random_seed=7, progressbar=False)
    assert naive.n_chains == 6
    assert np.all(naive.seconds >= coupled.seconds)  # ran (at least) the pair's time
    assert np.array_equal(naive.discarded, np.floor(0.1 * naive.sweeps).astype(int))
    sweeps = np.array([5, 40, 13, 7])
    a = pmp.naive_estimates(model24, "z", lcp, n_sweeps=sweeps, executor="serial",
                            random_seed=3, progressbar=False)
    b = pmp.naive_estimates(model24, "z", lcp, n_sweeps=sweeps, executor=pool,
                            random_seed=3, progressbar=False)
    assert np.array_equal(a.sweeps, sweeps) and np.array_equal(a.estimates, b.estimates)
    assert a.to_dataset()["estimate"].shape == (4,)
    for kwargs, match in [({}, "exactly one"), ({"n_sweeps": [3, 0]}, "'n_sweeps'"),
                          ({"wall_times": 1.0}, "'wall_times'"),
                          ({"n_sweeps": [3], "discard": 1.0}, "'discard'")]:
        with pytest.raises((TypeError, ValueError), match=match):
            pmp.naive_estimates(model24, "z", lcp, executor="serial", **kwargs)


INTERRUPTED_RUN = """
import multiprocessing, os, signal, threading, time
from helpers import normal_model
import pymc_partitions as pmp

# Ctrl-C's KeyboardInterrupt, as in a terminal. A process started in the background
# by a non-interactive shell (CI: .ci/run's stacks) inherits SIGINT ignored, and then
# Python installs no handler: the interrupt would never arrive.
signal.signal(signal.SIGINT, signal.default_int_handler)
model = normal_model(24, seed=5, spread=2.0, alpha=1.0)

def interrupt_when_running():
    while not multiprocessing.active_children():  # the run's pool has started
        time.sleep(0.05)
    time.sleep(2.0)
    os.kill(os.getpid(), signal.SIGINT)  # what Ctrl-C sends

threading.Thread(target=interrupt_when_running, daemon=True).start()
try:
    pmp.coupled_estimates(model, "z", pmp.unbiased.lcp, burn_in=2, m=1_000_000, n_pairs=4,
                          random_seed=7, progressbar=False)
    print("finished", flush=True)
except KeyboardInterrupt:
    deadline = time.time() + 10
    for child in multiprocessing.active_children():
        child.join(timeout=max(0.0, deadline - time.time()))
    print("alive after the interrupt:", [c.pid for c in multiprocessing.active_children()],
          flush=True)
"""


def test_interrupt_stops_the_pool_workers():
    """Issue 34, item 9: Ctrl-C during a run on the default pool stops its workers at
    once, and the process can exit. Before, the running pairs went on to their end
    (68-80 s for the README's run) and the interpreter waited for them at exit. In a
    fresh interpreter (a user's session: Python's own SIGINT handler, no other pools):
    the interrupt comes 2 s after the pool's workers exist; each pair runs 10^6 sweeps
    (~40 s), far longer than the 10 s the workers are given to be gone, and the
    process must exit within the subprocess timeout."""
    import subprocess

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(Path(__file__).resolve().parent), *[p for p in sys.path if p]]))
    out = subprocess.run([sys.executable, "-c", INTERRUPTED_RUN], capture_output=True,
                         text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "alive after the interrupt: []" in out.stdout, out.stdout


# A worker process: unpickles a task (function, payload, batch) as a process pool's
# worker does, runs it, and reports its result and which heavy modules it imported.
WORKER = """
import pickle, sys
with open(sys.argv[1], "rb") as f:
    fn, payload, batch = pickle.load(f)
out = fn(payload, batch, None)
heavy = [m for m in ("pymc", "pytensor", "arviz") if m in sys.modules]
with open(sys.argv[2], "wb") as f:
    pickle.dump((out, heavy), f)
"""


@pytest.mark.parametrize("runner_name", ["coupled", "naive"])
@pytest.mark.parametrize("h_name", ["lcp", "co_clustering", "predictive_density"])
def test_a_worker_runs_pairs_without_pymc(model24, tmp_path, runner_name, h_name):
    """Issue 4 of the compile-time issue: a worker started by spawn or forkserver
    imports what it unpickles. The task (batch function and payload, built as the
    runners build them) runs in a fresh interpreter without importing PyMC, PyTensor
    or ArviZ (4 s measured on a loaded machine before the first pair), and gives the
    serial run's results to the bit."""
    import subprocess
    import sys

    from pymc_partitions.unbiased import naive, runner

    h = {"lcp": pmp.unbiased.lcp, "co_clustering": pmp.unbiased.co_clustering(0, 23),
         "predictive_density": pmp.unbiased.predictive_density(
             model24, np.zeros((3, 2)) + np.arange(3)[:, None])}[h_name]
    root = np.random.SeedSequence(11)
    target, pair_options = runner.read_model(model24, "z", "test", {"coupling": "ot"})
    shape = runner.check_h(h, target.start_labels, "test")
    job = runner.CoupledJob(target, pair_options, h, shape, 2, 6, None, root.entropy,
                            tuple(root.spawn_key), root.pool_size)
    fn = runner.run_coupled_batch
    if runner_name == "naive":
        job = naive.NaiveJob(job, None, np.full(3, 9), 0.1)
        fn = naive.run_naive_batch
    payload = (f"{id(job)}-{time.time_ns()}", executors.dumps_payload(job, "test"))
    batch = range(1, 3)
    expected = fn(job, batch, None)  # serial (the job itself); compiles for the worker
    task, result = tmp_path / "task.pkl", tmp_path / "result.pkl"
    task.write_bytes(executors.cloudpickle.dumps((fn, payload, batch)))
    out = subprocess.run([sys.executable, "-c", WORKER, str(task), str(result)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    rows, heavy = executors.pickle.loads(result.read_bytes())
    assert heavy == []
    assert [r[0] for r in rows] == list(batch)
    for row, ref in zip(rows, expected, strict=True):
        got, want = (row[1], ref[1]) if runner_name == "naive" else (row[1].value, ref[1].value)
        assert np.array_equal(got, want) and np.all(np.isfinite(got))


@pytest.fixture(scope="module")
def spawn_pool():
    # The start method of macOS and Windows (and forkserver, Linux's from Python
    # 3.14, imports the same way): workers import what they unpickle.
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as executor:
        yield executor


def test_spawned_workers_give_the_serial_estimates(model24, spawn_pool):
    """Same seed: bit-identical per-pair estimates and meeting times on a pool of
    spawned workers (which import only the worker side) and serially; the same for
    the naive baseline with fixed sweep counts."""
    serial = run(model24, "serial", n_pairs=8)
    spawned = run(model24, spawn_pool, n_pairs=8)
    assert len(np.unique(serial.estimates)) > 2  # not a trivial comparison
    assert np.array_equal(serial.estimates, spawned.estimates)
    assert np.array_equal(serial.meeting_times, spawned.meeting_times)
    h = pmp.unbiased.co_clustering(0, 23)
    sweeps = np.array([6, 30, 11, 9])
    a, b = (pmp.naive_estimates(model24, "z", h, n_sweeps=sweeps, executor=executor,
                                random_seed=3, progressbar=False)
            for executor in ("serial", spawn_pool))
    assert np.array_equal(a.estimates, b.estimates) and np.array_equal(a.sweeps, b.sweeps)
