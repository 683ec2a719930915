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

Run:  python examples/benchmark_analysis.py large [n ...]

Large n (issue 33): point_estimate and credible_ball from 100 draws at n = 10^4 and
10^5 (or the n given), old path (method="matrix", the n x n co-clustering counts;
only where it fits: 0.75 GiB at 10^4, 74.5 GiB at 10^5) against the new
(method="draws": contingency tables of the draws, items with the same labels in every
draw searched as one). Draws like a sampler's: 10 blocks, 80 % of the items never
move, the other 20 % sit between two blocks and switch with probability 0.3 in each
draw (so many items share their labels in every draw, as in a real trace). Each
figure is one call (a large problem), after a warm-up call that compiles; CPU seconds
are the figure to read on a shared machine. salso's defaults (16 runs, 10 zealous
updates) and two cheaper settings: no zealous updates, and a 8 s budget (seconds=8).
Also 1000 draws at the largest n with no zealous updates and 4 runs.

Run:  python examples/benchmark_analysis.py gibbs [n] [repeats]

Issue 33's case: point_estimate (salso's defaults) on 100 real Gibbs draws at
n = 10^5 (or the n given) of 10 standardised 2-D Gaussians: well separated (centres
>= 8 noise sd apart in [-20, 20]^2, as examples/benchmark_large_n.py on branch
subclusters) and overlapping (>= 2.5 sd apart in [-6, 6]^2). The draws are the last
100 of 150 iterations of pmp.Gibbs from one block with alpha = 1 and sigma = the true
within-cluster sd fixed (cached in the temporary folder, pmp_gibbs_draws_*.npy, so a
second run does not resample). Medians of ``repeats`` (3) calls with all of numba's
threads and one call with one thread (the runs go in parallel: the same estimate),
and one call with max_zealous=0.
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


def sampler_like_draws(n, m, n_blocks=10, uncertain=0.2, switch=0.3, seed=0):
    """(m, n) canonical draws: items in n_blocks equal blocks; a fraction ``uncertain``
    of them (chosen at random) each have a second block and are in it with
    probability ``switch`` in each draw, independently."""
    rng = np.random.default_rng(seed)
    truth = rng.permutation(np.repeat(np.arange(n_blocks), -(-n // n_blocks))[:n])
    draws = np.tile(truth, (m, 1))
    moving = np.flatnonzero(rng.random(n) < uncertain)
    other = (truth[moving] + rng.integers(1, n_blocks, moving.size)) % n_blocks
    switched = rng.random((m, moving.size)) < switch
    draws[:, moving] = np.where(switched, other, truth[moving])
    return pmp.canonicalize(draws), truth


def large(sizes=(10_000, 100_000)):
    import warnings

    sizes = [int(float(s)) for s in sizes]
    warm, _ = sampler_like_draws(70_000, 5, seed=9)  # compiles both count dtypes
    for loss in ("VI", "binder"):
        pmp.point_estimate(warm[:, :500], loss=loss, n_runs=1, method="matrix")
        pmp.point_estimate(warm, loss=loss, n_runs=1, max_zealous=1, method="draws")
    print("one call each (after a warm-up call that compiles); 100 draws unless said")
    settings = {"defaults": {}, "no zealous": {"max_zealous": 0}, "seconds=8": {"seconds": 8}}
    for n in sizes:
        draws, truth = sampler_like_draws(n, 100, seed=1)
        rows = len(np.unique(draws.T, axis=0))
        print(f"n = {n}: {rows} distinct item rows")
        for loss in ("VI", "binder"):
            for label, kw in settings.items():
                for method in ("matrix", "draws"):
                    if method == "matrix" and (n > 20_000 or label != "defaults"):
                        continue  # 8 n^2 bytes: 74.5 GiB at 10^5
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", pmp.analysis.SearchBudgetWarning)
                        t, est = median_seconds(
                            lambda: pmp.point_estimate(draws, loss=loss, seed=1, method=method,
                                                       **kw), 1)
                    print(f"  point_estimate {loss:6s} {method:6s} {label:10s}: {t}  "
                          f"E[{loss}] = {est.expected_loss:.5g}, {est.labels.max() + 1} blocks, "
                          f"ARI to the 10 blocks {pmp.adjusted_rand_index(est.labels, truth):.3f}",
                          flush=True)
            t, ball = median_seconds(lambda: pmp.credible_ball(draws, est, loss=loss), 1)
            print(f"  credible_ball  {loss:6s}: {t}  radius {ball.radius:.4g}", flush=True)
    n = sizes[-1]
    draws, truth = sampler_like_draws(n, 1000, seed=2)
    t, est = median_seconds(
        lambda: pmp.point_estimate(draws, seed=1, n_runs=4, max_zealous=0), 1)
    print(f"n = {n}, 1000 draws, VI, 4 runs, no zealous: {t}  E[VI] = "
          f"{est.expected_loss:.5g}, ARI {pmp.adjusted_rand_index(est.labels, truth):.3f}")
    t, ball = median_seconds(lambda: pmp.credible_ball(draws, est), 1)
    print(f"n = {n}, 1000 draws, credible_ball VI: {t}")


def gaussians(n, n_clusters=10, seed=0, box=20.0, gap=8.0):
    """(n, 2) standardised points of ``n_clusters`` clusters, centres uniform on
    [-box, box]^2 redrawn until every two are >= ``gap`` noise sd apart; unit noise."""
    rng = np.random.default_rng(seed)
    while True:
        centres = rng.uniform(-box, box, size=(n_clusters, 2))
        gaps = np.linalg.norm(centres[:, None] - centres[None], axis=-1)
        if np.min(gaps[np.triu_indices(n_clusters, 1)]) >= gap:
            break
    truth = rng.integers(0, n_clusters, n)
    y = centres[truth] + rng.normal(size=(n, 2))
    return (y - y.mean(0)) / y.std(0), truth


def gibbs_draws(n, case):
    """The last 100 of 150 Gibbs iterations (alpha, sigma fixed), cached on disk."""
    import os
    import tempfile

    path = os.path.join(tempfile.gettempdir(), f"pmp_gibbs_draws_{case}_{n}.npy")
    y, truth = gaussians(n) if case == "separated" else gaussians(n, box=6.0, gap=2.5)
    if os.path.exists(path):
        return np.load(path), truth
    import pymc as pm

    within = float(np.mean(np.std(y[truth == 0], axis=0)))
    with pm.Model():
        z = pmp.CRP("z", alpha=1.0, n=n)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=1.0, sigma=within, observed=y)
        idata = pm.sample(draws=150, tune=0, chains=1, cores=1, step=[pmp.Gibbs([z])],
                          random_seed=1, progressbar=False, compute_convergence_checks=False)
    draws = idata.posterior["z"].values[0][-100:]
    np.save(path, draws)
    return draws, truth


def gibbs(n=100_000, repeats=3):
    import numba

    n, repeats = int(float(n)), int(repeats)
    threads = numba.get_num_threads()
    warm, _ = sampler_like_draws(70_000, 5, seed=9)  # compiles the int32 counts' kernel
    pmp.point_estimate(warm, n_runs=1, max_zealous=1)
    for case in ("separated", "overlapping"):
        draws, truth = gibbs_draws(n, case)
        rows = len(np.unique(draws.T, axis=0))
        print(f"n = {n}, {case}, 100 Gibbs draws, {rows} distinct item rows")
        for label, count, kw, reps in (
            (f"defaults, {threads} threads", threads, {}, repeats),
            ("defaults, 1 thread", 1, {}, 1),
            (f"max_zealous=0, {threads} threads", threads, {"max_zealous": 0}, 1),
        ):
            numba.set_num_threads(count)
            t, est = median_seconds(lambda: pmp.point_estimate(draws, seed=1, **kw), reps)
            ari = pmp.adjusted_rand_index(est.labels, truth)
            print(f"  {label:26s} ({reps} calls): {t}  E[VI] = {est.expected_loss:.6f}, "
                  f"{est.labels.max() + 1} blocks, ARI {ari:.3f}", flush=True)
        numba.set_num_threads(threads)


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
    if sys.argv[1:2] == ["large"]:
        large(*[sys.argv[2:]] if sys.argv[2:] else [])
    elif sys.argv[1:2] == ["gibbs"]:
        gibbs(*sys.argv[2:4])
    else:
        main(*sys.argv[1:2])
