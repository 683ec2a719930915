"""Benchmark: per-item cost of collapsed Gibbs with the dense Gaussian likelihoods.

Run:  python examples/benchmark_gaussians.py

All figures are measured in this run (medians over repeated single sweeps, after
burn-in, kernels driven directly through ``kernels.gibbs.run_sweeps``):

1. CollapsedMvNormal (dense Sigma0, Sigma) beside CollapsedNormal (diagonal) at
   D = 50 on the same data: microseconds per item and per (item, candidate
   block), and their ratios. The dense model is diagonalised once per change of
   hyperparameters, so its per-item cost should match the diagonal one's
   (requirement: ratio <= 2).
2. CollapsedNIW at D = 10 beside D = 2: microseconds per item and per (item,
   block); the per-(item, block) ratio against (10/2)^2 = 25 of an O(D^2) term; and
   against an arithmetic floor: the N x K triangular solves with the blocks'
   Cholesky factors (``scipy.linalg.solve_triangular`` over all items per block,
   BLAS trsm), which any O(K D^2) sweep must at least compute.
"""

import os

# Single-threaded BLAS for the floor, like the kernels (a loaded machine otherwise
# oversubscribes its cores); set before numpy is imported.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


import numpy as np  # noqa: E402
from scipy.linalg import solve_triangular  # noqa: E402

from pymc_partitions.kernels import assign_labels, gibbs, new_state, refresh_all  # noqa: E402
from pymc_partitions.kernels.components import mv_normal, niw, normal  # noqa: E402
from pymc_partitions.kernels.priors import crp  # noqa: E402
from pymc_partitions.kernels.random import new_stream
from _timing import median_time  # noqa: E402


def mixture(n, d, n_clusters=10, seed=0, noise=None):
    """n items from well-separated Gaussian clusters (centres sd 4), noise N(0, noise)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0.0, 4.0, size=(n_clusters, d))
    z = rng.integers(0, n_clusters, n)
    eps = rng.normal(size=(n, d))
    if noise is not None:
        eps = eps @ np.linalg.cholesky(noise).T
    return centres[z] + eps, z


def correlated(d, rho, scale):
    """scale * AR(1)-type correlation matrix rho^|i-j| (dense, positive definite)."""
    idx = np.arange(d)
    return scale * rho ** np.abs(idx[:, None] - idx[None, :])


def bench(params, stats, data, labels, alpha, repeats, burn_in):
    """Median seconds of one Gibbs sweep and the mean number of blocks K over the timed
    sweeps (with the time per item and per (item, candidate))."""
    n = labels.shape[0]
    state = new_state(n)
    assign_labels(state, params, stats, data, labels.astype(np.int64))
    prior = crp.make_params(alpha, n)
    log_w, order = np.empty(n + 1), np.arange(n, dtype=np.int64)
    stream = new_stream(1)
    gibbs.run_sweeps(stream, burn_in, state, prior, params, stats, data, log_w, order)
    ks = []

    def sweep():
        gibbs.run_sweeps(stream, 1, state, prior, params, stats, data, log_w, order)
        ks.append(int(state.counts[0]))

    t = median_time(sweep, repeats)
    k = float(np.mean(ks))
    return t, k, state


def main():
    # ---------------------------------------------------------------- 1. dense vs diagonal
    n, d = 2000, 50
    sigma = correlated(d, 0.5, 1.0)
    sigma0 = correlated(d, 0.3, 16.0)
    x, z = mixture(n, d, seed=1, noise=sigma)
    repeats, burn_in = 21, 5
    p_diag = normal.make_params(np.zeros(d), np.full(d, 4.0), np.ones(d), n=n)
    t_diag, k_diag, _ = bench(p_diag, normal.alloc_stats(n, d, p_diag), normal.make_data(x), z,
                              1.0, repeats, burn_in)
    data = mv_normal.make_data(x)
    p_dense = mv_normal.make_params(np.zeros(d), sigma0, sigma, n=n)
    stats = mv_normal.alloc_stats(n, data, p_dense)
    t_dense, k_dense, state = bench(p_dense, stats, data, z, 1.0, repeats, burn_in)
    # A change of hyperparameters as the step handles it: new params, then
    # refresh_all (the first refresh re-transforms the data, O(N D^2)).
    scales = iter(np.linspace(1.01, 1.5, repeats))

    def hyper_change():
        s = next(scales)
        refresh_all(state, mv_normal.make_params(np.zeros(d), sigma0, s * sigma, n=n), stats)

    t_hyper = median_time(hyper_change, repeats)
    print(f"1. N = {n}, D = {d}, 10 clusters; one Gibbs sweep, median of {repeats}")
    print(f"{'likelihood':<28} {'K':>5} {'us/item':>9} {'ns/(item*(K+1))':>16}")
    rows = [("CollapsedNormal (diagonal)", t_diag, k_diag),
            ("CollapsedMvNormal (dense)", t_dense, k_dense)]
    for name, t, k in rows:
        print(f"{name:<28} {k:>5.1f} {t / n * 1e6:>9.3f} {t / (n * (k + 1)) * 1e9:>16.2f}")
    print(f"ratio dense/diagonal per item: {t_dense / t_diag:.2f}  "
          f"per (item, candidate): {(t_dense / (k_dense + 1)) / (t_diag / (k_diag + 1)):.2f}  "
          f"(requirement <= 2)")
    print(f"per change of hyperparameters (make_params + refresh_all, incl. the O(N D^2) "
          f"transform): {t_hyper * 1e3:.2f} ms = {t_hyper / t_dense:.2f} sweeps")

    # ---------------------------------------------------------------- 2. NIW, D = 10 vs 2
    print(f"\n2. CollapsedNIW, N = {n}, 10 clusters; one Gibbs sweep, median of {repeats}")
    print(f"{'D':>3} {'K':>5} {'us/item':>9} {'ns/(item*(K+1))':>16} {'floor (ms)':>11} "
          f"{'sweep/floor':>12}")
    per_pair = {}
    for d in (2, 10):
        x, z = mixture(n, d, seed=2)
        params = niw.make_params(np.zeros(d), 0.05, d + 2.0, np.eye(d), n=n)
        data = niw.make_data(x)
        t, k, state = bench(params, niw.alloc_stats(n, data, params), data, z, 1.0, repeats,
                            burn_in)
        stats_now = niw.alloc_stats(n, data, params)  # fresh caches of the final partition
        state2 = new_state(n)
        assign_labels(state2, params, stats_now, data, state.labels.copy())
        active = state2.active[: state2.counts[0]]
        chols = [stats_now.chol[a] for a in active] + [params.psi0_chol]
        means = [stats_now.mean[a] for a in active] + [params.mu0]

        def floor():
            for chol, mean in zip(chols, means):
                r = solve_triangular(chol, (x - mean).T, lower=True, check_finite=False)
                np.einsum("ij,ij->j", r, r)

        t_floor = median_time(floor, repeats)
        per_pair[d] = t / (n * (k + 1))
        print(f"{d:>3} {k:>5.1f} {t / n * 1e6:>9.3f} {per_pair[d] * 1e9:>16.2f} "
              f"{t_floor * 1e3:>11.3f} {t / t_floor:>12.2f}")
    print(f"ratio D=10 / D=2 per (item, candidate): {per_pair[10] / per_pair[2]:.2f} "
          f"(an O(D^2) term alone: {(10 / 2) ** 2:.0f})")


if __name__ == "__main__":
    main()
