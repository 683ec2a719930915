"""Benchmark: one PBC iteration with N rungs against N collapsed Gibbs sweeps of the
same data (Goswami, Liu & Wong 2005; issue 15).

Run:  python examples/benchmark_pbc.py [--repeats 200] [--burn-in 300]

Problems (the paper's three, as ``examples/goswami_tables_4_6.py`` and
``examples/goswami_table7.py`` set them up):

- Table 4: ``pbc_bernoulli`` (n = 100, m = 15), CRP(1) with Beta-Bernoulli(1, 1), the
  20 rungs of Table 2;
- Table 6: the 90 JASPAR motifs (width 8), CRP(1) with Dirichlet-multinomial(c = 1),
  33 geometric rungs 60 -> 1;
- Table 7: ``pbc_normal`` (n = 200, 2-D), FixedBlocks(5) with the k-means energy, 30
  geometric rungs 60 -> 0.5.

The population (``TemperedPopulation``, the code ``pmp.PBC`` runs inside ``pm.sample``)
starts from a random 5-block partition and runs ``--burn-in`` PBC iterations
(TWO-NEW-r-r); then the median over ``--repeats`` of the seconds of:

- a **mutation iteration**: every member mutated n times (n uniformly drawn items, a
  pass's worth, §3.1), the N log targets, N random exchanges (§3.6);
- a **crossover iteration** of each kind: N crossovers (§3.3-3.5, the paper's
  selection: "-r-r" for the SCSC kinds' first rows, "-b-b" for all), N exchanges;
- a **PBC iteration** at mutation rate p_m = 0.3: 0.3 mutation + 0.7 crossover
  iteration (Algorithm 4.1's expected cost);
- **N Gibbs sweeps**: one sweep (``kernels.gibbs.run_sweeps``) of every member at its
  own temperature, i.e. parallel tempering's local move with Gibbs in place of the
  mutation.

Printed: each time and its ratio to the N Gibbs sweeps, all measured in this run. The
mutation pass makes n proposals per member, each two predictive terms, against a Gibbs
sweep's n items times (K + 1) terms; a crossover is O(n + K L) for the intersection
table plus the moved items' statistics.

Measured (PyMC 5 stack, idle 2-core machine, default options), PBC iteration at p_m =
0.3 over N Gibbs sweeps: Table 4 0.79-1.08 (N sweeps 1.15 ms); Table 6 0.05-0.07 (N
sweeps 145 ms: about 80 blocks at the cold rungs make a Gibbs sweep cost (K + 1)
Dirichlet-multinomial terms per item, where a mutation proposes one); Table 7
0.35-0.40 (2.7 ms). So a PBC iteration with N rungs costs at most about N Gibbs sweeps
of the same data; the paper's "Gibbs and MH produce roughly 8 and 10 times the draws"
compares with one Gibbs sweep.
"""

import argparse

import numpy as np
import pymc as pm
from _timing import median_time
from goswami_tables_4_6 import TABLE2, VARIANTS

import pymc_partitions as pmp
from pymc_partitions.kernels import crossover, gibbs
from pymc_partitions.kernels.random import new_stream
from pymc_partitions.step_methods.pbc import CROSSOVERS, TemperedPopulation
from pymc_partitions.step_methods.target import PartitionTarget

# The paper's name: (crossover kind, Boltzmann selection).
KINDS = {name: (CROSSOVERS[kind], selection == "boltzmann")
         for name, (kind, selection) in VARIANTS.items()}
MUTATION_RATE = 0.3


def problems():
    """(name, model, temperatures) of the paper's three examples."""
    x, _ = pmp.datasets.pbc_bernoulli(seed=1)
    with pm.Model() as bernoulli:
        z = pmp.CRP("z", n=x.shape[0], alpha=1.0)
        pmp.CollapsedBetaBernoulli("y", z, a=1.0, b=1.0, observed=x)
    counts = np.transpose(pmp.datasets.load_jaspar_motifs().data, (0, 2, 1))
    with pm.Model() as motifs:
        z = pmp.CRP("z", n=counts.shape[0], alpha=1.0)
        pmp.CollapsedDirichletMultinomial("y", z, concentration=1.0, observed=counts)
    points, _ = pmp.datasets.pbc_normal(seed=7)
    with pm.Model() as kmeans:
        z = pmp.FixedBlocks("z", n=points.shape[0], k=5)
        pmp.KMeansEnergy("y", z, temperature=1.0, observed=points)
    return [("Table 4: Bernoulli, n = 100", bernoulli, np.asarray(TABLE2)),
            ("Table 6: motifs, n = 90", motifs, np.geomspace(60.0, 1.0, 33)),
            ("Table 7: k-means, n = 200", kmeans, np.geomspace(60.0, 0.5, 30))]


def bench(name, model, temperatures, repeats, burn_in, seed):
    target = PartitionTarget(model, model.rvs_to_values[model["z"]], "benchmark_pbc")
    values, prior, per_lik = target.params(model.initial_point())
    n, n_rungs = target.n, temperatures.size
    rng = np.random.default_rng(seed)
    start = pmp.canonicalize(rng.permutation(np.arange(n) % 5))
    chain = target.new_chain_state(start, values, per_lik)
    params, _, data = target.kernel_args(chain, values, per_lik)
    population = TemperedPopulation(chain, temperatures)
    stream = new_stream(np.random.SeedSequence(seed))

    def mutation_iteration():
        population.mutate(stream, prior, params, data, n, 0.5)
        population.update_log_targets(prior, params)
        population.exchange(stream, n_rungs)

    def crossover_iteration(kind, boltzmann):
        population.update_log_targets(prior, params)
        population.crossover(stream, prior, params, data, n_rungs, kind, boltzmann)
        population.exchange(stream, n_rungs)

    tempered = population.tempered(prior, params)

    def gibbs_sweeps():
        for r in range(n_rungs):
            member = population.at_rung(r)
            prior_t, params_t = tempered[r]
            gibbs.run_sweeps(stream, 1, member.state, prior_t, params_t, member.stats, data,
                             member.log_w, member.order)

    # Compile, then burn in (Algorithm 4.1 with TWO-NEW-r-r).
    mutation_iteration()
    for kind, boltzmann in KINDS.values():
        crossover_iteration(kind, boltzmann)
    gibbs_sweeps()
    for _ in range(burn_in):
        if rng.random() < MUTATION_RATE:
            mutation_iteration()
        else:
            crossover_iteration(crossover.TWO_NEW, False)
    blocks = [int(population.at_rung(r).state.counts[0]) for r in (0, n_rungs - 1)]

    sweeps = median_time(gibbs_sweeps, repeats)
    mutation = median_time(mutation_iteration, repeats)
    print(f"\n{name}; N = {n_rungs} rungs {temperatures[0]:g} -> {temperatures[-1]:g}; "
          f"blocks hottest/coldest {blocks[0]}/{blocks[1]}")
    print(f"  {'N Gibbs sweeps':<28}{1e3 * sweeps:9.3f} ms   1.00")
    print(f"  {'mutation iteration':<28}{1e3 * mutation:9.3f} ms {mutation / sweeps:6.2f}")
    for label, (kind, boltzmann) in KINDS.items():
        cross = median_time(lambda k=kind, b=boltzmann: crossover_iteration(k, b), repeats)
        pbc = MUTATION_RATE * mutation + (1 - MUTATION_RATE) * cross
        print(f"  {label + ' crossover iter.':<28}{1e3 * cross:9.3f} ms {cross / sweeps:6.2f}"
              f"   PBC iteration (p_m = 0.3): {1e3 * pbc:8.3f} ms {pbc / sweeps:6.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--burn-in", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print("Seconds per iteration (median), and the ratio to N Gibbs sweeps at the rungs' "
          "temperatures")
    for name, model, temperatures in problems():
        bench(name, model, temperatures, args.repeats, args.burn_in, args.seed)


if __name__ == "__main__":
    main()
