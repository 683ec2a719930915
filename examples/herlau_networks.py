"""The network experiments of Herlau, Mørup, Schmidt & Teh (2016), *Adaptive
Reconfiguration Moves for MCMC inference in Dirichlet Process Mixtures*, §3.2-3.6:
Tables 3, 4 and 5 and Figure 6a (Gibbs, split-merge and ARM on downsampled networks).

Run:  python examples/herlau_networks.py --table 3    (Table 3: Gibbs, SM, ARM, ARMx; 9 rows)
      python examples/herlau_networks.py --table 4    (Tables 4 and 5: + bSM, sARM)
      python examples/herlau_networks.py --table 6a [--network Hagmann --scale 0.25]
          [--chain-counts 2 4 8 16] [--plot fig6a.png]
      python examples/herlau_networks.py --table 3 --iterations 40 --restarts 2 --chains 4
          --networks NIPS                                                (a quick look)
Options: --iterations T (ARM iterations, 1000), --restarts (4), --chains S (8),
--processes (2), --pilot (100), --networks (Tables 3/4: a subset of NIPS Hagmann USAir),
--seed (0). The network files are read from ``$PMP_DATA_DIR``.

Data (§3.3): ``pmp.datasets.load_nips234`` (n = 234), ``load_hagmann`` (998 regions; the
paper reports 988 after its own, unknown, preprocessing, so our scale s keeps
round(998 s) vertices), ``load_usair97`` (332), each prepared by
``pmp.datasets.prepare_network(data, scale)`` (symmetrise, threshold at 0, drop the
diagonal, keep the round(scale n) vertices of highest degree). The paper's fourth
network, Caltech36 of Facebook100, is not available here: its rows (the last of
Tables 3, 4, 5) are left out. Model (§3.2): ``pmp.CRP(alpha=1)`` and
``pmp.IRM(a=1, b=1)``, every parameter fixed to one as in the paper.

ARMx is ``pmp.ARM([z], variant="extended")``: Algorithm 3 plus outside-block moves
(the paper's §5 future work, not in its tables), priced and run like bSM and sARM
(a pilot, then round(B / c) iterations at ARM's budget B), so the tables print the
paper's ARM, our Algorithm 3 (ARM) and the extension (ARMx) side by side.

Protocol (§3, §3.4, §3.5), per row (network, scale, S) and restart r = 1..R:

1. **Start.** S chains of 50 Gibbs sweeps (one ``pm.sample(chains=S)``); the last
   state of chain s starts chain s of every method of this restart (``initvals``),
   as the paper's 50 Gibbs iterations "used for all methods".
2. **ARM** (``pmp.ARM([z])``: Algorithm 3 and one Gibbs sweep per iteration) for
   T iterations. Its cost c_ARM in Gibbs sweeps per iteration is its own
   ``(arm_seconds + gibbs_seconds).sum() / gibbs_seconds.sum()`` (§3.4); the budget is
   B = T c_ARM standardized iterations, c_ARM the mean over the R restarts.
3. **The others** run B standardized iterations each from the same start: Gibbs
   B sweeps; SM (``pmp.SplitMerge``: 5 restricted scans, the paper's L = 5, one update
   and one sweep per iteration), bSM (``pmp.ARM(variant="bsm")``) and sARM
   (``variant="sarm"``) round(B / c) iterations, c their cost from a pilot (below).
4. **Statistics.** R-hat of the log joint (the steps' ``log_joint``), the second half
   of every run (the first half discarded as burn-in), between restarts (§3.4): for
   each chain index s, ``az.rhat`` over the R restarts' chain s (the restarts are
   ArviZ's chains); printed as the paper's mean(sd) over s, the sd in units of the
   last digit (20.46(1269) = 20.46 +- 12.69). Table 5: the accept rate x 100 of the
   split/merge updates (accepted / proposed over all chains and iterations of a run),
   mean(sd) over the restarts.

Restarts run in parallel on ``--processes`` worker processes (``pm.sample(cores=1)``
in each): first the starts, ARM runs and pilots of every row, then the other methods.

Choices the paper leaves open (or that PyMC forces), ours:

- **A Gibbs iteration is one sweep** (``pmp.Gibbs(n_sweeps=1)``, for the starts and
  the Gibbs method): the library's default ``n_sweeps="auto"`` makes a draw of about
  2000 item updates (9 sweeps at n = 234), which would not be the paper's iteration.
- **Starting state** of the 50 start sweeps: PyMC's default, the CRP's support point
  (every vertex in one block), each chain with its own seed.
- **R-hat** is the classic Gelman-Rubin statistic (ArviZ ``method="identity"``: not
  split, not rank-normalised; the paper cites Brooks & Gelman 1998 and predates the
  rank-normalised version, which would also bound the large values of its Gibbs
  column). The paper does not say over what its mean(sd) is taken; ours is over the S
  chain indices (each a replicate of the restarts-as-chains R-hat; for Gibbs and SM
  the chains are independent, for ARM chain s of each restart sees the others of its
  restart only). sd with ddof = 1.
- **Costs are timed inside the steps**, so PyMC's per-draw loop (about 0.3 ms, as
  much as a Gibbs sweep at these n) counts for no method: SM's cost is its own
  ``(split_merge_seconds + gibbs_seconds) / gibbs_seconds``, computed exactly like
  ARM's from ``arm_seconds``. Wall-clock ratios would include PyMC's loop in both the
  SM and the Gibbs time and pull SM's cost towards 1, granting it more than B.
- **Pilots.** ``pm.sample`` needs the number of draws in advance, so the costs of SM,
  bSM and sARM that set their iteration counts come from a pilot of ``--pilot`` (100)
  iterations of each, per restart from that restart's start (mean over restarts);
  bSM and sARM price themselves by their own stats ratio, as ARM. The realised cost of
  every main run is printed with its standardized iterations (iterations x realised
  cost), so how close each method came to B can be read off. Each worker first runs
  every method on a small network, so that no timed iteration loads the numba kernels
  (measured: without it a 50-iteration bSM pilot on NIPS came out at ~190 sweeps per
  iteration instead of ~4).
- **One budget per row**: B and the iteration counts are the same for all restarts
  (R-hat needs runs of equal length), from costs averaged over the restarts.
- **Figure 6a**: ARM at S = 2, 4, 8, 16 (``--chain-counts``), each S with its own
  restarts, starts and budget; the SM reference is SM at S = ``--chains`` (8) with ARM's
  budget at that S. Default network Hagmann 0.25: a row of Tables 4-5 (so its
  numbers can be cross-checked there) where ARM's accept rate is high (13.6 x 100)
  and SM's R-hat (1.99) is clearly above ARM's (1.08), so a change with S is visible;
  the paper's figure has no numbers in its text, only the claim that ARM gains from
  more chains and that at small S it "sometimes perform[s] worse than Split-Merge".
- **Paper's columns.** Table 3 is printed beside the paper's T = 1000 columns, or
  its T = 2000 ones when ``--iterations 2000``.
- **Reproducibility.** A seed fixes the starts and the ARM runs (the same in every
  mode: NIPS 1 at S = 8 gives the same ARM R-hat in Tables 3 and 4), but B and the
  other methods' lengths follow measured times, so their draws vary from run to run.

Measured (PyMC 5.28, ArviZ 0.23, Python 3.11, at commit ad9c537: early rejection of
ARM's reverse, so an ARM iteration costs 1.7-2.5 sweeps; the 2-core machine shared,
the runs niced behind a CI run for their first hour):

Table 3 at the defaults (``--table 3``: T = 1000, 4 restarts, S = 8; wall time 4157 s
niced behind CI; the two workers used about 25 CPU-minutes each, so about 30 min on
two free cores). R-hat mean(sd) ours, the paper's T = 1000 row under it; B the budget
in standardized iterations; c the realised cost of an iteration in sweeps (SM/ARM); K
the median at the end (Gibbs/SM/ARM)::

    row           n  Gibbs        SM          ARM           B  c SM/ARM   K
    NIPS 1      234  3.72(424)    1.73(67)    2.10(15)   2424  2.93/2.42  6/8/7
      paper          25.40(1090)  3.24(272)   1.01()
    NIPS 0.9    211  1.92(59)     2.02(116)   1.17(6)    2445  2.75/2.45  6/8/6
      paper          22.17(764)   2.74(44)    1.00()
    NIPS 0.8    187  1.94(147)    1.72(67)    2.21(15)   2399  2.63/2.40  6/8/7
      paper          13.26(452)   2.89(160)   1.01(1)
    Hagmann 0.4 399  15.37(1118)  4.87(347)   2.65(79)   1647  1.24/1.65  20/24/28
      paper          15.96(1397)  4.39(237)   1.77(4)
    Hagmann 0.3 299  33.07(3968)  3.47(109)   2.43(41)   1688  1.30/1.69  20/23/25
      paper          10.62(680)   1.81(46)    1.13(16)
    Hagmann 0.2 200  14.77(1687)  1.67(65)    2.23(92)   1784  1.37/1.78  18/18/19
      paper          4.54(229)    1.19(23)    1.02(1)
    USAir 0.9   299  3.89(172)    1.72(56)    1.72(25)   1936  1.79/1.94  14/15/15
      paper          2.72(100)    1.82(113)   1.01()
    USAir 0.8   266  2.84(177)    2.44(113)   4.21(35)   1954  1.73/1.95  14/15/15
      paper          2.45(113)    2.19(90)    1.00()
    USAir 0.7   232  3.16(194)    2.32(76)    2.78(29)   1909  1.64/1.91  15/16/15
      paper          1.04(3)      1.12(8)     1.03(2)

**Ours differ from the paper's**: ARM has the lowest R-hat on 3 rows of 9 (NIPS 0.9,
Hagmann 0.4 and 0.3) and ties SM on USAir 0.9; SM is lowest on the other 5. The
paper has ARM lowest everywhere, at 1.00-1.77. Gibbs is never lowest, and on Hagmann
it is far from mixing (R-hat 15-33), as in the paper; on NIPS our Gibbs is far closer
to mixing than the paper's (R-hat 2-4 against 13-25). ARM's sd over the chain
indices is small (NIPS 1: 2.10 +- 0.15): the 8 chains of one restart, which share
one history, agree with each other and disagree with the other restarts. A probe at
stop 28 (NIPS 1, two restarts of 8 chains, 1000 ARM iterations) showed it: within a
restart the chains hold 8 different partitions whose log joints agree within a few
nats, while the two restarts sat 115 nats apart, each population in its own basin,
and ARM accepted 0.5-0.9 % of its updates there (Table 5: 19.4 %). Whether a row
shows the effect changes from run to run: at stop 28 (ARM 3.2-3.4 sweeps per
iteration, a history that could hand a chain its own current state) NIPS 1 had ARM
at 9.60(35), NIPS 0.9 at 1.19(10), Hagmann 0.4 at 3.44(270), and ARM was lowest on 2
rows of 9.

**Why our ARM does not do better**: its bold moves are rarely accepted.
``examples/herlau_acceptance.py`` (see its docstring) shows that a merge whose block
moves (Algorithm 3, lines 5-8) carry the rest of z_i and z_j out of i's and j's
blocks, a fifth of all proposals on NIPS and on Hagmann, is never accepted. Its
reverse, built from z*, can bring those items back only one at a time (line 16), at
a probability exponentially small in their number: a median log T(z|z*) - log T(z*|z)
of -43 to -58 nats. So our ARM accepts about as often as sARM, without block moves,
where the paper's accepts 10-14 times as often (Table 5 below). The paper's rates
would need those reverses to cost nothing, which Algorithm 3 as written does not
give. We think the authors' implementation differs there; without their code we
cannot check. The data may differ too: our NIPS234 has 598 edges, and the paper's
Hagmann has 988 vertices against our 998.

Tables 4-5 at the defaults (``--table 4``; wall time 5442 s, niced behind a CI run
for its first 60 min, about 14 CPU-minutes per worker). R-hat mean(sd), the paper's
row under it; then the accept rate x 100::

    row           Gibbs        SM         bSM        sARM       ARM        B
    NIPS 1        3.73(425)    1.68(53)   7.93(42)   8.72(173)  2.10(15)   2452
      paper       24.88(823)   2.43(97)   1.12(15)   2.41(277)  1.09(3)
    Hagmann 0.25  23.01(3914)  3.20(147)  2.71(163)  8.39(185)  9.89(73)   1741
      paper       2.86(88)     1.99(84)   1.65(40)   1.28(33)   1.08(9)
    USAir 0.8     2.84(178)    2.43(112)  1.56(27)   4.01(50)   4.21(35)   1955
      paper       2.32(144)    1.94(105)  1.54(74)   1.60(102)  1.01(1)
    accept x 100               SM         bSM        sARM       ARM
    NIPS 1                     0.72(6)    5.75(531)  4.24(314)  5.14(381)
      paper                    0.48(3)    1.01(8)    1.37(14)   19.41(128)
    Hagmann 0.25               0.33(8)    0.54(4)    1.65(36)   1.96(28)
      paper                    0.14(1)    0.37(6)    1.08(27)   13.56(242)
    USAir 0.8                  0.21(2)    0.36(7)    0.80(61)   0.89(65)
      paper                    0.04(2)    0.11(4)    0.35(5)    4.10(19)

(B = T c_ARM: an ARM iteration cost 2.45 / 1.74 / 1.96 sweeps, NIPS / Hagmann /
USAir, since the reverse stops early; 3.30 / 2.23 / 2.63 in the previous run, whose
R-hats were NIPS 9.60(35), Hagmann 9.68(81), USAir 4.26(28) for ARM.) Every method
that draws from the shared history (bSM, sARM, ARM) can show the between-restart
effect of Table 3 (large R-hat, small sd); whether it does on a row changes from run
to run (NIPS ARM: 9.60, then 2.10). SM's accept rates are close to the paper's (NIPS
0.72 against 0.48); bSM's and sARM's are above the paper's, ARM's far below: our
block moves (lines 5-8, the only difference between sARM and ARM) raise the accept
rate by a factor of 1.1-1.2 where the paper's raise it by 10-14.
``examples/herlau_acceptance.py`` takes ARM's proposals apart and finds why: a merge
whose block moves carry the rest of z_i and z_j out of i's and j's blocks (a fifth of
all proposals on NIPS and on Hagmann) is never accepted, because Algorithm 3's
reverse, built from z*, can only bring those items back one at a time (line 16), at
a probability exponentially small in their number; see that script's docstring.

Figure 6a at the defaults (``--table 6a --plot fig6a.png``: Hagmann 0.25, T = 1000,
4 restarts; wall time 344 s on two cores): ARM's R-hat at S = 2, 4, 8, 16 is
9.68(185), 2.17(136), 9.89(73), 1.37(19); SM at S = 8: 3.19(146). (At stop 28, before
early rejection: 7.10(29), 1.26(12), 9.68(81), 1.16(12); SM 3.24(137).) Not monotone
in S as the paper's figure: with 4 restarts the statistic is close to 1 when the 4
populations happen to settle in one basin and 7-10 when they do not (Table 3's
effect), so a single run per S cannot show a trend; both runs agree only in that
S = 16 is ARM's best.

``--table 4 --iterations 20 --restarts 2 --chains 2 --networks NIPS --processes 1``
also runs on PyMC 6.4 / ArviZ 1.3 (Python 3.12).
"""

import argparse
import logging
import time
from concurrent.futures import ProcessPoolExecutor
from typing import NamedTuple

import arviz as az
import numpy as np
import pymc as pm

import pymc_partitions as pmp

LOADERS = {
    "NIPS": pmp.datasets.load_nips234,
    "Hagmann": pmp.datasets.load_hagmann,
    "USAir": pmp.datasets.load_usair97,
}

# Herlau et al. (2016), Table 3: GR R-hat of the log joint (S = 8, 4 restarts), mean(sd),
# Gibbs, SM, ARM, at T = 2000 and T = 1000 (normalized) iterations. Caltech rows left out.
PAPER_TABLE3 = {
    ("NIPS", 1.0): {2000: ("20.46(1269)", "2.50(153)", "1.04(2)"),
                    1000: ("25.40(1090)", "3.24(272)", "1.01()")},
    ("NIPS", 0.9): {2000: ("23.28(765)", "2.35(74)", "1.00()"),
                    1000: ("22.17(764)", "2.74(44)", "1.00()")},
    ("NIPS", 0.8): {2000: ("11.22(278)", "2.75(111)", "1.01()"),
                    1000: ("13.26(452)", "2.89(160)", "1.01(1)")},
    ("Hagmann", 0.4): {2000: ("15.46(1363)", "4.24(181)", "1.76(5)"),
                       1000: ("15.96(1397)", "4.39(237)", "1.77(4)")},
    ("Hagmann", 0.3): {2000: ("9.96(678)", "1.69(39)", "1.06(7)"),
                       1000: ("10.62(680)", "1.81(46)", "1.13(16)")},
    ("Hagmann", 0.2): {2000: ("3.78(239)", "1.02(1)", "1.01()"),
                       1000: ("4.54(229)", "1.19(23)", "1.02(1)")},
    ("USAir", 0.9): {2000: ("2.49(124)", "1.30(29)", "1.02(2)"),
                     1000: ("2.72(100)", "1.82(113)", "1.01()")},
    ("USAir", 0.8): {2000: ("2.41(107)", "2.26(99)", "1.00()"),
                     1000: ("2.45(113)", "2.19(90)", "1.00()")},
    ("USAir", 0.7): {2000: ("1.04(3)", "1.08(4)", "1.02(2)"),
                     1000: ("1.04(3)", "1.12(8)", "1.03(2)")},
}
# Table 4: GR R-hat, 1000 iterations (half burn-in), S = 8, 4 restarts; Gibbs SM bSM sARM ARM.
PAPER_TABLE4 = {
    ("NIPS", 1.0): ("24.88(823)", "2.43(97)", "1.12(15)", "2.41(277)", "1.09(3)"),
    ("Hagmann", 0.25): ("2.86(88)", "1.99(84)", "1.65(40)", "1.28(33)", "1.08(9)"),
    ("USAir", 0.8): ("2.32(144)", "1.94(105)", "1.54(74)", "1.60(102)", "1.01(1)"),
}
# Table 5: accept rate x 100, same runs as Table 4; SM bSM sARM ARM.
PAPER_TABLE5 = {
    ("NIPS", 1.0): ("0.48(3)", "1.01(8)", "1.37(14)", "19.41(128)"),
    ("Hagmann", 0.25): ("0.14(1)", "0.37(6)", "1.08(27)", "13.56(242)"),
    ("USAir", 0.8): ("0.04(2)", "0.11(4)", "0.35(5)", "4.10(19)"),
}

TABLE3_METHODS = ("Gibbs", "SM", "ARM", "ARMx")
TABLE4_METHODS = ("Gibbs", "SM", "bSM", "sARM", "ARM", "ARMx")
UPDATE_METHODS = ("SM", "bSM", "sARM", "ARM", "ARMx")  # split/merge updates (Table 5)
# ARMx: Algorithm 3 plus outside-block moves (variant="extended"; not in the paper).
ARM_VARIANTS = {"bSM": "bsm", "sARM": "sarm", "ARM": "arm", "ARMx": "extended"}
START_SWEEPS = 50  # §3: "evaluating S chains for 50 iterations using Gibbs sampling"
# Seed streams: one per (row, restart, run); pilots are offset so they never share one.
SEED_IDS = {"start": 0, "Gibbs": 1, "SM": 2, "bSM": 3, "sARM": 4, "ARM": 5, "ARMx": 6}
PILOT_SEED_OFFSET = 10


class Row(NamedTuple):
    network: str
    scale: float
    chains: int
    methods: tuple


def quiet_pymc():
    logging.getLogger("pymc").setLevel(logging.ERROR)


def warm_up():
    """Worker initializer: every method once on a small network, so that no timed run
    pays for loading (or compiling) the numba kernels; an update kernel is first called
    in the second iteration, which a cost would otherwise count."""
    quiet_pymc()
    adjacency = prepare("NIPS", 0.2)
    for method in ("Gibbs", "SM", "bSM", "sARM", "ARM", "ARMx"):
        sample(adjacency, method, draws=4, chains=2, seed=0)


def prepare(network, scale):
    return pmp.datasets.prepare_network(LOADERS[network]().data, scale).adjacency


def seed_for(args, row, restart, run):
    """One integer seed per (row, restart, run), the same whichever table asks for it,
    so e.g. NIPS 1 at S = 8 starts from the same states in Tables 3 and 4."""
    entropy = [args.seed, list(LOADERS).index(row.network), round(100 * row.scale), row.chains,
               restart, run]
    return int(np.random.SeedSequence(entropy).generate_state(1)[0])


def make_steps(method, z):
    if method == "Gibbs":
        return [pmp.Gibbs([z], n_sweeps=1)]  # the paper's iteration: one sweep
    if method == "SM":
        return [pmp.SplitMerge([z])]  # SM(5, 1, 1): 5 restricted scans, 1 update, 1 sweep
    return [pmp.ARM([z], variant=ARM_VARIANTS[method])]


def sample(adjacency, method, draws, chains, seed, initvals=None):
    with pm.Model():
        z = pmp.CRP("z", alpha=1.0, n=adjacency.shape[0])
        pmp.IRM("A", partition=z, a=1.0, b=1.0, observed=adjacency)
        return pm.sample(draws=draws, tune=0, chains=chains, cores=1,
                         step=make_steps(method, z), initvals=initvals, random_seed=seed,
                         progressbar=False, compute_convergence_checks=False)


def sweeps_per_iteration(method, stats):
    """An iteration's cost in Gibbs sweeps from the step's own timings (§3.4: total time
    / time spent on Gibbs sweeps)."""
    if method == "Gibbs":
        return 1.0
    update_name = "split_merge_seconds" if method == "SM" else "arm_seconds"
    update, sweeps = stats[update_name].values.sum(), stats["gibbs_seconds"].values.sum()
    return float((update + sweeps) / sweeps)


def run_method(adjacency, method, draws, chains, seed, initvals):
    """One method's run from the restart's start: what the tables need of it."""
    t0 = time.perf_counter()
    stats = sample(adjacency, method, draws, chains, seed, initvals).sample_stats
    log_joint, n_clusters = stats["log_joint"].values, stats["n_clusters"].values
    run = {"log_joint": log_joint, "k_end": n_clusters[:, -1],
           "sweeps_per_iteration": sweeps_per_iteration(method, stats),
           "seconds": time.perf_counter() - t0}
    if method in UPDATE_METHODS:
        run["proposed"] = int((stats["split_proposed"] + stats["merge_proposed"]).values.sum())
        run["accepted"] = int((stats["split_accepted"] + stats["merge_accepted"]).values.sum())
    return run


def start_restart(adjacency, chains, iterations, pilot, pilot_methods, seeds):
    """A restart's first stage: the 50 start sweeps, ARM for T iterations from them, and
    the pilots that price the methods whose iteration counts depend on the budget."""
    posterior = sample(adjacency, "Gibbs", START_SWEEPS, chains, seeds["start"]).posterior
    initvals = [{"z": posterior["z"].values[c, -1]} for c in range(chains)]
    arm = run_method(adjacency, "ARM", iterations, chains, seeds["ARM"], initvals)
    pilot_costs = {m: run_method(adjacency, m, pilot, chains, seeds[m] + PILOT_SEED_OFFSET,
                                 initvals)["sweeps_per_iteration"] for m in pilot_methods}
    return {"initvals": initvals, "arm": arm, "pilot_costs": pilot_costs}


def plan(starts, iterations):
    """The row's budget B = T c_ARM and each method's iteration count for it."""
    budget = round(iterations * np.mean([s["arm"]["sweeps_per_iteration"] for s in starts]))
    counts = {"ARM": iterations, "Gibbs": budget}
    for method in starts[0]["pilot_costs"]:
        cost = np.mean([s["pilot_costs"][method] for s in starts])
        counts[method] = max(2, round(budget / cost))
    return budget, counts


def run_rows(rows, args):
    """Every restart of every row on ``args.processes`` workers: the first stages of all,
    then the other methods at the budgets they set. Returns one result per row."""
    adjacency = {(r.network, r.scale): prepare(r.network, r.scale) for r in rows}
    restarts = range(args.restarts)

    def seeds(i, k):
        return {run: seed_for(args, rows[i], k, sid) for run, sid in SEED_IDS.items()}

    with ProcessPoolExecutor(args.processes, initializer=warm_up) as pool:
        futures = {
            (i, k): pool.submit(start_restart, adjacency[row.network, row.scale], row.chains,
                                args.iterations, args.pilot,
                                [m for m in row.methods if m not in ("Gibbs", "ARM")], seeds(i, k))
            for i, row in enumerate(rows) for k in restarts
        }
        starts = {key: f.result() for key, f in futures.items()}
        print(f"  starts, ARM runs and pilots done ({time.perf_counter() - args.t0:.0f} s)",
              flush=True)
        plans = [plan([starts[i, k] for k in restarts], args.iterations)
                 for i in range(len(rows))]
        futures = {
            (i, k, m): pool.submit(run_method, adjacency[row.network, row.scale], m,
                                   plans[i][1][m], row.chains, seeds(i, k)[m],
                                   starts[i, k]["initvals"])
            for i, row in enumerate(rows) for k in restarts for m in row.methods if m != "ARM"
        }
        others = {key: f.result() for key, f in futures.items()}
    results = []
    for i, row in enumerate(rows):
        runs = {m: [starts[i, k]["arm"] if m == "ARM" else others[i, k, m] for k in restarts]
                for m in row.methods}
        results.append({"n": adjacency[row.network, row.scale].shape[0], "budget": plans[i][0],
                        "iterations": plans[i][1], "runs": runs})
    return results


def rhat_per_chain(runs):
    """Classic Gelman-Rubin R-hat of the log joint for each chain index s, the restarts
    as ArviZ's chains (§3.4), on the second half of the runs (the first is burn-in)."""
    log_joint = np.stack([run["log_joint"] for run in runs])  # (restarts, S, draws)
    kept = log_joint[:, :, log_joint.shape[2] // 2:]
    return np.array([float(az.rhat(az.convert_to_dataset(kept[:, s]), method="identity")["x"])
                     for s in range(kept.shape[1])])


def accept_rates(runs):
    """Accept rate x 100 of the split/merge updates, one per restart."""
    return np.array([100 * run["accepted"] / max(run["proposed"], 1) for run in runs])


def mean_sd(values):
    """The paper's mean(sd), the sd in units of the last digit: 20.46(1269) = 20.46 +- 12.69."""
    v = np.asarray(values, dtype=float)
    sd = float(np.std(v, ddof=1)) if v.size > 1 else 0.0
    return f"{v.mean():.2f}({round(100 * sd) if np.isfinite(sd) else 'nan'})"


def budget_line(result, methods):
    """Per method: iterations, realised cost (sweeps per iteration, mean over restarts),
    standardized iterations, median K at the end, wall seconds of its runs (summed)."""
    runs, counts = result["runs"], result["iterations"]
    cost = {m: np.mean([r["sweeps_per_iteration"] for r in runs[m]]) for m in methods}
    k_end = {m: np.median(np.concatenate([r["k_end"] for r in runs[m]])) for m in methods}
    seconds = {m: sum(r["seconds"] for r in runs[m]) for m in methods}

    def joined(values):
        return "/".join(values[m] if isinstance(values[m], str) else f"{values[m]:.0f}"
                        for m in methods)

    return (f"  {'/'.join(methods)}: iterations {joined(counts)}; sweeps per iteration "
            f"{joined({m: f'{cost[m]:.2f}' for m in methods})}; standardized iterations "
            f"{joined({m: counts[m] * cost[m] for m in methods})}; K at the end "
            f"{joined(k_end)}; run seconds {joined(seconds)}")


def print_table(title, rows, results, methods, cell, paper, budgets=True):
    """One line of ours per row (``cell(result, method)``), the paper's (``paper(row)``,
    None if it has none) under it, then the row's budget line (unless ``budgets=False``)."""
    print(f"\n{title}")
    print(f"{'network':<8} {'scale':>5} {'n':>4} {'S':>3} {'':<5}"
          + "".join(f"{m:>13}" for m in methods) + f"{'B':>8}")
    for row, result in zip(rows, results):
        print(f"{row.network:<8} {row.scale:>5.2f} {result['n']:>4} {row.chains:>3} {'ours':<5}"
              + "".join(f"{cell(result, m):>13}" for m in methods) + f"{result['budget']:>8}")
        paper_row = paper(row)
        if paper_row is not None:
            print(f"{'':<24} {'paper':<5}" + "".join(f"{v:>13}" for v in paper_row))
        if budgets:
            print(budget_line(result, row.methods))


def rhat_cell(result, method):
    return mean_sd(rhat_per_chain(result["runs"][method]))


def accept_cell(result, method):
    return mean_sd(accept_rates(result["runs"][method]))


def selected(rows, networks):
    return [r for r in rows if r.network in networks]


def table3(args):
    rows = selected([Row(net, scale, args.chains, TABLE3_METHODS)
                     for net, scale in PAPER_TABLE3], args.networks)
    results = run_rows(rows, args)
    t_paper = 2000 if args.iterations == 2000 else 1000
    print_table(f"Table 3: GR R-hat of the log joint, mean(sd) over the S chain indices, "
                f"{args.restarts} restarts, T = {args.iterations} ARM iterations "
                f"(paper: its T = {t_paper} columns)", rows, results, TABLE3_METHODS,
                rhat_cell, lambda row: PAPER_TABLE3[row.network, row.scale][t_paper])


def table4(args):
    rows = selected([Row(net, scale, args.chains, TABLE4_METHODS)
                     for net, scale in PAPER_TABLE4], args.networks)
    results = run_rows(rows, args)
    print_table(f"Table 4: GR R-hat of the log joint, mean(sd) over the S chain indices, "
                f"{args.restarts} restarts, T = {args.iterations} ARM iterations",
                rows, results, TABLE4_METHODS, rhat_cell,
                lambda row: PAPER_TABLE4[row.network, row.scale])
    print_table("Table 5: accept rate x 100 of the split/merge updates, mean(sd) over the "
                "restarts (same runs)", rows, results, UPDATE_METHODS, accept_cell,
                lambda row: PAPER_TABLE5[row.network, row.scale], budgets=False)


def figure6a(args):
    counts = sorted(set(args.chain_counts) | {args.chains})
    rows = [Row(args.network, args.scale, s, ("SM", "ARM") if s == args.chains else ("ARM",))
            for s in counts]
    results = run_rows(rows, args)
    print_table(f"Figure 6a: ARM's GR R-hat against the number of chains S "
                f"({args.network} {args.scale}, {args.restarts} restarts, "
                f"T = {args.iterations}); SM at S = {args.chains} is the reference",
                rows, results, ("ARM",), rhat_cell, lambda row: None)
    reference = results[counts.index(args.chains)]
    sm = rhat_per_chain(reference["runs"]["SM"])
    print(f"SM reference (S = {args.chains}, budget B = {reference['budget']}): R-hat "
          f"{mean_sd(sm)}")
    print("paper: a figure without numbers in the text; §3.6.1: ARM benefits from more "
          "chains and at very small S sometimes performs worse than split-merge")
    if args.plot:
        arm = [rhat_per_chain(result["runs"]["ARM"]) for result in results]
        plot_figure6a(args.plot, counts, arm, sm, args)


def plot_figure6a(path, counts, arm, sm, args):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.5, 3.5))
    ax.errorbar(counts, [r.mean() for r in arm], yerr=[r.std(ddof=1) for r in arm],
                marker="o", capsize=3, label="ARM")
    ax.axhline(sm.mean(), color="k", linestyle="--", label=f"SM (S = {args.chains})")
    ax.set_xscale("log", base=2)
    ax.set_xticks(counts, [str(s) for s in counts])
    ax.set(xlabel="chains S", ylabel="GR R-hat of the log joint",
           title=f"{args.network} {args.scale}, T = {args.iterations}, {args.restarts} restarts")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    print(f"saved {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--table", choices=["3", "4", "6a"], default="3")
    parser.add_argument("--iterations", type=int, default=1000, help="T, ARM iterations")
    parser.add_argument("--restarts", type=int, default=4)
    parser.add_argument("--chains", type=int, default=8, help="S")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--pilot", type=int, default=100,
                        help="iterations of the pilots that price SM, bSM and sARM")
    parser.add_argument("--networks", nargs="+", default=list(LOADERS), choices=list(LOADERS))
    parser.add_argument("--network", default="Hagmann", choices=list(LOADERS),
                        help="Figure 6a's network")
    parser.add_argument("--scale", type=float, default=0.25, help="Figure 6a's scale")
    parser.add_argument("--chain-counts", type=int, nargs="+", default=[2, 4, 8, 16],
                        help="Figure 6a's values of S")
    parser.add_argument("--plot", default=None, help="Figure 6a: save a plot to this file")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    quiet_pymc()
    args.t0 = time.perf_counter()
    {"3": table3, "4": table4, "6a": figure6a}[args.table](args)
    print(f"\nwall time {time.perf_counter() - args.t0:.0f} s ({args.processes} processes)")


if __name__ == "__main__":
    main()
