"""Benchmark: the step layer's cost per iteration, ``step.step(point)`` for each
partition step, median over repeats (issue 31: the one step template).

Run:  python examples/benchmark_step.py [--repeats 2000]

n = 30 items (CRP(1) + CollapsedNormal, fixed hyperparameters), so the kernels are
cheap and the Python layer (reading the point, the container, the Info record, the
statistics) shows. Each step is warmed up (200 iterations, kernels compiled or
loaded) before timing; ARM is linked by hand to a population of two points (its own
and a fixed 3-block partition). To compare two source trees, run the script with
``PYTHONPATH`` set to each in turn, alternating.

Measured (Python 3.11 / PyMC 5, 2-core machine under other load; microseconds per
iteration, two alternating runs each, main at 073bb5e -> the template at 732a64d):
Gibbs(n_sweeps=1) 11.6-12.2 -> 13.2-13.3; SplitMerge 27.8-35.1 -> 29.0-30.0; ARM
37.2-39.6 -> 39.6-40.6; PBC (3 rungs) 46.1-48.8 -> 51.1-51.8; CoupledGibbs
10.4-10.5 -> 14.5-14.7 (it now refreshes X's kernel arguments through the template
every iteration, as the other steps do). PyMC's own loop costs about 100 us per
draw (``pmp.Gibbs``' docstring).
"""

import argparse

import numpy as np
import pymc as pm
from _timing import median_time

import pymc_partitions as pmp

N = 30

STEPS = {
    "Gibbs(n_sweeps=1)": lambda z: pmp.Gibbs([z], n_sweeps=1),
    "SplitMerge": lambda z: pmp.SplitMerge([z]),
    "ARM": lambda z: pmp.ARM([z]),
    "PBC(3 rungs)": lambda z: pmp.PBC([z], temperatures=(4.0, 2.0, 1.0)),
    "CoupledGibbs": lambda z: pmp.CoupledGibbs([z]),
}


def model():
    rng = np.random.default_rng(0)
    y = np.concatenate([rng.normal(-2, 1, (N // 2, 2)), rng.normal(2, 1, (N - N // 2, 2))])
    with pm.Model() as m:
        z = pmp.CRP("z", alpha=1.0, n=N)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=2.0, sigma=1.0, observed=y)
    return m


def seconds_per_iteration(name, make, repeats):
    m = model()
    with m:
        step = make(m["z"])
    point = m.initial_point()
    population = name == "ARM"
    if population:
        step.link_population([point, dict(point, z=np.arange(N, dtype=np.int64) % 3)], 0)
    state = {"point": point}

    def one():
        state["point"] = step.step(state["point"])[0]
        if population:
            step.population[0] = state["point"]

    for _ in range(200):
        one()
    return median_time(one, repeats)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=2000)
    args = parser.parse_args()
    for name, make in STEPS.items():
        print(f"{name:<20}{1e6 * seconds_per_iteration(name, make, args.repeats):9.1f} us",
              flush=True)


if __name__ == "__main__":
    main()
