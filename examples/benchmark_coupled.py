"""Benchmark: a coupled OT Gibbs sweep against a single Gibbs sweep, measured in one run.

Run:  python examples/benchmark_coupled.py

Nguyen et al. (2022) §4.2: a coupled sweep computes two Gibbs conditionals per item
and one transport problem; the cost model is "about two sweeps". For each data set
it prints (medians over repeats, all measured in this run):

- ``single``: one Gibbs sweep (``kernels.gibbs.run_sweeps``) of a chain after burn-in;
- ``run ot``: the coupled OT sweeps (``kernels.coupled_gibbs.coupled_gibbs_sweep``,
  Hamming metric) of pairs started at one block, from their first coupled sweep until
  they meet: what a run pays for (the number of sweeps timed beside it), and its
  ratio to ``single`` (the issue's target: at most 2);
- ``indep ot`` / ``indep crn``: the worst case, coupled sweeps of X after burn-in and
  an independent Y after burn-in (re-drawn whenever they meet), with OT and with the
  common-random-number coupling (no transport problem), and both ratios;
- ``floor``: a lower bound on any exact OT coupled sweep built on these chains:
  ``crn/single`` (two chains' Gibbs work and the pair's bookkeeping, with a coupling
  draw that needs no transport problem) plus N times the extra cost of one OT draw
  over one common-random-number draw on the cheapest structure there is (the
  chains' K blocks matched one to one: every component a single edge, no solver),
  timed with ``kernels.couplings.draw_pairs`` in units of the single sweep.

Times are the thread's CPU time (``time.thread_time``): the kernels are
single-threaded, and CPU time does not count the waits of a machine shared with
other work, which wall-clock medians then do.

Data: model B of the reference implementation (CRP alpha = 0.1, sd0 = 2, sd1 = 0.5)
on ``nguyen_synthetic(300)`` (D = 2), and N = 4,000 items in D = 7 from four
Gaussian components (centres +-0.8 in each coordinate, noise sd 0.5).
"""

import time

import numpy as np
import pymc as pm

import pymc_partitions as pmp
from pymc_partitions.kernels import coupled_gibbs as cg
from pymc_partitions.kernels import gibbs
from pymc_partitions.kernels.couplings import COMMON_RNG, HAMMING, OT, draw_pairs
from pymc_partitions.kernels.random import new_stream
from pymc_partitions.kernels.transport import new_workspace
from pymc_partitions.step_methods.target import PartitionTarget
from pymc_partitions.step_methods.coupled_pair import INITIAL_CAPACITY


def synthetic_d(n, d, seed):
    rng = np.random.default_rng(seed)
    centres = rng.choice([-0.8, 0.8], size=(4, d))
    return centres[rng.integers(0, 4, n)] + rng.normal(0.0, 0.5, size=(n, d))


def model_b(x):
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=0.1, n=x.shape[0], summaries=False)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=2.0, sigma=0.5, observed=x)
    return model


class Bench:
    def __init__(self, model, burn_in, seed):
        self.target = PartitionTarget(model, model.rvs_to_values[model["z"]], "benchmark")
        self.values, self.prior, self.per_lik = self.target.params(model.initial_point())
        self.n = self.target.n
        self.stream = new_stream(seed)
        self.burn_in = burn_in

    def chain(self):
        """A chain state after ``burn_in`` Gibbs sweeps from one block."""
        c = self.target.new_chain_state(np.zeros(self.n, np.int64), self.values, self.per_lik)
        self.params, _, self.data = self.target.kernel_args(c, self.values, self.per_lik)
        gibbs.run_sweeps(self.stream, self.burn_in, c.state, self.prior, self.params, c.stats,
                         self.data, c.log_w, c.order)
        return c

    def single_sweep(self, c):
        gibbs.run_sweeps(self.stream, 1, c.state, self.prior, self.params, c.stats, self.data,
                         c.log_w, c.order)

    def scratch(self):
        """Overlap table and workspace as ``CoupledPair`` allocates them."""
        capacity = min(self.n + 1, INITIAL_CAPACITY)
        return (cg.new_scratch(self.n, capacity),
                new_workspace(capacity, capacity, max_edges=self.n))

    def coupled_sweep(self, x, y, coupling, sc, ws):
        """One coupled sweep, growing the table as ``CoupledPair`` does."""
        while cg.coupled_gibbs_sweep(self.stream, x.state, y.state, self.prior, self.params,
                                     x.stats, y.stats, self.data, coupling, HAMMING, 1e-5,
                                     True, sc, ws) == cg.NEEDS_CAPACITY:
            capacity = min(2 * sc.overlap.shape[0], self.n + 1)
            sc = cg.grown(sc, capacity)
            ws = new_workspace(capacity, capacity, max_edges=self.n)
        return sc, ws

    def run_times(self, coupling, n_pairs, max_sweeps=300):
        """Median seconds of the coupled sweeps of pairs started at one block (X one
        single sweep ahead), until they meet: the sweeps a real run pays for."""
        times, ks = [], []
        for _ in range(n_pairs):
            x = self.target.new_chain_state(np.zeros(self.n, np.int64), self.values, self.per_lik)
            y = self.target.new_chain_state(np.zeros(self.n, np.int64), self.values, self.per_lik)
            self.params, _, self.data = self.target.kernel_args(x, self.values, self.per_lik)
            self.single_sweep(x)
            sc, ws = self.scratch()
            cg.load_pair(x.state, y.state, sc)
            for _ in range(max_sweeps):
                if sc.info[cg.DISTANCE] == 0:
                    break
                t0 = time.thread_time()
                sc, ws = self.coupled_sweep(x, y, coupling, sc, ws)
                times.append(time.thread_time() - t0)
                ks.append(x.state.counts[0])
        return float(np.median(times)), float(np.mean(ks)), len(times)

    def coupled_times(self, coupling, repeats):
        x, y = self.chain(), self.chain()
        sc, ws = self.scratch()
        cg.load_pair(x.state, y.state, sc)
        times, ks = [], []
        while len(times) < repeats:
            if sc.info[cg.DISTANCE] == 0:  # met: a fresh, independent Y
                y = self.chain()
                sc, ws = self.scratch()
                cg.load_pair(x.state, y.state, sc)
            t0 = time.thread_time()
            sc, ws = self.coupled_sweep(x, y, coupling, sc, ws)
            times.append(time.thread_time() - t0)
            ks.append(x.state.counts[0])
        return float(np.median(times)), float(np.mean(ks))


def main():
    cases = [("model B, nguyen_synthetic", pmp.datasets.nguyen_synthetic(300, seed=0)[0], 200,
              50, 20),
             ("model B, D = 7", synthetic_d(4000, 7, seed=0), 31, 20, 3)]
    print("Per sweep, medians (ms); ratios to the single sweep measured in the same run.")
    print(f"{'data':<28}{'N':>6}{'D':>3}{'single':>9}{'run ot':>9}{'(sweeps)':>9}"
          f"{'run/single':>11}{'indep ot':>10}{'indep crn':>10}{'ot/single':>10}"
          f"{'crn/single':>11}{'floor':>7}")
    for label, x, repeats, burn_in, n_pairs in cases:
        bench = Bench(model_b(x), burn_in, seed=1)
        c = bench.chain()
        bench.coupled_times(OT, 2)  # compile
        bench.coupled_times(COMMON_RNG, 2)
        singles = []
        for _ in range(repeats):
            t0 = time.thread_time()
            bench.single_sweep(c)
            singles.append(time.thread_time() - t0)
        single = float(np.median(singles))
        run, _, n_sweeps = bench.run_times(OT, n_pairs)
        ot, _ = bench.coupled_times(OT, repeats)
        crn, _ = bench.coupled_times(COMMON_RNG, repeats)
        extra = draw_cost(OT, c.state.counts[0]) - draw_cost(COMMON_RNG, c.state.counts[0])
        floor = crn / single + x.shape[0] * extra / single
        print(f"{label:<28}{x.shape[0]:>6}{x.shape[1]:>3}{1e3 * single:>9.3f}{1e3 * run:>9.3f}"
              f"{n_sweeps:>9}{run / single:>11.2f}{1e3 * ot:>10.3f}{1e3 * crn:>10.3f}"
              f"{ot / single:>10.2f}{crn / single:>11.2f}{floor:>7.2f}")


def draw_cost(coupling, k, draws=200_000, repeats=7):
    """Median seconds of one coupling draw for two partitions with the same k blocks
    (sizes 10..), matched one to one, and random conditionals over k + 1 options."""
    rng = np.random.default_rng(0)
    capacity = INITIAL_CAPACITY
    overlap = np.zeros((capacity, capacity), dtype=np.int32)
    overlap[np.arange(k), rng.permutation(k)] = 10 + np.arange(k)
    p = np.zeros(capacity)
    q = np.zeros(capacity)
    p[:k + 1] = rng.dirichlet(np.ones(k + 1))
    q[:k + 1] = rng.dirichlet(np.ones(k + 1))
    ws = new_workspace(capacity, capacity, max_edges=capacity)
    stream = new_stream(2)
    out_a = np.empty(draws, dtype=np.int64)
    out_b = np.empty(draws, dtype=np.int64)
    times = []
    for _ in range(repeats):
        t0 = time.thread_time()
        draw_pairs(coupling, p, k + 1, q, k + 1, overlap, HAMMING, 1e-5, stream, ws, out_a,
                   out_b)
        times.append(time.thread_time() - t0)
    return float(np.median(times)) / draws


if __name__ == "__main__":
    main()
