"""Benchmark: the OT coupling's draws, and the numba network simplex of
``kernels.transport`` against POT's ``ot.emd``.

Run:  python examples/benchmark_transport.py [max_K]

Dense random K x K problems (Dirichlet(1) marginals, uniform costs on [0, 1)), K =
2, 3, ..., up to ``max_K`` (default 200) or until POT has been faster at three
sizes in a row. For each K, calls of the two solvers alternate on the same
problems (20 problems, several calls each) and the script prints the median
microseconds per solve of each and the median of the per-problem ratios
numba / POT, all measured in this run:

- ``numba``: ``transport.emd_entry`` (the kernel as a sweep inlines it; one call
  from Python, about 1 us of that is the call itself);
- ``ot.emd``: POT's exact solver called from Python, as the reference
  implementation calls it (its time includes POT's Python-side checks);
- ``objmode``: the kernel's fallback path, ``emd_entry`` with a workspace that
  sends every problem to POT through numba's ``objmode`` (what a sweep pays per
  solve above the crossover).

The last lines print the crossovers: the smallest K from which POT (from Python,
and through ``objmode``) is faster for three consecutive sizes. The second sets
``transport.POT_FALLBACK_CELLS``.

First, the cost of one draw of the coupled Gibbs step (``couplings.sample_ot_pair``,
Hamming metric, nugget 1e-5) on the structures a coupled sweep meets, beside the
common-random-number draw (``sample_common_rng_pair``, no transport problem) on the
same conditionals, both in a compiled loop, in this run (minimum over rounds of the
time per draw; ratio ot / crn): K options a side (K blocks and a new block) with
every component a single edge (chains close), one 2 x 2 component (an item
moved), a star (a block split), a near-diagonal table, and dense random tables
(chains far apart). ``python examples/benchmark_transport.py 0`` runs only these.
"""

import sys
import time

import numpy as np
import ot
from numba import njit

from pymc_partitions.kernels import couplings, transport
from pymc_partitions.kernels.random import new_stream

PROBLEMS = 20
SIZES = [2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50, 60, 70, 80, 100, 120, 140, 160,
         180, 200, 250, 300, 400]


@njit(_nrt=False)
def _ot_draws(p, m1, q, m2, overlap, ws, stream, reps):
    acc = 0
    for _ in range(reps):
        a, b = couplings.sample_ot_pair(p, m1, q, m2, overlap, couplings.HAMMING, 1e-5,
                                        stream, ws)
        acc += a + b
    return acc


@njit(_nrt=False)
def _crn_draws(p, m1, q, m2, overlap, ws, stream, reps):
    acc = 0
    for _ in range(reps):
        a, b = couplings.sample_common_rng_pair(p, m1, q, m2, 1e-5, stream)
        acc += a + b
    return acc


def draw_cases(rng, capacity=64):
    """(label, K, overlap) of the structures of a coupled step; overlap is a
    (capacity, capacity) int32 table as a sweep keeps it."""
    def table():
        return np.zeros((capacity, capacity), dtype=np.int32)

    for k in (3, 5, 10):
        ov = table()
        ov[np.arange(k), rng.permutation(k)] = rng.integers(1, 20, k)
        yield f"K={k} single edges", k, ov
    ov = table()
    ov[np.arange(5), np.arange(5)] = 10
    ov[0, 1] = 1  # an item of X's block 0 is in Y's block 1: a path of 3 edges
    yield "K=5 one 2x2 + singles", 5, ov
    ov = table()
    ov[np.arange(5), np.arange(5)] = 10
    ov[0, 1], ov[1, 0] = 1, 2
    yield "K=5 dense 2x2 + singles", 5, ov
    ov = table()
    ov[np.arange(4), np.arange(4)] = 10
    ov[0, 4] = 3  # X's block 0 is split in Y
    yield "K=5 star 1x2 + singles", 5, ov
    for k, extra in ((5, 3), (10, 5)):
        ov = table()
        ov[np.arange(k), rng.permutation(k)] = rng.integers(20, 80, k)
        for _ in range(extra):
            ov[rng.integers(k), rng.integers(k)] += rng.integers(1, 3)
        yield f"K={k} near-diagonal (+{extra})", k, ov
    for k in (5, 10, 20):
        ov = table()
        ov[:k, :k] = rng.integers(1, 5, (k, k))
        yield f"K={k} dense", k, ov


def draws(rounds=15, seconds=4e-3):
    """Per-draw cost of the OT coupling against common random numbers."""
    rng = np.random.default_rng(0)
    ws = transport.new_workspace(64, 64, max_edges=4000)
    stream = new_stream(1)
    print(f"{'coupled step':<28}{'ot (us)':>9}{'crn (us)':>10}{'ot/crn':>8}")
    rows = []
    for label, k, ov in draw_cases(rng):
        m = k + 1
        p, q = rng.dirichlet(np.ones(m)), rng.dirichlet(np.ones(m))
        args = (p, m, q, m, ov, ws, stream)
        _ot_draws(*args, 2)
        _crn_draws(*args, 2)
        t0 = time.perf_counter()
        _ot_draws(*args, 100)
        reps = max(100, int(seconds / ((time.perf_counter() - t0) / 100)))
        t_ot, t_crn = [], []
        for _ in range(rounds):
            t_ot.append(timed(lambda a=args, r=reps: _ot_draws(*a, r), 1) / reps)
            t_crn.append(timed(lambda a=args, r=10 * reps: _crn_draws(*a, r), 1) / (10 * reps))
        ot_us, crn_us = min(t_ot) * 1e6, min(t_crn) * 1e6
        rows.append((label, ot_us, crn_us))
        print(f"{label:<28}{ot_us:>9.3f}{crn_us:>10.3f}{ot_us / crn_us:>8.1f}", flush=True)
    return rows


def calls_per_problem(k):
    return max(1, int(400 / k))


def timed(fn, repeats):
    t0 = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - t0) / repeats


def main(max_k=200):
    rng = np.random.default_rng(0)
    ws = transport.new_workspace(max(SIZES), max(SIZES), pot_above=2**62)
    ws_pot = transport.new_workspace(max(SIZES), max(SIZES), pot_above=0)
    print(f"{'K':>4} {'numba (us)':>11} {'ot.emd (us)':>12} {'objmode (us)':>13} "
          f"{'numba/ot.emd':>13}")
    crossover, pot_wins = None, 0
    crossover_lifted, lifted_wins = None, 0
    rows = []
    for k in SIZES:
        if k > max_k:
            break
        ours, theirs, lifted, ratios = [], [], [], []
        for _ in range(PROBLEMS):
            a = rng.dirichlet(np.ones(k))
            b = rng.dirichlet(np.ones(k))
            cost = rng.random((k, k))
            plan = np.zeros((k, k))
            reps = calls_per_problem(k)
            # Warm-up, and the check that both solve the same problem.
            value = transport.emd_entry(a, k, b, k, cost, plan, ws)
            reference = float(np.sum(ot.emd(a, b, cost) * cost))
            assert abs(value - reference) <= 1e-9 * abs(reference), (k, value, reference)
            t_ours = timed(lambda a=a, b=b, k=k, cost=cost, plan=plan: transport.emd_entry(
                a, k, b, k, cost, plan, ws), reps)
            t_theirs = timed(lambda a=a, b=b, cost=cost: ot.emd(a, b, cost), reps)
            t_lifted = timed(lambda a=a, b=b, k=k, cost=cost, plan=plan: transport.emd_entry(
                a, k, b, k, cost, plan, ws_pot), reps)
            ours.append(t_ours)
            theirs.append(t_theirs)
            lifted.append(t_lifted)
            ratios.append(t_ours / t_theirs)
        m_ours, m_theirs = np.median(ours) * 1e6, np.median(theirs) * 1e6
        m_lifted, m_ratio = np.median(lifted) * 1e6, np.median(ratios)
        rows.append((k, m_ours, m_theirs, m_lifted, m_ratio))
        print(f"{k:>4} {m_ours:>11.1f} {m_theirs:>12.1f} {m_lifted:>13.1f} {m_ratio:>13.3f}",
              flush=True)
        pot_wins = pot_wins + 1 if m_ratio > 1.0 else 0
        if pot_wins == 3 and crossover is None:
            crossover = rows[-3][0]
        lifted_wins = lifted_wins + 1 if np.median(ours) > np.median(lifted) else 0
        if lifted_wins == 3 and crossover_lifted is None:
            crossover_lifted = rows[-3][0]
        if crossover is not None and crossover_lifted is not None:
            break
    for label, k in (("ot.emd from Python", crossover), ("ot.emd through objmode",
                                                          crossover_lifted)):
        if k is None:
            print(f"crossover, {label}: none up to K = {rows[-1][0]}")
        else:
            print(f"crossover, {label}: POT faster from K = {k} ({k * k} cells)")
    print(f"transport.POT_FALLBACK_CELLS = {transport.POT_FALLBACK_CELLS}")
    return rows, crossover, crossover_lifted


if __name__ == "__main__":
    draws()
    max_k = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    if max_k > 0:
        print()
        main(max_k)
