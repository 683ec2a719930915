"""Counter-based uniforms: common random numbers for moves that two chains share.

A move that draws ``counter_uniform(key, c)`` for its c-th random decision makes
the same decision in two chains given the same ``key`` whenever their weights
agree, whatever else differs between them (the coupled samplers of Nguyen et al.
2022, Alg. 3, drive two chains' split-merge moves with one pair (i, j) and one
stream). Indexing the counter by item rather than by position in a sequence keeps
the streams aligned when the chains' blocks hold different items.

The generator is SplitMix64 (Steele, Lea & Flood 2014): the key plus the counter
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


@primitive
def counter_uniform(key, counter):
    """A uniform on [0, 1) determined by ``(key, counter)`` (both int64), 53 bits."""
    z = np.uint64(key) + np.uint64(counter) * _GAMMA
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    z = z ^ (z >> _S31)
    return np.float64(z >> _S11) * _TWO_M53
