"""Benchmark: the kernels' explicit random streams against numba's global generator.

Run:  python examples/benchmark_random.py

Prints, all measured in this run:
- nanoseconds per draw of a uniform double, a bounded integer and a shuffled
  position: ``pymc_partitions.kernels.random`` (xoshiro256** on a (4,) uint64 state
  passed explicitly) against numba's ``np.random`` (Mersenne Twister, one hidden
  global state per thread); and the alternative of passing a ``numpy.random.Generator``
  (per draw, and per call of an entry);
- one Gibbs sweep (CollapsedNormal, CRP prior) of ``kernels.gibbs.run_sweeps``
  against the same sweep drawing from numba's global generator reseeded on every
  call (the kernel as it was before streams; a verbatim copy below), alternated
  call by call on one chain; the median of the per-pair ratios and of K.
"""

import time

import numpy as np
from numba import njit

from pymc_partitions.datasets import nguyen_synthetic
from pymc_partitions.kernels import assign_labels, gibbs, new_state
from pymc_partitions.kernels.components import normal
from pymc_partitions.kernels.gibbs import update_item
from pymc_partitions.kernels.priors import crp
from pymc_partitions.kernels.random import bounded, new_stream, shuffle, uniform
from pymc_partitions.kernels.state import NO_CHOICE
from _timing import median_time

DRAWS = 10_000_000


@njit(_nrt=False)
def _stream_uniforms(stream, m):
    total = 0.0
    for _ in range(m):
        total += uniform(stream)
    return total


@njit(_nrt=False)
def _global_uniforms(m):
    total = 0.0
    for _ in range(m):
        total += np.random.random()
    return total


@njit(_nrt=False)
def _generator_uniforms(generator, m):
    total = 0.0
    for _ in range(m):
        total += generator.random()
    return total


@njit(_nrt=False)
def _takes(arg):
    return 0


@njit(_nrt=False)
def _stream_bounded(stream, m):
    total = 0
    for t in range(m):
        total += bounded(stream, 1 + t % 1000)
    return total


@njit(_nrt=False)
def _global_bounded(m):
    total = 0
    for t in range(m):
        total += np.random.randint(0, 1 + t % 1000)
    return total


@njit(_nrt=False)
def _stream_shuffle(stream, values, times):
    for _ in range(times):
        shuffle(stream, values, values.shape[0])


@njit(_nrt=False)
def _global_shuffle(values, times):
    for _ in range(times):
        np.random.shuffle(values)


@njit(_nrt=False)
def run_sweeps_global(seed, n_sweeps, state, prior_params, params, stats, data, log_w, order):
    """The Gibbs entry as it was before streams: numba's generator reseeded per call."""
    np.random.seed(seed)
    for _ in range(n_sweeps):
        np.random.shuffle(order)
        for t in range(order.shape[0]):
            i = order[t]
            if update_item(
                state, prior_params, params, stats, data, i, np.random.random(), log_w
            ) == NO_CHOICE:
                return i
    return -1


def per_draw():
    stream = new_stream(0)
    values = np.arange(1000, dtype=np.int64)
    cases = [
        ("uniform double", lambda: _stream_uniforms(stream, DRAWS),
         lambda: _global_uniforms(DRAWS), DRAWS),
        ("bounded integer", lambda: _stream_bounded(stream, DRAWS),
         lambda: _global_bounded(DRAWS), DRAWS),
        ("shuffle (per item)", lambda: _stream_shuffle(stream, values, DRAWS // 1000),
         lambda: _global_shuffle(values, DRAWS // 1000), DRAWS),
    ]
    print(f"{'draw':<20} {'stream (ns)':>12} {'numba global (ns)':>18} {'ratio':>7}")
    for label, ours, theirs, count in cases:
        ours(), theirs()  # compile
        a = median_time(ours, 7) / count * 1e9
        b = median_time(theirs, 7) / count * 1e9
        print(f"{label:<20} {a:>12.2f} {b:>18.2f} {a / b:>7.2f}")
    # The alternative: numba's support for numpy.random.Generator arguments.
    generator = np.random.default_rng(0)
    _generator_uniforms(generator, 10)
    c = median_time(lambda: _generator_uniforms(generator, DRAWS), 7) / DRAWS * 1e9
    print(f"uniform double from a numpy Generator argument: {c:.2f} ns")
    _takes(stream), _takes(generator)
    calls = 20_000
    per_call = [median_time(lambda a=arg: [_takes(a) for _ in range(calls)], 7) / calls * 1e6
                for arg in (stream, generator)]
    print(f"call of an entry with a (4,) uint64 stream: {per_call[0]:.2f} us; "
          f"with a numpy Generator: {per_call[1]:.2f} us")


def sweep_pair(x, alpha, tau, sigma, repeats, burn_in):
    """Both sweeps alternate on one chain, so they see the same partitions."""
    n, d = x.shape
    params = normal.make_params(np.zeros(d), np.full(d, tau), np.full(d, sigma), n=n)
    prior = crp.make_params(alpha, n)
    stats, data, state = normal.alloc_stats(n, d, params), normal.make_data(x), new_state(n)
    assign_labels(state, params, stats, data, np.zeros(n, dtype=np.int64))
    args = (state, prior, params, stats, data, np.empty(n + 1), np.arange(n, dtype=np.int64))
    stream = new_stream(1)
    gibbs.run_sweeps(stream, burn_in, *args)
    run_sweeps_global(1, 1, *args)  # compile
    ours, theirs, ks = [], [], []
    for r in range(repeats):
        t0 = time.perf_counter()
        gibbs.run_sweeps(stream, 1, *args)
        t1 = time.perf_counter()
        run_sweeps_global(10 + r, 1, *args)
        t2 = time.perf_counter()
        ours.append(t1 - t0)
        theirs.append(t2 - t1)
        ks.append(int(state.counts[0]))
    ours, theirs = np.array(ours), np.array(theirs)
    return (float(np.median(ours)), float(np.median(theirs)), float(np.median(ours / theirs)),
            int(np.median(ks)))


def main():
    per_draw()
    print(f"\n{'Gibbs sweep':<26} {'stream (ms)':>12} {'global (ms)':>12} {'median ratio':>13} "
          f"{'K':>4}")
    cases = [
        ("Nguyen synthetic N=300", nguyen_synthetic(300, seed=0)[0], 0.2, 0.75**0.5,
         0.7**0.5, 400, 100),
        ("10 clusters N=10000", None, 1.0, 4.0, 1.0, 41, 20),
    ]
    for label, x, alpha, tau, sigma, repeats, burn_in in cases:
        if x is None:
            rng = np.random.default_rng(0)
            centres = rng.normal(0.0, 4.0, size=(10, 2))
            x = centres[rng.integers(0, 10, 10_000)] + rng.normal(size=(10_000, 2))
        a, b, ratio, k = sweep_pair(x, alpha, tau, sigma, repeats, burn_in)
        print(f"{label:<26} {a * 1e3:>12.4f} {b * 1e3:>12.4f} {ratio:>13.3f} {k:>4}")


if __name__ == "__main__":
    main()
