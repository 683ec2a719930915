"""Benchmark: the numba network simplex of ``kernels.transport`` against POT's ``ot.emd``.

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
"""

import sys
import time

import numpy as np
import ot

from pymc_partitions.kernels import transport

PROBLEMS = 20
SIZES = [2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50, 60, 70, 80, 100, 120, 140, 160,
         180, 200, 250, 300, 400]


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
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
