"""Couplings of two chains' Gibbs conditionals (kernels/couplings.py).

For each coupling: the distribution the sampler draws from (a Python-callable
entry computes it with the weights the sampler uses) is checked against an
independent definition (optimal transport by POT on distances between the
resulting partitions computed by brute force; the reference implementation's
maximal and common-random-number couplings written in numpy), its marginals are p
and q, and draws from a fixed seed agree with it (chi-square).
"""

import numpy as np
import ot
import pytest
from scipy import stats

from pymc_partitions.kernels import couplings
from pymc_partitions.kernels.couplings import (
    COMMON_RNG,
    HAMMING,
    MAXIMAL,
    OT,
    VI,
    common_rng_pair_pmf,
    draw_pairs,
    maximal_pair_pmf,
    new_workspace,
    ot_pair_pmf,
)
from pymc_partitions.kernels.random import new_stream
from pymc_partitions.kernels.transport import overlap_plan_entry

DRAWS = 100_000


# ---------------------------------------------------------------------------------
# Independent references
# ---------------------------------------------------------------------------------


def hamming(x, y):
    """Nguyen et al. (2022), eq. (5), from co-clustering matrices: the number of
    ordered pairs (i, j) that one partition puts together and the other does not."""
    cx = x[:, None] == x[None, :]
    cy = y[:, None] == y[None, :]
    return float(np.sum(cx != cy))


def variation_of_information(x, y):
    """Meila (2007), eq. (16): H(X) + H(Y) - 2 I(X, Y), natural logarithms."""
    n = x.size
    joint = np.zeros((x.max() + 1, y.max() + 1))
    np.add.at(joint, (x, y), 1.0 / n)
    px, py = joint.sum(axis=1), joint.sum(axis=0)
    nz = joint > 0
    mutual = np.sum(joint[nz] * np.log(joint[nz] / np.outer(px, py)[nz]))
    entropy = -np.sum(px[px > 0] * np.log(px[px > 0])) - np.sum(py[py > 0] * np.log(py[py > 0]))
    return float(entropy - 2 * mutual)


def coupled_step(rng, n_items, k1, k2):
    """Two random partitions of ``n_items`` items, the last one left out: the
    intersection counts of the rest (padded with the new-block row and column),
    the conditionals' sizes, and the distance matrix D[a, b] between the two
    partitions that result from putting the item into X's option a and Y's b."""
    x = np.unique(rng.integers(0, k1, n_items - 1), return_inverse=True)[1]
    y = np.unique(rng.integers(0, k2, n_items - 1), return_inverse=True)[1]
    m1, m2 = x.max() + 2, y.max() + 2
    overlap = np.zeros((m1 + 2, m2 + 3), dtype=np.int32)  # capacity beyond m1, m2
    np.add.at(overlap, (x, y), 1)
    distances = {}
    for metric, distance in ((HAMMING, hamming), (VI, variation_of_information)):
        d = np.empty((m1, m2))
        for a in range(m1):
            for b in range(m2):
                d[a, b] = distance(np.append(x, a), np.append(y, b))
        distances[metric] = d
    return overlap, m1, m2, distances


def maximal_reference(p, q, eta):
    """The reference's max_coupling: (1 - eta) maximal coupling over the shared
    labels + eta independent."""
    m1, m2 = p.size, q.size
    shared = min(m1, m2)
    overlap = np.minimum(p[:shared], q[:shared])
    s = min(1.0, overlap.sum())
    joint = np.zeros((m1, m2))
    joint[np.arange(shared), np.arange(shared)] = overlap
    ex_p, ex_q = p.copy(), q.copy()
    ex_p[:shared] -= overlap
    ex_q[:shared] -= overlap
    if s < 1.0:
        joint += np.outer(ex_p, ex_q) / (1.0 - s)
    return (1 - eta) * joint + eta * np.outer(p, q)


def common_rng_reference(p, q, eta):
    """The reference's naive_coupling: one uniform through both inverse CDFs."""
    fp = np.concatenate([[0.0], np.cumsum(p)])
    fq = np.concatenate([[0.0], np.cumsum(q)])
    joint = np.maximum(0.0, np.minimum(fp[1:, None], fq[None, 1:])
                       - np.maximum(fp[:-1, None], fq[None, :-1]))
    return (1 - eta) * joint + eta * np.outer(p, q)


# ---------------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------------


def assert_marginals(pmf, p, q):
    assert pmf.min() >= 0.0
    np.testing.assert_allclose(pmf.sum(axis=1), p, rtol=0, atol=1e-12)
    np.testing.assert_allclose(pmf.sum(axis=0), q, rtol=0, atol=1e-12)


def draws(coupling, p, q, seed, eta, overlap=None, metric=HAMMING, ws=None):
    m1, m2 = p.size, q.size
    if overlap is None:
        overlap = np.zeros((m1, m2), dtype=np.int32)
    if ws is None:
        ws = new_workspace(m1, m2)
    a = np.empty(DRAWS, dtype=np.int64)
    b = np.empty(DRAWS, dtype=np.int64)
    failed = draw_pairs(coupling, p, m1, q, m2, overlap, metric, eta, new_stream(seed), ws, a, b)
    assert failed == 0
    return a, b


def assert_frequencies(pmf, a, b):
    """Pairs outside the support never drawn; chi-square on the cells with an
    expected count >= 5 (the others pooled) at level 1e-3 (fixed seeds)."""
    counts = np.zeros(pmf.shape)
    np.add.at(counts, (a, b), 1)
    assert counts[pmf == 0].sum() == 0
    expected = pmf * a.size
    big = expected >= 5
    observed = np.append(counts[big], counts[~big].sum())
    expect = np.append(expected[big], expected[~big].sum())
    if expect[-1] == 0:
        observed, expect = observed[:-1], expect[:-1]
    expect *= observed.sum() / expect.sum()
    if observed.size > 1:
        assert stats.chisquare(observed, expect).pvalue > 1e-3


# ---------------------------------------------------------------------------------
# Optimal transport coupling
# ---------------------------------------------------------------------------------


@pytest.mark.parametrize("metric", [HAMMING, VI])
def test_ot_coupling_is_optimal_for_the_partition_distance(metric):
    """With eta = 0 the expected distance between the resulting partitions (eq. 5
    or VI, by brute force) equals the optimal transport cost (POT), so the
    reduction to intersection counts and rewards is right; the marginals are p
    and q and the nugget mixes in p q^T."""
    rng = np.random.default_rng(20 + metric)
    ws = new_workspace(12, 12, max_edges=14)  # the sweep's sizing: n_items edges
    for _ in range(60):
        overlap, m1, m2, distances = coupled_step(rng, rng.integers(2, 15), rng.integers(1, 8),
                                                  rng.integers(1, 8))
        d = distances[metric]
        p, q = rng.dirichlet(np.ones(m1)), rng.dirichlet(np.ones(m2))
        optimum = float(np.sum(ot.emd(p, q, d) * d))
        pmf = np.zeros((m1, m2))
        assert ot_pair_pmf(p, m1, q, m2, overlap, metric, 0.0, ws, pmf) >= 0
        assert_marginals(pmf, p, q)
        assert abs(np.sum(pmf * d) - optimum) <= 1e-9 * max(optimum, 1e-9 * d.max())
        # The nugget: (1 - eta) plan + eta p q^T.
        plan = np.zeros((m1, m2))
        overlap_plan_entry(p, m1, q, m2, overlap, metric, ws, plan)
        for eta in (1e-5, 0.3):
            ot_pair_pmf(p, m1, q, m2, overlap, metric, eta, ws, pmf)
            assert_marginals(pmf, p, q)
            np.testing.assert_allclose(pmf, (1 - eta) * plan + eta * np.outer(p, q),
                                       rtol=0, atol=1e-14)


@pytest.mark.parametrize("eta", [0.0, 0.3])
def test_ot_draws_follow_the_coupling(eta):
    rng = np.random.default_rng(7)
    # Enough items and blocks that components need the solver.
    overlap, m1, m2, distances = coupled_step(rng, 40, 6, 7)
    p, q = rng.dirichlet(np.ones(m1)), rng.dirichlet(np.ones(m2))
    ws = new_workspace(m1, m2)
    pmf = np.zeros((m1, m2))
    ot_pair_pmf(p, m1, q, m2, overlap, HAMMING, eta, ws, pmf)
    a, b = draws(OT, p, q, seed=11, eta=eta, overlap=overlap, metric=HAMMING, ws=ws)
    assert_frequencies(pmf, a, b)
    if eta == 0.0:
        # The drawn pairs' mean distance estimates the OT optimum.
        d = distances[HAMMING]
        optimum = float(np.sum(ot.emd(p, q, d) * d))
        values = d[a, b]
        assert abs(values.mean() - optimum) < 4 * values.std() / np.sqrt(values.size)


def test_ot_draws_keep_met_chains_together():
    """X(-n) = Y(-n) (blocks in different orders, equal conditionals) and eta = 0:
    every draw puts the item into the same block of both (eq. 6)."""
    rng = np.random.default_rng(8)
    k = 6
    perm = rng.permutation(k)
    overlap = np.zeros((k + 1, k + 1), dtype=np.int32)
    overlap[np.arange(k), perm] = rng.integers(1, 5, size=k)
    p = rng.dirichlet(np.ones(k + 1))
    q = np.empty(k + 1)
    q[perm] = p[:k]
    q[k] = p[k]
    a, b = draws(OT, p, q, seed=3, eta=0.0, overlap=overlap)
    matched = np.append(perm, k)
    assert np.all(b == matched[a])
    assert np.bincount(a, minlength=k + 1).min() > 0


def test_ot_sampler_reports_a_small_workspace():
    p = q = np.full(3, 1 / 3)
    overlap = np.ones((3, 3), dtype=np.int32)
    a, b = np.zeros(5, dtype=np.int64), np.zeros(5, dtype=np.int64)
    ws = new_workspace(3, 3, max_edges=3)  # 4 non-empty intersections
    assert draw_pairs(OT, p, 3, q, 3, overlap, HAMMING, 0.0, new_stream(0), ws, a, b) == 5
    assert np.all(a == -1) and np.all(b == -1)


# ---------------------------------------------------------------------------------
# Label-based baselines
# ---------------------------------------------------------------------------------


def label_cases():
    rng = np.random.default_rng(30)
    cases = [(np.array([0.5, 0.5]), np.array([0.5, 0.5])),  # equal: always a == b
             (np.array([1.0]), np.array([0.2, 0.3, 0.5])),
             (np.array([0.1, 0.0, 0.6, 0.3]), np.array([0.4, 0.6]))]
    for m1, m2 in ((3, 3), (5, 3), (2, 6), (7, 7)):
        cases.append((rng.dirichlet(np.ones(m1)), rng.dirichlet(np.ones(m2))))
    return cases


@pytest.mark.parametrize("eta", [0.0, 1e-5, 0.2])
def test_maximal_coupling_matches_the_reference(eta):
    for p, q in label_cases():
        m1, m2 = p.size, q.size
        pmf = np.zeros((m1, m2))
        maximal_pair_pmf(p, m1, q, m2, eta, pmf)
        np.testing.assert_allclose(pmf, maximal_reference(p, q, eta), rtol=0, atol=1e-15)
        assert_marginals(pmf, p, q)
        shared = min(m1, m2)
        same = np.trace(pmf[:shared, :shared])
        expected = ((1 - eta) * np.minimum(p[:shared], q[:shared]).sum()
                    + eta * np.dot(p[:shared], q[:shared]))
        assert same == pytest.approx(expected, abs=1e-15)


@pytest.mark.parametrize("eta", [0.0, 0.2])
def test_maximal_draws_follow_the_coupling(eta):
    for seed, (p, q) in enumerate(label_cases()):
        pmf = maximal_reference(p, q, eta)
        a, b = draws(MAXIMAL, p, q, seed=seed, eta=eta)
        assert_frequencies(pmf, a, b)
        if eta == 0.0:
            shared = min(p.size, q.size)
            s = np.minimum(p[:shared], q[:shared]).sum()
            hit = np.mean(a == b)
            assert abs(hit - s) <= 4 * np.sqrt(s * (1 - s) / DRAWS) + 1e-12


@pytest.mark.parametrize("eta", [0.0, 1e-5, 0.2])
def test_common_rng_coupling_matches_the_reference(eta):
    for p, q in label_cases():
        m1, m2 = p.size, q.size
        pmf = np.zeros((m1, m2))
        common_rng_pair_pmf(p, m1, q, m2, eta, pmf)
        np.testing.assert_allclose(pmf, common_rng_reference(p, q, eta), rtol=0, atol=1e-15)
        assert_marginals(pmf, p, q)


@pytest.mark.parametrize("eta", [0.0, 0.2])
def test_common_rng_draws_follow_the_coupling(eta):
    for seed, (p, q) in enumerate(label_cases()):
        a, b = draws(COMMON_RNG, p, q, seed=100 + seed, eta=eta)
        assert_frequencies(common_rng_reference(p, q, eta), a, b)


def test_coupling_codes():
    assert (couplings.OT, couplings.MAXIMAL, couplings.COMMON_RNG) == (0, 1, 2)
    assert (couplings.HAMMING, couplings.VI) == (0, 1)
    assert couplings.DEFAULT_ETA == 1e-5
