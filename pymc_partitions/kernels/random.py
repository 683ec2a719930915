"""Random numbers for the kernels: explicit 64-bit streams and counter-based uniforms.

Streams. A kernel that needs randomness takes a *stream*: a (4,) uint64 array, the
state of the xoshiro256** generator (Blackman & Vigna 2021, "Scrambled linear
pseudorandom number generators", ACM TOMS 47(4); period 2^256 - 1, passes BigCrush),
advanced in place by every draw. The primitives are :func:`next_u64`,
:func:`uniform` (53-bit doubles on [0, 1)), :func:`bounded` (unbiased integers on
[0, m), Lemire 2019) and :func:`shuffle` (Fisher-Yates). A stream is created once
from a ``numpy.random.SeedSequence`` (:func:`new_stream`) and then only advanced,
never reseeded: a step makes one per chain when the chain starts (from the
generator PyMC gives that chain) and every iteration continues it. Streams of two
chains start at 256-bit states drawn through SeedSequence, so C streams of length L
overlap with probability about C^2 L / 2^256, and the same seed gives the same
draws in any process (``cores=1`` or ``cores=2``). Numba's global generator is never used:
it is one hidden state per thread that any caller may reseed.

Why an explicit state array (as pynndescent does) and not a
``numpy.random.Generator`` argument, which numba also accepts: passing a Generator
to a compiled entry costs tens of µs per call for unboxing, as much as a whole
Gibbs sweep on a few hundred items, and its draws go through function pointers that
cannot be inlined. A (4,) array costs what any array argument costs, and the draws
inline into the loops (``examples/benchmark_random.py`` measures both).

Counter-based uniforms. A move that draws ``counter_uniform(key, c)`` for its c-th
random decision makes the same decision in two chains given the same ``key``
whenever their weights agree, whatever else differs between them (the coupled
samplers of Nguyen et al. 2022, Alg. 3, drive two chains' split-merge moves with one
pair (i, j) and one stream). Indexing the counter by item rather than by position in
a sequence keeps the streams aligned when the chains' blocks hold different items.
That generator is SplitMix64 (Steele, Lea & Flood 2014): the key plus the counter
times the golden-ratio increment, passed through its 64-bit finaliser; its output
passes BigCrush for sequential counters.
"""

import numpy as np

from pymc_partitions.kernels._jit import primitive

_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)
_TWO_M53 = 1.0 / 9007199254740992.0
# xoshiro256** constants
_S7, _S17, _S45, _S57, _S19 = (np.uint64(s) for s in (7, 17, 45, 57, 19))
_FIVE, _NINE = np.uint64(5), np.uint64(9)
# bounded integers
_S32 = np.uint64(32)
_ONE, _S2, _S4, _S8, _S16 = (np.uint64(s) for s in (1, 2, 4, 8, 16))
_MASK32 = np.uint64(0xFFFFFFFF)
_TWO32 = np.uint64(1 << 32)

#: Length of a stream's state array (uint64 words).
STREAM_WORDS = 4


def new_stream(seed=None):
    """A fresh stream: the (4,) uint64 state of xoshiro256**.

    seed : None, an int or a sequence of ints (the entropy of a
        ``numpy.random.SeedSequence``), a ``SeedSequence``, or a
        ``numpy.random.Generator``, from which 256 bits of entropy are drawn (so the
        result is determined by the generator's state, and the generator advances).
        None takes fresh entropy from the operating system.

    The state is ``SeedSequence.generate_state(4, uint64)``: well mixed for any seed,
    including small consecutive ones.
    """
    if isinstance(seed, np.random.Generator):
        seed = np.random.SeedSequence(
            seed.integers(0, 2**64, size=STREAM_WORDS, dtype=np.uint64)
        )
    elif not isinstance(seed, np.random.SeedSequence):
        try:
            seed = np.random.SeedSequence(seed)
        except (TypeError, ValueError) as err:
            raise TypeError(
                "'seed' must be None, a non-negative int or sequence of such ints, a "
                f"numpy.random.SeedSequence or a numpy.random.Generator; got {seed!r}."
            ) from err
    state = seed.generate_state(STREAM_WORDS, np.uint64)
    if not state.any():  # the one state xoshiro cannot leave (probability 2^-256)
        state[0] = 1
    return state


@primitive
def _rotl(x, k):
    return (x << k) | (x >> (np.uint64(64) - k))


@primitive
def next_u64(stream):
    """The next 64-bit output of the xoshiro256** stream (uint64); advances it."""
    s0, s1, s2, s3 = stream[0], stream[1], stream[2], stream[3]
    result = _rotl(s1 * _FIVE, _S7) * _NINE
    t = s1 << _S17
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = _rotl(s3, _S45)
    stream[0], stream[1], stream[2], stream[3] = s0, s1, s2, s3
    return result


@primitive
def uniform(stream):
    """A uniform float64 on [0, 1) with 53 random bits (the top bits of one output)."""
    return np.float64(next_u64(stream) >> _S11) * _TWO_M53


@primitive
def bounded(stream, m):
    """A uniform int64 on [0, m), m >= 1, without bias.

    Lemire (2019), "Fast random integer generation in an interval", ACM TOMACS
    29(1), Algorithm 5, on the top 32 bits of one output for m <= 2^32: one
    multiplication, a division only in the rare rejection case. Larger m: the low
    bits under m's bit mask, rejected until below m.
    """
    r = np.uint64(m)
    if r <= _TWO32:
        p = (next_u64(stream) >> _S32) * r
        low = p & _MASK32
        if low < r:
            floor = (_TWO32 - r) % r  # 2^32 mod r
            while low < floor:
                p = (next_u64(stream) >> _S32) * r
                low = p & _MASK32
        return np.int64(p >> _S32)
    mask = r - _ONE  # then every bit below its highest set bit
    mask |= mask >> _ONE
    mask |= mask >> _S2
    mask |= mask >> _S4
    mask |= mask >> _S8
    mask |= mask >> _S16
    mask |= mask >> _S32
    x = next_u64(stream) & mask
    while x >= r:
        x = next_u64(stream) & mask
    return np.int64(x)


@primitive
def shuffle(stream, values, count):
    """Shuffle ``values[:count]`` in place, uniformly (Fisher-Yates)."""
    for a in range(count - 1, 0, -1):
        b = bounded(stream, a + 1)
        tmp = values[a]
        values[a] = values[b]
        values[b] = tmp


@primitive
def counter_uniform(key, counter):
    """A uniform on [0, 1) determined by ``(key, counter)`` (both int64), 53 bits."""
    z = np.uint64(key) + np.uint64(counter) * _GAMMA
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    z = z ^ (z >> _S31)
    return np.float64(z >> _S11) * _TWO_M53


@primitive
def random_key(stream):
    """A key for :func:`counter_uniform`: one 64-bit output as int64 (bits kept)."""
    return np.int64(next_u64(stream))
