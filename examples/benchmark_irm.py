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
printing the median and the number of blocks K reached.

**Floor.** What an exact Gibbs move of node i needs at the least with incremental
block-pair counts (``kernels/components/irm.py``), with K blocks, deg_i neighbours
and t_i the number of blocks holding a neighbour of i (about 5 of K = 26 on
Hagmann):

- edge-count table updates: 3 deg_i (gather i's counts per block once; update the
  block-pair counts E when i leaves and when it joins);
- per candidate block (K + 1 of them): K additions of cached no-edge terms T_kl and
  t_i edge corrections log[(x)_e / (z)_e] (2 e multiplications and one log each);
- the no-edge terms that changed: the row and column of the block i left and of the
  block it joined, 2 K block pairs, each pair 2 log-gamma evaluations shared by its
  two directions (lgamma(y), lgamma(x + y)) plus 2 per direction (lgamma(y + m),
  lgamma(x + y + m)): 12 K log-gamma evaluations.

``floor`` is the time of a numba loop (``floor_sweep``) doing exactly this
arithmetic for every node on the partition the chain reached, with no bookkeeping
(no shuffle, prior weights, draw, dirty lists or slot lists); the kernel's sweep is
to be within 2x of it (issue 14). ``naive`` is the arithmetic floor of recomputing
every Beta ratio, 4 (K + 1) K log-gamma evaluations per node (what the kernel did
before the incremental terms: 115 ms per Hagmann sweep from 20 blocks at K = 26,
sweep/naive 1.67). The kernel uses products of rising factorials where they are
shorter than 25 factors, so it can beat the log-gamma count where blocks are small
(NIPS).
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


@njit(cache=True)
def floor_sweep(indptr, indices, labels, n_blocks, sizes, counts, ecount, pair_edges, terms):
    """The floor's arithmetic for one sweep (see the module docstring).

    labels (n,) int64 in 0..n_blocks-1; sizes (n_blocks,) int64; counts (n_blocks,)
    int64 zeros (scratch); ecount, touched scratch in ``counts``; pair_edges
    (n_blocks, n_blocks) int64; terms (n_blocks, n_blocks) float64. Returns a float
    that depends on every operation (so nothing is optimised away)."""
    total = 0.0
    for i in range(labels.shape[0]):
        k_old = labels[i]
        # 3 deg_i table updates: gather, leave (-1), join (+1, same block: net zero).
        for p in range(indptr[i], indptr[i + 1]):
            counts[labels[indices[p]]] += 1
        for p in range(indptr[i], indptr[i + 1]):
            pair_edges[k_old, labels[indices[p]]] -= 1
        for p in range(indptr[i], indptr[i + 1]):
            pair_edges[k_old, labels[indices[p]]] += 1
        # Changed no-edge terms: 2 rows/columns of K pairs, 6 lgamma per pair.
        for r in range(2):
            k = (k_old + r) % n_blocks
            for l in range(n_blocks):
                y = 1.0 + sizes[k] * sizes[l] - pair_edges[k, l]
                s = y + 1.0 + pair_edges[k, l]
                base = math.lgamma(s) - math.lgamma(y)
                terms[k, l] = base + math.lgamma(y + sizes[l]) - math.lgamma(s + sizes[l])
                terms[l, k] = base + math.lgamma(y + sizes[k]) - math.lgamma(s + sizes[k])
        # K + 1 candidates: K additions and t_i corrections each.
        for k in range(n_blocks + 1):
            kk = k % n_blocks
            acc = 0.0
            for l in range(n_blocks):
                acc += terms[kk, l]
            for l in range(n_blocks):
                e = counts[l]
                if e > 0:
                    x = 1.0 + pair_edges[kk, l]
                    z = 1.0 + sizes[kk] * sizes[l] - pair_edges[kk, l] + sizes[l] - e
                    num = 1.0
                    den = 1.0
                    for t in range(e):
                        num *= x + t
                        den *= z + t
                    acc += math.log(num / den)
            total += acc
        for p in range(indptr[i], indptr[i + 1]):
            counts[labels[indices[p]]] = 0
    return total


def floor_seconds(data, labels, repeats=5):
    """Median time of :func:`floor_sweep` on the partition ``labels`` (canonical)."""
    indptr, indices = data
    n_blocks = int(labels.max()) + 1
    sizes = np.bincount(labels, minlength=n_blocks).astype(np.int64)
    pair_edges = np.zeros((n_blocks, n_blocks), dtype=np.int64)
    src = np.repeat(np.arange(len(labels)), np.diff(indptr))
    np.add.at(pair_edges, (labels[src], labels[indices]), 1)
    args = (indptr, indices, labels, n_blocks, sizes, np.zeros(n_blocks, np.int64),
            np.zeros(n_blocks, np.int64), pair_edges, np.zeros((n_blocks, n_blocks)))
    floor_sweep(*args)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        floor_sweep(*args)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


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
    _, labels = np.unique(state.labels, return_inverse=True)
    return float(np.median(times)), int(np.median(ks)), labels.astype(np.int64), data


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
          f"{'floor (ms)':>11} {'sweep/floor':>12} {'naive (ms)':>11} {'sweep/naive':>12}")
    for name, loader, burn_in in (("NIPS", load_nips, 100), ("Hagmann", load_hagmann, 30)):
        adjacency = loader(root)
        n = adjacency.shape[0]
        n_edges = int(adjacency.sum()) // 2
        for start in (1, 20):
            sweep, k, labels, data = bench(adjacency, start, args.sweeps,
                                           args.burn_in or burn_in)
            floor = floor_seconds(data, labels)
            naive = n * 4 * (k + 1) * k * t_lgamma
            label = "1 block" if start == 1 else f"{start} blocks"
            print(f"{name:<8} {n:>5} {n_edges:>6} {label:>9} {k:>4} {sweep * 1e3:>11.2f} "
                  f"{floor * 1e3:>11.2f} {sweep / floor:>12.2f} {naive * 1e3:>11.2f} "
                  f"{sweep / naive:>12.2f}")


if __name__ == "__main__":
    main()
