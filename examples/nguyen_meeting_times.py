"""Meeting times of coupled Gibbs chains: Nguyen, Trippe & Broderick (2022), §5.3 / Fig. 2
(right column), on their synthetic data with "model B".

Run:  python examples/nguyen_meeting_times.py [--pairs 100] [--max-sweeps 100] [--n 300]

Data: ``pmp.datasets.nguyen_synthetic(N)`` (App. G.3: four Gaussian components at
(+-0.8, +-0.8), noise sd 0.5). Model B of the reference implementation's settings:
CRP(alpha = 0.1), block means ~ N(0, sd0^2 I) with sd0 = 2, observations ~ N(mean,
sd1^2 I) with sd1 = 0.5. Both chains start at one block (the reference's
``initType: allSame``). For each coupling, ``--pairs`` lag-1 pairs run until they meet
(OT, up to ``--ot-max-sweeps``) or reach ``--max-sweeps`` (label couplings, censored),
each with the random scan (our default) and the systematic scan (items 0..N-1, as
the reference implementation sweeps). Printed: the quantiles of the meeting time tau
(censored pairs count as +inf), the number censored, and the Kaplan–Meier survival
P(tau > t) from scipy.stats.ecdf; beside them the reference implementation's OT
quantiles on its own data file (10/25/50/75/90 % = 8/10/18/31/45 sweeps, max 153,
measured by running it; the issue quoted 8/9/16/26/32, max 153). Also the wall time
of each coupling's run. ``--reference-csv`` runs on the reference's data file.

By default the data are our own draw from the same generator, not the reference's
file, so the quantiles agree in distribution, not draw for draw.
"""

import argparse
import re
import time

import numpy as np
import pymc as pm
from scipy import stats

import pymc_partitions as pmp
from pymc_partitions.kernels.random import new_stream
from pymc_partitions.step_methods.target import PartitionTarget
from pymc_partitions.step_methods.coupled_pair import CoupledPair

# The reference implementation (tinnguyen96/partition-coupling, DPMMCoupledGibbs,
# "OT=1e-5", Hamming, allSame start) on its data/synthetic_N=300.csv with model B,
# 100 pairs from its SeedSequence(12345), run outside this project on 2026-11-23
# (numpy 1.23.5, POT 0.9.4): 740 s of process time.
REFERENCE_OT = {"10%": 8, "25%": 10, "50%": 18, "75%": 31, "90%": 45, "max": 153}


def reference_csv(path):
    """The data of a ``data/synthetic_N=*.csv`` file of the reference implementation
    (three lines: indices, component labels, then the points as "[x y]" strings)."""
    lines = open(path).read().splitlines()
    points = re.findall(r"\[([^\]]*)\]", lines[2])
    return np.array([[float(v) for v in p.split()] for p in points])


def model_b(n, seed, path=None):
    x = pmp.datasets.nguyen_synthetic(n, seed=seed)[0] if path is None else reference_csv(path)
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=0.1, n=n, summaries=False)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=2.0, sigma=0.5, observed=x)
    return model


def meeting_times(model, coupling, n_pairs, max_sweeps, seed, scan="random"):
    target = PartitionTarget(model, model.rvs_to_values[model["z"]], "example")
    values, prior, per_lik = target.params(model.initial_point())
    one_block = np.zeros(target.n, dtype=np.int64)
    taus = np.full(n_pairs, -1)
    for r, child in enumerate(np.random.SeedSequence(seed).spawn(n_pairs)):
        pair = CoupledPair(target, values, prior, per_lik, coupling=coupling, scan=scan,
                           stream=new_stream(child))
        pair.start(one_block, one_block)
        while not pair.met and pair.t < max_sweeps:
            pair.advance()
        taus[r] = pair.tau
    return taus


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=100)
    parser.add_argument("--max-sweeps", type=int, default=100,
                        help="censoring of the label-based couplings")
    parser.add_argument("--ot-max-sweeps", type=int, default=5000)
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reference-csv", default=None,
                        help="run on the reference implementation's data file instead "
                             "(its data/synthetic_N=300.csv; not shipped with pmp)")
    args = parser.parse_args()
    model = model_b(args.n, args.seed, args.reference_csv)
    qs = [10, 25, 50, 75, 90]
    data = args.reference_csv or f"nguyen_synthetic(N={args.n}, seed={args.seed})"
    print(f"Model B on {data}; {args.pairs} pairs per coupling; label couplings censored "
          f"at {args.max_sweeps} sweeps.\n")
    print(f"{'coupling scan':<16}" + "".join(f"{q:>6}%" for q in qs)
          + f"{'max':>7}{'censored':>10}{'wall s':>9}")
    print(f"{'reference OT sys':<16}" + "".join(f"{REFERENCE_OT[f'{q}%']:>7}" for q in qs)
          + f"{REFERENCE_OT['max']:>7}{'0':>10}{'':>9}")
    survival = {}
    for coupling, scan in [(c, s) for s in ("systematic", "random")
                           for c in ("ot", "maximal", "common_rng")]:
        # OT pairs run until they meet (the paper: all meet); the label couplings are
        # censored at --max-sweeps, as the paper censors them.
        cap = args.ot_max_sweeps if coupling == "ot" else args.max_sweeps
        t0 = time.perf_counter()
        taus = meeting_times(model, coupling, args.pairs, cap, args.seed + 1, scan)
        wall = time.perf_counter() - t0
        met = taus >= 0
        inf_taus = np.where(met, taus, np.inf)
        quant = np.percentile(inf_taus, qs)
        cells = "".join(f"{q:>7.0f}" if np.isfinite(q) else f"{'>' + str(cap):>7}"
                        for q in quant)
        top = f"{taus[met].max():>7}" if met.all() else f"{'>' + str(cap):>7}"
        name = f"{coupling} {scan[:3]}"
        print(f"{name:<16}{cells}{top}{(~met).sum():>10}{wall:>9.1f}")
        censored = stats.CensoredData(uncensored=taus[met].astype(float),
                                      right=np.full((~met).sum(), float(cap)))
        survival[name] = stats.ecdf(censored).sf
    print("\nKaplan-Meier P(tau > t):")
    grid = [5, 10, 20, 30, 50, args.max_sweeps - 1]
    print(f"{'t':<16}" + "".join(f"{t:>7}" for t in grid))
    for name, sf in survival.items():
        print(f"{name:<16}" + "".join(f"{sf.evaluate(t):>7.2f}" for t in grid))


if __name__ == "__main__":
    main()
