"""Hyperparameters at the speed of the partition (issue 17): the default step
assignment against NUTS on the hyperparameters, one run.

Run:  python examples/benchmark_hyperparameters.py [--draws 1000] [--tune 500] [--chains 4]

Two models with the concentration alpha and the noise sd sigma free:

- the README quickstart (N = 300, D = 2, three groups; alpha ~ Gamma(1, 1),
  sigma ~ HalfNormal(2), tau = 5);
- the seeds data (N = 210, D = 7 standardised features; alpha ~ Gamma(2, 2),
  sigma ~ HalfNormal(1), tau = 1), as in ``examples/seeds_walkthrough.py``.

Assignments:

- ``today``: ``pmp.Gibbs([z], n_sweeps=1)`` + ``pm.NUTS([alpha, sigma])`` (the
  default before issue 17);
- ``default``: what ``pm.sample()`` assigns now (``EscobarWest`` for alpha,
  ``HyperSlice`` for sigma, ``Gibbs`` with its default number of sweeps);
- ``default, 1 sweep``: the same with ``pmp.Gibbs(n_sweeps=1)``, separating the
  hyperparameter steps' effect from the extra sweeps';
- ``fixed alpha, sigma``: ``pmp.Gibbs`` alone on the model with alpha and sigma
  constants at the default run's posterior means (1 sweep and the default's
  sweeps). This is the ceiling of any hyperparameter step: the min ESS/s of the
  partition's own statistics when updating the hyperparameters costs nothing and
  does not slow the partition's mixing.

For each: the sampling time PyMC reports (the chains' loop, ``cores=1``), the
per-iteration time of each step (wrapped with a timer) and of the rest of PyMC's
loop (trace recording, Deterministics, the point dictionaries), the bulk ESS
(ArviZ) of the number of blocks, the entropy of block sizes, alpha and sigma, and
the minimum ESS per second over those four, and that minimum ESS over the
sampling time less the hyperparameter steps' time ("hyperparameter steps free"):
what a hyperparameter update of no cost and the same mixing per iteration would
reach with the same partition moves (EscobarWest's update is an exact conditional
draw; HyperSlice's one slice update per iteration mixes sigma with ESS close to the
partition's statistics': on seeds, four slice updates per iteration instead of one
raised the partition statistics' ESS by about 15 % and the time by 24 %, one run).
Then the cost of one NUTS gradient of
the collapsed likelihood against one conditional evaluation of the slice step, for
N = 300, 3000, 30000. Timings on a shared machine are noisy: the ratios within one
run are what to read. The seeds data are read from ``$PMP_DATA_DIR`` (or downloaded
once; see ``pmp.datasets``).
"""

import argparse
import time
import warnings

import arviz as az
import numpy as np
import pymc as pm
from pymc.sampling.mcmc import assign_step_methods, instantiate_steppers

import pymc_partitions as pmp

QUANTITIES = ["z_n_clusters", "z_entropy", "alpha", "sigma"]


def quickstart_model(fixed=None):
    """The README quickstart; ``fixed={"alpha": a, "sigma": s}`` makes both constants."""
    rng = np.random.default_rng(1)
    centres = np.array([[-4.0, 0.0], [0.0, 4.0], [4.0, 0.0]])
    Y = centres[rng.integers(0, 3, 300)] + rng.normal(size=(300, 2))
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 1.0, 1.0) if fixed is None else fixed["alpha"]
        z = pmp.CRP("z", alpha=alpha, n=len(Y))
        sigma = pm.HalfNormal("sigma", 2.0) if fixed is None else fixed["sigma"]
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=5.0, sigma=sigma, observed=Y)
    return model


def seeds_model(fixed=None):
    """The seeds walkthrough's model; ``fixed`` as for :func:`quickstart_model`."""
    X = pmp.datasets.load_seeds(standardised=True).data
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 2.0) if fixed is None else fixed["alpha"]
        z = pmp.CRP("z", alpha=alpha, n=X.shape[0])
        sigma = pm.HalfNormal("sigma", 1.0) if fixed is None else fixed["sigma"]
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=1.0, sigma=sigma, observed=X)
    return model


class Timed:
    """Wraps a step's ``step`` method and accumulates its wall time."""

    def __init__(self, step):
        self.seconds = 0.0
        self.calls = 0
        inner = step.step

        def timed(point):
            start = time.perf_counter()
            out = inner(point)
            self.seconds += time.perf_counter() - start
            self.calls += 1
            return out

        step.step = timed


def steps_for(model, assignment):
    z = model["z"]
    with model:
        if assignment.startswith("fixed"):
            return [pmp.Gibbs([z], n_sweeps=int(assignment.split()[-2]))]
        alpha, sigma = model["alpha"], model["sigma"]
        if assignment == "today":
            return [pmp.Gibbs([z], n_sweeps=1), pm.NUTS([alpha, sigma])]
        _, selected = assign_step_methods(model, None, methods=pm.STEP_METHODS)
        if assignment == "default, 1 sweep":
            selected = {cls: v for cls, v in selected.items() if cls is not pmp.Gibbs}
            steps = [pmp.Gibbs([z], n_sweeps=1)]
        else:
            steps = []
        out = instantiate_steppers(model, steps, selected)
        return out if isinstance(out, list) else [out]


def run(model, assignment, draws, tune, chains, seed):
    steps = steps_for(model, assignment)
    timers = {type(s).__name__: Timed(s) for s in steps}
    sweeps = next((s.n_sweeps for s in steps if isinstance(s, pmp.Gibbs)), None)
    start = time.perf_counter()
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pm.sample(draws=draws, tune=tune, chains=chains, cores=1, step=steps,
                          random_seed=seed, progressbar=False, compute_convergence_checks=False)
    wall = time.perf_counter() - start
    sampling = float(idata["sample_stats"].attrs["sampling_time"])
    iterations = chains * (draws + tune)
    present = [q for q in QUANTITIES if q in idata["posterior"]]
    ess = {q: float(az.ess(idata, var_names=[q])[q].values) for q in present}
    per_iter = {name: t.seconds / iterations * 1e6 for name, t in timers.items()}
    loop = sampling / iterations * 1e6 - sum(per_iter.values())
    # The same draws had the hyperparameter steps cost nothing: what any step for
    # alpha and sigma could reach at this partition mixing (the partition's own
    # sweeps and PyMC's loop remain).
    hyper = sum(t.seconds for name, t in timers.items() if name != "Gibbs")
    return {
        "assignment": assignment, "sweeps": sweeps, "wall": wall, "sampling": sampling,
        "ess": ess, "min_ess_per_s": min(ess.values()) / sampling, "per_iter": per_iter,
        "min_ess_per_s_free": min(ess.values()) / (sampling - hyper),
        "loop": loop, "means": {q: float(idata["posterior"][q].mean()) for q in present},
    }


def report(name, rows):
    print(f"\n### {name}\n")
    print("| assignment | sweeps | sampling s | " + " | ".join(f"ESS {q}" for q in QUANTITIES)
          + " | min ESS/s | vs today | hyperparameter steps free: min ESS/s | vs today |")
    print("| --- | ---: | ---: | " + " | ".join("---:" for _ in QUANTITIES)
          + " | ---: | ---: | ---: | ---: |")
    base = rows[0]["min_ess_per_s"]
    for r in rows:
        print(f"| {r['assignment']} | {r['sweeps']} | {r['sampling']:.1f} | "
              + " | ".join(f"{r['ess'][q]:.0f}" if q in r["ess"] else "-" for q in QUANTITIES)
              + f" | {r['min_ess_per_s']:.0f} | {r['min_ess_per_s'] / base:.1f}x"
              + f" | {r['min_ess_per_s_free']:.0f} | {r['min_ess_per_s_free'] / base:.1f}x |")
    print("\nPer-iteration time (µs): each step, and the rest of PyMC's loop\n")
    print("| assignment | steps | PyMC loop | total |")
    print("| --- | --- | ---: | ---: |")
    for r in rows:
        parts = ", ".join(f"{k} {v:.0f}" for k, v in r["per_iter"].items())
        total = sum(r["per_iter"].values()) + r["loop"]
        print(f"| {r['assignment']} | {parts} | {r['loop']:.0f} | {total:.0f} |")


def gradient_cost(sizes=(300, 3000, 30000), d=2, k=5, reps=200):
    """NUTS's cost per gradient of a collapsed likelihood against the slice step's
    cost per conditional evaluation, as N grows with K fixed: the PyTensor log
    density (segment sums over the N rows) and its gradient are O(N D); the
    statistics path is O(K D) after an O(N D) load once per iteration."""
    import pytensor.tensor as pt

    print("\n### Cost per evaluation as N grows (D = 2, K = 5 blocks)\n")
    print("| N | NUTS: logp + gradient (µs) | HyperSlice: conditional from statistics (µs) "
          "| HyperSlice: statistics load (µs) |")
    print("| ---: | ---: | ---: | ---: |")
    rng = np.random.default_rng(0)
    for n in sizes:
        out = _costs(n, d, k, reps, rng, pt)
        print(f"| {n} | {out[0]:.0f} | {out[1]:.0f} | {out[2]:.0f} |")


def _costs(n, d, k, reps, rng, pt):
    Y = rng.normal(size=(n, d))
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=n)
        sigma = pm.HalfNormal("sigma", 2.0)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=5.0, sigma=sigma, observed=Y)
    values = model.rvs_to_values
    logp = model.logp(vars=[sigma, model["y"]])
    fn = model.compile_fn([logp, pt.grad(logp, values[sigma])],
                          inputs=[values[z], values[sigma]], point_fn=False)
    fn.trust_input = True
    labels = pmp.canonicalize(rng.integers(0, k, n))
    point = dict(model.initial_point(), z=labels)
    step = pmp.HyperSlice([sigma], model=model)
    terms = step._terms[0]

    def load():
        terms._labels = None
        terms.load(point, terms.inputs(point))

    load()
    out = []
    for f in (lambda: fn(labels, point["sigma_log__"]),
              lambda: step.log_conditional(point, "sigma_log__"), load):
        f()
        start = time.perf_counter()
        for _ in range(reps):
            f()
        out.append((time.perf_counter() - start) / reps * 1e6)
    return out


def main(draws=1000, tune=500, chains=4, seed=7):
    for name, make in [("README quickstart (N = 300, D = 2)", quickstart_model),
                       ("seeds (N = 210, D = 7)", seeds_model)]:
        model = make()
        # Warm-up: numba kernels and PyTensor functions compiled before timing.
        for assignment in ("today", "default"):
            run(model, assignment, 5, 5, 1, seed)
        rows = [run(model, a, draws, tune, chains, seed)
                for a in ("today", "default", "default, 1 sweep")]
        # The ceiling: the partition alone, alpha and sigma fixed at their posterior
        # means (no hyperparameter step could make the partition mix faster than this).
        fixed = {q: rows[1]["means"][q] for q in ("alpha", "sigma")}
        model = make(fixed=fixed)
        run(model, "fixed, 1 sweep", 5, 5, 1, seed)
        rows += [run(model, f"fixed alpha, sigma: {k} sweeps", draws, tune, chains, seed)
                 for k in sorted({1, rows[1]["sweeps"]})]
        report(name, rows)
    gradient_cost()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    main(args.draws, args.tune, args.chains, args.seed)
