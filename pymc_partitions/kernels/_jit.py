"""The two ways kernels are compiled.

``primitive``: small functions (component and prior primitives, slot bookkeeping,
one move of one item) that moves call in their inner loops. Inlined at numba IR
level, so a move compiles into one loop with no call overhead.

``entry``: a loop called from Python (a sweep, a block move). Compiled without
numba's reference-counting runtime (``_nrt=False``): an entry never allocates, its
scratch arrays are passed in. Without this, every tuple-of-arrays access on the hot
path pays atomic reference-count traffic; on a Gibbs sweep at N = 300 that was
measured at 5x the cost of the arithmetic (examples/benchmark_gibbs.py).
"""

from numba import njit

primitive = njit(cache=True, inline="always")
entry = njit(cache=True, _nrt=False)
