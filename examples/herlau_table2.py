"""Herlau et al. (2016), Table 2: Gibbs, split-merge and ARM on Jain & Neal's Bernoulli
mixtures; autocorrelation times per iteration and normalized iterations. ARMx, the
extended variant (``pmp.ARM([z], variant="extended")``: Algorithm 3 plus outside-block
moves, not in the paper), runs beside ARM for the same T iterations.

Run:  python examples/herlau_table2.py [--datasets 20] [--chains 8] [--iterations 2000]
          [--dims 6 8 10] [--processes 2] [--seed 2016] [--plot fig6b.png]
      python examples/herlau_table2.py --datasets 2 --chains 4 --iterations 300   (a trial)

Paper: Herlau, Mørup, Schmidt & Teh, "Adaptive Reconfiguration Moves for MCMC inference
in Dirichlet Process Mixtures" (2016), §3 (start), §3.1, Tables 1-2, Figure 6b.

Data (``pmp.datasets.jain_neal_bernoulli``): n = 100 items in 5 planted blocks of 20,
binary attributes with the probabilities of the paper's Table 1, the last column
repeated for d > 6: Examples 1-3 are d = 6, 8, 10. A fresh data set per (example,
data set); its generator is seeded by (``--seed``, d, data set index), so a data set
does not depend on which process runs it or on ``--datasets``.

Model (§3.1): ``z = pmp.CRP("z", alpha=1.0, n=100)``,
``pmp.CollapsedBetaBernoulli("x", partition=z, a=1.0, b=1.0, observed=X)``.

Protocol (§3 and §3.1), per data set:

1. Initialisation: S = ``--chains`` chains, 50 Gibbs iterations of one sweep each
   (``pm.sample(draws=50, tune=0, chains=S, step=[pmp.Gibbs([z], n_sweeps=1)])``) from
   PyMC's default start, the one-block partition (the paper does not say where the
   Gibbs initialisation starts). Each chain's last draw is its ``initvals`` for all
   three methods ("this initialization was used for all methods").
2. Each method: ``pm.sample(draws=T, tune=0, chains=S, cores=1, step=[...])`` with
   T = ``--iterations``:

   - Gibbs: ``pmp.Gibbs([z], n_sweeps=1)``, one sweep per iteration. Not the default
     ``n_sweeps="auto"``, which at n = 100 makes 20 sweeps per draw.
   - SM: ``pmp.SplitMerge([z])``, its defaults SM(5, 1, 1): 5 intermediate restricted
     Gibbs scans (the paper's L = 5), 1 split/merge update, then 1 Gibbs sweep.
   - ARM: ``pmp.ARM([z])``, Algorithm 3 across the S chains of ``pm.sample`` (a
     population step), then 1 Gibbs sweep. Its history holds the states of this
     run only (the 50 initial Gibbs iterations are not in it; the paper does not
     say whether its history includes them), so the first iteration has no ARM
     update.

Reported, per example and method, mean(sd) over data sets x chains (the paper's
notation: the bracket is the sd in units of the last digit, 116.5(939) = 116.5 ± 93.9;
the paper does not say whether its sd is over chains or data sets, we take it over
all data set x chain values):

- IAT trace: integrated autocorrelation time, per iteration, of the fraction of items
  in the largest block (the steps' ``largest_cluster_frac`` sample stat).
- IAT indicator: for the co-occurrence indicators delta(z_i, z_j) of 15 watched items
  (3 drawn at random from each planted block, per data set) the maximum over the 105
  pairs of each chain's IAT, then averaged ("the average of the *maximum* of the
  autocorrelation time of the 1/2 14 x 15 pairs").
- IAT estimator: the paper uses 1 + 2 sum_tau r(tau), truncated where r is close to
  zero (Neal 1993); we use ArviZ: IAT = draws / ``az.ess(method="mean")`` (Geyer's
  initial monotone sequence on the chain split in halves), one chain at a time. A
  constant series (a chain that never changed it) has no IAT and is left out (NaN);
  column ``flat`` counts the chains whose trace is constant (their indicator IAT is
  then usually NaN too).
- Normalized iterations: T x the cost of an iteration in Gibbs sweeps (§3.4, "Total
  time spent / Time spent on Gibbs iterations"). Gibbs: T. SM and ARM: per chain, from
  the step's own timing stats, T x (update + Gibbs seconds).sum() / (Gibbs
  seconds).sum() (``split_merge_seconds`` / ``arm_seconds`` and ``gibbs_seconds``):
  both times come from the same iterations, so the ratio does not depend on the load.
  ARM's update time includes its Python history (drawing z^a, z^b), part of its cost.
- accept: accepted / proposed split-merge (SM) or ARM updates over the run.
- s/set: mean ``pm.sample`` loop seconds per data set (S chains).

The paper's Table 2 (20 data sets, S = 8, T = 2000) is printed beside ours. ``--plot``
draws Figure 6b: per data set, the IAT averaged over its chains, ARM (x) against SM
and against Gibbs (y), trace (top) and indicator (bottom); points above the diagonal
are data sets where ARM mixes faster. Log axes (the paper does not say; its values
span two decades).

Data sets run in parallel on ``--processes`` worker processes
(``concurrent.futures.ProcessPoolExecutor``), each running ``pm.sample`` with
``cores=1``; every worker first samples a tiny model with each step (untimed), so
numba's compilation or cache load is not inside any timed run.

Measured: the paper's protocol size (``python examples/herlau_table2.py --processes 2``:
20 data sets x 3 examples, S = 8, T = 2000; Python 3.11, PyMC 5.28, ArviZ 0.23; at
commit d609e59, ARM's reverse stopped early; wall time 556 s on two worker processes
of the otherwise idle machine)::

               method   IAT trace        paper   IAT indic        paper norm. iter      paper  flat accept  s/set
    Ex. 1 d=6  Gibbs  247.3(3353)   116.5(939) 214.2(2846)    91.6(889)       2000       2000 0/160           1.6
               SM       26.4(334)    27.8(122)   20.4(192)    23.2(103)  5991(389)  6741(468) 0/160  0.031    3.0
               ARM       11.0(44)     14.9(77)     9.0(40)     13.6(71) 11383(531)   6712(47) 0/160  0.083    5.9
    Ex. 2 d=8  Gibbs  250.3(3747)  165.4(1656) 207.8(3130)  131.3(1359)       2000       2000 0/160           1.6
               SM       29.6(221)    27.9(149)   28.4(231)    26.4(149)  6424(355)  6855(482) 0/160  0.018    3.2
               ARM       11.7(95)      8.5(50)    12.2(86)      9.2(49) 10916(436)   6731(59) 0/160  0.093    5.3
    Ex. 3 d=10 Gibbs  256.7(4522)   88.9(1374) 287.6(3822)   99.3(1327)       2000       2000 0/160           1.7
               SM       23.0(201)    19.3(171)   53.1(688)    30.4(254)  6703(283)  7503(185) 0/160  0.016    3.7
               ARM        7.6(75)    10.8(125)   27.2(400)    14.7(140) 10785(523)   6705(44) 0/160  0.090    5.9

(Gibbs sweep 41-45 us.) The Gibbs and SM rows are identical to those of stop 28's run
(1269 s on one process, before early rejection); ARM's then were 12.4(134) /
10.0(96), 11.2(110) / 11.8(87), 19.9(593) / 34.6(570) at 13854-13939 normalized
iterations. What it shows:

- **The ordering is the paper's**: per iteration ARM < SM < Gibbs in every example
  and both measures. SM's and ARM's means are within a factor of about 1.4 of the
  paper's, except ARM's indicator IAT on Example 3 (27.2 against 14.7), whose sd of
  40.0 says a few data sets pull it up (at stop 28 one data set with ARM IATs of about
  250 was Figure 6b's outlier, ``--plot``).
- **Gibbs's IATs are about twice the paper's**, with sds as large (a chain that jumps
  once between plateaus in 2000 iterations has an IAT in the hundreds; one that never
  jumps has a short one, the effect the paper warns of in §4): an ESS of 6-10 per
  chain, itself a noisy estimate.
- **Normalized iterations differ**: ARM costs 5.4-5.7 sweeps per iteration here
  (7.0 before early rejection) against the paper's 3.4, SM 3.0-3.4 against 3.4-3.8.
  At n = 100 a sweep takes 41-45 us, so an ARM update's fixed costs (its Python
  history, about 25 us, and a kernel dispatch) weigh as much as its arithmetic; on
  the networks (sweeps of 0.4-2.4 ms) an ARM iteration costs 1.8-2.4 sweeps
  (``examples/benchmark_arm.py``). Per unit of computation, ARM's advantage over SM
  is therefore smaller than per iteration here.
- Accept rates: SM 1.6-3.1 %, ARM 8.3-9.3 % of the updates.
"""

import argparse
import logging
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pymc as pm
from _mixing import iat

import pymc_partitions as pmp

# ARMx: pmp.ARM([z], variant="extended"), Algorithm 3 plus outside-block moves (not in
# the paper: its §5 future work); its rows print no paper figures.
METHODS = ("Gibbs", "SM", "ARM", "ARMx")
N_INIT = 50  # Gibbs iterations that initialise every chain (§3)
WATCH_PER_BLOCK = 3  # watched items per planted block (§3.1)

# Herlau et al. (2016), Table 2, as printed: IAT trace, IAT indicator, normalized
# iterations; mean(sd), the sd in units of the last digit.
PAPER = {
    6: {"Gibbs": ("116.5(939)", "91.6(889)", "2000"),
        "SM": ("27.8(122)", "23.2(103)", "6741(468)"),
        "ARM": ("14.9(77)", "13.6(71)", "6712(47)")},
    8: {"Gibbs": ("165.4(1656)", "131.3(1359)", "2000"),
        "SM": ("27.9(149)", "26.4(149)", "6855(482)"),
        "ARM": ("8.5(50)", "9.2(49)", "6731(59)")},
    10: {"Gibbs": ("88.9(1374)", "99.3(1327)", "2000"),
         "SM": ("19.3(171)", "30.4(254)", "7503(185)"),
         "ARM": ("10.8(125)", "14.7(140)", "6705(44)")},
}
EXAMPLE = {6: 1, 8: 2, 10: 3}


def quiet_pymc():
    logging.getLogger("pymc").setLevel(logging.ERROR)


def bernoulli_model(x):
    """CRP(alpha = 1) partition, Beta(1, 1) block probabilities integrated out (§3.1)."""
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=x.shape[0])
        pmp.CollapsedBetaBernoulli("x", partition=z, a=1.0, b=1.0, observed=x)
    return model, z


def make_step(method, z):
    if method == "Gibbs":
        return pmp.Gibbs([z], n_sweeps=1)  # the paper's iteration: one sweep
    if method == "SM":
        return pmp.SplitMerge([z])  # SM(5, 1, 1)
    return pmp.ARM([z], variant="extended" if method == "ARMx" else "arm")


def sample(model, z, method, draws, chains, seed, initvals=None):
    with model:
        return pm.sample(draws=draws, tune=0, chains=chains, cores=1,
                         step=[make_step(method, z)],
                         initvals=initvals, random_seed=seed, progressbar=False,
                         compute_convergence_checks=False)


def warm_up():
    """Process initializer: sample a tiny model with every step, untimed, so each
    worker compiles (or loads from the numba cache) the kernels before any timed run."""
    quiet_pymc()
    x, _ = pmp.datasets.jain_neal_bernoulli(6, n_per_component=2, seed=0)
    model, z = bernoulli_model(x)
    for method in METHODS:
        sample(model, z, method, draws=3, chains=2, seed=0)


def chain_iats(idata, watched):
    """Per chain: IAT of the largest block's fraction, the largest IAT over the
    co-occurrence indicators of the watched pairs, and whether the trace is flat."""
    frac = idata.sample_stats["largest_cluster_frac"].values  # (S, T)
    labels = idata.posterior["z"].values[:, :, watched]  # (S, T, 15)
    a, b = np.triu_indices(len(watched), k=1)  # the 105 pairs
    together = labels[:, :, a] == labels[:, :, b]  # (S, T, 105)
    trace, indicator = [], []
    for s in range(frac.shape[0]):
        trace.append(iat(frac[s]))
        pairs = [iat(together[s, :, p]) for p in range(a.size)]
        indicator.append(np.nanmax(pairs) if np.isfinite(pairs).any() else np.nan)
    return np.array(trace), np.array(indicator), np.ptp(frac, axis=1) == 0


def accept_rate(idata):
    stats = idata.sample_stats
    proposed = int((stats["split_proposed"] + stats["merge_proposed"]).sum())
    accepted = int((stats["split_accepted"] + stats["merge_accepted"]).sum())
    return accepted / max(proposed, 1)


def loop_seconds(idata, fallback):
    """``pm.sample``'s sampling-loop time (no model set-up or conversion)."""
    return float(idata.sample_stats.attrs.get("sampling_time", fallback))


def run_method(model, z, method, seed, starts, watched, args):
    """One method's ``pm.sample`` run from the chains' starts: its idata and its row."""
    t0 = time.perf_counter()
    idata = sample(model, z, method, args.iterations, args.chains, seed, initvals=starts)
    trace, indicator, flat = chain_iats(idata, watched)
    row = {"trace": trace, "indicator": indicator, "flat": flat,
           "seconds": loop_seconds(idata, time.perf_counter() - t0),
           "normalized": np.full(args.chains, float(args.iterations)),
           "accept": np.nan if method == "Gibbs" else accept_rate(idata)}
    return idata, row


def run_dataset(d, index, args):
    """One data set of one example: initialisation, then the three methods from the
    same start. Returns per method the chains' IATs, normalized iterations, etc."""
    quiet_pymc()
    rng = np.random.default_rng([args.seed, d, index])
    x, truth = pmp.datasets.jain_neal_bernoulli(d, seed=rng)
    watched = np.concatenate([rng.choice(np.flatnonzero(truth == k), WATCH_PER_BLOCK,
                                         replace=False) for k in range(5)])
    model, z = bernoulli_model(x)
    S, T = args.chains, args.iterations
    init = sample(model, z, "Gibbs", N_INIT, S, int(rng.integers(2**31)))
    starts = [{"z": init.posterior["z"].values[s, -1]} for s in range(S)]
    seed = int(rng.integers(2**31))  # the same seed for every method
    out, idatas = {}, {}
    for method in METHODS:
        idatas[method], out[method] = run_method(model, z, method, seed, starts, watched, args)

    for method, update in (("SM", "split_merge_seconds"), ("ARM", "arm_seconds"),
                           ("ARMx", "arm_seconds")):
        stats = idatas[method].sample_stats
        update_s, gibbs_s = stats[update].values, stats["gibbs_seconds"].values  # (S, T)
        out[method]["normalized"] = T * (update_s + gibbs_s).sum(axis=1) / gibbs_s.sum(axis=1)
    out["sweep_us"] = 1e6 * idatas["ARM"].sample_stats["gibbs_seconds"].values.mean()
    out["gibbs_draw_us"] = 1e6 * out["Gibbs"]["seconds"] / (S * T)
    return out


def paper_style(values, decimals):
    """mean(sd) with the sd in units of the last digit, as the paper prints them."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return "nan"
    mean = values.mean()
    if values.size == 1 or np.ptp(values) == 0:
        return f"{mean:.{decimals}f}"
    sd = values.std(ddof=1) * 10**decimals
    return f"{mean:.{decimals}f}({sd:.0f})"


def pooled(results, d, method, key):
    return np.concatenate([np.atleast_1d(r[method][key]) for r in results[d]])


def print_table(results, args):
    head = (f"{'':<10} {'method':<6} {'IAT trace':>11} {'paper':>12} {'IAT indic':>11} "
            f"{'paper':>12} {'norm. iter':>10} {'paper':>10} {'flat':>5} {'accept':>6} "
            f"{'s/set':>6}")
    print(head)
    print("-" * len(head))
    for d in args.dims:
        for method in METHODS:
            label = f"Ex. {EXAMPLE.get(d, '?')} d={d}" if method == "Gibbs" else ""
            paper = PAPER.get(d, {}).get(method, ("-", "-", "-"))
            flat = int(pooled(results, d, method, "flat").sum())
            chains = pooled(results, d, method, "flat").size
            accept = pooled(results, d, method, "accept")
            acc = "" if method == "Gibbs" else f"{np.mean(accept):.3f}"
            secs = np.mean(pooled(results, d, method, "seconds"))
            print(f"{label:<10} {method:<6} "
                  f"{paper_style(pooled(results, d, method, 'trace'), 1):>11} {paper[0]:>12} "
                  f"{paper_style(pooled(results, d, method, 'indicator'), 1):>11} "
                  f"{paper[1]:>12} "
                  f"{paper_style(pooled(results, d, method, 'normalized'), 0):>10} "
                  f"{paper[2]:>10} {f'{flat}/{chains}':>5} {acc:>6} {secs:>6.1f}")
        sweep = [r["sweep_us"] for r in results[d]]
        draw = [r["gibbs_draw_us"] for r in results[d]]
        print(f"{'':<10} (Gibbs sweep {np.mean(sweep):.0f} us; a Gibbs-run draw incl. "
              f"PyMC {np.mean(draw):.0f} us)")


def plot_figure_6b(results, args, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    fig, axes = plt.subplots(2, 2, figsize=(7.5, 7), squeeze=False)
    for row, key in enumerate(("trace", "indicator")):
        for col, other in enumerate(("SM", "Gibbs")):
            ax = axes[row][col]
            for d in args.dims:
                arm = [np.nanmean(r["ARM"][key]) for r in results[d]]
                oth = [np.nanmean(r[other][key]) for r in results[d]]
                ax.scatter(arm, oth, s=14, label=f"Example {EXAMPLE.get(d, d)} (d = {d})")
            ax.set_xscale("log")
            ax.set_yscale("log")
            lo = min(ax.get_xlim()[0], ax.get_ylim()[0])
            hi = max(ax.get_xlim()[1], ax.get_ylim()[1])
            ax.plot([lo, hi], [lo, hi], "k-", lw=0.8)  # above it: ARM mixes faster
            ax.set(xlim=(lo, hi), ylim=(lo, hi), aspect="equal")
            ax.xaxis.set_minor_formatter(NullFormatter())  # decade labels only
            ax.yaxis.set_minor_formatter(NullFormatter())
            ax.set_xlabel(f"ARM, IAT {key}")
            ax.set_ylabel(f"{other}, IAT {key}")
    axes[0][0].legend(fontsize=8)
    fig.suptitle("Herlau et al. Figure 6b: mean IAT over chains, one point per data set")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"figure saved to {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", type=int, default=20, help="per example (paper: 20)")
    parser.add_argument("--chains", type=int, default=8, help="S (paper: 8)")
    parser.add_argument("--iterations", type=int, default=2000, help="T (paper: 2000)")
    parser.add_argument("--dims", type=int, nargs="+", default=[6, 8, 10])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--seed", type=int, default=2016)
    parser.add_argument("--plot", default=None, help="save Figure 6b to this file")
    args = parser.parse_args()
    quiet_pymc()

    t_start = time.perf_counter()
    units = [(d, k) for d in args.dims for k in range(args.datasets)]
    with ProcessPoolExecutor(max_workers=args.processes, initializer=warm_up) as pool:
        futures = {u: pool.submit(run_dataset, *u, args) for u in units}
        done = {u: f.result() for u, f in futures.items()}
    results = {d: [done[(d, k)] for k in range(args.datasets)] for d in args.dims}

    print(f"Herlau et al. (2016) Table 2: {args.datasets} data sets x {args.chains} chains x "
          f"{args.iterations} iterations per example (paper: 20 x 8 x 2000); IAT per "
          f"iteration, mean(sd) over data sets x chains, sd in last-digit units.\n")
    print_table(results, args)
    wall = time.perf_counter() - t_start
    print(f"\nwall time: {wall:.0f} s ({args.processes} processes, {len(units)} data sets, "
          f"{wall * args.processes / len(units):.1f} process-s per data set)")
    if args.plot:
        plot_figure_6b(results, args, args.plot)


if __name__ == "__main__":
    main()
