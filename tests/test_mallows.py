"""Generalized Mallows foundations (issue 16; Meilă & Chen 2010, Meilă & Bao 2008).

Orderings input and its errors; the APA converters; the numba kernels (V codes
against their O(n^2) definition, the GM likelihood's normalisation, incremental R_j
statistics, Sample-sigma-Stagewise's law and the exact MH correction of it); the
exact marginal (eq. 14 quadrature, Lemma 1 by summation, normalisation over data
sets, a theta-space quadrature of the same integral); the Beta-Gibbs kernels (eq. 14
by the kernels' quadrature against QUADPACK, Lemma 6's predictive rows, Lemma 5,
exact theta draws of the finite model and of eq. 12). Fixed seeds throughout; the
chi-square level only guards against a wrong algorithm, not bad luck.
"""

import itertools
import math
import os
from pathlib import Path

import numpy as np
import pytest
from scipy import integrate
from scipy.special import betaln, hyp2f1, logsumexp
from scipy.stats import beta, chisquare, kstest

import pymc_partitions as pmp
from pymc_partitions.distributions import mallows as dm
from pymc_partitions.kernels import mallows as mk
from pymc_partitions.kernels import mallows_beta as mb
from pymc_partitions.kernels.random import new_stream

P_MIN = 1e-4
DATA_DIR = os.environ.get("PMP_DATA_DIR")
needs_data = pytest.mark.skipif(
    (not DATA_DIR or not Path(DATA_DIR).is_dir()) and not os.environ.get("CI"),
    reason="no data folder: set PMP_DATA_DIR",
)


# ------------------------------------------------------------------ references
def codes_bruteforce(ordering, length, sigma):
    """V_j by definition: items not among pi(1..j-1), other than pi(j), before pi(j)."""
    n = len(sigma)
    pos = {item: k for k, item in enumerate(sigma)}
    out = []
    for j in range(length):
        earlier = set(ordering[:j].tolist())
        out.append(sum(1 for l in range(n)
                       if l not in earlier and l != ordering[j] and pos[l] < pos[ordering[j]]))
    return np.array(out, dtype=np.int64)


def all_top_orderings(n, t):
    rows = []
    for items in itertools.permutations(range(n), t):
        rows.append(list(items) + [mk.PAD] * (n - t))
    return np.array(rows, dtype=np.int64)


def random_orderings(rng, count, n, lengths=None):
    out = np.full((count, n), mk.PAD, dtype=np.int64)
    ts = rng.integers(1, n + 1, size=count) if lengths is None else np.asarray(lengths)
    for i, t in enumerate(ts):
        out[i, :t] = rng.permutation(n)[:t]
    return out, ts.astype(np.int64)


def codes(orderings, lengths, sigma):
    n = len(sigma)
    out = np.zeros(orderings.shape, dtype=np.int64)
    mk.inversion_codes_batch(orderings, lengths, np.asarray(sigma, dtype=np.int64),
                             np.zeros(n, np.int64), np.zeros(n + 1, np.int64), out)
    return out


def log_gm(orderings, lengths, sigma, theta):
    n = len(sigma)
    out = np.zeros(orderings.shape[0])
    mk.gm_log_likelihood_batch(orderings, lengths, np.asarray(sigma, dtype=np.int64),
                               np.asarray(theta, dtype=np.float64), np.zeros(n, np.int64),
                               np.zeros(n + 1, np.int64),
                               np.zeros(orderings.shape[1], np.int64),
                               np.empty(orderings.shape[1] + 1), out)
    return out


def cluster_stats(orderings, lengths, n, stages):
    counts = np.zeros((1, stages, n, n), dtype=np.int64)
    at_least = np.zeros((1, stages), dtype=np.int64)
    for row, t in zip(orderings, lengths):
        mk.add_ranking(counts, at_least, row, t, 0)
    return counts, at_least


def weights_of(orderings, lengths, n, theta):
    theta = np.asarray(theta, dtype=np.float64)
    counts, _ = cluster_stats(orderings, lengths, n, len(theta))
    w = np.zeros((n, n))
    mk.weighted_counts(counts[0], theta, w)
    return w


def exact_sigma_law(weights, perms):
    """P(sigma | theta, R) over the rows of perms (uniform prior), by enumeration."""
    logs = np.array([mk.log_sigma_target(weights, np.argsort(p).astype(np.int64))
                     for p in perms])
    p = np.exp(logs - logs.max())
    return p / p.sum()


def stagewise_law(weights, perms):
    n = perms.shape[1]
    alive, colsum = np.zeros(n, bool), np.zeros(n)
    return np.exp([mk.stagewise_log_prob(weights, p, alive, colsum) for p in perms])


def perm_index(draws, n):
    """Lexicographic index of each row (matches itertools.permutations order)."""
    lookup = {tuple(p): k for k, p in enumerate(dm.all_permutations(n))}
    return np.array([lookup[tuple(d)] for d in draws])


def chisq_p(counts, probs):
    expected = probs * counts.sum()
    return chisquare(counts, expected).pvalue


# ------------------------------------------------------------------ orderings input
def test_validate_orderings_accepts_and_returns_lengths():
    obs = np.array([[2, 0, -1, -1], [3, 1, 0, 2], [1, -1, -1, -1]])
    orderings, lengths, n = dm.validate_orderings(obs)
    assert orderings.dtype == np.int64 and n == 4
    np.testing.assert_array_equal(lengths, [2, 4, 1])
    # fewer columns than items with n_items; floats holding integers
    orderings, lengths, n = dm.validate_orderings(np.array([[4.0, 1.0], [0.0, -1.0]]), n_items=6)
    assert n == 6 and orderings.shape == (2, 2)
    np.testing.assert_array_equal(lengths, [2, 1])


@pytest.mark.parametrize("obs, n_items, match", [
    ([[0, 1, 1, -1]], None, r"row 0 ranks item 1 more than once \(positions \[1, 2\]\)"),
    ([[0, 1, 2], [0, 4, -1]], None, r"row 1, position 1 holds item 4, out of range"),
    ([[0, 1, 2], [0, -2, -1]], None, r"row 1, position 1 holds item -2, out of range"),
    ([[0, 1, 2], [0, -1, 2]], None, r"row 1 ranks item 2 at position 2 after the unranked"),
    ([[0, 1, 2], [-1, -1, -1]], None, r"row 1 ranks no item \(t = 0\)"),
    ([[0, 1, 2]], 2, r"3 columns but n_items = 2"),
    ([[0.5, 1, 2]], None, r"row 0, position 0 holds 0.5"),
    ([0, 1, 2], None, r"observed\[None, :\]"),
])
def test_validate_orderings_errors_name_the_row(obs, n_items, match):
    with pytest.raises(ValueError, match=match):
        dm.validate_orderings(np.array(obs), "GeneralizedMallows", n_items)


def test_validate_orderings_type_errors():
    with pytest.raises(TypeError, match="boolean"):
        dm.validate_orderings(np.array([[True, False]]))
    with pytest.raises(TypeError, match="dtype"):
        dm.validate_orderings(np.array([["a", "b"]]))


def test_nu_and_r_checks():
    assert dm.check_nu(2, "GM") == 2.0
    for bad in (0.0, -1.0, np.inf):
        with pytest.raises(ValueError, match="'nu' must be a positive finite number"):
            dm.check_nu(bad, "GM")
    with pytest.raises(ValueError, match="one positive number"):
        dm.check_nu([1.0, 2.0], "GM")
    with pytest.raises(TypeError, match="'nu'"):
        dm.check_nu(True, "GM")
    np.testing.assert_array_equal(dm.check_r(0.5, 3, 5, "GM"), [0.5, 0.5, 0.5])
    np.testing.assert_array_equal(dm.check_r([1, 2, 3, 4], 3, 5, "GM"), [1, 2, 3])
    with pytest.raises(ValueError, match=r"length 3 or n - 1 = 4"):
        dm.check_r([1.0, 2.0], 3, 5, "GM")
    with pytest.raises(ValueError, match=r"r\[1\] = 0.0"):
        dm.check_r([1.0, 0.0, 2.0], 3, 5, "GM")
    with pytest.raises(ValueError, match=r"r\[0\] = -1.0"):
        dm.check_r(-1.0, 3, 5, "GM")
    import pytensor.tensor as pt

    with pytest.raises(ValueError, match="not a random or symbolic variable"):
        dm.check_nu(pt.scalar("nu"), "GM")


# ------------------------------------------------------------------ APA converters
def test_converters():
    ranks = np.array([[2, 3, 1], [1, 2, 3]])
    np.testing.assert_array_equal(pmp.datasets.ranks_to_orderings(ranks), [[2, 0, 1], [0, 1, 2]])
    with pytest.raises(ValueError, match=r"row 1 \(\[1, 1, 3\]\) is not a permutation"):
        pmp.datasets.ranks_to_orderings(np.array([[1, 2, 3], [1, 1, 3]]))
    top = np.array([[3, 1, 0], [2, 0, 0]])
    np.testing.assert_array_equal(pmp.datasets.top_orderings_to_orderings(top),
                                  [[2, 0, -1], [1, -1, -1]])
    with pytest.raises(ValueError, match="row 0, position 2 holds 4"):
        pmp.datasets.top_orderings_to_orderings(np.array([[1, 2, 4]]))
    assert pmp.datasets.loaders.ORDERING_PAD == mk.PAD == dm.PAD


@needs_data
def test_apa_as_orderings():
    ranks = pmp.datasets.load_apa_rankings()
    full = pmp.datasets.load_apa_rankings(as_orderings=True)
    orderings, lengths, n = dm.validate_orderings(full.data)
    assert n == 5 and np.all(lengths == 5) and np.all(full.extra["lengths"] == 5)
    # ordering[v, r] = c  <=>  ranks[v, c] = r + 1
    rows = np.arange(orderings.shape[0])[:, None]
    np.testing.assert_array_equal(ranks.data[rows, orderings], np.arange(1, 6)[None, :].repeat(
        orderings.shape[0], 0))
    top = pmp.datasets.load_apa_top_orderings()
    conv = pmp.datasets.load_apa_top_orderings(as_orderings=True)
    orderings, lengths, n = dm.validate_orderings(conv.data)
    assert n == 5
    np.testing.assert_array_equal(lengths, top.extra["lengths"])
    np.testing.assert_array_equal(conv.data, np.where(top.data == 0, -1, top.data - 1))
    # The 5738 complete ballots of PLMIX's file are, count for count, the complete
    # rankings of the Rankcluster file: its rows are orderings (load_apa_rankings'
    # docstring gives the evidence), so the loader's orderings must match PLMIX's.
    complete = orderings[lengths == 5]
    a = np.unique(complete, axis=0, return_counts=True)
    b = np.unique(full.data, axis=0, return_counts=True)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


def test_generalized_mallows_orderings_follow_the_model():
    # Frequencies of the 12 top-2 orderings of n = 4 against GM's own probabilities.
    sigma, theta = np.array([2, 0, 3, 1]), np.array([1.0, 0.4])
    draws = pmp.datasets.generalized_mallows_orderings(sigma, theta, 2, 40_000, seed=3)
    rows = all_top_orderings(4, 2)
    pos, tree, codes = np.empty(4, np.int64), np.zeros(5, np.int64), np.empty(4, np.int64)
    log_p = np.empty(rows.shape[0])
    mk.gm_log_likelihood_batch(rows, np.full(rows.shape[0], 2), sigma, theta, pos, tree,
                               codes, np.empty(5), log_p)
    assert np.isclose(np.exp(log_p).sum(), 1.0)
    observed = np.array([np.all(draws == r[:2], axis=1).sum() for r in rows])
    assert observed.sum() == draws.shape[0]
    assert chisquare(observed, np.exp(log_p) * draws.shape[0]).pvalue > P_MIN


def test_meila_chen_rankings():
    orderings, labels, centres, theta = pmp.datasets.meila_chen_rankings(3, n_per_cluster=7,
                                                                          n_clusters=3, seed=1)
    assert orderings.shape == (21, 10) and centres.shape == (3, 20)
    np.testing.assert_array_equal(labels, np.repeat([0, 1, 2], 7))
    np.testing.assert_allclose(theta, 1.5 - 0.1 * np.arange(10))
    dm.validate_orderings(orderings, n_items=20)
    assert all(np.array_equal(np.sort(c), np.arange(20)) for c in centres)
    again = pmp.datasets.meila_chen_rankings(3, n_per_cluster=7, n_clusters=3, seed=1)
    np.testing.assert_array_equal(again[0], orderings)
    assert pmp.datasets.meila_chen_rankings(2, 2, 2, seed=0)[0].shape == (4, 19)
    with pytest.raises(ValueError, match="'dataset' must be 1, 2, 3 or 4"):
        pmp.datasets.meila_chen_rankings(5)
    with pytest.raises(ValueError, match="'sigma' must be a permutation"):
        pmp.datasets.generalized_mallows_orderings([0, 0, 1], [1.0], 1, 3)
    with pytest.raises(ValueError, match="'theta' must hold 2"):
        pmp.datasets.generalized_mallows_orderings([0, 2, 1], [1.0], 2, 3)


# ------------------------------------------------------------------ kernels
def test_log_psi():
    for m in range(6):
        for theta in (0.0, 1e-12, 1e-6, 0.3, 2.0, 40.0):
            direct = math.log(sum(math.exp(-k * theta) for k in range(m + 1)))
            assert math.isclose(mk.log_psi(m, theta), direct, rel_tol=1e-10, abs_tol=1e-13)


def test_inversion_codes_match_definition():
    rng = np.random.default_rng(1)
    for n in (2, 3, 5, 8, 13):
        orderings, lengths = random_orderings(rng, 40, n)
        for _ in range(5):
            sigma = rng.permutation(n)
            got = codes(orderings, lengths, sigma)
            for row, t, g in zip(orderings, lengths, got):
                expect = codes_bruteforce(row, t, sigma)
                np.testing.assert_array_equal(g[:t], expect)
                assert np.all(expect <= n - 1 - np.arange(t))  # 0 <= V_j <= n - j


@pytest.mark.parametrize("n", [3, 4, 5])
def test_gm_likelihood_is_normalised(n):
    """Sum over all top-t orderings of GM(pi | sigma, theta) = 1, for every t."""
    rng = np.random.default_rng(n)
    sigma = rng.permutation(n)
    theta = np.concatenate([rng.uniform(0.0, 2.0, n - 2), [0.0]])  # one theta_j = 0
    rng.shuffle(theta)
    for t in range(1, n + 1):
        orderings = all_top_orderings(n, t)
        lengths = np.full(orderings.shape[0], t, dtype=np.int64)
        total = np.exp(log_gm(orderings, lengths, sigma, theta)).sum()
        assert math.isclose(total, 1.0, rel_tol=1e-12), (t, total)


def test_gm_likelihood_matches_formula():
    rng = np.random.default_rng(7)
    n = 6
    orderings, lengths = random_orderings(rng, 30, n)
    theta = rng.uniform(0.0, 3.0, n - 1)
    sigma = rng.permutation(n)
    got = log_gm(orderings, lengths, sigma, theta)
    for row, t, g in zip(orderings, lengths, got):
        v = codes_bruteforce(row, t, sigma)[: min(t, n - 1)]
        th = theta[: len(v)]
        psi = [sum(math.exp(-k * th[j]) for k in range(n - j)) for j in range(len(v))]
        assert math.isclose(g, -np.dot(th, v) - np.sum(np.log(psi)), rel_tol=1e-12)
        # the batch (and the reassignment step) tabulate the normalisers per cluster;
        # the one-ranking function computes them: both the same value
        pos = np.argsort(sigma).astype(np.int64)
        one = mk.gm_log_likelihood(row, t, pos, theta, np.zeros(n + 1, np.int64),
                                   np.zeros(n, np.int64))
        assert math.isclose(one, g, rel_tol=1e-12)


def test_statistics_incremental_and_stage_sums():
    rng = np.random.default_rng(3)
    n, slots, stages = 6, 3, 5
    orderings, lengths = random_orderings(rng, 25, n)
    counts = np.zeros((slots, stages, n, n), dtype=np.int64)
    at_least = np.zeros((slots, stages), dtype=np.int64)
    labels = np.full(len(lengths), -1)
    for _ in range(200):  # random adds, removes and moves
        i = rng.integers(len(lengths))
        if labels[i] >= 0:
            mk.remove_ranking(counts, at_least, orderings[i], lengths[i], labels[i])
            labels[i] = -1
        if rng.random() < 0.8:
            labels[i] = rng.integers(slots)
            mk.add_ranking(counts, at_least, orderings[i], lengths[i], labels[i])
    assert (labels >= 0).any()
    for k in range(slots):
        members = np.flatnonzero(labels == k)
        fresh, fresh_at_least = cluster_stats(orderings[members], lengths[members], n, stages)
        np.testing.assert_array_equal(counts[k], fresh[0])
        by_definition = np.zeros((stages, n, n), dtype=np.int64)  # R_j as the paper defines it
        for i in members:
            for j in range(min(lengths[i], n - 1, stages)):
                ranked = set(orderings[i, : j + 1].tolist())
                for b in range(n):
                    by_definition[j, orderings[i, j], b] += b not in ranked
        np.testing.assert_array_equal(counts[k], by_definition)
        np.testing.assert_array_equal(at_least[k], fresh_at_least[0])
        np.testing.assert_array_equal(
            at_least[k], [(np.minimum(lengths[members], n - 1) > j).sum() for j in range(stages)])
        for _ in range(3):
            sigma = rng.permutation(n)
            s = np.zeros(stages, dtype=np.int64)
            mk.stage_statistics(counts[k], np.argsort(sigma).astype(np.int64), s)
            expect = np.zeros(stages, dtype=np.int64)
            for i in members:
                v = codes_bruteforce(orderings[i], lengths[i], sigma)[:stages]
                expect[: len(v)] += v
            np.testing.assert_array_equal(s, expect)


# ------------------------------------------------------------------ sampling sigma
def _draws(weights, count, seed):
    n = weights.shape[0]
    out = np.zeros((count, n), dtype=np.int64)
    log_q = np.zeros(count)
    mk.stagewise_draws(weights, new_stream(seed), out, np.zeros(n, bool), np.zeros(n), log_q)
    return out, log_q


def test_stagewise_draws_follow_their_stated_law():
    """Figure 2's draws have the law stagewise_log_prob states (n = 4, 5; mixed t)."""
    rng = np.random.default_rng(11)
    for n, seed in ((4, 1), (5, 2)):
        orderings, lengths = random_orderings(rng, 5, n, lengths=[n, 2, 3, 1, n])
        theta = np.array([1.2, 0.3, 0.8, 0.5][: n - 1])
        w = weights_of(orderings, lengths, n, theta)
        perms = dm.all_permutations(n)
        q = stagewise_law(w, perms)
        assert math.isclose(q.sum(), 1.0, rel_tol=1e-12)
        draws, log_q = _draws(w, 40000, seed)
        idx = perm_index(draws, n)
        np.testing.assert_allclose(log_q, np.log(q[idx]), rtol=1e-10)
        assert chisq_p(np.bincount(idx, minlength=len(perms)), q) > P_MIN


def test_stagewise_is_exact_for_one_ranking_with_equal_theta():
    """The case where Figure 2 is exact: one complete ranking, all theta_j equal (the
    Mallows model); also once W = 0 (uniform)."""
    n = 5
    perms = dm.all_permutations(n)
    w = weights_of(np.array([[3, 0, 4, 1, 2]]), np.array([5]), n, np.full(n - 1, 0.7))
    np.testing.assert_allclose(stagewise_law(w, perms), exact_sigma_law(w, perms), rtol=1e-12)
    zero = np.zeros((n, n))
    np.testing.assert_allclose(stagewise_law(zero, perms), 1 / 120, rtol=1e-12)


def test_stagewise_is_not_exact_in_general():
    """Counter-example to the paper's Lemma 2 (module docstring of kernels.mallows):
    one complete ranking (0, 1, 2), theta = (1, 0.2)."""
    perms = dm.all_permutations(3)
    w = weights_of(np.array([[0, 1, 2]]), np.array([3]), 3, [1.0, 0.2])
    exact, q = exact_sigma_law(w, perms), stagewise_law(w, perms)
    assert abs(exact[0] - 0.3658) < 1e-4 and abs(q[0] - 0.3294) < 1e-4


def sigma_problem(n, seed):
    """The sigma | theta test problem: 6 rankings of n items (full, top-2, top-1),
    theta differing by stage. Returns (rng, W, all permutations, exact law)."""
    rng = np.random.default_rng(seed)
    orderings, lengths = random_orderings(rng, 6, n, lengths=[n, 2, n, 2, 1, n])
    theta = np.array([2.0, 0.2, 1.0, 0.1][: n - 1])
    w = weights_of(orderings, lengths, n, theta)
    perms = dm.all_permutations(n)
    return rng, w, perms, exact_sigma_law(w, perms)


@pytest.mark.parametrize("n, seed", [(4, 5), (5, 6)])
def test_sigma_mh_leaves_the_exact_law_invariant(n, seed):
    """Start M independent chains at exact draws of P(sigma | theta, R), apply one MH
    update each: the results are exact draws iff the update is invariant (chi-square
    against enumeration). Then one long chain from a fixed start: its TV distance to
    the exact law is small (ergodicity)."""
    rng, w, perms, exact = sigma_problem(n, seed)
    tv_stagewise = 0.5 * np.abs(stagewise_law(w, perms) - exact).sum()
    assert tv_stagewise > 0.02  # the proposal alone is visibly wrong here
    stream = new_stream(seed)
    starts = rng.choice(len(perms), size=20000, p=exact)
    z = np.zeros(n, np.int64)
    scratch = (np.zeros(n, np.int64), z.copy(), z.copy(), np.zeros(n, bool), np.zeros(n))
    out = np.zeros((1, n), dtype=np.int64)
    ends = np.empty(len(starts), dtype=np.int64)
    accepted = 0
    for m, s in enumerate(starts):
        sigma = perms[s].copy()
        accepted += mk.sigma_stagewise_mh_chain(w, sigma, stream, out, *scratch)
        ends[m] = _lex_index(out[0])
    assert 0.3 < accepted / len(starts) < 1.0
    assert chisq_p(np.bincount(ends, minlength=len(perms)), exact) > P_MIN
    long = np.zeros((40000, n), dtype=np.int64)
    mk.sigma_stagewise_mh_chain(w, np.arange(n, dtype=np.int64), stream, long, *scratch)
    freq = np.bincount(perm_index(long, n), minlength=len(perms)) / len(long)
    assert 0.5 * np.abs(freq - exact).sum() < 0.03


@pytest.mark.parametrize("n, seed", [(4, 7), (5, 8)])
def test_sigma_insertion_sweep_leaves_the_exact_law_invariant(n, seed):
    """As above for the insertion Gibbs sweep (and for sigma_update, the MH step
    followed by the sweep): exact starts stay exact; a long chain of sweeps alone
    reaches the exact law."""
    rng, w, perms, exact = sigma_problem(n, seed)
    stream = new_stream(seed)
    starts = rng.choice(len(perms), size=20000, p=exact)
    pos, rest, log_w = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n)
    out = np.zeros((1, n), dtype=np.int64)
    ends = np.empty(len(starts), dtype=np.int64)
    for m, s in enumerate(starts):
        mk.sigma_insertion_chain(w, perms[s].copy(), stream, out, pos, rest, log_w)
        ends[m] = _lex_index(out[0])
    assert chisq_p(np.bincount(ends, minlength=len(perms)), exact) > P_MIN
    long = np.zeros((40000, n), dtype=np.int64)
    mk.sigma_insertion_chain(w, np.arange(n, dtype=np.int64), stream, long, pos, rest, log_w)
    freq = np.bincount(perm_index(long, n), minlength=len(perms)) / len(long)
    assert 0.5 * np.abs(freq - exact).sum() < 0.03
    # a wrong conditional (one sign flipped) is caught by the same chi-square test
    flipped = w.copy()
    flipped[0, 1], flipped[1, 0] = w[1, 0], w[0, 1]
    for m, s in enumerate(starts):
        mk.sigma_insertion_chain(flipped, perms[s].copy(), stream, out, pos, rest, log_w)
        ends[m] = _lex_index(out[0])
    assert chisq_p(np.bincount(ends, minlength=len(perms)), exact) < P_MIN


def _lex_index(p):
    """Lexicographic rank of a permutation (the row of all_permutations)."""
    n, idx, rest = len(p), 0, list(range(len(p)))
    for k, item in enumerate(p):
        r = rest.index(item)
        idx += r * math.factorial(n - 1 - k)
        rest.pop(r)
    return idx


# ------------------------------------------------------------------ eq. 14 and the marginal
def test_beta_tilde():
    # m = 1: int_0^1 u^(a-1) (1+u)^-(b-1) du = 2F1(b-1, a; a+1; -1) / a
    for a, b in ((0.3, 1.5), (2.0, 4.0), (7.5, 2.2)):
        closed = hyp2f1(b - 1, a, a + 1, -1.0) / a
        assert math.isclose(dm.log_beta_tilde(a, b, 1), math.log(closed), rel_tol=1e-10)
    assert math.isclose(dm.log_beta_tilde(2.5, 1.0, 4), -math.log(2.5), rel_tol=1e-12)
    assert math.isclose(dm.log_beta_tilde(0.7, 3.0, 0), -math.log(0.7), rel_tol=1e-12)
    # n -> infinity: the Beta function (the infinite GM, Lemma 4)
    assert abs(dm.log_beta_tilde(2.3, 3.5, 2000) - betaln(2.3, 3.5)) < 1e-9
    # Lemma 5: sum_{s=0}^{m} B~(s + a, N + 1, m) = B~(a, N, m)
    for a, big_n, m in ((0.4, 2.0, 3), (1.7, 5.0, 6)):
        lhs = sum(math.exp(dm.log_beta_tilde(s + a, big_n + 1, m)) for s in range(m + 1))
        assert math.isclose(lhs, math.exp(dm.log_beta_tilde(a, big_n, m)), rel_tol=1e-9)


@pytest.mark.parametrize("n", [3, 4, 5])
def test_lemma1_by_summation(n):
    """One top-t ranking: the exact marginal (sum over sigma, quadrature over theta)
    equals (n - t)!/n! for any nu, r (Lemma 1)."""
    rng = np.random.default_rng(n)
    for t in range(1, n + 1):
        row = np.full((1, n), mk.PAD)
        row[0, :t] = rng.permutation(n)[:t]
        nu, r = rng.uniform(0.3, 3.0), rng.uniform(0.2, 2.0, n - 1)
        assert math.isclose(dm.exact_log_marginal(row, nu, r),
                            dm.lemma1_log_marginal(t, n), rel_tol=1e-9, abs_tol=1e-10)


@pytest.mark.parametrize("lengths", [(3, 3), (2, 3), (1, 2, 3)])
def test_exact_marginal_sums_to_one_over_data_sets(lengths):
    """For fixed lengths, the marginal summed over every data set of top-t orderings of
    n = 3 items (mixed t) is 1."""
    n, nu, r = 3, 0.8, [1.3, 0.6]
    total = 0.0
    for rows in itertools.product(*[all_top_orderings(n, t) for t in lengths]):
        total += math.exp(dm.exact_log_marginal(np.array(rows), nu, r))
    assert math.isclose(total, 1.0, rel_tol=1e-9)


def test_exact_marginal_sums_to_one_n4_full_and_top2():
    n, nu, r = 4, 1.4, [0.5, 1.0, 2.0]
    total = 0.0
    for a in all_top_orderings(n, 2):
        for b in all_top_orderings(n, 4):
            total += math.exp(dm.exact_log_marginal(np.array([a, b]), nu, r))
    assert math.isclose(total, 1.0, rel_tol=1e-9)


def test_exact_marginal_against_theta_space_quadrature():
    """The same marginal with each theta_j integrated in theta space against the
    GM likelihood of the numba kernel and the prior normalised numerically."""
    n, nu, r = 4, 1.5, np.array([0.7, 1.1, 0.4])
    obs = np.array([[2, 0, 1, 3], [2, 1, -1, -1], [0, -1, -1, -1]])
    orderings, lengths, _ = dm.validate_orderings(obs)
    perms = dm.all_permutations(n)

    def log_prior(theta, j):  # unnormalised log P0(theta_j)
        return -nu * (theta * r[j] + mk.log_psi(n - 1 - j, theta))

    norms = [integrate.quad(lambda x, j=j: math.exp(log_prior(x, j)), 0, np.inf,
                            epsabs=0, epsrel=1e-11)[0] for j in range(3)]
    total = 0.0
    for sigma in perms:
        v = codes(orderings, lengths, sigma)
        value = 1.0
        for j in range(3):
            used = np.minimum(lengths, n - 1) > j

            def f(x, j=j, used=used, v=v):
                return math.exp(log_prior(x, j) - x * v[used, j].sum()
                                - used.sum() * mk.log_psi(n - 1 - j, x))

            value *= integrate.quad(f, 0, np.inf, epsabs=0, epsrel=1e-11)[0] / norms[j]
        total += value / len(perms)
    assert math.isclose(dm.exact_log_marginal(obs, nu, r), math.log(total), rel_tol=1e-8)


def test_exact_marginal_partition_and_limits():
    obs = np.array([[2, 0, 1, 3], [2, 1, -1, -1], [0, -1, -1, -1]])
    both = dm.exact_log_marginal_partition(obs, [0, 0, 1], 1.0, 0.5)
    assert math.isclose(both, dm.exact_log_marginal(obs[:2], 1.0, 0.5)
                        + dm.lemma1_log_marginal(1, 4), rel_tol=1e-10)
    big = np.arange(8)[None, :]
    with pytest.raises(ValueError, match=r"n <= 7 items only; got n = 8"):
        dm.exact_log_marginal(big, 1.0, 1.0)
    with pytest.raises(ValueError, match="'nu' must be a positive"):
        dm.exact_log_marginal(obs, 0.0, 1.0)
    with pytest.raises(ValueError, match="'r' must be a scalar or a vector of length 3"):
        dm.exact_log_marginal(obs, 1.0, [1.0, 1.0])


# ------------------------------------------------------------------ Beta-Gibbs kernels
GL = np.polynomial.legendre.leggauss(16)


def _quad_scratch():
    return np.empty(mb.MAX_NODES), np.empty(mb.MAX_NODES)


def quadpack_log_beta_tilde(a, b, m):
    """log B~(a, b, m) by QUADPACK (QAWS with the weight u^(a-1), u = e^-theta): an
    independent reference for moderate a and b (the library's function was this until
    it lost the peak at large a and b)."""
    if m == 0:
        return -math.log(a)
    powers = np.arange(m + 1, dtype=np.float64)
    value, _ = integrate.quad(lambda u: np.sum(u**powers) ** (1.0 - b), 0.0, 1.0,
                              weight="alg", wvar=(a - 1.0, 0.0), epsabs=0.0, epsrel=1e-12,
                              limit=200)
    return math.log(value)


def _trapezoid_log_beta_tilde(a, b, m, upper=20.0, points=2_000_001):
    """log B~ by the trapezoid rule on a dense theta grid (a reference where QUADPACK's
    algebraic-weight rule loses accuracy: large a and b)."""
    th = np.linspace(1e-12, upper, points)
    log_f = -a * th - (b - 1) * (np.log(-np.expm1(-(m + 1) * th)) - np.log(-np.expm1(-th)))
    top = log_f.max()
    return top + math.log(np.trapezoid(np.exp(log_f - top), th))


def test_beta_tilde_quadrature_matches_quadpack():
    """The kernels' eq. 14 (adapted Gauss-Legendre) against QUADPACK (moderate a, b)
    and a dense trapezoid (large b, where QUADPACK's u^(a-1)-weighted rule warns of
    roundoff, and for a = 150, b = 200, m = 30 is off by 9.4 in the log: the
    kernels' quadrature is the better one there)."""
    cases = [(0.6, 2.0, 3), (2.5, 1.5, 2), (0.3, 4.0, 1), (7.5, 2.2, 10), (0.6, 30.0, 19),
             (40.0, 30.0, 19), (3.0, 200.0, 19), (0.05, 1.1, 99), (500.0, 50.0, 99),
             (2.3, 3.5, 2000), (1.7, 1.0, 5)]
    a, b, m = (np.array(col) for col in zip(*cases))
    out = np.empty(len(cases))
    mb.beta_tilde_batch(a.astype(float), b.astype(float), m.astype(np.int64), *GL,
                        *_quad_scratch(), out)
    ref = np.array([quadpack_log_beta_tilde(*case) for case in cases])
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12)
    # the library's eq. 14 (the model's log density uses it) is this quadrature
    np.testing.assert_allclose([dm.log_beta_tilde(*case) for case in cases], out,
                               rtol=1e-14, atol=1e-14)
    hard = np.empty(2)
    mb.beta_tilde_batch(np.array([150.0, 12.0]), np.array([200.0, 600.0]), np.array([30, 8]),
                        *GL, *_quad_scratch(), hard)
    assert abs(hard[0] - _trapezoid_log_beta_tilde(150.0, 200.0, 30)) < 1e-9
    assert abs(hard[1] - _trapezoid_log_beta_tilde(12.0, 600.0, 8)) < 1e-9
    # sizes where QUADPACK lost the peak (-230.90) or returned 0 (log error)
    assert abs(dm.log_beta_tilde(150.0, 200.0, 30) - _trapezoid_log_beta_tilde(150.0, 200.0, 30)
               ) < 1e-9
    assert abs(dm.log_beta_tilde(300.0, 1000.0, 6) - _trapezoid_log_beta_tilde(300.0, 1000.0, 6)
               ) < 1e-9


@pytest.mark.parametrize("a, c, m", [(0.6, 1.0, 3), (5.6, 3.0, 3), (40.6, 20.0, 19),
                                     (300.0, 100.0, 19), (0.3, 1.0, 50), (2.0, 7.0, 1)])
def test_predictive_rows_are_lemma6_ratios(a, c, m):
    """A row of the predictive table is log B~(a + s, c + 2, m) - log B~(a, c + 1, m),
    s = 0..m (Lemma 6 / eq. 17; QUADPACK reference), and sums to one (Lemma 5). The
    infinite form is the paper's Beta-function ratio (Lemma 4)."""
    row = np.empty(m + 1)
    mb.predictive_row(a, c, m, True, *GL, *_quad_scratch(), row)
    ref = np.array([quadpack_log_beta_tilde(a + s, c + 2.0, m)
                    - quadpack_log_beta_tilde(a, c + 1.0, m)
                    for s in range(m + 1)])
    np.testing.assert_allclose(row, ref, rtol=0, atol=1e-10)
    assert math.isclose(np.exp(row).sum(), 1.0, rel_tol=1e-13)
    mb.predictive_row(a, c, m, False, *GL, *_quad_scratch(), row)
    s = np.arange(m + 1)
    np.testing.assert_allclose(row, betaln(a + s, c + 2.0) - betaln(a, c + 1.0), atol=1e-12)
    assert np.exp(row).sum() < 1.0  # the infinite-n approximation loses the tail s > m


@pytest.mark.parametrize("a, big_n, m", [(0.4, 2.0, 3), (1.7, 5.0, 6), (6.3, 2.5, 1),
                                         (0.9, 12.0, 9)])
def test_lemma5_identity(a, big_n, m):
    """Lemma 5 (eq. 16): sum_{s=0}^{m} B~(s + a, N + 1, m) = B~(a, N, m), by QUADPACK
    and by the kernels' quadrature."""
    lhs = logsumexp([quadpack_log_beta_tilde(s + a, big_n + 1, m) for s in range(m + 1)])
    assert math.isclose(lhs, quadpack_log_beta_tilde(a, big_n, m), rel_tol=1e-10,
                        abs_tol=1e-11)
    aa = np.append(a + np.arange(m + 1.0), a)
    bb = np.append(np.full(m + 1, big_n + 1.0), big_n)
    out = np.empty(m + 2)
    mb.beta_tilde_batch(aa, bb, np.full(m + 2, m, dtype=np.int64), *GL, *_quad_scratch(), out)
    assert math.isclose(logsumexp(out[:-1]), out[-1], rel_tol=1e-12, abs_tol=1e-12)


@pytest.mark.parametrize("a, c, m", [(0.6, 2.0, 3), (0.3, 4.0, 1), (3.0, 0.5, 19),
                                     (0.6, 500.0, 19), (40.0, 500.0, 19), (10.0, 1.0, 3)])
def test_theta_log_concave_draw_finite(a, c, m):
    """Exact draws of theta with density exp(-a theta) psi_m(theta)^-c: the CDF at the
    sample's deciles against quadrature (20000 draws; 5 standard errors)."""
    mode = mb.theta_mode(a, c, m)
    top = mb.log_theta_density_any(mode, a, c, m)

    def density(th):
        return math.exp(mb.log_theta_density_any(th, a, c, m) - top)

    def mass(lo, hi):
        return integrate.quad(density, lo, hi, points=[mode] if lo < mode < hi else None,
                              limit=500, epsabs=0, epsrel=1e-10)[0]

    draws = np.empty(20000)
    mb.theta_draws(a, c, m, new_stream(17), draws)
    assert np.all(draws >= 0)
    qs = np.quantile(draws, [0.1, 0.3, 0.5, 0.7, 0.9])
    norm = mass(0, mode) + mass(mode, np.inf)
    cdf = np.array([mass(0, q) for q in qs]) / norm
    target = np.array([0.1, 0.3, 0.5, 0.7, 0.9])
    assert np.all(np.abs(cdf - target) < 5 * np.sqrt(target * (1 - target) / draws.size))


@pytest.mark.parametrize("a, c", [(0.6, 2.0), (5.0, 30.0), (0.3, 0.5), (80.0, 3.0)])
def test_theta_draw_infinite_is_eq12(a, c):
    """m < 0 (the infinite GM): e^{-theta} ~ Beta(a, c + 1), eq. 12 (Kolmogorov-Smirnov)."""
    draws = np.empty(20000)
    mb.theta_draws(a, c, -1, new_stream(19), draws)
    assert kstest(np.exp(-draws), beta(a, c + 1.0).cdf).pvalue > P_MIN
