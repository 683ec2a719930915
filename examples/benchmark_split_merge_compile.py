"""Compile time and run time of the split-merge kernels (Beta-Bernoulli, CRP, N = 300, D = 20).

Run with an empty numba cache to see compile times (first line), e.g.
``NUMBA_CACHE_DIR=$(mktemp -d) python examples/benchmark_split_merge_compile.py``;
the second line gives the median time of a Gibbs sweep and of one split-merge
update (30 repetitions of 10). Run it against two trees (``PYTHONPATH``) to compare.
"""

import time

import numpy as np

from pymc_partitions.kernels import assign_labels, gibbs, new_state, split_merge
from pymc_partitions.kernels.components import beta_bernoulli
from pymc_partitions.kernels.priors import crp
from pymc_partitions.kernels.random import new_stream


def main(n=300, d=20):
    rng = np.random.default_rng(0)
    x = (rng.random((n, d)) < 0.3).astype(float)
    params = beta_bernoulli.make_params(np.full(d, 0.5), np.full(d, 0.5), n=n)
    data = beta_bernoulli.make_data(x)
    stats, state = beta_bernoulli.alloc_stats(n, d, params), new_state(n)
    assign_labels(state, params, stats, data, rng.integers(0, 5, n))
    prior = crp.make_params(1.0, n)
    log_w, order = np.empty(n + 1), np.arange(n)
    members, origin = np.empty(n, np.int64), np.empty(n, np.int64)
    outcomes = np.zeros(5, np.int64)
    args = (state, prior, params, stats, data)
    stream = new_stream(1)

    t0 = time.perf_counter()
    gibbs.run_sweeps(stream, 1, *args, log_w, order)
    t1 = time.perf_counter()
    split_merge.run_split_merge(stream, 1, 5, 0, *args, members, origin, outcomes)
    t2 = time.perf_counter()
    split_merge.split_merge_entry(*args, 0, 1, 123, 5, 0, members, origin)
    t3 = time.perf_counter()
    print(f"compile (first call): gibbs {t1 - t0:.1f} s, run_split_merge {t2 - t1:.1f} s, "
          f"split_merge_entry {t3 - t2:.1f} s")

    sweeps, updates = [], []
    for _ in range(30):
        a = time.perf_counter()
        gibbs.run_sweeps(stream, 10, *args, log_w, order)
        sweeps.append((time.perf_counter() - a) / 10)
        a = time.perf_counter()
        split_merge.run_split_merge(stream, 10, 5, 0, *args, members, origin, outcomes)
        updates.append((time.perf_counter() - a) / 10)
    print(f"median: gibbs sweep {np.median(sweeps) * 1e3:.3f} ms; "
          f"SM(5) update {np.median(updates) * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
