"""The kernels' random streams (kernels/random.py): the generator against its
reference, uniformity of its primitives (chi-square, fixed seeds), seeding, and that
no kernel or step touches numba's global generator."""

import itertools

import numpy as np
import pymc as pm
import pytest
from numba import njit
from scipy.stats import chisquare

import pymc_partitions as pmp
from pymc_partitions.kernels import assign_labels, gibbs, new_state
from pymc_partitions.kernels.components import normal
from pymc_partitions.kernels.priors import crp
from pymc_partitions.kernels.random import (
    bounded,
    new_stream,
    next_u64,
    random_key,
    shuffle,
    uniform,
)

# Fixed seeds make every test deterministic; the level only guards against a
# generator (or a transcription) that is wrong, not against bad luck.
P_MIN = 1e-4
MASK64 = (1 << 64) - 1


def xoshiro_reference(state, count):
    """xoshiro256** transcribed from the authors' C (prng.di.unimi.it/xoshiro256starstar.c)."""
    s = [int(v) for v in state]

    def rotl(x, k):
        return ((x << k) | (x >> (64 - k))) & MASK64

    out = []
    for _ in range(count):
        out.append(rotl(s[1] * 5 & MASK64, 7) * 9 & MASK64)
        t = s[1] << 17 & MASK64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
    return out, s


@njit
def _outputs(stream, count):
    out = np.empty(count, dtype=np.uint64)
    for t in range(count):
        out[t] = next_u64(stream)
    return out


@njit
def _keys(stream, count):
    out = np.empty(count, dtype=np.int64)
    for t in range(count):
        out[t] = random_key(stream)
    return out


@njit
def _uniforms(stream, count):
    out = np.empty(count)
    for t in range(count):
        out[t] = uniform(stream)
    return out


@njit
def _bounded(stream, m, count):
    out = np.empty(count, dtype=np.int64)
    for t in range(count):
        out[t] = bounded(stream, m)
    return out


@njit
def _shuffles(stream, k, count):
    out = np.empty((count, k), dtype=np.int64)
    for t in range(count):
        for a in range(k):
            out[t, a] = a
        shuffle(stream, out[t], k)
    return out


@njit
def _numba_seed(seed):
    np.random.seed(seed)


@njit
def _numba_draws(count):
    out = np.empty(count)
    for t in range(count):
        out[t] = np.random.random()
    return out


def test_generator_matches_the_reference_transcription():
    for state in (np.array([1, 2, 3, 4], dtype=np.uint64), new_stream(7)):
        expected, after = xoshiro_reference(state, 2000)
        stream = state.copy()
        assert _outputs(stream, 2000).tolist() == expected
        assert stream.tolist() == after  # the state advanced in place
    assert xoshiro_reference([1, 2, 3, 4], 1)[0] == [11520]  # rotl(2 * 5, 7) * 9
    # Keys for the counter-based uniforms keep all 64 bits (viewed as int64).
    stream = new_stream(3)
    keys, outputs = _keys(stream.copy(), 1000), _outputs(stream.copy(), 1000)
    assert np.array_equal(keys.view(np.uint64), outputs) and (keys < 0).any()


def test_uniform_doubles_are_uniform_with_53_bits():
    u = _uniforms(new_stream(11), 1 << 18)
    assert u.min() >= 0.0 and u.max() < 1.0
    counts = np.bincount((u * 64).astype(int), minlength=64)
    assert chisquare(counts).pvalue > P_MIN
    # 53 random bits: the lowest of them is set half the time (a 32-bit uniform
    # scaled to [0, 1) would leave the low 21 bits zero).
    scaled = (u * 2.0**53).astype(np.uint64)
    assert np.array_equal(scaled.astype(np.float64) / 2.0**53, u)
    low = int((scaled & np.uint64(1)).sum())
    assert abs(low - u.size / 2) < 5 * np.sqrt(u.size / 4)


@pytest.mark.parametrize("m", [1, 2, 3, 7, 100])
def test_bounded_small_ranges_are_uniform(m):
    x = _bounded(new_stream(m), m, 60_000)
    assert x.min() >= 0 and x.max() < m
    if m > 1:
        assert chisquare(np.bincount(x, minlength=m)).pvalue > P_MIN


@pytest.mark.parametrize("m", [3 * 2**30, 2**32, 3 * 2**40 + 7])
def test_bounded_large_ranges_are_unbiased(m):
    """m = 3 * 2^30: multiply-shift of 32-bit draws without Lemire's rejection gives
    the values divisible by 3 probability 1/2, and ``x % m`` gives the lower third
    probability 1/2; unbiased, both are 1/3. Above 2^32 the masked-rejection path."""
    x = _bounded(new_stream(5), m, 60_000)
    assert x.min() >= 0 and x.max() < m
    assert chisquare(np.bincount(x % 3, minlength=3)).pvalue > P_MIN
    assert chisquare(np.bincount(x // -(-m // 3), minlength=3)).pvalue > P_MIN


def test_shuffle_is_uniform_over_permutations():
    perms = _shuffles(new_stream(2), 4, 48_000)
    index = {p: a for a, p in enumerate(itertools.permutations(range(4)))}
    counts = np.bincount([index[tuple(p)] for p in perms.tolist()], minlength=24)
    assert chisquare(counts).pvalue > P_MIN


def test_new_stream_seeding():
    assert np.array_equal(new_stream(5), new_stream(5))
    assert not np.array_equal(new_stream(5), new_stream(6))
    assert new_stream(5).dtype == np.uint64 and new_stream(5).shape == (4,)
    assert np.array_equal(new_stream(np.random.SeedSequence(5)), new_stream(5))
    # From a generator: determined by its state, which advances.
    a, b = np.random.default_rng(9), np.random.default_rng(9)
    first = new_stream(a)
    assert np.array_equal(first, new_stream(b))
    assert not np.array_equal(first, new_stream(a))
    # Chains: PyMC hands each chain its own generator; their streams differ.
    chains = [new_stream(g) for g in np.random.default_rng(1).spawn(4)]
    assert len({s.tobytes() for s in chains}) == 4
    assert not np.array_equal(new_stream(None), new_stream(None))
    with pytest.raises(TypeError, match="'seed' must be"):
        new_stream("abc")
    with pytest.raises(TypeError, match="'seed' must be"):
        new_stream(-1)


def _normal_chain(n=40, seed=0):
    x = np.random.default_rng(seed).normal(size=(n, 2))
    params = normal.make_params(np.zeros(2), np.ones(2), np.ones(2), n=n)
    stats, data, state = normal.alloc_stats(n, 2, params), normal.make_data(x), new_state(n)
    assign_labels(state, params, stats, data, np.zeros(n, dtype=np.int64))
    return state, crp.make_params(1.0, n), params, stats, data, np.empty(n + 1), np.arange(n)


def test_sweeps_are_reproducible_and_continue_their_stream():
    stream = new_stream(4)
    runs = []
    for _ in range(2):
        chain = _normal_chain()
        s = stream.copy()
        assert gibbs.run_sweeps(s, 3, *chain) == -1
        runs.append((chain[0].labels.copy(), s))
    assert np.array_equal(runs[0][0], runs[1][0]) and np.array_equal(runs[0][1], runs[1][1])
    assert not np.array_equal(runs[0][1], stream)  # advanced in place
    # The advanced stream goes on, not back: three sweeps in one call equal one
    # sweep then two more from where the stream stopped.
    chain = _normal_chain()
    s = stream.copy()
    gibbs.run_sweeps(s, 1, *chain)
    gibbs.run_sweeps(s, 2, *chain)
    assert np.array_equal(chain[0].labels, runs[0][0]) and np.array_equal(s, runs[0][1])


def test_steps_and_search_leave_numba_global_generator_alone():
    """Regression: the kernels reseeded numba's global generator on every call (with
    a 32-bit seed drawn per iteration), so a user's numba code lost its stream and
    every caller shared one hidden state. The draws of numba's generator after a
    Gibbs step, a split-merge step and a SALSO search must be those it would have
    made without them."""
    _numba_seed(2024)
    expected = _numba_draws(5)
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=8)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=1.0, sigma=1.0,
                            observed=np.random.default_rng(0).normal(size=8))
        steps = [pmp.Gibbs([z], rng=1), pmp.SplitMerge([z], rng=2)]
    point = model.initial_point()
    _numba_seed(2024)
    for step in steps:
        for _ in range(3):
            point = step.step(point)[0]
    draws = np.random.default_rng(3).integers(0, 3, (20, 8))
    pmp.point_estimate(draws, seed=4, n_runs=2)
    np.testing.assert_array_equal(_numba_draws(5), expected)
