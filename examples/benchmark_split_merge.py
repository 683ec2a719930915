"""Benchmark: one SM(5, 1, 1) iteration of pmp.SplitMerge against one Gibbs sweep.

Run:  python examples/benchmark_split_merge.py

Jain & Neal's SM(t, m, n) iteration (t = 5 restricted scans, m = 1 Metropolis-
Hastings update, n = 1 full Gibbs sweep) at N = 1000, from an equilibrium state
reached by Gibbs sweeps, beside one Gibbs sweep of the same kernel on the same
state. Medians over many iterations, all measured in this run; the requirement is
ratio <= 4. The cost of one update grows with |S|, the size of the two blocks
involved, so the ratio is reported per data set with its number of blocks K; the
worst case (every item in one block, |S| = N - 2) is printed too.
"""

import numpy as np

from pymc_partitions.kernels import assign_labels, gibbs, new_state, split_merge
from pymc_partitions.kernels.components import beta_bernoulli, normal
from pymc_partitions.kernels.priors import crp
from pymc_partitions.kernels.random import new_stream
from _timing import median_time


def gaussian_case(n, d, n_clusters, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(0.0, 4.0, size=(n_clusters, d))
    x = centres[rng.integers(0, n_clusters, n)] + rng.normal(size=(n, d))
    params = normal.make_params(np.zeros(d), np.full(d, 4.0), np.ones(d), n=n)
    return params, normal.alloc_stats(n, d, params), normal.make_data(x)


def bernoulli_case(n, d, n_clusters, seed=0):
    rng = np.random.default_rng(seed)
    theta = rng.choice([0.1, 0.9], size=(n_clusters, d))
    x = (rng.random((n, d)) < theta[rng.integers(0, n_clusters, n)]).astype(float)
    params = beta_bernoulli.make_params(np.ones(d), np.ones(d), n=n)
    return params, beta_bernoulli.alloc_stats(n, d, params), beta_bernoulli.make_data(x)


CASES = [
    ("Gaussian, 10 clusters", lambda: gaussian_case(1000, 2, 10)),
    ("Gaussian, 4 clusters", lambda: gaussian_case(1000, 2, 4)),
    ("Bernoulli, 5 clusters", lambda: bernoulli_case(1000, 20, 5)),
]


def bench(params, stats, data, start_one_block, repeats=400):
    n = data[0].shape[0]
    state = new_state(n)
    assign_labels(state, params, stats, data, np.zeros(n, dtype=np.int64))
    prior = crp.make_params(1.0, n)
    log_w, order = np.empty(n + 1), np.arange(n, dtype=np.int64)
    members, origin = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    outcomes = np.zeros(4, dtype=np.int64)
    stream = new_stream(1)
    if not start_one_block:
        gibbs.run_sweeps(stream, 100, state, prior, params, stats, data, log_w, order)

    def sweep():
        gibbs.run_sweeps(stream, 1, state, prior, params, stats, data, log_w, order)

    def sm_iteration(n_gibbs):
        split_merge.run_split_merge(stream, 1, 5, split_merge.RESTRICTED_GIBBS, state, prior,
                                    params, stats, data, members, origin, outcomes)
        gibbs.run_sweeps(stream, n_gibbs, state, prior, params, stats, data, log_w, order)

    if start_one_block:
        # The worst case: a split of the one block (|S| = n - 2), state restored after each.
        labels = np.zeros(n, dtype=np.int64)

        def worst():
            s = new_state(n)
            st = type(stats)(*[a.copy() for a in stats])
            assign_labels(s, params, st, data, labels)
            split_merge.split_merge_entry(s, prior, params, st, data, 0, 1, 7, 5, split_merge.RESTRICTED_GIBBS,
                                          members, origin)

        base = median_time(lambda: (lambda s, st: assign_labels(s, params, st, data, labels))(
            new_state(n), type(stats)(*[a.copy() for a in stats])), 20)
        return median_time(worst, 20) - base, None, 1
    sweep_t = median_time(sweep, repeats)
    sm_t = median_time(lambda: sm_iteration(1), repeats)
    update_t = median_time(lambda: sm_iteration(0), repeats)
    return sm_t, sweep_t, update_t, int(state.counts[0])


def main():
    print("N = 1000; medians over 400 iterations each, from equilibrium (100 Gibbs sweeps)\n")
    print(f"{'data':<24} {'K':>3} {'Gibbs sweep (ms)':>17} {'SM(5,1,1) (ms)':>15} "
          f"{'SM update alone (ms)':>21} {'SM(5,1,1) / sweep':>18}")
    for label, make in CASES:
        params, stats, data = make()
        sm_t, sweep_t, update_t, k = bench(params, stats, data, False)
        print(f"{label:<24} {k:>3} {sweep_t * 1e3:>17.3f} {sm_t * 1e3:>15.3f} "
              f"{update_t * 1e3:>21.3f} {sm_t / sweep_t:>18.2f}")
    params, stats, data = gaussian_case(1000, 2, 10)
    worst, _, _ = bench(params, stats, data, True)
    print(f"\nWorst case (all N items in one block, a split with |S| = N - 2): one update "
          f"{worst * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
