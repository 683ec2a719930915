"""Cold compile time of the SubClusters entries for each likelihood with explicit draws.

For each likelihood (CRP prior, n = 200 items from two groups), a child process with
an empty, fresh ``NUMBA_CACHE_DIR`` builds the kernel state (its own kernels compiled
first, not timed), then times the first call of ``subclusters_iteration`` (compile +
one iteration) and of ``launch_entry`` (compile + one launch), and a second call of
each (run time only). The difference is the compile time. One process at a time.

    PYTHONPATH=. python examples/benchmark_subclusters_compile.py            # all
    PYTHONPATH=. python examples/benchmark_subclusters_compile.py niw        # some
"""

import os
import subprocess
import sys
import tempfile
import time

import numpy as np

LIKELIHOODS = ("normal", "mv_normal", "niw", "normal_inverse_gamma", "beta_bernoulli",
               "poisson_gamma", "dirichlet_multinomial")


def model_for(name, n):
    import pymc as pm

    import pymc_partitions as pmp

    rng = np.random.default_rng(0)
    groups = rng.integers(0, 2, n)
    x = np.array([[-2.0, 0.0], [2.0, 1.0]])[groups] + rng.normal(size=(n, 2))
    s = np.array([[1.0, 0.6], [0.6, 1.5]])
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=n)
        if name == "normal":
            pmp.CollapsedNormal("y", z, mu0=0.0, tau=2.0, sigma=1.0, observed=x)
        elif name == "mv_normal":
            pmp.CollapsedMvNormal("y", z, mu0=0.0, Sigma0=4.0 * np.eye(2), Sigma=s, observed=x)
        elif name == "niw":
            pmp.CollapsedNIW("y", z, mu0=0.0, kappa0=0.5, nu0=4.0, Psi0=s, observed=x)
        elif name == "normal_inverse_gamma":
            pmp.CollapsedNormalInverseGamma("y", z, mu0=0.0, kappa0=0.5, a0=2.0, b0=1.0,
                                            observed=x)
        elif name == "beta_bernoulli":
            pmp.CollapsedBetaBernoulli("y", z, a=0.5, b=0.5, observed=(x > 0).astype(float))
        elif name == "poisson_gamma":
            pmp.CollapsedPoissonGamma("y", z, a=1.0, b=1.0, observed=rng.poisson(
                np.array([[1.0, 5.0, 2.0], [6.0, 1.0, 3.0]])[groups]).astype(float))
        elif name == "dirichlet_multinomial":
            theta = rng.dirichlet(np.ones(4), size=(2, 3))
            y = np.array([[rng.multinomial(6, theta[g, p]) for p in range(3)] for g in groups],
                         dtype=float)
            pmp.CollapsedDirichletMultinomial("y", z, concentration=1.0, observed=y)
        else:
            raise ValueError(f"unknown likelihood {name!r}; one of {LIKELIHOODS}")
    return model


def child(name, n=200):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
    from helpers import KernelChain

    from pymc_partitions.kernels import subclusters
    from pymc_partitions.kernels.components.explicit import explicit_width

    model = model_for(name, n)
    chain = KernelChain(model, seed=1, start=np.arange(n) % 2)
    op = chain.target.likelihoods[0].owner.op
    sub = op.alloc_stats(2, chain.target.data[0], chain.params)
    work = subclusters.work_arrays(n, explicit_width(chain.params), sub)
    outcomes = np.zeros(subclusters.N_OUTCOMES, dtype=np.int64)
    labels = chain.labels().astype(np.int64)

    def iteration():
        subclusters.subclusters_iteration(chain.stream, 3, 3, True, chain.state, chain.prior,
                                          chain.params, chain.stats, chain.data, work, outcomes)

    def launch():
        subclusters.launch_entry(np.int64(12345), 0, 1, 3, True, labels, chain.params,
                                 chain.data, work)

    out = []
    for fn in (iteration, launch):
        t0 = time.perf_counter()
        fn()
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        fn()
        out.append((first, time.perf_counter() - t0))
    (it1, it2), (la1, la2) = out
    print(f"{name:24s} subclusters_iteration {it1 - it2:6.1f} s   launch_entry {la1 - la2:6.1f} s"
          f"   (warm calls {it2 * 1e3:.2f} ms, {la2 * 1e3:.2f} ms)", flush=True)


def main(names):
    for name in names:
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "NUMBA_CACHE_DIR": cache}
            subprocess.run([sys.executable, __file__, "--child", name], env=env, check=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2])
    else:
        main(sys.argv[1:] or LIKELIHOODS)
