"""Timing helper shared by the benchmark scripts (run them from any directory:
``python examples/benchmark_gibbs.py`` puts ``examples/`` on the import path)."""

import time

import numpy as np


def median_time(fn, repeats):
    """Median wall-clock seconds of ``fn()`` over ``repeats`` calls."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))
