"""Benchmark (first version, issue 33): pmp.SubClusters against the default Gibbs at large N.

Run:  python examples/benchmark_large_n.py [N ...] [--fixed-sigma-only]
      (default: 10000 100000; ``--fixed-sigma-only`` skips the sigma-free runs)

Data: 10 well-separated Gaussian clusters in 2-D (centres >= 8 noise sd apart, unit
noise), standardised. Model: alpha ~ Gamma(1, 1), z ~ CRP(alpha), sigma ~ HalfNormal(1),
y ~ CollapsedNormal(mu0 = 0, tau = 1, sigma) (alpha and sigma free: pm.sample gives
them pmp.EscobarWest and pmp.HyperSlice). One chain, no tuning, 100 iterations, from
the default start (one block), with either ``step=[pmp.SubClusters([z])]`` or the
default steps (pmp.Gibbs for z). Every 10 iterations the script prints the wall time
since the first iteration began (PyMC's ``callback``; the start-up before it,
including PyMC's initial point, is printed apart), the adjusted Rand index against
the true labels (scikit-learn's ``adjusted_rand_score`` if installed, else
``pmp.adjusted_rand_index``) and the number of blocks holding >= 1 % of the items.

A second pair of runs fixes sigma at the true within-cluster sd (standardised),
alpha free. The issue's must-show: at N = 10^5 with alpha and sigma free from one block, ARI >=
0.8 and 8-14 blocks >= 1 % within 100 iterations, in under a minute. All figures are
from one run on this machine (shared; numba threads = its cores); the first run also
compiles the kernels (cached on disk afterwards).
"""

import sys
import time

import numpy as np
import pymc as pm

import pymc_partitions as pmp

try:
    from sklearn.metrics import adjusted_rand_score as ari
except ImportError:  # pragma: no cover - depends on the environment
    ari = pmp.adjusted_rand_index

ITERATIONS = 100
EVERY = 10


def gaussians(n, n_clusters=10, seed=0):
    """(n, 2) standardised points of ``n_clusters`` well-separated clusters and their
    labels: centres uniform on [-20, 20]^2, redrawn until every two are >= 8 noise
    sd apart; unit noise."""
    rng = np.random.default_rng(seed)
    while True:
        centres = rng.uniform(-20.0, 20.0, size=(n_clusters, 2))
        gaps = np.linalg.norm(centres[:, None] - centres[None], axis=-1)
        if np.min(gaps[np.triu_indices(n_clusters, 1)]) >= 8.0:
            break
    truth = rng.integers(0, n_clusters, n)
    y = centres[truth] + rng.normal(size=(n, 2))
    return (y - y.mean(0)) / y.std(0), truth


def model_for(y, sigma=None):
    """alpha free; sigma free (HalfNormal(1)) unless given."""
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        z = pmp.CRP("z", alpha=alpha, n=y.shape[0])
        if sigma is None:
            sigma = pm.HalfNormal("sigma", 1.0)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=1.0, sigma=sigma, observed=y)
    return model


def run(y, truth, method, sigma=None):
    model = model_for(y, sigma)
    marks = []

    def callback(trace, draw):
        marks.append(time.perf_counter())

    start = time.perf_counter()
    with model:
        step = [pmp.SubClusters([model["z"]])] if method == "SubClusters" else None
        idata = pm.sample(draws=ITERATIONS, tune=0, chains=1, cores=1, step=step,
                          random_seed=1, progressbar=False, compute_convergence_checks=False,
                          callback=callback)
    total = time.perf_counter() - start
    z = idata.posterior["z"].values[0]
    n = y.shape[0]
    first = marks[0] - (marks[1] - marks[0])  # the first iteration's start, estimated
    print(f"  {method}: start-up (model, steps, initial point, compile/load) "
          f"{first - start:.1f} s; total {total:.1f} s")
    print(f"  {'iter':>5} {'wall s':>7} {'ARI':>6} {'blocks>=1%':>10} {'K':>4} "
          f"{'alpha':>6} {'sigma':>6}")
    for t in range(EVERY - 1, ITERATIONS, EVERY):
        sizes = np.bincount(z[t])
        print(f"  {t + 1:5d} {marks[t] - first:7.1f} {ari(truth, z[t]):6.3f} "
              f"{int(np.sum(sizes >= 0.01 * n)):10d} {sizes.size:4d} "
              f"{float(idata.posterior['alpha'].values[0, t]):6.2f} "
              f"{float(idata.posterior['sigma'].values[0, t]) if sigma is None else sigma:6.3f}")
    if method == "SubClusters":
        stats = idata.sample_stats
        print(f"  splits accepted {int(stats['split_accepted'].sum())} / "
              f"{int(stats['split_proposed'].sum())}, merges accepted "
              f"{int(stats['merge_accepted'].sum())} / {int(stats['merge_proposed'].sum())}, "
              f"label updates accepted {int(stats['labels_accepted'].sum())} / {ITERATIONS}")


def main(sizes, fixed_sigma_only=False):
    import numba

    print(f"numba threads: {numba.get_num_threads()}")
    for n in sizes:
        y, truth = gaussians(n)
        within = float(np.mean(np.std(y[truth == 0], axis=0)))  # true within-cluster sd
        for sigma in ((round(within, 3),) if fixed_sigma_only else (None, round(within, 3))):
            free = "alpha and sigma free" if sigma is None else f"alpha free, sigma = {sigma}"
            print(f"\nN = {n}, D = 2, 10 clusters, {free}, one chain from one block")
            for method in ("SubClusters", "Gibbs"):
                run(y, truth, method, sigma)


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    main([int(a) for a in args] or [10_000, 100_000], "--fixed-sigma-only" in sys.argv)
