"""Benchmark: seconds per iteration of the three Generalized Mallows samplers, and the
cost of one GM log-likelihood evaluation against vectorised numpy.

Run:  python examples/benchmark_mallows.py [--n-rankings 5000] [--repeats 10]
          [--burn-in 5] [--exact-beta-repeats 5] [--seed 0]

Data: Meilă & Chen (2010) Section 6, data set 1 of Figure 6: 10 clusters of 500
top-10 orderings of n = 20 items (N = 5000), each drawn from GM(sigma*_c, theta*) with
theta*_j = 1 for every stage, made by ``pmp.datasets.meila_chen_rankings(1)`` (whose
docstring says how the centres sigma*_c are drawn).

1. *Seconds per iteration* of ``pmp.MallowsGibbs`` with ``method`` = ``"slice"``
   (Slice-Gibbs), ``"exact_beta"`` (Beta-Gibbs with the finite-n B~) and ``"beta"``
   (the paper's infinite-n Beta-Gibbs), T_Gibbs = 10, T_Slices = 3, alpha = 1,
   nu = 1, r_j = 1. What is timed is ``step.step(point)``, the whole iteration as
   ``pm.sample`` runs it (reassignment of the N rankings and the cluster parameters,
   plus the per-draw statistics), without PyMC's loop and trace: a step's state is
   spread over several kernels, so driving them directly (as
   ``benchmark_gibbs.py`` does for the collapsed Gibbs kernel) would re-implement the
   step. Each chain starts at the true partition (K = 10), runs ``--burn-in``
   iterations (compilation excluded: one untimed iteration on the same model first),
   then the median of ``--repeats`` timed iterations is printed with K at the end.
2. *GM log-likelihood per (ranking, cluster)*: log GM(pi_i | sigma_c, theta_c) for all
   N rankings and K = 10 clusters (true centres, theta_c drawn Uniform(0.5, 1.5) per
   stage), by the kernel (``kernels.mallows.gm_log_likelihood_batch``, one call per
   cluster: Fenwick-tree codes, O(t log n) per pair) and by one vectorised numpy
   evaluation (positions gathered, codes by a (K, N, t, t) comparison, O(t^2) per
   pair). Same inputs, same outputs (asserted to agree to 1e-9); nanoseconds per pair
   and their ratio, medians of ``--repeats`` (x 5) in the same run.

Measured (Python 3.11, numba, one core of a 2-core machine shared with a CI job;
``python examples/benchmark_mallows.py``, defaults, wall time 30 s):

==============  =============  =====  ========
method          s / iteration  timed  K at end
==============  =============  =====  ========
``slice``       0.028          10     10
``exact_beta``  1.65           5      10
``beta``        0.100          10     10
==============  =============  =====  ========

Against the previous version of this benchmark (same data, same machine): ``slice``
0.058 -> 0.022-0.028 s (the stage normalisers log psi_{n-j}(theta_j) are now tabulated
per cluster, :func:`~pymc_partitions.kernels.mallows.log_psi_cumulative`, instead of
recomputed for every (ranking, cluster) pair), ``exact_beta`` 2.06 -> 1.65 s (a ranking
that returns to the slot it left restores that slot's predictive rows instead of
rebuilding them). ``exact_beta`` is still ~17-60x the others at N = 5000: moving a
ranking out of its slot rebuilds t = 10 rows of that slot's predictive table by
Gauss-Legendre quadrature (O(t n Q), Q ~ 200-400 nodes); so it is timed 5 times, not
10. ``beta`` replaces the quadrature by lgamma calls. The sigma update now adds a sweep
of insertion moves (O(n^2) per cluster and Gibbs round, ~0.5 ms per iteration here).
The CI job sharing the machine inflates these figures unevenly (``beta`` measured
0.067 s with the machine quieter).

GM log-likelihood per (ranking, cluster) pair: kernel 242 ns, vectorised numpy
779 ns, ratio 0.31 (max |difference| 2.8e-14): the kernel computes the codes in
O(t log n) and looks the normalisers up; numpy compares all t^2 pairs.
"""

import argparse
import time

import numpy as np
import pymc as pm
from _timing import median_time

import pymc_partitions as pmp
from pymc_partitions.kernels import mallows as mk

N_CLUSTERS = 10
N_ITEMS = 20
LENGTH = 10


# ------------------------------------------------------------------ 1. samplers
def time_sampler(orderings, labels, method, repeats, burn_in):
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=orderings.shape[0])
        pmp.GeneralizedMallows("y", partition=z, nu=1.0, r=1.0, observed=orderings,
                               n_items=N_ITEMS)
        step = pmp.MallowsGibbs([z], method=method)
    step.start_chain(np.random.default_rng(0))
    point = model.initial_point()
    point["z"] = labels.copy()
    for _ in range(burn_in + 1):  # the first also compiles
        point, _stats = step.step(point)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        point, stats = step.step(point)
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), int(stats[0]["n_clusters"])


# ------------------------------------------------------------------ 2. log-likelihood
def log_psi(m, theta):
    """log sum_{k=0}^{m} exp(-k theta), vectorised (theta > 0)."""
    return np.log(-np.expm1(-(m + 1) * theta)) - np.log(-np.expm1(-theta))


def numpy_log_likelihood(orderings, sigmas, thetas, n):
    """log GM(pi_i | sigma_c, theta_c) as a (K, N) array, all rows of length t."""
    t = orderings.shape[1]
    stages = min(t, n - 1)
    pos = np.argsort(sigmas, axis=1)                     # (K, n) inverse permutations
    p = pos[:, orderings]                                # (K, N, t) positions in sigma_c
    earlier = np.tril(np.ones((t, t), dtype=bool), -1)   # k < j
    before = ((p[:, :, None, :] < p[:, :, :, None]) & earlier).sum(axis=3)
    codes = (p - before)[:, :, :stages]                  # V_j
    m = n - 1 - np.arange(stages)
    return -(codes * thetas[:, None, :stages]).sum(axis=2) \
        - log_psi(m[None, :], thetas[:, :stages]).sum(axis=1)[:, None]


def kernel_log_likelihood(orderings, lengths, sigmas, thetas, n, out, scratch):
    pos, tree, codes, log_psi_cum = scratch
    for c in range(sigmas.shape[0]):
        mk.gm_log_likelihood_batch(orderings, lengths, sigmas[c], thetas[c], pos, tree,
                                   codes, log_psi_cum, out[c])
    return out


def bench_log_likelihood(orderings, centres, repeats, seed):
    rng = np.random.default_rng(seed)
    N, t = orderings.shape
    K = centres.shape[0]
    thetas = rng.uniform(0.5, 1.5, size=(K, t))
    lengths = np.full(N, t, dtype=np.int64)
    out = np.empty((K, N))
    scratch = (np.empty(N_ITEMS, dtype=np.int64), np.zeros(N_ITEMS + 1, dtype=np.int64),
               np.empty(t, dtype=np.int64), np.empty(t + 1))
    ours = kernel_log_likelihood(orderings, lengths, centres, thetas, N_ITEMS, out, scratch)
    ref = numpy_log_likelihood(orderings, centres, thetas, N_ITEMS)
    np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-9)
    t_kernel = median_time(lambda: kernel_log_likelihood(orderings, lengths, centres, thetas,
                                                         N_ITEMS, out, scratch), 5 * repeats)
    t_numpy = median_time(lambda: numpy_log_likelihood(orderings, centres, thetas, N_ITEMS),
                          5 * repeats)
    pairs = N * K
    return 1e9 * t_kernel / pairs, 1e9 * t_numpy / pairs, float(np.abs(ours - ref).max())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-rankings", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--exact-beta-repeats", type=int, default=5)
    parser.add_argument("--burn-in", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    t0 = time.perf_counter()
    orderings, labels, centres, _theta = pmp.datasets.meila_chen_rankings(
        1, n_per_cluster=args.n_rankings // N_CLUSTERS, n_clusters=N_CLUSTERS, seed=args.seed)
    print(f"data: N = {orderings.shape[0]} top-{LENGTH} orderings of n = {N_ITEMS} items, "
          f"{N_CLUSTERS} GM clusters, theta* = 1 ({time.perf_counter() - t0:.1f} s to generate)")

    print("\n1. seconds per iteration (step.step, median; from the true partition)")
    print(f"{'method':>11}  {'s / iteration':>13}  {'timed':>5}  {'K at end':>8}")
    for method in ("slice", "exact_beta", "beta"):
        repeats = args.exact_beta_repeats if method == "exact_beta" else args.repeats
        burn_in = min(args.burn_in, repeats) if method == "exact_beta" else args.burn_in
        seconds, k_end = time_sampler(orderings, labels, method, repeats, burn_in)
        print(f"{method:>11}  {seconds:13.3f}  {repeats:5d}  {k_end:8d}")

    ns_kernel, ns_numpy, max_diff = bench_log_likelihood(orderings, centres, args.repeats,
                                                         args.seed)
    print("\n2. GM log-likelihood, per (ranking, cluster) pair "
          f"(N = {orderings.shape[0]}, K = {N_CLUSTERS}, t = {LENGTH}, n = {N_ITEMS})")
    print(f"   kernel (gm_log_likelihood_batch): {ns_kernel:7.1f} ns")
    print(f"   vectorised numpy:                 {ns_numpy:7.1f} ns")
    print(f"   ratio kernel / numpy: {ns_kernel / ns_numpy:.2f}   (max |difference| "
          f"{max_diff:.1e})")
    print(f"\nwall time: {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
