"""Table 7 of Goswami, Liu & Wong (2005), *Evolutionary Monte Carlo methods for
clustering*: PBC as a stochastic optimiser of the k-means objective, against k-means.

Run:  python examples/goswami_table7.py [--runs 50] [--iterations 1000] [--seed 0]
      python examples/goswami_table7.py --runs 3 --iterations 200     (a quick look)

Setup (§7.3.1): 200 points in 2-D, 40 from each of five Gaussians (centres ~ Normal(0,
tau^2 I), tau^2 = 30; sigma^2 = 1; ``pmp.datasets.pbc_normal``); the target (eq. 24)
``exp(-W(z) / tau_min) 1{5 blocks}``, W the within-block sum of squares, is
``pmp.FixedBlocks(k=5)`` with ``pmp.KMeansEnergy(temperature=1)`` tempered by the
ladder's coldest rung tau_min = 0.5; 30 rungs from tau_max = 60; R runs of 1000
iterations of each of the paper's six PBC variants (``pmp.PBC``, mutation rate 0.3,
selection temperature s = 1; the SCRC flavours with "-b-b" selection as in the paper's
§4). k-means: scikit-learn's ``KMeans`` with one random start per run (``init="random"``,
``n_init=1``, ``max_iter=10000``, the paper's R ``kmeans(x, centers, iter.max = 10000)``).
Printed per method: the distribution over runs of the best objective found minus the best
over all runs and methods (the paper subtracts its 339.7051), beside the paper's row, and
the wall time; for PBC also the crossover acceptance rate (``x-chg``: accepted
crossovers that changed a partition, per proposed) and the exchange acceptance rate.

Where this departs from the paper:

- **Data.** The paper's data set is one draw it does not publish; ours is
  ``pbc_normal(seed=--data-seed)``, so its minimum (printed) differs from 339.7. The
  paper's draw is one on which k-means finds the minimum in more than half of its runs
  (median 0); the default data seed 11 is such a draw (in 50 k-means runs on seeds
  0-24, seeds 8, 11 and 16 have median 0; 11 reaches the minimum in 58 % of them).
  There, R = 50: every run of every PBC variant ends at the best value (all quantiles
  0.0), k-means has median 0, mean 180, max 1792 (paper: every method reaches the
  minimum at least once; PBC maxima <= 5.8). Seed 7 is a harder draw (k-means reaches
  its best in 2 % of runs, median 4.3): there every PBC variant ends 0.2-1.4 above
  the best k-means found once (medians 2.0-2.4, maxima <= 4.6, R = 50), because the
  coldest rung samples exp(-W/0.5), not the minimum: its member sits a median 6-8
  above the minimum (measured; overlapping clusters have many boundary points, each
  flipping at a small cost), and a Lloyd descent from PBC's best reaches 0.2-0.8
  above, a neighbouring local optimum.
- **Ladder.** The paper placed its 30 rungs by its §4 recipe and does not list them; we
  use 30 geometric rungs from 60 to 0.5 (``pmp.pbc_ladder`` builds a recipe ladder, but
  it would choose its own number of rungs); exchange acceptance 0.39 (seed 7) and 0.48
  (seed 11), below the recipe's 60-70 %.
- **Mutation.** Algorithm 4.1 updates every member "once" in a mutation iteration. Read
  as one §3.1 mutation of one item per member, 1000 iterations leave PBC thousands
  above the minimum from a random start (``--n-mutations 1`` shows it); we read it as
  a pass's worth, n mutations of uniformly drawn items per member (the default
  ``--n-mutations`` = n = 200; the paper's pass is systematic).
- **Starting values.** Each run starts every member at one random 5-block partition
  (the same for every method in that run, as the paper does across methods).
"""

import argparse
import time

import numpy as np
import pymc as pm
from goswami_tables_4_6 import VARIANTS  # the paper's six PBC variants
from sklearn.cluster import KMeans

import pymc_partitions as pmp

PAPER = {  # Table 7 (objective minus 339.7051): Min, 1st Qu., Median, Mean, 3rd Qu., Max
    "K-means": (0, 0, 0, 56.4, 40.2, 1065.3),
    "TWO-NEW-b-b": (0, 0, 0.2, 0.1, 0.3, 0.5),
    "TWO-NEW-r-r": (0, 0, 0, 0.2, 0.3, 5.8),
    "ONE-NEW-b-b": (0, 0, 0, 0.1, 0.2, 0.6),
    "ONE-NEW-r-r": (0, 0, 0.2, 0.2, 0.3, 0.8),
    "RANDOM-SIZE": (0, 0, 0, 0.1, 0.2, 0.4),
    "SAME-SIZE": (0, 0, 0, 0.1, 0.2, 0.4),
}


def within_ss(x, labels):
    """The k-means objective W(z): the within-block sum of squares."""
    total = 0.0
    for k in np.unique(labels):
        block = x[labels == k]
        total += float(((block - block.mean(axis=0)) ** 2).sum())
    return total


def random_start(rng, n, k):
    labels = rng.permutation(np.arange(n) % k)
    return pmp.canonicalize(labels)


def pbc_run(x, k, temperatures, kind, selection, start, iterations, n_mutations, seed):
    """One PBC run: ``(best objective, crossover acceptance, exchange acceptance)``."""
    with pm.Model():
        z = pmp.FixedBlocks("z", n=x.shape[0], k=k)
        pmp.KMeansEnergy("y", z, temperature=1.0, observed=x)
        step = pmp.PBC([z], temperatures=temperatures, mode="optimise", crossover=kind,
                       selection=selection, mutation_rate=0.3, selection_temperature=1.0,
                       n_mutations=n_mutations)
        idata = pm.sample(draws=iterations, tune=0, chains=1, cores=1, step=[step],
                          initvals=[{"z": start}], random_seed=seed, progressbar=False,
                          compute_convergence_checks=False)
    stats = idata.sample_stats
    best = np.asarray(stats["best_partition"].values[0, -1], dtype=np.int64)
    # Accepted crossovers that changed a partition, per proposed (Tables 3 and 5's sense).
    cross = (stats["crossover_changed"].values.sum()
             / max(stats["crossover_proposed"].values.sum(), 1))
    proposed = np.asarray(stats["exchange_proposed"].values, dtype=np.int64).sum()
    accepted = np.asarray(stats["exchange_accepted"].values, dtype=np.int64).sum()
    return within_ss(x, best), float(cross), accepted / max(proposed, 1)


def summary(values):
    v = np.asarray(values)
    return (v.min(), np.quantile(v, 0.25), np.median(v), v.mean(), np.quantile(v, 0.75), v.max())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--rungs", type=int, default=30)
    parser.add_argument("--n-mutations", type=int, default=None,
                        help="mutations per member in a mutation iteration (default: n)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-seed", type=int, default=11)
    args = parser.parse_args()

    x, _ = pmp.datasets.pbc_normal(seed=args.data_seed)
    n, k = x.shape[0], 5
    temperatures = np.geomspace(60.0, 0.5, args.rungs)
    n_mutations = n if args.n_mutations is None else args.n_mutations
    rng = np.random.default_rng(args.seed)
    starts = [random_start(rng, n, k) for _ in range(args.runs)]

    results, times, rates = {}, {}, {}
    t0 = time.perf_counter()
    results["K-means"] = [
        KMeans(n_clusters=k, init="random", n_init=1, max_iter=10000, random_state=args.seed + r)
        .fit(x).inertia_ for r in range(args.runs)
    ]
    times["K-means"] = time.perf_counter() - t0
    for name, (kind, selection) in VARIANTS.items():
        t0 = time.perf_counter()
        out = [pbc_run(x, k, temperatures, kind, selection, starts[r], args.iterations,
                       n_mutations, args.seed + r) for r in range(args.runs)]
        times[name] = time.perf_counter() - t0
        results[name] = [o[0] for o in out]
        rates[name] = (np.mean([o[1] for o in out]), np.mean([o[2] for o in out]))
        print(f"  {name}: {times[name]:.1f} s", flush=True)

    best = min(min(v) for v in results.values())
    print(f"\nTable 7: objective minus the best found ({best:.4f}; paper: 339.7051 on its "
          f"own draw of the data); R = {args.runs} runs, {args.iterations} iterations, "
          f"{args.rungs} rungs 60 -> 0.5, {n_mutations} mutations per member\n")
    head = f"{'method':<13} {'':<5}" + "".join(f"{h:>9}" for h in
                                             ("Min", "1st Qu", "Median", "Mean", "3rd Qu", "Max"))
    print(head + f"{'wall s':>9}{'x-chg':>7}{'RE-acc':>7}")
    for name, paper_row in PAPER.items():
        ours = summary(np.asarray(results[name]) - best)
        cross, exch = rates.get(name, (np.nan, np.nan))
        print(f"{name:<13} {'ours':<5}" + "".join(f"{v:9.1f}" for v in ours)
              + f"{times[name]:9.1f}" + ("" if name == "K-means" else f"{cross:7.2f}{exch:7.2f}"))
        print(f"{'':<13} {'paper':<5}" + "".join(f"{v:9.1f}" for v in paper_row))


if __name__ == "__main__":
    main()
