"""pymc-partitions beside the reference implementation of Nguyen, Trippe & Broderick
(2022) (``tinnguyen96/partition-coupling``): seconds per single Gibbs sweep, per
OT-coupled sweep, and the meeting-time distribution, on the same data, model and
number of pairs.

Run (after the reference's side, see below):

    python examples/nguyen_side_by_side.py --reference-dir /tmp/partition-coupling \
        --reference-json reference_synthetic_100.json reference_gene_400.json

The reference's side runs in its own environment (numpy < 1.24), outside this
project: ``examples/reference/nguyen_reference_driver.py`` says how, and writes the
JSON files read here. ``--reference-dir`` is the reference's checkout, for its data
files (``data/synthetic_N=300.csv``, ``data/gene.csv``; GENE is the same file as
``pmp.datasets.load_gene``).

Both sides run, per data set:

- SYNTHETIC, "model B" (CRP alpha = 0.1, block means ~ N(0, 2^2 I), noise sd 0.5)
  on the reference's ``synthetic_N=300.csv``; GENE (alpha = 1, sd0 = 0.5, sd1 = 1.3,
  the reference's Figure 2 configuration) on ``gene.csv``;
- both chains of a pair at one block, OT coupling with nugget 1e-5 and the Hamming
  metric, systematic scan (items 0..N-1, as the reference sweeps), pairs run until
  they meet (lag 1: X_tau = Y_{tau-1});
- seconds per coupled sweep = the pairs' total CPU time / their coupled sweeps; per
  single sweep = CPU time of single-chain sweeps / their number (ours: 50 sweeps of X
  after each of the first 20 pairs met; theirs: 50 sweeps from one block).

Printed: both sides' seconds per sweep and their ratios (the issue's target: our
coupled sweep >= 300x faster on SYNTHETIC), the meeting-time quantiles of each, and
two-sample tests that the distributions agree (Kolmogorov–Smirnov and Mann–Whitney
from ``scipy.stats``; on integer data the KS test is conservative). The pairs'
random streams differ between the implementations, so the meeting times agree in
distribution, not pair for pair.
"""

import argparse
import json
import re
import time

import numpy as np
import pymc as pm
from scipy import stats

import pymc_partitions as pmp
from pymc_partitions.kernels.random import new_stream
from pymc_partitions.step_methods.target import PartitionTarget
from pymc_partitions.step_methods.coupled_pair import CoupledPair

SETTINGS = {"synthetic": dict(alpha=0.1, sd0=2.0, sd1=0.5),
            "gene": dict(alpha=1.0, sd0=0.5, sd1=1.3)}
QUANTILES = [10, 25, 50, 75, 90]


def load(reference_dir, dataset):
    """The reference's data file of ``dataset`` as an (N, D) array."""
    if dataset == "gene":
        return np.loadtxt(f"{reference_dir}/data/gene.csv", delimiter=",", skiprows=1)
    lines = open(f"{reference_dir}/data/synthetic_N=300.csv").read().splitlines()
    points = re.findall(r"\[([^\]]*)\]", lines[2])  # third line: "[x y]" strings
    return np.array([[float(v) for v in p.split()] for p in points])


def our_side(x, settings, n_pairs, seed, single_pairs=20, single_sweeps=50):
    """Meeting times and CPU seconds per coupled and per single sweep, our kernels."""
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=settings["alpha"], n=x.shape[0], summaries=False)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=settings["sd0"],
                            sigma=settings["sd1"], observed=x)
    target = PartitionTarget(model, model.rvs_to_values[model["z"]], "side_by_side")
    values, prior, per_lik = target.params(model.initial_point())
    one_block = np.zeros(target.n, dtype=np.int64)

    def new_pair(child):
        pair = CoupledPair(target, values, prior, per_lik, coupling="ot", scan="systematic",
                           stream=new_stream(child))
        pair.start(one_block, one_block)
        return pair

    pair = new_pair(np.random.SeedSequence(0))  # compile outside the timings
    while not pair.met:
        pair.advance()
    taus, coupled_time, coupled_sweeps, single_time, single_count = [], 0.0, 0, 0.0, 0
    for r, child in enumerate(np.random.SeedSequence(seed).spawn(n_pairs)):
        pair = new_pair(child)
        t0 = time.thread_time()
        while not pair.met:
            pair.advance()
        coupled_time += time.thread_time() - t0
        coupled_sweeps += pair.tau - 1  # X_1 is a single move; sweeps 2..tau are coupled
        taus.append(pair.tau)
        if r < single_pairs:  # after meeting, advance() moves X alone: a single sweep
            t0 = time.thread_time()
            for _ in range(single_sweeps):
                pair.advance()
            single_time += time.thread_time() - t0
            single_count += single_sweeps
    return np.array(taus), coupled_time / coupled_sweeps, single_time / single_count


def report(dataset, ours, theirs, seconds):
    taus, coupled, single = ours
    ref_taus = np.asarray(theirs["meeting_times"])
    print(f"\n=== {dataset.upper()} (N = {theirs['n']}), {len(taus)} pairs each side; "
          f"ours ran in {seconds:.1f} s ===")
    print(f"{'':<22}{'reference':>12}{'ours':>12}{'ratio':>10}")
    for label, ref, our in (("s per single sweep", theirs["single_sweep_seconds"], single),
                            ("s per coupled sweep", theirs["coupled_sweep_seconds"], coupled)):
        print(f"{label:<22}{ref:>12.3e}{our:>12.3e}{ref / our:>9.0f}x")
    ref_ratio = theirs["coupled_sweep_seconds"] / theirs["single_sweep_seconds"]
    print(f"{'coupled / single':<22}{ref_ratio:>12.2f}{coupled / single:>12.2f}")
    head = "".join(f"{q:>6}%" for q in QUANTILES)
    print(f"\nmeeting time {'':<9}{head}{'max':>7}{'mean':>8}")
    for label, t in (("reference", ref_taus), ("ours", taus)):
        print(f"{label:<22}" + "".join(f"{v:>7.0f}" for v in np.percentile(t, QUANTILES))
              + f"{t.max():>7}{t.mean():>8.2f}")
    ks = stats.ks_2samp(taus, ref_taus)
    mw = stats.mannwhitneyu(taus, ref_taus)
    print(f"same distribution? Kolmogorov-Smirnov p = {ks.pvalue:.3f}, "
          f"Mann-Whitney p = {mw.pvalue:.3f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference-dir", required=True,
                        help="checkout of tinnguyen96/partition-coupling (for its data files)")
    parser.add_argument("--reference-json", nargs="+", required=True,
                        help="files written by examples/reference/nguyen_reference_driver.py")
    parser.add_argument("--seed", type=int, default=2022)
    args = parser.parse_args()
    for path in args.reference_json:
        theirs = json.load(open(path))
        dataset = theirs["dataset"]
        x = load(args.reference_dir, dataset)
        if x.shape[0] != theirs["n"]:
            raise SystemExit(f"{path}: N = {theirs['n']}, but the data file has {x.shape[0]} rows.")
        t0 = time.perf_counter()
        ours = our_side(x, SETTINGS[dataset], len(theirs["meeting_times"]), args.seed)
        report(dataset, ours, theirs, time.perf_counter() - t0)


if __name__ == "__main__":
    main()
