"""Benchmark: from the start of a spawned worker process to its first finished
coupled pair (issue on compile time, item 4: workers import no more than they need).

Run:  python examples/benchmark_worker_start.py [--repeats 5] [--method spawn]

A run of ``pmp.coupled_estimates`` is built in this process as the runner builds it
(the model read once, the job pickled with cloudpickle; kernels compiled or loaded
from numba's cache by a warm-up pair first). Then, ``--repeats`` times, a fresh
one-worker ``ProcessPoolExecutor`` with the ``--method`` start method (``spawn``: macOS
and Windows; ``forkserver``: Linux from Python 3.14) gets one task of one pair, and
the seconds from submitting it to its result are printed: the interpreter's start,
the imports that unpickling the task brings (the runner's module, the pair, h), the
kernels loaded from the cache, the pair. The median is what to compare.

This module imports nothing heavy at its top: a spawned worker imports it as
``__mp_main__``.

Measured (2-core machine with a CI run going on, spawn, medians of 5 runs, twice on
PyMC 5 / Python 3.11 and once on PyMC 6 / Python 3.12): before the worker module (the
pickles named ``unbiased.runner``, which imports PyMC, PyTensor and ArviZ) 2.01 s,
2.20 s; 1.94 s; after (``unbiased.worker``: NumPy, numba and the kernels) 0.55 s,
0.54 s; 0.67 s.
"""

import argparse
import time


def main():
    import multiprocessing
    import statistics
    import sys
    from concurrent.futures import ProcessPoolExecutor

    import numpy as np
    import pymc as pm

    import pymc_partitions as pmp
    from pymc_partitions.unbiased import executors, runner

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--method", default="spawn", choices=["spawn", "forkserver"])
    args = parser.parse_args()

    rng = np.random.default_rng(5)
    y = np.concatenate([rng.normal(-2, 1, (12, 2)), rng.normal(2, 1, (12, 2))])
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=24)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=2.0, sigma=1.0, observed=y)
    h = pmp.unbiased.lcp
    root = np.random.SeedSequence(7)
    target, pair_options = runner.read_model(model, "z", "benchmark", {"coupling": "ot"})
    shape = runner.check_h(h, target.start_labels, "benchmark")
    job = runner.CoupledJob(target, pair_options, h, shape, 2, 10, None, root.entropy,
                            tuple(root.spawn_key), root.pool_size)
    runner.warm_up(job)
    expected = runner.run_coupled_batch(job, range(1), None)[0][1].value
    payload = (f"{id(job)}-{time.time_ns()}", executors.dumps_payload(job, "benchmark"))

    context = multiprocessing.get_context(args.method)
    seconds = []
    for _ in range(args.repeats):
        with ProcessPoolExecutor(1, mp_context=context) as pool:
            start = time.perf_counter()
            rows = pool.submit(runner.run_coupled_batch, payload, range(1), None).result()
            seconds.append(time.perf_counter() - start)
        assert np.array_equal(rows[0][1].value, expected)
    print(f"{pmp.__file__}  Python {sys.version.split()[0]}  start method {args.method}")
    print("worker start -> first pair (s): " + ", ".join(f"{s:.2f}" for s in seconds))
    print(f"median {statistics.median(seconds):.2f} s")


if __name__ == "__main__":
    main()
