"""Benchmark: seconds per collapsed Gibbs sweep, against an arithmetic floor.

Run:  python examples/benchmark_gibbs.py

For each (N, D) it prints, all measured in this run (medians over repeats):
- ``sweep``: one Gibbs sweep of pmp's kernel (CollapsedNormal, CRP prior), after
  burn-in, with the number of blocks K reached;
- ``floor``: one vectorised numpy evaluation of the N x K x D Gaussian log densities
  of every item under every block (what any sweep must at least compute);
- their ratio.
Then, at N = 300, the microseconds per ``pm.sample`` draw split into our step and
the rest (PyMC's loop and trace).
"""

import time

import numpy as np
import pymc as pm

import pymc_partitions as pmp
from pymc_partitions.datasets import nguyen_synthetic
from pymc_partitions.kernels import assign_labels, gibbs, new_state
from pymc_partitions.kernels.components import normal
from pymc_partitions.kernels.priors import crp
from pymc_partitions.kernels.random import new_stream
from _timing import median_time


def synthetic_nguyen(n=300, seed=0):
    """Nguyen et al. (2022) App. G.3 'synthetic' (see ``pmp.datasets.nguyen_synthetic``)."""
    return nguyen_synthetic(n, seed=seed)[0]


def mixture(n, d, n_clusters=10, seed=0):
    """n items from 10 well-separated Gaussian clusters (unit noise, centres sd 4)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0.0, 4.0, size=(n_clusters, d))
    return centres[rng.integers(0, n_clusters, n)] + rng.normal(size=(n, d))


# (label, data, alpha, tau, sigma, repeats, burn-in sweeps)
CASES = [
    ("Nguyen synthetic", lambda: synthetic_nguyen(300), 0.2, 0.75**0.5, 0.7**0.5, 300, 100),
    ("10 clusters", lambda: mixture(300, 2), 1.0, 4.0, 1.0, 300, 100),
    ("10 clusters", lambda: mixture(10_000, 2), 1.0, 4.0, 1.0, 21, 20),
    ("10 clusters", lambda: mixture(10_000, 10), 1.0, 4.0, 1.0, 21, 20),
    ("10 clusters", lambda: mixture(100_000, 2), 1.0, 4.0, 1.0, 7, 10),
]


def bench_sweep(x, alpha, tau, sigma, repeats, burn_in):
    n, d = x.shape
    params = normal.make_params(np.zeros(d), np.full(d, tau), np.full(d, sigma), n=n)
    stats, data, state = normal.alloc_stats(n, d, params), normal.make_data(x), new_state(n)
    assign_labels(state, params, stats, data, np.zeros(n, dtype=np.int64))
    prior = crp.make_params(alpha, n)
    log_w, order = np.empty(n + 1), np.arange(n, dtype=np.int64)
    stream = new_stream(1)
    gibbs.run_sweeps(stream, burn_in, state, prior, params, stats, data, log_w, order)
    sweep = median_time(
        lambda: gibbs.run_sweeps(stream, 1, state, prior, params, stats, data, log_w, order),
        repeats,
    )
    k = int(state.counts[0])
    # Floor: N x K x D Gaussian log densities, vectorised numpy, with K the blocks reached.
    active = state.active[:k]
    mean, prec, lognorm = stats.mean[active], stats.prec[active], stats.lognorm[active]

    def floor():
        r = x[:, None, :] - mean[None, :, :]
        return lognorm[None, :] - 0.5 * np.einsum("nkd,nkd,kd->nk", r, r, prec)

    return sweep, median_time(floor, repeats), k


def bench_pm_sample(n=300, draws=2000):
    x = synthetic_nguyen(n)
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=0.2, n=n)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=0.75**0.5, sigma=0.7**0.5, observed=x)
        step = pmp.Gibbs([z])
    inner = []
    original = step.step

    def timed(point):
        t0 = time.perf_counter()
        out = original(point)
        inner.append(time.perf_counter() - t0)
        return out

    step.step = timed
    with model:
        pm.sample(draws=200, tune=0, chains=1, step=step, progressbar=False,
                  compute_convergence_checks=False, random_seed=0)  # warm-up
        inner.clear()
        t0 = time.perf_counter()
        pm.sample(draws=draws, tune=0, chains=1, step=step, progressbar=False,
                  compute_convergence_checks=False, random_seed=1, return_inferencedata=False)
        total = time.perf_counter() - t0
    return total / draws * 1e6, float(np.median(inner)) * 1e6, float(np.mean(inner)) * 1e6


def main():
    print(f"{'data':<17} {'N':>7} {'D':>3} {'K':>4} {'sweep (ms)':>11} {'floor (ms)':>11} "
          f"{'sweep/floor':>12}")
    for label, make, alpha, tau, sigma, repeats, burn_in in CASES:
        x = make()
        sweep, floor, k = bench_sweep(x, alpha, tau, sigma, repeats, burn_in)
        print(f"{label:<17} {x.shape[0]:>7} {x.shape[1]:>3} {k:>4} {sweep * 1e3:>11.4f} "
              f"{floor * 1e3:>11.4f} {sweep / floor:>12.2f}")
    per_draw, step_median, step_mean = bench_pm_sample()
    print(f"\npm.sample, Nguyen synthetic N = 300 (z only, one sweep per draw): {per_draw:.1f} us per draw "
          f"(whole call, incl. set-up), of which our step: median {step_median:.1f} us "
          f"(mean {step_mean:.1f} us); PyMC's loop and trace: {per_draw - step_mean:.1f} us")


if __name__ == "__main__":
    main()
