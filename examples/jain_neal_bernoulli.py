"""Gibbs vs split-merge on Jain & Neal's Bernoulli mixtures, at equal wall time.

Run:  python examples/jain_neal_bernoulli.py [--datasets 20 --chains 8 --iterations 2000]

Data (``pmp.datasets.jain_neal_bernoulli``; Jain & Neal 2004, §5; Herlau et al.
2016, §3.1 and Table 1): n = 100 items in 5 components of 20, binary attributes
with the probabilities of Herlau et al.'s Table 1; for d > 6 the last column is
repeated (Examples 1-3: d = 6, 8, 10). Jain &
Neal's higher-dimensional examples (15 and 18 attributes, their Examples 2-3)
are built the same way: the attribute tables in our copy of their paper are not
legible, so these two rows follow Herlau et al.'s construction, not J&N's exact
tables. Model: CRP(alpha = 1), Beta(1, 1) per block and attribute (both papers).

Protocol (Herlau et al. §3): every chain starts with 50 Gibbs sweeps from one
block; SplitMerge runs SM(5, 1, 1) (5 restricted scans, 1 split/merge update, 1
Gibbs sweep per iteration) for ``--iterations`` iterations; Gibbs then runs for
the same wall time. Reported per method, averaged over data sets and chains:
iterations, seconds, the integrated autocorrelation time (IAT = draws / ESS, ESS
by ArviZ's ``ess(method="mean")``, Geyer's initial monotone sequence) of the
fraction of items in the largest block ("trace") and the largest IAT among the
co-clustering indicators of 15 items (3 from each planted block; Herlau's
"indicator"), per iteration and per second, and SplitMerge's acceptance rate.
Published figures (Herlau et al. Table 2, IAT per iteration; 20 data sets, 8
chains, 2000 iterations) are printed beside ours.

The kernels are driven directly (the same code ``pmp.Gibbs`` / ``pmp.SplitMerge``
run inside ``pm.sample``), so the timing is the samplers' own.
"""

import argparse
import time

import numpy as np
from _mixing import iat

from pymc_partitions.datasets import jain_neal_bernoulli
from pymc_partitions.kernels import assign_labels, gibbs, new_state, split_merge, summarise
from pymc_partitions.kernels.components import beta_bernoulli
from pymc_partitions.kernels.errors import check_item
from pymc_partitions.kernels.priors import crp
from pymc_partitions.kernels.random import new_stream

# Herlau et al. (2016), Table 2: IAT per iteration, mean (their bracketed figure).
PUBLISHED = {
    6: {"Gibbs": ("116.5", "91.6"), "SM": ("27.8", "23.2")},
    8: {"Gibbs": ("165.4", "131.3"), "SM": ("27.9", "26.4")},
    10: {"Gibbs": ("88.9", "99.3"), "SM": ("19.3", "30.4")},
}


class Chain:
    def __init__(self, x, seed):
        n, d = x.shape
        self.n = n
        self.params = beta_bernoulli.make_params(np.ones(d), np.ones(d), n=n)
        self.stats = beta_bernoulli.alloc_stats(n, d, self.params)
        self.data = beta_bernoulli.make_data(x)
        self.prior = crp.make_params(1.0, n)
        self.state = new_state(n)
        assign_labels(self.state, self.params, self.stats, self.data, np.zeros(n, dtype=np.int64))
        self.log_w, self.order = np.empty(n + 1), np.arange(n, dtype=np.int64)
        self.members, self.origin = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
        self.outcomes = np.zeros(4, dtype=np.int64)
        self.canon, self.scratch = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
        self.stream = new_stream(seed)
        self.gibbs(50)

    def gibbs(self, sweeps=1):
        check_item(gibbs.run_sweeps(self.stream, sweeps, self.state,
                                    self.prior, self.params, self.stats, self.data, self.log_w,
                                    self.order), "Gibbs")

    def split_merge(self):
        check_item(split_merge.run_split_merge(
            self.stream, 1, 5, split_merge.RESTRICTED_GIBBS, self.state, self.prior,
            self.params, self.stats, self.data, self.members, self.origin, self.outcomes,
        ), "split-merge")
        self.gibbs()  # SM(5, 1, 1): one Gibbs sweep after the update, same stream

    def record(self, watched):
        _, largest, _ = summarise(self.state, self.prior, self.params, self.stats,
                                  self.canon, self.scratch)
        return largest / self.n, self.canon[watched].copy()


def run_chain(chain, method, watched, iterations=None, seconds=None):
    step = chain.split_merge if method == "SM" else chain.gibbs
    trace, labels = [], []
    t0 = time.perf_counter()
    while True:
        step()
        frac, lab = chain.record(watched)
        trace.append(frac)
        labels.append(lab)
        elapsed = time.perf_counter() - t0
        if (iterations is not None and len(trace) >= iterations) or (
            seconds is not None and elapsed >= seconds
        ):
            break
    labels = np.array(labels)
    pairs = [(a, b) for a in range(len(watched)) for b in range(a + 1, len(watched))]
    indicator = [iat(labels[:, a] == labels[:, b]) for a, b in pairs]
    indicator = np.nanmax(indicator) if np.isfinite(indicator).any() else np.nan
    return {"iterations": len(trace), "seconds": elapsed, "trace": iat(trace),
            "indicator": indicator}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", type=int, default=10)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--dims", type=int, nargs="*", default=[6, 8, 10, 15, 18])
    parser.add_argument("--seed", type=int, default=2004)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    Chain(np.zeros((4, 2), dtype=np.int8), 0).split_merge()  # compile before timing

    print(f"{args.datasets} data sets x {args.chains} chains; SM(5,1,1) runs "
          f"{args.iterations} iterations, Gibbs the same wall time. IAT = integrated "
          f"autocorrelation time (mean over data sets and chains; indicator: max over the "
          f"105 pairs of 15 watched items).\n")
    head = (f"{'d':>3} {'method':<6} {'iters':>7} {'sec':>6} {'IAT trace':>10} "
            f"{'IAT indic':>10} {'trace (s)':>10} {'indic (s)':>10} {'accept':>7}   "
            f"published IAT trace / indicator")
    print(head)
    print("-" * len(head))
    for d in args.dims:
        rows = {"Gibbs": [], "SM": []}
        accept = []
        for _ in range(args.datasets):
            x, truth = jain_neal_bernoulli(d, seed=rng)
            watched = np.concatenate([rng.choice(np.flatnonzero(truth == k), 3, replace=False)
                                      for k in range(5)])
            for _c in range(args.chains):
                seed = int(rng.integers(2**32))
                sm = Chain(x, seed)
                rows["SM"].append(run_chain(sm, "SM", watched, iterations=args.iterations))
                proposed = args.iterations
                accept.append((sm.outcomes[1] + sm.outcomes[3]) / proposed)
                rows["Gibbs"].append(run_chain(Chain(x, seed), "Gibbs", watched,
                                               seconds=rows["SM"][-1]["seconds"]))
        for method in ("Gibbs", "SM"):
            r = rows[method]
            iters = np.mean([v["iterations"] for v in r])
            secs = np.mean([v["seconds"] for v in r])
            tr = np.nanmean([v["trace"] for v in r])
            ind = np.nanmean([v["indicator"] for v in r])
            per_it = secs / iters
            acc = f"{np.mean(accept):>7.3f}" if method == "SM" else f"{'':>7}"
            pub = PUBLISHED.get(d, {}).get(method)
            pub = f"{pub[0]:>6} / {pub[1]}" if pub else "   (not in Table 2)"
            print(f"{d:>3} {method:<6} {iters:>7.0f} {secs:>6.2f} {tr:>10.1f} {ind:>10.1f} "
                  f"{tr * per_it:>10.4f} {ind * per_it:>10.4f} {acc}   {pub}")


if __name__ == "__main__":
    main()
