"""Exact optimal transport in numba (kernels/transport.py) against POT's ot.emd.

The references are POT's exact network simplex (``ot.emd``) on the same problem
and, for the structured solver of a coupled Gibbs step, ``ot.emd`` on the full
dense cost r_a + s_b - w(n_ab) (Nguyen et al. 2022, App. D and I).
"""

import numpy as np
import ot
import pytest

from pymc_partitions.kernels import transport
from pymc_partitions.kernels.transport import (
    HAMMING,
    VI,
    emd_entry,
    new_workspace,
    overlap_plan_entry,
    solve_transport,
)

RTOL = 1e-9


def pot_value(a, b, cost):
    """Optimal cost by POT. Costs are shifted to be >= 0 (the same constant on every
    cell; the optimal plans are unchanged): POT 0.9.7 reports some feasible
    problems with negative costs as infeasible and returns a zero plan."""
    low = cost.min()
    plan, log = ot.emd(a, b, cost - low, log=True)
    assert log["warning"] is None, log["warning"]
    return float(np.sum(plan * cost))


def assert_plan(plan, a, b, value, cost):
    assert plan.min() >= 0.0
    np.testing.assert_allclose(plan.sum(axis=1), a, rtol=0, atol=1e-12)
    np.testing.assert_allclose(plan.sum(axis=0), b, rtol=0, atol=1e-12)
    assert value == pytest.approx(float(np.sum(plan * cost)), rel=1e-12, abs=1e-12)


def check_against_pot(a, b, cost, ws):
    plan = np.full(cost.shape, np.nan)
    value = emd_entry(a, a.size, b, b.size, cost, plan, ws)
    reference = pot_value(a, b, cost)
    # Relative 1e-9; an optimum of 0 is compared absolutely at the rounding scale of the
    # masses times the costs (a plan's cells carry ~1e-17 of marginal rounding).
    scale = np.abs(cost).max()
    assert abs(value - reference) <= max(RTOL * abs(reference), 1e-12 * scale), (
        value, reference)
    assert_plan(plan, a, b, value, cost)


def test_emd_equals_pot_for_every_size_up_to_40():
    rng = np.random.default_rng(0)
    ws = new_workspace(40, 40)
    for k1 in range(1, 41):
        for k2 in range(1, 41):
            a = rng.dirichlet(np.ones(k1))
            b = rng.dirichlet(np.ones(k2))
            check_against_pot(a, b, rng.random((k1, k2)), ws)


@pytest.mark.parametrize("case", ["zeros", "ties", "integer", "uniform-integer", "negative",
                                  "one-row", "one-column", "sparse-masses", "large-costs"])
def test_emd_degenerate_problems(case):
    rng = np.random.default_rng(abs(hash(case)) % 2**32)
    ws = new_workspace(30, 30)
    for _ in range(60):
        k1, k2 = rng.integers(1, 31, size=2)
        if case == "one-row":
            k1 = 1
        if case == "one-column":
            k2 = 1
        a = rng.dirichlet(np.ones(k1))
        b = rng.dirichlet(np.ones(k2))
        cost = rng.random((k1, k2))
        if case == "zeros":  # zero masses in both marginals
            a = a * (rng.random(k1) < 0.5)
            b = b * (rng.random(k2) < 0.5)
            a[rng.integers(k1)] += 0.1
            b[rng.integers(k2)] += 0.1
            a, b = a / a.sum(), b / b.sum()
        elif case == "ties":  # every cost equal: every plan is optimal
            cost = np.full((k1, k2), 0.5)
        elif case == "integer":
            cost = rng.integers(0, 4, size=(k1, k2)).astype(float)
        elif case == "uniform-integer":  # masses 1/k: many degenerate pivots
            a, b = np.full(k1, 1.0 / k1), np.full(k2, 1.0 / k2)
            cost = rng.integers(0, 3, size=(k1, k2)).astype(float)
        elif case == "negative":  # the structure of a coupled step: -4 n_ab
            cost = -4.0 * rng.integers(0, 3, size=(k1, k2)) * (rng.random((k1, k2)) < 0.3)
        elif case == "sparse-masses":
            a, b = rng.dirichlet(np.full(k1, 0.05)), rng.dirichlet(np.full(k2, 0.05))
        elif case == "large-costs":
            cost = rng.normal(size=(k1, k2)) * 1e4
        check_against_pot(a, b, cost, ws)


def test_emd_known_solution_and_prefix_of_larger_arrays():
    # Arrays larger than the problem: only a[:m1], b[:m2], cost[:m1, :m2] are read.
    a = np.array([0.5, 0.5, 7.0])
    b = np.array([0.5, 0.5, 9.0])
    cost = np.array([[0.0, 1.0, 5.0], [1.0, 0.0, 5.0], [5.0, 5.0, 5.0]])
    plan = np.full((3, 3), -1.0)
    value = emd_entry(a, 2, b, 2, cost, plan, new_workspace(3, 3))
    assert value == 0.0
    np.testing.assert_array_equal(plan[:2, :2], np.diag([0.5, 0.5]))
    assert plan[2, 2] == -1.0


def test_emd_pot_fallback_path():
    """With pot_above = 0 every problem goes to POT through numba's objmode."""
    rng = np.random.default_rng(3)
    ws = new_workspace(12, 12, pot_above=0)
    for _ in range(20):
        k1, k2 = rng.integers(1, 13, size=2)
        a, b = rng.dirichlet(np.ones(k1)), rng.dirichlet(np.ones(k2))
        check_against_pot(a, b, rng.normal(size=(k1, k2)), ws)
    # The default workspace sends problems above the measured crossover to POT.
    assert transport.POT_FALLBACK_CELLS < 110 * 100
    a, b = rng.dirichlet(np.ones(110)), rng.dirichlet(np.ones(100))
    check_against_pot(a, b, rng.random((110, 100)), new_workspace(110, 100))


def test_emd_reports_what_it_cannot_solve():
    ws = new_workspace(3, 3)
    plan = np.zeros((4, 4))
    cost = np.zeros((4, 4))
    # Larger than the workspace.
    assert np.isnan(emd_entry(np.ones(4) / 4, 4, np.ones(4) / 4, 4, cost, plan, ws))
    # Totals that differ: infeasible.
    assert np.isnan(emd_entry(np.ones(3), 3, np.ones(3) / 3, 3, cost, plan, ws))


def test_solve_transport_checks_its_arguments():
    a, b, cost = np.ones(2) / 2, np.ones(3) / 3, np.zeros((2, 3))
    plan, value = solve_transport(a, b, cost)
    assert value == 0.0 and plan.shape == (2, 3)
    with pytest.raises(ValueError, match="'cost' must have shape"):
        solve_transport(a, b, np.zeros((3, 2)))
    with pytest.raises(ValueError, match="'a' must hold finite non-negative"):
        solve_transport(np.array([1.5, -0.5]), b, cost)
    with pytest.raises(ValueError, match="equal totals"):
        solve_transport(a, 2 * b, cost)
    with pytest.raises(ValueError, match="'cost' must be finite"):
        solve_transport(a, b, np.full((2, 3), np.inf))
    with pytest.raises(ValueError, match="'max_edges'"):
        new_workspace(2, 2, max_edges=0)
    with pytest.raises(ValueError, match="'max_rows'"):
        new_workspace(0, 2)


# ---------------------------------------------------------------------------------
# The structured problem of a coupled Gibbs step
# ---------------------------------------------------------------------------------


def xlogx(x):
    x = np.asarray(x, dtype=float)
    return np.where(x > 0, x * np.log(np.where(x > 0, x, 1.0)), 0.0)


def reward(counts, metric):
    counts = np.asarray(counts, dtype=float)
    return 4.0 * counts if metric == HAMMING else 2.0 * (xlogx(counts + 1) - xlogx(counts))


def random_table(rng, n_items, k1, k2):
    """Intersection counts of two random partitions, padded with a zero new-block
    row and column; returns (overlap int32, m1, m2)."""
    x = np.unique(rng.integers(0, k1, n_items), return_inverse=True)[1]
    y = np.unique(rng.integers(0, k2, n_items), return_inverse=True)[1]
    m1, m2 = x.max() + 2, y.max() + 2
    overlap = np.zeros((m1, m2), dtype=np.int32)
    np.add.at(overlap, (x, y), 1)
    return overlap, m1, m2


def test_overlap_reward_values():
    from pymc_partitions.kernels.couplings import overlap_reward as reexported

    assert reexported is transport.overlap_reward
    for n in range(6):
        assert transport.overlap_reward(n, HAMMING) == 4.0 * n
        assert transport.overlap_reward(n, VI) == pytest.approx(float(reward(n, VI)), rel=1e-14)
    assert transport.overlap_reward(0, VI) == 0.0
    assert transport.overlap_reward(1, VI) == pytest.approx(4 * np.log(2))


@pytest.mark.parametrize("metric", [HAMMING, VI])
def test_overlap_plan_equals_dense_optimal_transport(metric):
    """Its plan is a coupling of p and q whose cost r + s - w equals the optimum
    of the dense problem (POT), for random separable terms r, s: the value does
    not depend on them, as the reduction says."""
    rng = np.random.default_rng(10 + metric)
    ws = new_workspace(16, 16)
    ws_pot = new_workspace(16, 16, pot_above=0)  # components through POT
    sizes = []
    for rep in range(400):
        overlap, m1, m2 = random_table(rng, rng.integers(1, 60), rng.integers(1, 15),
                                       rng.integers(1, 15))
        alpha = rng.choice([0.2, 1.0, 5.0])
        p, q = rng.dirichlet(np.full(m1, alpha)), rng.dirichlet(np.full(m2, alpha))
        cost = (rng.normal(size=m1)[:, None] + rng.normal(size=m2)[None, :]
                - reward(overlap, metric))
        plan = np.full((m1, m2), np.nan)
        n_edges = overlap_plan_entry(p, m1, q, m2, overlap, metric,
                                     ws_pot if rep % 4 == 0 else ws, plan)
        assert n_edges == np.count_nonzero(overlap * (p[:, None] > 0) * (q[None, :] > 0))
        sizes.append(n_edges)
        value = float(np.sum(plan * cost))
        assert abs(value - pot_value(p, q, cost)) <= RTOL * np.abs(cost).max()
        assert_plan(plan, p, q, value, cost)
    assert max(sizes) > 40  # some components needed the solver


def test_overlap_plan_keeps_equal_partitions_together():
    """X(-n) = Y(-n) with blocks listed in different orders and the same
    conditionals: the plan matches each block with itself, new with new."""
    rng = np.random.default_rng(5)
    ws = new_workspace(12, 12)
    for _ in range(50):
        k = rng.integers(1, 11)
        sizes = rng.integers(1, 6, size=k)
        perm = rng.permutation(k)
        overlap = np.zeros((k + 1, k + 1), dtype=np.int32)
        overlap[np.arange(k), perm] = sizes
        p = rng.dirichlet(np.ones(k + 1))
        q = np.empty(k + 1)
        q[perm] = p[:k]
        q[k] = p[k]
        plan = np.zeros((k + 1, k + 1))
        for metric in (HAMMING, VI):
            overlap_plan_entry(p, k + 1, q, k + 1, overlap, metric, ws, plan)
            expected = np.zeros((k + 1, k + 1))
            expected[np.arange(k), perm] = p[:k]
            expected[k, k] = p[k]
            # The same support exactly (the matched cells are min(p_a, q_b) = p_a
            # exactly; the residual p_new^2 / p_new may round by an ulp).
            np.testing.assert_array_equal(plan > 0, expected > 0)
            np.testing.assert_allclose(plan, expected, rtol=1e-15, atol=0)


def test_overlap_plan_reports_a_small_workspace():
    overlap = np.ones((4, 4), dtype=np.int32)
    p = q = np.full(4, 0.25)
    plan = np.zeros((4, 4))
    assert overlap_plan_entry(p, 4, q, 4, overlap, HAMMING, new_workspace(4, 4, 8), plan) == -1
    assert overlap_plan_entry(p, 4, q, 4, overlap, HAMMING, new_workspace(3, 4), plan) == -1
    assert overlap_plan_entry(p, 4, q, 4, overlap, HAMMING, new_workspace(4, 4, 9), plan) == 9


def check_overlap_plan(p, q, overlap, metric, ws):
    """overlap_plan's coupling is optimal for the dense cost -w (POT) with exact
    marginals; returns the plan."""
    m1, m2 = p.size, q.size
    cost = -reward(overlap, metric)
    cost[-1, :] = 0.0  # new blocks: n = 0
    cost[:, -1] = 0.0
    plan = np.full((m1, m2), np.nan)
    assert overlap_plan_entry(p, m1, q, m2, overlap, metric, ws, plan) >= 0
    value = float(np.sum(plan * cost))
    assert abs(value - pot_value(p, q, cost)) <= RTOL * np.abs(cost).max()
    assert_plan(plan, p, q, value, cost)
    return plan


def test_overlap_plan_where_greedy_is_not_optimal():
    """A path A - A', A - B', B - B' whose middle cell has the largest reward: the
    greedy first basis puts all of A on (A, B') (value 0.45 * 12); the optimum
    matches A with A' and B with B' (0.45 * 8 * 2), so the simplex must pivot."""
    overlap = np.array([[2, 3, 0], [0, 2, 0], [0, 0, 0]], dtype=np.int32)
    p = q = np.array([0.45, 0.45, 0.1])
    plan = check_overlap_plan(p, q, overlap, HAMMING, new_workspace(3, 3))
    np.testing.assert_allclose(plan, np.diag([0.45, 0.45, 0.1]), rtol=0, atol=1e-15)


def test_overlap_plan_greedy_optimal_on_a_path_of_moved_items():
    """Items moved along a chain of blocks (a -> a + 1): every row has two edges and
    the greedy plan is optimal, which the certificate proves only after shifting the
    free dual of a tree whose root row was emptied; the plan is POT's optimum. With
    masses that make greedy wrong, the certificate must refuse and the solver find it."""
    overlap = np.zeros((5, 5), dtype=np.int32)
    for a in range(4):
        overlap[a, a] = 50 - 10 * a
        if a < 3:
            overlap[a, a + 1] = 3 - a
    ws = new_workspace(8, 8)
    p = np.array([0.3, 0.3, 0.2, 0.1, 0.1])
    q = np.array([0.3, 0.2, 0.2, 0.2, 0.1])
    for metric in (HAMMING, VI):
        check_overlap_plan(p, q, overlap, metric, ws)
    rng = np.random.default_rng(3)
    for _ in range(300):
        k = int(rng.integers(2, 7))
        overlap = np.zeros((k + 1, k + 1), dtype=np.int32)
        overlap[np.arange(k), np.arange(k)] = rng.integers(1, 30, size=k)
        overlap[np.arange(k - 1), np.arange(1, k)] = rng.integers(1, 30, size=k - 1)
        p, q = rng.dirichlet(np.ones(k + 1)), rng.dirichlet(np.ones(k + 1))
        check_overlap_plan(p, q, overlap, HAMMING, ws)


@pytest.mark.parametrize("metric", [HAMMING, VI])
@pytest.mark.parametrize("shape", ["star-row", "star-column", "path", "two-by-two", "stars",
                                   "degenerate"])
def test_overlap_plan_small_structures(shape, metric):
    """The structures of two nearby partitions (blocks split, merged, an item
    moved), alone and beside single edges, with random and tied masses."""
    rng = np.random.default_rng([len(shape), metric])
    ws = new_workspace(12, 12)
    for rep in range(100):
        k = int(rng.integers(2, 8))
        overlap = np.zeros((k + 1, k + 1), dtype=np.int32)
        overlap[np.arange(k), np.arange(k)] = rng.integers(1, 30, size=k)
        a, b = rng.choice(k, size=2, replace=False)
        if shape == "star-row":  # X's block a overlaps several of Y's blocks
            overlap[a, rng.choice(k, size=rng.integers(1, k), replace=False)] += 1
        elif shape == "star-column":
            overlap[rng.choice(k, size=rng.integers(1, k), replace=False), a] += 1
        elif shape == "path":  # an item moved from block a to block b
            overlap[a, b] = rng.integers(1, 4)
        elif shape == "two-by-two":
            overlap[a, b], overlap[b, a] = rng.integers(1, 4, size=2)
        elif shape == "stars":  # several disjoint non-trivial components
            for _ in range(3):
                overlap[rng.integers(k), rng.integers(k)] += rng.integers(1, 3)
        else:  # tied rewards and masses: degenerate pivots
            overlap[:k, :k] = rng.integers(0, 2, size=(k, k)) * 2
        if shape == "degenerate" or rep % 3 == 0:
            p = q = np.full(k + 1, 1.0 / (k + 1))
        else:
            p, q = rng.dirichlet(np.ones(k + 1)), rng.dirichlet(np.ones(k + 1))
        check_overlap_plan(p, q, overlap, metric, ws)


@pytest.mark.parametrize("pot_above", [None, 0])
def test_overlap_plan_many_components(pot_above):
    """More than MERGE_EDGES edges outside single-edge components: the components
    are found and solved one by one (by POT with pot_above = 0)."""
    assert transport.MERGE_EDGES < 120
    rng = np.random.default_rng(7 if pot_above is None else 8)
    ws = new_workspace(60, 60, pot_above=pot_above)
    for _ in range(10):
        k = 50
        overlap = np.zeros((k + 1, k + 1), dtype=np.int32)
        perm = rng.permutation(k)
        overlap[np.arange(k), perm] = rng.integers(5, 30, size=k)
        # Blocks in groups of 2-5 (components), each group with random cross cells.
        start = 0
        while start < k:
            size = int(rng.integers(2, 6))
            rows = np.arange(start, min(start + size, k))
            overlap[np.ix_(rows, perm[rows])] += rng.integers(0, 3, size=(rows.size, rows.size))
            start += size
        edges = overlap[:k, :k] > 0
        shared = edges & ((edges.sum(axis=1)[:, None] > 1) | (edges.sum(axis=0)[None, :] > 1))
        assert shared.sum() > transport.MERGE_EDGES
        p, q = rng.dirichlet(np.ones(k + 1)), rng.dirichlet(np.ones(k + 1))
        for metric in (HAMMING, VI):
            check_overlap_plan(p, q, overlap, metric, ws)
