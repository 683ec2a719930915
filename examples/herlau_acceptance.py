"""Why ARM accepts far fewer of its updates on the networks than Herlau, Mørup, Schmidt &
Teh (2016) report (Table 5): the proposals of one ARM population, taken apart.

Run:  python examples/herlau_acceptance.py [--network NIPS --scale 1.0]
          [--iterations 400] [--states 40] [--proposals 250] [--seed 0]

1. **States.** S = 8 chains: 50 Gibbs sweeps, then ``--iterations`` ARM iterations
   (``pmp.ARM([z])``, one update and one Gibbs sweep each) through ``pm.sample``, as
   ``examples/herlau_networks.py`` runs them (CRP(1), IRM(1, 1), the network prepared
   by ``pmp.datasets.prepare_network``). The states of the second half are the
   population the proposals are made from.
2. **Proposals.** From each of ``--states`` states (chain s, iteration t), ``--proposals``
   proposals drawn as ``pmp.ARM`` draws them: the background (z^a, z^b) by
   :class:`~pymc_partitions.step_methods.arm_history.History` over iterations 0..t
   (one of chain s's states ⌊t/2⌋..t-1, one of every chain's ⌊t/2⌋..t but chain s's
   current), (i, j) by ``kernels.arm.draw_pair``, a random item order, and z* by the
   kernel (``kernels.arm.proposal_entry``), with T(z*|z). The *full* forced reverse
   T(z|z*) (no early rejection) and the log joints give the MH ratio r. Nothing is
   accepted: every proposal starts from the saved state. The same backgrounds, pairs,
   orders and keys are used for ARM and for sARM (the ablation without block moves).
3. **Printed**, for ARM and sARM: the Rao-Blackwellised accept rate, mean min(1, r)
   (the accept rate's expectation, with less noise than counting acceptances);
   and for ARM by kind (split, merge) and by how many items of S = z_i u z_j the
   proposal leaves outside S* = z*_i u z*_j (moved out of i's and j's blocks, mostly
   as whole blocks of c by lines 5-8): the share of proposals, the accept rate, the
   medians of log q(z*) - log q(z) and of log T(z|z*) - log T(z*|z).

**What it shows.** A merge whose lines 5-8 move the rest of z_i and z_j (the blocks
of c other than c_i, c_j) out as whole blocks, mostly to new blocks, is never
accepted, though it proposes states about as good as the current one (median
log q(z*) - log q(z) of -2 to -4 nats). Its reverse is a split from z*, whose
S* = z*_i u z*_j no longer holds those items: each of them can only come back by a
restricted move of its own (Algorithm 3, line 16: "stay or join the block(s) of
i, j"), in order, the first ones choosing between joining a small block and staying
with the rest of theirs. T(z|z*) is then exponentially small in the number of items
moved out (median log T(z|z*) - log T(z*|z) of -43 to -58 nats), while T(z*|z) paid
for one block move. ARM's block moves help only when the blocks stay inside i's and
j's blocks, which is why our ARM accepts little more often than sARM, the ablation
without block moves: 15.4 against 13.6 % on NIPS, 6.0 against 5.3 % on Hagmann
0.25 here, where the paper's Table 5 has ARM at 10-14 times sARM (19.41 against
1.37, 13.56 against 1.08). An instrumented copy of the kernel (branch
``diag-accept``, ``diag/``; a population whose accept rate was 1.9 %) puts the rate
ARM would reach if those reverses cost nothing at 15.6 % on NIPS (merges 25 %) and
8.9 % on Hagmann 0.25. Algorithm 3 as written, whose reverse starts from S*, cannot
give that; we think the authors' implementation treats the reverse differently,
which we cannot check (no code was published; the paper's own check of correctness
is visual, on a 4-vertex network with 16 partitions, Figure 3).

The accept rate also depends on the population: early, while the chains still
differ, it is 7-10 % on NIPS (iterations 50-200 of one run: 7.1-9.5 %); as the S
chains, which share one history, settle in one basin it falls (2.9 % over the first
400 iterations of another run; Table 5's 1000-iteration average is 4.6 %).

Measured (Python 3.11, defaults: 400 ARM iterations, 40 states x 250 proposals each
for ARM and sARM; the machine shared with a CI run)::

    NIPS 1.0 (n = 234; 358 s, of which the ARM run 113 s)
      arm   accept rate (mean min(1, r))  15.38 %
      sarm  accept rate (mean min(1, r))  13.62 %
        kind   outside   share   accept %   median dlog q   median dlog T
        split        0   0.104     21.90          -10.27            1.28
        split      1-9   0.413     17.64          -13.92            1.56
        split     >=10   0.000      0.00          -14.43          -44.37
        merge        0   0.035     27.25            3.48           -4.62
        merge      1-9   0.245     19.88           -0.27           -3.38
        merge     >=10   0.203      0.00           -1.99          -57.60

    Hagmann 0.25 (n = 250, ``--network Hagmann --scale 0.25``; 735 s, the ARM run 168 s)
      arm   accept rate (mean min(1, r))   6.03 %
      sarm  accept rate (mean min(1, r))   5.31 %
        kind   outside   share   accept %   median dlog q   median dlog T
        split        0   0.375      9.70          -12.75            1.05
        split      1-9   0.104      3.56          -19.31            0.92
        merge        0   0.099     16.45           -1.71           -2.22
        merge      1-9   0.218      1.78           -8.45          -11.24
        merge     >=10   0.203      0.00           -4.31          -42.61

``--iterations 20 --states 2 --proposals 10 --scale 0.5`` gives the same numbers on
PyMC 5 / Python 3.11 and PyMC 6 / Python 3.12.

A check of the kernel on these networks (200 ARM iterations on NIPS, 1000 proposals):
the update's decisions (``arm.arm_entry``, with early rejection) equal those of the
full ratio computed here, 1000 of 1000.
"""

import argparse
import time

import numpy as np
from herlau_networks import LOADERS, START_SWEEPS, prepare, sample

from pymc_partitions.kernels import arm, assign_labels, new_state
from pymc_partitions.kernels.bookkeeping import log_joint_entry
from pymc_partitions.kernels.components import irm
from pymc_partitions.kernels.priors import crp
from pymc_partitions.kernels.random import new_stream
from pymc_partitions.step_methods.arm_history import History

CHAINS = 8
OUT_BINS = [(0, 0), (1, 9), (10, 10**9)]


def population(adjacency, iterations, seed):
    """(iterations, S, n) canonical labels of an ARM run after 50 Gibbs start sweeps
    (``herlau_networks.sample``: the model and steps of the table runs), and the run's
    own accept rate over its second half."""
    start = sample(adjacency, "Gibbs", START_SWEEPS, CHAINS, seed)
    initvals = [{"z": start.posterior["z"].values[c, -1]} for c in range(CHAINS)]
    run = sample(adjacency, "ARM", iterations, CHAINS, seed + 1, initvals)
    labels = run.posterior["z"].values.astype(np.int64)  # (S, T, n)
    stats = run.sample_stats.isel(draw=slice(iterations // 2, None))
    accepted = (stats["split_accepted"] + stats["merge_accepted"]).values.sum()
    proposed = (stats["split_proposed"] + stats["merge_proposed"]).values.sum()
    return np.transpose(labels, (1, 0, 2)), accepted / max(proposed, 1)


class Proposer:
    """Builds z* and both transition probabilities with the ARM kernel."""

    def __init__(self, adjacency):
        self.n = n = adjacency.shape[0]
        self.params, self.prior = irm.make_params(1.0, 1.0), crp.make_params(1.0, n)
        self.data = irm.make_data(adjacency)
        self.scr, self.log_w = arm.new_scratch(n), np.empty(n + 1)

    def state(self, labels):
        state, stats = new_state(self.n), irm.alloc_stats(self.n, self.params)
        assign_labels(state, self.params, stats, self.data, labels.copy())
        return state, stats

    def log_ratio(self, z, i, j, za, zb, order, variant, key):
        """(log r, log q(z*) - log q(z), log T(z|z*) - log T(z*|z), z*), or None if the
        construction was abandoned."""
        args = (self.prior, self.params)
        state, stats = self.state(z)
        before = log_joint_entry(state, *args, stats)
        status, log_fwd = arm.proposal_entry(state, *args, stats, self.data, i, j, za, zb,
                                             order, variant, key, False, z, self.scr,
                                             self.log_w)
        if status != arm.BUILT:
            return None
        zstar = state.labels.copy()
        d_q = log_joint_entry(state, *args, stats) - before
        status, log_rev = arm.proposal_entry(state, *args, stats, self.data, i, j, za, zb,
                                             order, variant, key, True, z, self.scr,
                                             self.log_w)
        d_t = log_rev - log_fwd
        return d_q + d_t, d_q, d_t, zstar


def outside(z, zstar, i, j):
    """Items of S = z_i u z_j outside S* = z*_i u z*_j."""
    in_s = (z == z[i]) | (z == z[j])
    in_star = (zstar == zstar[i]) | (zstar == zstar[j])
    return int(np.sum(in_s & ~in_star))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--network", default="NIPS", choices=list(LOADERS))
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--iterations", type=int, default=400)
    parser.add_argument("--states", type=int, default=40)
    parser.add_argument("--proposals", type=int, default=250)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    t0 = time.perf_counter()
    adjacency = prepare(args.network, args.scale)
    pop, run_rate = population(adjacency, args.iterations, args.seed)
    t_run = time.perf_counter() - t0
    proposer = Proposer(adjacency)
    n, T = proposer.n, pop.shape[0]
    rng = np.random.default_rng(args.seed)
    stream = new_stream(args.seed)
    picks = [(int(t), int(s)) for t, s in zip(rng.integers(T // 2, T, args.states),
                                              rng.integers(0, CHAINS, args.states))]
    rows = {"arm": [], "sarm": []}
    for t, s in picks:
        history = History(n, s)
        for past in range(t + 1):
            history.record(pop[past], canonical=True)
        z = pop[t, s]
        for _ in range(args.proposals):
            background = history.draw(stream)
            if background is None:
                continue
            za, zb = background
            i, j = arm.draw_pair(stream, za, zb, False)
            order = rng.permutation(n).astype(np.int64)
            key = int(rng.integers(2**62))
            for name, variant in (("arm", arm.ARM), ("sarm", arm.SARM)):
                got = proposer.log_ratio(z, i, j, za, zb, order, variant, key)
                if got is None:
                    continue
                log_r, d_q, d_t, zstar = got
                rows[name].append((z[i] == z[j], outside(z, zstar, i, j),
                                   min(1.0, float(np.exp(min(log_r, 0.0)))), d_q, d_t))
    t_all = time.perf_counter() - t0
    print(f"{args.network} {args.scale}: n = {n}, S = {CHAINS}, {args.iterations} ARM "
          f"iterations; {len(picks)} states x {args.proposals} proposals")
    print(f"  the run's own ARM accept rate over its second half: {100 * run_rate:.2f} %")
    for name in ("arm", "sarm"):
        accept = np.array([r[2] for r in rows[name]])
        print(f"  {name:5s} accept rate (mean min(1, r)) {100 * accept.mean():6.2f} %  "
              f"({len(accept)} proposals)")
    print("  ARM by kind and items of S left outside S*:")
    print("    kind   outside   share   accept %   median dlog q   median dlog T")
    data = rows["arm"]
    for split in (True, False):
        for lo, hi in OUT_BINS:
            part = [r for r in data if r[0] == split and lo <= r[1] <= hi]
            if not part:
                continue
            label = f"{lo}" if lo == hi else (f"{lo}-{hi}" if hi < 10**9 else f">={lo}")
            print(f"    {'split' if split else 'merge':6s} {label:>7s}  "
                  f"{len(part) / len(data):6.3f}  {100 * np.mean([r[2] for r in part]):8.2f}"
                  f"  {np.median([r[3] for r in part]):14.2f}  "
                  f"{np.median([r[4] for r in part]):14.2f}")
    print(f"wall time {t_all:.0f} s (the ARM run {t_run:.0f} s)")


if __name__ == "__main__":
    main()
