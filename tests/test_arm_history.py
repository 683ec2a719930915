"""ARM's background information (Herlau et al. §2.4): the window of past states and
the constraints on (z^a, z^b)."""

import numpy as np
import pytest

import pymc_partitions as pmp
from pymc_partitions.kernels.random import new_stream
from pymc_partitions.step_methods.arm_history import History


@pytest.mark.parametrize("canonical", [False, True])
def test_window_constraints(canonical):
    """One state from iterations ⌊t/2⌋ .. t-1 of this chain (never its current
    state), the other from ⌊t/2⌋ .. t of any chain, never equal; the same whether
    the history relabels the population or is told it is canonical already."""
    rng = np.random.default_rng(3)
    n, S, T = 6, 3, 40
    history = History(n, chain=1)
    stream = new_stream(2)
    populations = []
    currents_seen = 0  # draws in which the current state was distinct from the window's
    for t in range(T):
        # Distinct partitions per (iteration, chain): item labels in {0, 1, 2}.
        pop = np.array([pmp.canonicalize(rng.integers(0, 3, n))
                        for _ in range(S)])
        populations.append(pop)
        history.record(pop, canonical=canonical)
        assert len(history) == t - t // 2 + 1
        for _ in range(20):
            got = history.draw(stream)
            if t == 0:
                assert got is None  # no past state of its own yet
                continue
            if got is None:
                continue
            za, zb = got
            window = populations[t // 2:]
            own = [p[1] for p in window[:-1]]
            anyone = [q for p in window for c, q in enumerate(p) if p is not pop or c != 1]
            assert any(np.array_equal(za, q) for q in own)
            assert any(np.array_equal(zb, q) for q in anyone)
            # Never the current state (unless an earlier state equals it).
            if not any(np.array_equal(pop[1], q) for q in own):
                assert not np.array_equal(za, pop[1])
            if not any(np.array_equal(pop[1], q) for q in anyone):
                assert not np.array_equal(zb, pop[1])
                currents_seen += 1
            assert not np.array_equal(za, zb)
    assert currents_seen > 100


def test_equal_partitions_give_no_move_and_cap_bounds_memory():
    history = History(5, chain=0, max_window=3)
    stream = new_stream(3)
    for _ in range(10):
        history.record(np.zeros((2, 5), dtype=np.int64))
        assert history.draw(stream) is None or history.t == 0
    assert len(history) == 3 and history.nbytes() == 3 * 2 * 5 * 2  # int16 labels
    with pytest.raises(ValueError, match=r"expected \(S, 5\)"):
        history.record(np.zeros((2, 4), dtype=np.int64))
