"""Benchmark: posterior similarity matrix and point estimates on synthetic draws.

Run:  python examples/benchmark_analysis.py [repeats]

Synthetic draws, made cheaply with numpy: a 10-block partition with 5 % of the
items relabelled at random (among 12 labels) in each draw. Prints the median
wall-clock and CPU seconds over a few repeats (after one warm-up call that
compiles the kernels):

- pmp.similarity_matrix for 4 chains x 1000 draws at n = 2000;
- pmp.dahl_estimate, and pmp.point_estimate with the Binder and VI losses
  (SALSO: 16 runs, 10 zealous attempts, salso's defaults), at n = 1000 from
  4000 draws (all distinct).
"""

import sys
import time

import numpy as np

import pymc_partitions as pmp


def synthetic_draws(n, shape, noise=0.05, n_blocks=10, seed=0):
    rng = np.random.default_rng(seed)
    truth = np.repeat(np.arange(n_blocks), -(-n // n_blocks))[:n]
    draws = np.broadcast_to(truth, (*shape, n)).copy()
    flip = rng.random(draws.shape) < noise
    draws[flip] = rng.integers(0, n_blocks + 2, flip.sum())
    return pmp.canonicalize(draws), truth


def median_seconds(fn, repeats):
    """Median wall-clock and CPU (this process) seconds of ``fn()``; CPU time is the
    figure to read on a shared machine."""
    wall, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = fn()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return f"{np.median(wall):7.2f} s wall {np.median(cpu):7.2f} s CPU", result


def main(repeats=3):
    repeats = int(repeats)
    draws, _ = synthetic_draws(2000, (4, 1000))
    pmp.similarity_matrix(draws[:1, :10, :50])  # compile
    t, psm = median_seconds(lambda: pmp.similarity_matrix(draws), repeats)
    print(f"medians of {repeats} repeats")
    print(f"similarity_matrix  n=2000, 4 x 1000 draws, float32: {t}  "
          f"({psm.nbytes / 2**20:.0f} MiB)")

    draws, truth = synthetic_draws(1000, (4000,), seed=1)
    small = draws[:20, :30]
    for loss in ("binder", "VI"):
        pmp.point_estimate(small, loss=loss, n_runs=1)  # compile
    pmp.dahl_estimate(small)
    t, est = median_seconds(lambda: pmp.dahl_estimate(draws), repeats)
    print(f"dahl_estimate      n=1000, 4000 draws:              {t}  "
          f"E[binder] = {est.expected_loss:.1f}")
    for loss in ("binder", "VI"):
        t, est = median_seconds(lambda: pmp.point_estimate(draws, loss=loss, seed=1), repeats)
        print(f"point_estimate     n=1000, 4000 draws, {loss:6s}:      {t}  "
              f"E[{loss}] = {est.expected_loss:.4f}, {est.labels.max() + 1} blocks, "
              f"VI to the 10-block partition {pmp.variation_of_information(est.labels, truth):.4f}")


if __name__ == "__main__":
    main(*sys.argv[1:2])
