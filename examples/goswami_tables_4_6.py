"""Tables 3-6 of Goswami, Liu & Wong (2005), *Evolutionary Monte Carlo methods for
clustering*: the six PBC variants as samplers, against Gibbs and Metropolized Gibbs
("MH"), at equal CPU time per run.

Run:  python examples/goswami_tables_4_6.py --table 4      (Tables 2, 3, 4; R = 20)
      python examples/goswami_tables_4_6.py --table 6      (Tables 5, 6; R = 10)
      python examples/goswami_tables_4_6.py --table 4 --runs 3 --seconds 1   (a quick look)

Setups (§7.1, §7.2):

- **Table 4** (Bernoulli-Beta): ``pmp.datasets.pbc_bernoulli`` (m = 15 attributes, 20
  items from each of Table 1's five components, d = 100), ``pmp.CRP(alpha=1)`` with
  ``pmp.CollapsedBetaBernoulli(a=1, b=1)`` (eqs. 13, 18); the 20-rung ladder of Table 2
  (τ_max = 20). The ladder ``pmp.pbc_ladder`` builds by the §4 recipe with the same
  τ_max is printed beside Table 2 (``--no-recipe`` skips it).
- **Table 6** (motifs): ``pmp.datasets.load_jaspar_motifs``, the 90 JASPAR 2014 CORE
  count matrices of width 8 (a stand-in for the paper's unpublished 90 aligned motifs of
  Jensen & Liu: real motifs of the same number and width, but other sequences, column
  totals from 4 to several thousand sites rather than one alignment's), ``pmp.CRP(alpha=1)``
  with ``pmp.CollapsedDirichletMultinomial(concentration=c)`` (eqs. 20-22; c = 1, the
  paper does not state its c); 33 rungs from τ_max = 60 to 1, geometric (the paper
  placed its 33 by the §4 recipe and does not list them; ``--recipe`` uses
  ``pmp.pbc_ladder(tau_max=60)`` instead, with its own number of rungs).

Protocol (§7): R independent runs per method; run r of every method starts from the
same partition (items spread uniformly at random over 5 blocks); every method gets the
same CPU time per run (``--seconds``): each method's CPU seconds per draw are measured
first (two short runs, their difference, so PyMC's set-up is not counted), and its
number of draws is the budget over that cost. The first min(T/4, 20000) draws are
discarded. Gibbs is ``pmp.Gibbs`` (one systematic sweep per draw); MH is the §3.1
mutation at τ = 1, d mutations of uniform items per draw (``pmp.PBC`` with one rung;
the paper scans the items systematically); PBC is ``pmp.PBC`` with mutation rate 0.3,
q_s = 1/2, s = 1, one mutation pass (d mutations per member) in a mutation iteration,
the SCRC flavours with "-b-b" selection (§4).

Printed: AIAT_R (the average over runs of the integrated autocorrelation time T/ESS,
ESS from ArviZ's ``ess(method="mean")``, Geyer's initial monotone sequence as the
paper's §7) of the number of blocks n(z), the entropy e(z), the log density l(z) (the
log joint: CRP prior times collapsed likelihood, eqs. 13 and 18/22) and the
largest-block proportion p_max(z); AMLD_R (the average over runs of the largest l(z)
among the kept draws); draws per run; then the acceptance rates of each crossover kind
(accepted and changing a partition: an SCRC reallocation can restore the cells as
they were, a ONE-NEW swap of two whole child blocks is a relabelling) and of the
random exchange and the mutation, their range over runs, beside Table 3 / Table 5. A run whose
series is constant has no IAT; the number of such runs is printed beside the average.

Where ours must differ from the paper: the data (Table 4: our draw from Table 1's
mixture; Table 6: the JASPAR stand-in), so the AMLD values are not comparable between
the paper and us (only across methods); the machine and language (C there), which set
how many draws a CPU second buys each method.

What we measured (PyMC 5 stack, 2-core machine, the defaults above; Table 4 in 18 min,
Table 6 in 35 min of wall time):

- **Table 4.** Draws per 5 CPU s: Gibbs 71,068, MH 46,469, PBC 2,961-4,742 (paper:
  Gibbs and MH about 10 times PBC's). Every method reaches the same maximum log density
  in every run (AMLD -571.31 for all), and Gibbs mixes best per draw (AIAT 1.1, 5.3,
  6.9, 9.4 for n, e, l, p_max; paper 102, 99, 35, 82 with an AMLD 17 below the others:
  its Gibbs runs stayed in lower modes, which ours, from random 5-block starts, never
  did). MH is close to the paper's (134, 245, 93, 76 against 96, 162, 163, 83). The
  PBC variants: n(z) 5.0-6.5 (paper 2.7-23), e(z) 20-26 (4.5-55), l(z) 24-38
  (6.6-54), p_max 33-54 (4.0-12): like the paper's for the block count, slower for the
  local statistics, which only the mutation iterations (30 %) move at the cold rung.
  Acceptance (Table 3): TWO-NEW-b-b 15-19 % (paper 10-20), TWO-NEW-r-r 17-18 % (15-20),
  ONE-NEW-b-b 0.6-1.0 % (0.1-2), RANDOM-SIZE 1.0-1.5 % (0.1-1), SAME-SIZE 5.5-6.7 %
  (0.1-1), ONE-NEW-r-r 45-46 % (5-10: uniform selection picks hot rungs, where the
  tempered ratio is near 1); exchange 48-51 % (40-60). The §4 recipe
  (``pmp.pbc_ladder(tau_max=20)``) places 41 rungs where Table 2 has 20, every
  neighbouring pair at an estimated exchange acceptance of at least 0.60 (before its
  grid was refined, issue 34: 29 rungs with a wide gap near t = 2, estimated
  acceptance 0.09 there, the gap Table 2 has too: it jumps from 2.53 to 1.68).
- **Table 6.** The JASPAR counts are large (median 100 sites per motif, up to 7,714;
  aligned sites of one factor, as Jensen & Liu's, are tens), so the posterior is
  sharply peaked (about 80 blocks of 90 at t = 1): every method reaches the same
  maximum in every run (AMLD -8691.49), Gibbs's draws are nearly independent (AIAT
  1.0), MH's are not (35, 39, 32 for n, e, l; paper 21, 21, 34), and the PBC variants
  have 9-18, 9-18, 7-12 (paper 5.7-25, 5.4-27, 1.0-18). Acceptance (Table 5):
  TWO-NEW-b-b 0.1-0.8 % (paper 0.1-0.5), TWO-NEW-r-r 5.0-5.6 % (1-5), ONE-NEW-b-b
  0.1-0.6 % (5-10), ONE-NEW-r-r 13 % (0.5-1), SCRC 1.1-2.9 % (15-25, counted
  including unchanged reallocations ours are 72-82 %); exchange 68-70 % (50-60).
  ``--sites 20`` rescales every motif to 20 sites (frequencies kept) for a less peaked
  stand-in; a short look (R = 3, 4 CPU s) gives Gibbs and MH the best AMLD again
  (-5349.95), PBC runs of 500-600 draws 5-9 below.

Neither table reproduces the paper's ranking of Gibbs last: on both our data sets the
collapsed Gibbs sampler (exact against enumeration in ``tests/``) is not trapped, and
the paper's Gibbs runs, started where it does not say, were.
"""

import argparse
import time

import numpy as np
import pymc as pm
from _mixing import iat

import pymc_partitions as pmp

TABLE2 = (20.000000, 13.603093, 10.934207, 8.962745, 7.958762, 6.857107, 5.049388, 4.508420,
          4.000087, 3.647210, 3.218148, 2.887211, 2.529059, 1.675123, 1.556680, 1.440912,
          1.334983, 1.244001, 1.114253, 1.000000)
STATISTICS = ("n(z)", "e(z)", "l(z)", "p_max(z)")
VARIANTS = {  # paper's name: (crossover, selection)
    "TWO-NEW-b-b": ("two_new", "boltzmann"),
    "TWO-NEW-r-r": ("two_new", "random"),
    "ONE-NEW-b-b": ("one_new", "boltzmann"),
    "ONE-NEW-r-r": ("one_new", "random"),
    "RANDOM-SIZE": ("scrc_random", "boltzmann"),
    "SAME-SIZE": ("scrc_same", "boltzmann"),
}
# The paper's Tables 4 and 6 (AIAT per statistic, AMLD; Table 6 has no p_max column)
# and Tables 3 and 5 (crossover acceptance ranges, percent).
PAPER = {
    4: {
        "Gibbs": (102.489, 98.73, 35.174, 81.975, -606.481),
        "MH": (96.327, 161.879, 163.48, 82.721, -589.482),
        "TWO-NEW-b-b": (3.388, 6.33, 7.889, 3.971, -589.782),
        "TWO-NEW-r-r": (2.653, 4.506, 6.622, 4.703, -589.73),
        "ONE-NEW-b-b": (13.159, 29.827, 29.91, 7.045, -589.44),
        "ONE-NEW-r-r": (21.324, 21.683, 17.336, 12.166, -589.44),
        "RANDOM-SIZE": (20.072, 50.111, 49.102, 7.359, -589.098),
        "SAME-SIZE": (23.284, 55.469, 54.159, 6.869, -589.226),
    },
    6: {
        "Gibbs": (222.136, 310.25, 247.105, np.nan, -6467.902),
        "MH": (21.259, 21.359, 34.037, np.nan, -6440.006),
        "TWO-NEW-b-b": (11.425, 12.136, 3.212, np.nan, -6431.652),
        "TWO-NEW-r-r": (10.902, 13.459, 3.95, np.nan, -6431.527),
        "ONE-NEW-b-b": (10.295, 9.619, 1.233, np.nan, -6431.527),
        "ONE-NEW-r-r": (24.644, 26.716, 18.298, np.nan, -6431.527),
        "RANDOM-SIZE": (5.749, 5.392, 1.065, np.nan, -6431.527),
        "SAME-SIZE": (8.878, 8.123, 1.018, np.nan, -6431.527),
    },
}
PAPER_ACCEPTANCE = {
    4: {"TWO-NEW-b-b": "10-20", "TWO-NEW-r-r": "15-20", "ONE-NEW-b-b": "0.1-2",
        "ONE-NEW-r-r": "5-10", "RANDOM-SIZE": "0.1-1", "SAME-SIZE": "0.1-1", "RE": "40-60"},
    6: {"TWO-NEW-b-b": "0.1-0.5", "TWO-NEW-r-r": "1-5", "ONE-NEW-b-b": "5-10",
        "ONE-NEW-r-r": "0.5-1", "SAME-SIZE": "15-25", "RANDOM-SIZE": "15-25", "RE": "50-60"},
}
DEFAULTS = {4: {"runs": 20, "seconds": 5.0}, 6: {"runs": 10, "seconds": 10.0}}


def rescale_sites(counts, sites):
    """Each position's counts scaled to ``sites`` sequences (largest remainders), the
    frequencies kept: (n, P, C) int64."""
    freq = counts / counts.sum(axis=2, keepdims=True)
    scaled = freq * sites
    out = np.floor(scaled).astype(np.int64)
    short = sites - out.sum(axis=2)
    order = np.argsort(-(scaled - out), axis=2, kind="stable")
    # one more to the `short` largest remainders of each position
    n, p, _ = counts.shape
    for i in range(n):
        for j in range(p):
            out[i, j, order[i, j, :short[i, j]]] += 1
    return out


def load_data(table, data_seed, sites=None):
    """The table's data: (observed array, its collapsed likelihood class, its keywords)."""
    if table == 4:
        x, _ = pmp.datasets.pbc_bernoulli(seed=data_seed)
        return x, pmp.CollapsedBetaBernoulli, {"a": 1.0, "b": 1.0}
    motifs = pmp.datasets.load_jaspar_motifs()
    counts = np.transpose(motifs.data, (0, 2, 1))  # (90, 8 positions, 4 bases)
    if sites is not None:
        counts = rescale_sites(counts, sites)
    return counts, pmp.CollapsedDirichletMultinomial, {"concentration": 1.0}


def build_model(data, likelihood, hypers):
    model = pm.Model()
    with model:
        z = pmp.CRP("z", n=data.shape[0], alpha=1.0)
        likelihood("y", z, observed=data, **hypers)
    return model, z


def make_step(method, z, temperatures, n_items):
    if method == "Gibbs":
        return pmp.Gibbs([z], n_sweeps=1)
    if method == "MH":
        return pmp.PBC([z], temperatures=[1.0], n_mutations=n_items)
    kind, selection = VARIANTS[method]
    return pmp.PBC([z], temperatures=temperatures, crossover=kind, selection=selection,
                   mutation_rate=0.3, selection_temperature=1.0, n_mutations=n_items)


def sample(model, z, method, temperatures, draws, start, seed):
    """One run: ``(idata, CPU seconds of pm.sample)``."""
    with model:
        step = make_step(method, z, temperatures, start.size)
        t0 = time.process_time()
        idata = pm.sample(draws=draws, tune=0, chains=1, cores=1, step=[step],
                          initvals=[{"z": start}], random_seed=seed, progressbar=False,
                          compute_convergence_checks=False)
    return idata, time.process_time() - t0


def cost_per_draw(model, z, method, temperatures, start, pilot):
    """CPU seconds per draw, from runs of ``pilot`` and of more draws (grown until
    they differ by half a CPU second): their difference over the difference in
    draws, so PyMC's set-up cancels. A first run loads the compiled kernels."""
    sample(model, z, method, temperatures, pilot, start, 0)
    _, short = sample(model, z, method, temperatures, pilot, start, 0)
    draws = 5 * pilot
    while True:
        _, long = sample(model, z, method, temperatures, draws, start, 0)
        if long - short >= 0.5 or draws >= 10**6:
            return max(long - short, 1e-6) / (draws - pilot)
        draws *= 4


def run_summary(idata, method):
    """Per run: the four IATs, the max log density, and the acceptance rates."""
    posterior, stats = idata.posterior, idata.sample_stats
    draws = posterior["z_n_clusters"].values.shape[1]
    keep = slice(min(draws // 4, 20000), None)
    series = {
        "n(z)": posterior["z_n_clusters"].values[0, keep],
        "e(z)": posterior["z_entropy"].values[0, keep],
        "l(z)": stats["log_joint"].values[0, keep],
        "p_max(z)": posterior["z_largest_cluster_frac"].values[0, keep],
    }
    out = {name: iat(values) for name, values in series.items()}
    out["max l(z)"] = float(np.max(series["l(z)"]))
    out["draws"] = draws
    if method in VARIANTS:
        proposed = stats["crossover_proposed"].values.sum()
        out["crossover"] = stats["crossover_changed"].values.sum() / max(proposed, 1)
        out["accepted"] = stats["crossover_accepted"].values.sum() / max(proposed, 1)
        tried = np.stack(stats["exchange_proposed"].values[0]).sum()
        out["exchange"] = np.stack(stats["exchange_accepted"].values[0]).sum() / max(tried, 1)
        mutations = sum(stats[f"{kind}_proposed"].values.sum() for kind in ("split", "merge"))
        accepted = sum(stats[f"{kind}_accepted"].values.sum() for kind in ("split", "merge"))
        out["mutation"] = accepted / max(mutations, 1)
    return out


def recipe_ladder(model, z, tau_max, seed):
    with model:
        return pmp.pbc_ladder([z], tau_max=tau_max, seed=seed)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--table", type=int, choices=(4, 6), required=True)
    parser.add_argument("--runs", type=int, default=None, help="R (default: 20, or 10)")
    parser.add_argument("--seconds", type=float, default=None,
                        help="CPU seconds per run and method (default: 5, or 10)")
    parser.add_argument("--pilot", type=int, default=100, help="draws of the cost pilot")
    parser.add_argument("--recipe", action="store_true",
                        help="Table 6: use pmp.pbc_ladder(tau_max=60) as the ladder")
    parser.add_argument("--no-recipe", action="store_true",
                        help="Table 4: skip the recipe ladder printed beside Table 2")
    parser.add_argument("--sites", type=int, default=None,
                        help="Table 6: scale every motif to this many sites")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-seed", type=int, default=1)
    parser.add_argument("--methods", nargs="*", default=None,
                        help="a subset of Gibbs, MH and the variants")
    args = parser.parse_args()
    table = args.table
    runs = args.runs or DEFAULTS[table]["runs"]
    seconds = args.seconds or DEFAULTS[table]["seconds"]
    wall0 = time.perf_counter()

    data, likelihood, hypers = load_data(table, args.data_seed, args.sites)
    model, z = build_model(data, likelihood, hypers)
    n = data.shape[0]
    if table == 4:
        temperatures = np.asarray(TABLE2)
        if not args.no_recipe:
            t0 = time.perf_counter()
            ladder, acceptances = recipe_ladder(model, z, 20.0, args.seed)
            print(f"Ladder: Table 2 beside pmp.pbc_ladder(tau_max=20) "
                  f"({time.perf_counter() - t0:.0f} s)")
            print(f"  Table 2 ({len(TABLE2)} rungs): " + " ".join(f"{t:.2f}" for t in TABLE2))
            print(f"  recipe  ({ladder.size} rungs): " + " ".join(f"{t:.2f}" for t in ladder))
            print("  recipe's estimated exchange acceptance between neighbours: "
                  + " ".join(f"{a:.2f}" for a in acceptances) + "\n")
    elif args.recipe:
        temperatures = recipe_ladder(model, z, 60.0, args.seed)[0]
    else:
        temperatures = np.geomspace(60.0, 1.0, 33)

    rng = np.random.default_rng(args.seed)
    starts = [pmp.canonicalize(rng.integers(0, 5, size=n)) for _ in range(runs)]
    methods = args.methods or ["Gibbs", "MH", *VARIANTS]
    results, walls = {}, {}
    for method in methods:
        t0 = time.perf_counter()
        cost = cost_per_draw(model, z, method, temperatures, starts[0], args.pilot)
        draws = max(int(seconds / cost), 40)
        results[method] = []
        for r in range(runs):
            idata, _ = sample(model, z, method, temperatures, draws, starts[r], args.seed + r + 1)
            results[method].append(run_summary(idata, method))
        walls[method] = time.perf_counter() - t0
        print(f"  {method}: {draws} draws per run ({1e3 * cost:.3f} ms CPU per draw), "
              f"{walls[method]:.0f} s for {runs} runs", flush=True)

    statistics = STATISTICS
    print(f"\nTable {table}: AIAT_{runs} and AMLD_{runs}, {seconds:g} CPU s per run and method; "
          f"ladder of {temperatures.size} rungs {temperatures[0]:g} -> {temperatures[-1]:g}")
    print(f"{'method':<12} {'':<5}{'draws':>7}" + "".join(f"{s:>10}" for s in statistics)
          + f"{'AMLD':>11}")
    for method in methods:
        rows = results[method]
        aiat = []
        for s in statistics:
            values = np.array([row[s] for row in rows])
            constant = int(np.isnan(values).sum())
            mean = np.nanmean(values) if constant < len(values) else np.nan
            aiat.append(f"{mean:10.2f}" if not constant else f"{mean:8.2f}*{constant}")
        amld = np.mean([row["max l(z)"] for row in rows])
        draws = int(np.median([row["draws"] for row in rows]))
        print(f"{method:<12} {'ours':<5}{draws:>7}" + "".join(aiat) + f"{amld:11.2f}")
        paper = PAPER[table][method]
        print(f"{'':<12} {'paper':<5}{'':>7}" + "".join(
            f"{v:10.2f}" if np.isfinite(v) else f"{'-':>10}" for v in paper[:4])
            + f"{paper[4]:11.2f}")
    print("(*k: k runs had a constant series, no IAT; the average is over the others)")

    variants = [m for m in methods if m in VARIANTS]
    if variants:
        print(f"\nTable {3 if table == 4 else 5}: acceptance rates (%), range over runs")
        print(f"{'method':<12} {'crossover':>15} {'paper':>9} {'exchange':>15} {'paper':>7}"
              f" {'mutation':>15} {'x incl. same':>15}")
        paper = PAPER_ACCEPTANCE[table]
        for method in variants:
            rows = results[method]

            def span(key, rows=rows):
                values = 100 * np.array([row[key] for row in rows])
                return f"{values.min():6.2f} - {values.max():6.2f}"

            print(f"{method:<12} {span('crossover'):>15} {paper[method]:>9} "
                  f"{span('exchange'):>15} {paper['RE']:>7} {span('mutation'):>15} "
                  f"{span('accepted'):>15}")
        print("crossover: accepted crossovers that changed a partition, per proposed (PBC's "
              "'crossover_changed'); 'x incl. same': all accepted, including proposals "
              "equal to the current partition")
    print(f"\nwall time: {time.perf_counter() - wall0:.0f} s")


if __name__ == "__main__":
    main()
