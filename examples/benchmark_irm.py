"""Benchmark: seconds per collapsed Gibbs sweep of the IRM on two real networks.

Run:  python examples/benchmark_irm.py [--data-dir DIR] [--sweeps R] [--burn-in B]

Networks (Herlau et al. 2016, §3.3), read from the data directory (``--data-dir``,
else the environment variable ``PMP_DATA_DIR``, else ``/work/shared/data`` if it
exists), checked against the checksums of its README:

- NIPS co-authorship, n = 234: ``networks/NIPS234.csv``, a 0/1 adjacency matrix;
- Hagmann structural brain network, n = 998: ``networks/hagmann998_edges_derived.csv``,
  an edge list ``i,j,weight``; thresholded at 0, symmetrised, diagonal dropped (the
  paper's preparation, through ``pmp.IRM``'s own ``adjacency_matrix``).

Model: CRP(alpha = 1), IRM(a = 1, b = 1) (the paper fixes all parameters to one).
For each network and each start (one block; a random partition into 20 blocks) it
runs B burn-in sweeps of ``kernels.gibbs.run_sweeps`` and times R single sweeps,
printing the median, the number of blocks K reached, and the cost per node move
against its arithmetic count: a node move scores K + 1 candidates against K blocks,
(K + 1) K Beta-ratio terms of 4 to 6 log-gamma evaluations each, plus a walk over
its neighbours (O(degree + K^2), see ``kernels/components/irm.py``). ``floor`` is
what the plain log-gamma formula would cost at the least: 4 (K + 1) K log-gamma
evaluations per node at the measured cost of one (a numba loop over
``math.lgamma``), summed over the sweep. The kernel computes the ratios of blocks
of at most 24 nodes as one product of rising factorials instead, so sweep/floor
falls below 1 where blocks are small. The last column is the sweep time divided
by sum(degree) + n (K + 1) K.
"""

import argparse
import hashlib
import math
import os
import time
from pathlib import Path

import numpy as np
from numba import njit

from pymc_partitions.distributions.relational import adjacency_matrix
from pymc_partitions.kernels import assign_labels, gibbs, new_state
from pymc_partitions.kernels.components import irm
from pymc_partitions.kernels.priors import crp
from pymc_partitions.kernels.random import new_stream

FILES = {
    "NIPS": ("networks/NIPS234.csv", "5af097c49008b051"),
    "Hagmann": ("networks/hagmann998_edges_derived.csv", "a53456323cca0f53"),
}


def data_dir(arg):
    for candidate in (arg, os.environ.get("PMP_DATA_DIR"), "/work/shared/data"):
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    raise SystemExit(
        "No data directory: pass --data-dir DIR or set PMP_DATA_DIR (see the data README)."
    )


def checked_path(root, name):
    rel, prefix = FILES[name]
    path = root / rel
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    if digest != prefix:
        raise SystemExit(f"{path}: sha256 prefix {digest}, expected {prefix} (see README).")
    return path


def load_nips(root):
    adjacency = np.loadtxt(checked_path(root, "NIPS"), delimiter=",")
    return adjacency_matrix(adjacency, "NIPS")


def load_hagmann(root, n=998):
    import scipy.sparse as sp

    edges = np.loadtxt(checked_path(root, "Hagmann"), delimiter=",", skiprows=1)
    i, j, w = edges[:, 0].astype(np.int64), edges[:, 1].astype(np.int64), edges[:, 2]
    weights = sp.coo_matrix((w, (i, j)), shape=(n, n))
    return adjacency_matrix(weights, "Hagmann", threshold=0.0, symmetrize=True,
                            drop_diagonal=True)


@njit(cache=True)
def _lgamma_loop(x0, count):
    acc = 0.0
    for t in range(count):
        acc += math.lgamma(x0 + 0.37 * t)
    return acc


def lgamma_seconds():
    _lgamma_loop(1.5, 10)
    count = 2_000_000
    best = np.inf
    for _ in range(5):
        t0 = time.perf_counter()
        _lgamma_loop(1.5, count)
        best = min(best, time.perf_counter() - t0)
    return best / count


def bench(adjacency, start_blocks, sweeps, burn_in, seed=0):
    n = adjacency.shape[0]
    params = irm.make_params(1.0, 1.0)
    stats, data, state = irm.alloc_stats(n, params), irm.make_data(adjacency), new_state(n)
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, start_blocks, n) if start_blocks > 1 else np.zeros(n, np.int64)
    assign_labels(state, params, stats, data, labels.astype(np.int64))
    prior = crp.make_params(1.0, n)
    log_w, order = np.empty(n + 1), np.arange(n, dtype=np.int64)
    stream = new_stream(seed)
    gibbs.run_sweeps(stream, burn_in, state, prior, params, stats, data, log_w, order)
    times, ks = [], []
    for r in range(sweeps):
        t0 = time.perf_counter()
        gibbs.run_sweeps(stream, 1, state, prior, params, stats, data, log_w, order)
        times.append(time.perf_counter() - t0)
        ks.append(int(state.counts[0]))
    return float(np.median(times)), int(np.median(ks))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--sweeps", type=int, default=11, help="timed sweeps (median)")
    parser.add_argument("--burn-in", type=int, default=None,
                        help="burn-in sweeps (default 100 for NIPS, 30 for Hagmann)")
    args = parser.parse_args()
    root = data_dir(args.data_dir)
    t_lgamma = lgamma_seconds()
    print(f"data: {root}; one math.lgamma in numba: {t_lgamma * 1e9:.1f} ns")
    print(f"{'network':<8} {'n':>5} {'edges':>6} {'start':>9} {'K':>4} {'sweep (ms)':>11} "
          f"{'per node (us)':>14} {'floor (ms)':>11} {'sweep/floor':>12} "
          f"{'ns per (deg + K^2)':>19}")
    for name, loader, burn_in in (("NIPS", load_nips, 100), ("Hagmann", load_hagmann, 30)):
        adjacency = loader(root)
        n = adjacency.shape[0]
        n_edges = int(adjacency.sum()) // 2
        for start in (1, 20):
            sweep, k = bench(adjacency, start, args.sweeps, args.burn_in or burn_in)
            floor = n * 4 * (k + 1) * k * t_lgamma
            units = 2 * n_edges + n * (k + 1) * k  # sum of degrees + per-node K^2 terms
            label = "1 block" if start == 1 else f"{start} blocks"
            print(f"{name:<8} {n:>5} {n_edges:>6} {label:>9} {k:>4} {sweep * 1e3:>11.2f} "
                  f"{sweep / n * 1e6:>14.2f} {floor * 1e3:>11.2f} {sweep / floor:>12.2f} "
                  f"{sweep / units * 1e9:>19.1f}")


if __name__ == "__main__":
    main()
