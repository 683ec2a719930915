"""Benchmark: pm.sample start-up and stored-draw memory at large n (issue 33, item 3).

Run:  python examples/benchmark_startup.py [n] [repeats]      (default n = 10^6, 2)
      python examples/benchmark_startup.py memory labels|summaries [n] [draws]
                                                  (default 10^6, 40; one per process,
                                                  the peak memory only grows)

Start-up: a CRP partition of n items with a Gamma prior on alpha, 1-D Normal data
with a HalfNormal sigma (default steps: Gibbs, EscobarWest, HyperSlice), pm.sample
with draws=3, tune=0, one chain; start-up is the time from the call to the first
draw less one draw (wall and CPU seconds; the first call of a session also pays
PyMC's one-off compiles). Memory: the growth of the peak resident memory over one
pm.sample of ``draws`` draws, per stored draw, storing the labels and storing only
the summaries (var_names=...).
"""

import resource
import sys
import time

import numpy as np
import pymc as pm

import pymc_partitions as pmp


def model_of(n):
    y = np.random.default_rng(0).normal(size=n)
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        z = pmp.CRP("z", alpha=alpha, n=n)
        sigma = pm.HalfNormal("sigma", 1.0)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=1.0, sigma=sigma, observed=y)
    return model


def startup(n=10**6, repeats=2):
    model = model_of(int(float(n)))
    for rep in range(int(repeats)):
        stamps, cpu = [], []
        t0, c0 = time.perf_counter(), time.process_time()
        pm.sample(model=model, draws=3, tune=0, chains=1, cores=1, progressbar=False,
                  compute_convergence_checks=False, random_seed=rep,
                  callback=lambda trace, draw: (stamps.append(time.perf_counter()),
                                                cpu.append(time.process_time())))
        draw, draw_cpu = np.median(np.diff(stamps)), np.median(np.diff(cpu))
        print(f"n = {int(float(n))}, call {rep}: start-up {stamps[0] - t0 - draw:.2f} s wall "
              f"{cpu[0] - c0 - draw_cpu:.2f} s CPU (one draw {draw:.2f} s)", flush=True)


def memory(what="labels", n=10**6, draws=40):
    model, draws = model_of(int(float(n))), int(draws)
    summaries = ["alpha", "sigma", "z_n_clusters", "z_largest_cluster_frac", "z_entropy"]
    kw = {"labels": {}, "summaries": {"var_names": summaries}}[what]
    for label, kw in ((what, kw),):
        kw = dict(model=model, tune=0, chains=1, cores=1, progressbar=False,
                  compute_convergence_checks=False, **kw)
        pm.sample(draws=1, random_seed=0, **kw)
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        pm.sample(draws=draws, random_seed=1, **kw)
        grow = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - base
        print(f"n = {int(float(n))}, {draws} draws, {label}: peak memory +{grow:.0f} MiB, "
              f"{grow / draws:.2f} MiB per stored draw", flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["memory"]:
        memory(*sys.argv[2:5])
    else:
        startup(*sys.argv[1:3])
