"""Pitman-Yor, fixed number of blocks and MFM priors: kernel against model, block
moves, exact posteriors under pmp.Gibbs, NUTS on a prior hyperparameter, errors."""

import functools
import zlib

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from helpers import REFERENCE_MODE, assert_exact, binary_data, random_block_move, sample
from scipy.stats import poisson

import pymc_partitions as pmp
from pymc_partitions.kernels import assign_labels, new_state, summarise, sweep_block
from pymc_partitions.kernels.components import beta_bernoulli
from pymc_partitions.kernels.priors import (
    crp,
    fixed_blocks,
    log_prior,
    log_prior_block,
    log_prior_pred,
    mfm,
    pitman_yor,
)

RTOL = 1e-8


def close(a, b):
    """Relative error <= RTOL (absolute 1e-12 where the reference is ~0); -inf matches -inf."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    inf_a, inf_b = np.isneginf(a), np.isneginf(b)
    if not np.array_equal(inf_a, inf_b):
        return False
    a, b = a[~inf_a], b[~inf_b]
    return bool(np.all(np.abs(a - b) <= np.maximum(RTOL * np.abs(b), 1e-12)))


# Each case: (label, distribution factory (n -> dist), kernel params factory (n -> params)).
POISSON_PK = lambda k: poisson(1.0).logpmf(np.asarray(k) - 1)  # noqa: E731  K - 1 ~ Poisson(1)
ARRAY_PK = np.array([0.1, 0.2, 0.3, 0.25, 0.15])
CASES = {
    "crp": (lambda n: pmp.CRP.dist(alpha=1.3, n=n), lambda n: crp.make_params(1.3, n)),
    "py": (
        lambda n: pmp.PitmanYor.dist(alpha=0.7, d=0.35, n=n),
        lambda n: pitman_yor.make_params(0.7, 0.35, n),
    ),
    "py_negative_alpha": (
        lambda n: pmp.PitmanYor.dist(alpha=-0.3, d=0.6, n=n),
        lambda n: pitman_yor.make_params(-0.3, 0.6, n),
    ),
    "py_d0": (
        lambda n: pmp.PitmanYor.dist(alpha=2.0, d=0.0, n=n),
        lambda n: pitman_yor.make_params(2.0, 0.0, n),
    ),
    "fixed_k2": (lambda n: pmp.FixedBlocks.dist(n=n, k=2), lambda n: fixed_blocks.make_params(2, n)),
    "fixed_k3": (lambda n: pmp.FixedBlocks.dist(n=n, k=3), lambda n: fixed_blocks.make_params(3, n)),
    "mfm_default": (
        lambda n: pmp.MFM.dist(n=n, gamma=1.0),
        lambda n: mfm.make_params(1.0, pmp.distributions.priors.resolve_k_prior(None, ""), n),
    ),
    "mfm_poisson": (
        lambda n: pmp.MFM.dist(n=n, gamma=0.6, k_prior=POISSON_PK),
        lambda n: mfm.make_params(0.6, pmp.distributions.priors.resolve_k_prior(POISSON_PK, ""), n),
    ),
    "mfm_array": (
        lambda n: pmp.MFM.dist(n=n, gamma=2.5, k_prior=ARRAY_PK),
        lambda n: mfm.make_params(2.5, np.log(ARRAY_PK), n),
    ),
}


N = 7  # items in the kernel-against-model tests


@functools.lru_cache(maxsize=None)
def prior_logp(case):
    """Compiled PyTensor logp of the case's prior over N items (compiled once)."""
    return logp_fn(CASES[case][0](N))


def logp_fn(dist):
    value = pt.lvector("z")
    return pytensor.function([value], pm.logp(dist, value), mode=REFERENCE_MODE)


@functools.lru_cache(maxsize=None)
def likelihood_logp(d):
    """Compiled Beta-Bernoulli(0.7, 1.2) log likelihood as a function of (z, y)."""
    z, y = pt.lvector("z"), pt.dmatrix("y")
    rv = pmp.CollapsedBetaBernoulli.dist(z, 0.7, 1.2, n_dims=d)
    return pytensor.function([z, y], pm.logp(rv, y).sum(), mode=REFERENCE_MODE)


def random_labels(rng, n, case):
    if case.startswith("fixed"):
        k = int(case[-1])
        while True:
            labels = pmp.canonicalize(rng.integers(0, k, n))
            if labels.max() + 1 == k:
                return labels
    return pmp.canonicalize(rng.integers(0, rng.integers(1, 6), n))


def sizes_and_blocks(labels, skip):
    """Block sizes of ``labels`` without the items in ``skip``, and the number of blocks."""
    rest = np.delete(labels, skip)
    sizes = np.bincount(rest, minlength=labels.max() + 1)
    return sizes, int(np.sum(sizes > 0))


@pytest.mark.parametrize("case", sorted(CASES))
def test_log_prior_and_gibbs_weights_equal_model(case):
    rng = np.random.default_rng(zlib.crc32(case.encode()))
    n = N
    f = prior_logp(case)
    params = CASES[case][1](n)
    for _ in range(6):
        labels = random_labels(rng, n, case)
        sizes = np.bincount(labels).astype(np.int64)
        active = np.arange(sizes.shape[0], dtype=np.int64)
        total = log_prior(params, np.pad(sizes, (0, n - sizes.shape[0])), active, active.shape[0], n)
        assert close(total, f(labels)), (case, total, f(labels))
        # Gibbs weights of item i: each existing block of the others and a new one.
        i = int(rng.integers(n))
        others, nb = sizes_and_blocks(labels, [i])
        cands = [k for k in range(others.shape[0]) if others[k] > 0] + [None]
        kern, ref = [], []
        for k in cands:
            z = labels.copy()
            z[i] = k if k is not None else n  # a label no other item has
            ref.append(f(pmp.canonicalize(z)))
            kern.append(log_prior_pred(params, int(others[k]) if k is not None else 0, nb))
        kern, ref = np.array(kern), np.array(ref)
        assert np.array_equal(np.isneginf(kern), np.isneginf(ref)), (case, kern, ref)
        r = int(np.flatnonzero(np.isfinite(ref))[0])
        assert close(kern - kern[r], ref - ref[r]), (case, kern - kern[r], ref - ref[r])


@pytest.mark.parametrize("case", sorted(CASES))
def test_log_prior_block_equals_model(case):
    """A set C joining each block (or a new one) together: log_prior_block
    differences equal the model's."""
    rng = np.random.default_rng(zlib.crc32(case.encode()) + 1)
    n = N
    f = prior_logp(case)
    params = CASES[case][1](n)
    for _ in range(6):
        labels = random_labels(rng, n, case)
        c = int(rng.integers(1, 4))
        items = rng.choice(n, size=c, replace=False)
        others, nb = sizes_and_blocks(labels, items)
        cands = [k for k in range(others.shape[0]) if others[k] > 0] + [None]
        kern, ref = [], []
        for k in cands:
            z = labels.copy()
            z[items] = k if k is not None else n
            ref.append(f(pmp.canonicalize(z)))
            kern.append(log_prior_block(params, int(others[k]) if k is not None else 0, c, nb))
        kern, ref = np.array(kern), np.array(ref)
        if not np.any(np.isfinite(ref)):
            assert np.all(np.isneginf(kern))
            continue
        r = int(np.flatnonzero(np.isfinite(ref))[0])
        assert np.array_equal(np.isneginf(kern), np.isneginf(ref)), (case, kern, ref)
        assert close(kern - kern[r], ref - ref[r]), (case, kern - kern[r], ref - ref[r])


@pytest.mark.parametrize("case", sorted(CASES))
def test_forced_sweep_block_equals_model(case):
    """sweep_{C,I} (Herlau et al. eqs. 5-6) with each prior and a Beta-Bernoulli
    likelihood: each forced log probability is the softmax of the model's log joint
    over the candidates; candidates that break the prior's constraint get -inf."""
    rng = np.random.default_rng(zlib.crc32(case.encode()) + 2)
    n, d = N, 3
    x = (rng.random((n, d)) < 0.5).astype(float)
    f_prior, f_lik = prior_logp(case), likelihood_logp(d)

    def joint(labels):
        return float(f_prior(labels)) + float(f_lik(labels, x))

    bb = beta_bernoulli.make_params(np.full(d, 0.7), np.full(d, 1.2))
    prior_params = CASES[case][1](n)
    n_checked = 0
    for _ in range(5):
        labels = random_labels(rng, n, case)
        items, candidates, ref, ref_logp = random_block_move(rng, labels, joint)
        for forced in range(len(candidates)):
            stats = beta_bernoulli.alloc_stats(n, d, bb)
            data = beta_bernoulli.make_data(x)
            state = new_state(n)
            assign_labels(state, bb, stats, data, labels)
            chosen, log_p, _ = sweep_block.sweep_block_entry(
                state, prior_params, bb, stats, data, items, candidates, forced, 0.5,
                np.empty(len(candidates)),
            )
            assert chosen == forced
            assert close(log_p, ref_logp[forced]), (case, forced, log_p, ref_logp[forced])
            canon = np.empty(n, dtype=np.int64)
            _, _, lj = summarise(state, prior_params, bb, stats, canon, np.empty(n, dtype=np.int64))
            assert close(lj, ref[forced])
            n_checked += 1
    assert n_checked > 0


def test_fixed_blocks_sweep_block_rejects_block_count_changes():
    """Moving a whole block into another (K - 1) or part of a block into a new one
    (K + 1) has probability 0 under FixedBlocks; the probabilities of the
    remaining candidates still sum to 1."""
    n, k = 7, 3
    labels = np.array([0, 0, 1, 1, 1, 2, 2])
    x = (np.random.default_rng(4).random((n, 2)) < 0.5).astype(float)
    bb = beta_bernoulli.make_params(np.ones(2), np.ones(2))
    params = fixed_blocks.make_params(k, n)
    candidates = np.array([0, 1, 2, -1], dtype=np.int64)
    for items, forbidden in [([0, 1], {1, 2}), ([2], {3})]:
        items = np.array(items, dtype=np.int64)
        log_ps = []
        for forced in range(4):
            stats, data, state = beta_bernoulli.alloc_stats(n, 2, bb), beta_bernoulli.make_data(x), new_state(n)
            assign_labels(state, bb, stats, data, labels)
            _, log_p, _ = sweep_block.sweep_block_entry(
                state, params, bb, stats, data, items, candidates, forced, 0.5, np.empty(4))
            log_ps.append(log_p)
        log_ps = np.array(log_ps)
        for a in range(4):
            assert np.isneginf(log_ps[a]) == (a in forbidden), (items, log_ps)
        assert np.isclose(np.exp(log_ps).sum(), 1.0, atol=1e-12)


@pytest.mark.parametrize("case", ["py", "py_negative_alpha", "fixed_k2", "fixed_k3", "mfm_default",
                                  "mfm_poisson", "mfm_array"])
def test_prior_is_normalised(case):
    f = prior_logp(case)
    logps = np.array([f(p) for p in pmp.set_partitions(N)])
    assert abs(np.logaddexp.reduce(logps)) < 1e-10, np.logaddexp.reduce(logps)


def test_mfm_log_vn_recursion():
    """V_n(t) = (n + gamma t) V_{n+1}(t) + gamma V_{n+1}(t + 1) (Miller & Harrison
    2018), an identity the tabulation does not use."""
    log_pk = pmp.distributions.priors.resolve_k_prior(POISSON_PK, "")
    for gamma in (0.3, 1.0, 2.7):
        n = 12
        a, b = mfm.log_vn(gamma, log_pk, n), mfm.log_vn(gamma, log_pk, n + 1)
        for t in range(1, n + 1):
            rhs = np.logaddexp(np.log(n + gamma * t) + b[t], np.log(gamma) + b[t + 1])
            assert abs(a[t] - rhs) <= 1e-10 * abs(a[t]) + 1e-12, (gamma, t, a[t], rhs)


def test_mfm_logp_gradient_in_gamma_matches_finite_difference():
    with pm.Model() as model:
        gamma = pm.Gamma("gamma", 2.0, 2.0)
        pmp.MFM("z", n=7, gamma=gamma)
    point = model.initial_point()
    point["z"] = np.array([0, 0, 1, 2, 1, 0, 3])
    logp, dlogp = model.compile_logp(vars=[model["z"]]), model.compile_dlogp(vars=[gamma])
    # d logp / d log(gamma) of the z term; finite difference on the log scale.
    h = 1e-5
    up, down = dict(point), dict(point)
    up["gamma_log__"] = point["gamma_log__"] + h
    down["gamma_log__"] = point["gamma_log__"] - h
    fd = (logp(up) - logp(down)) / (2 * h)
    with pm.Model() as prior_only:
        g = pm.Gamma("gamma", 2.0, 2.0)
    grad_prior = prior_only.compile_dlogp(vars=[g])({"gamma_log__": point["gamma_log__"]})
    grad = dlogp(point) - grad_prior
    assert np.isfinite(grad).all() and abs(grad[0] - fd) < 1e-6 * max(1.0, abs(fd)), (grad, fd)


@pytest.mark.parametrize("case", ["crp", "py", "py_negative_alpha", "py_d0", "fixed_k2",
                                  "mfm_poisson"])
@pytest.mark.parametrize("n", [4, 5])
def test_forward_draws_follow_the_prior(case, n):
    m = 20000
    dist = CASES[case][0](n)
    draws = pm.draw(dist, draws=m, random_seed=3)
    assert draws.shape == (m, n) and draws.dtype == np.int64
    assert np.array_equal(pmp.canonicalize(draws), draws)
    parts = pmp.set_partitions(n)
    # Exact probabilities from the numba prior (checked against the model above).
    params = CASES[case][1](n)
    active = np.arange(n, dtype=np.int64)
    exact = np.exp([
        log_prior(params, np.pad(np.bincount(p), (0, n - p.max() - 1)).astype(np.int64), active,
                  p.max() + 1, n)
        for p in parts
    ])
    index = {tuple(p): i for i, p in enumerate(parts)}
    freq = np.bincount([index[tuple(d)] for d in draws], minlength=len(parts)) / m
    bound = 0.5 * np.sqrt(exact * (1 - exact) / m).sum() + np.sqrt(np.log(1e4) / (2 * m))
    assert 0.5 * np.abs(freq - exact).sum() < bound


@pytest.mark.parametrize("alpha, d", [(1.3, 0.0), (0.7, 0.35), (-0.3, 0.6), (5.0, 0.2)])
def test_urn_draws_have_the_exact_mean_number_of_blocks_at_large_n(alpha, d):
    """The vectorised urn draws at n = 2000 against the exact E[K_n]: CRP
    sum_i alpha / (alpha + i); Pitman-Yor (Pitman 2006, eq. 3.13)
    Gamma(alpha+d+n) Gamma(alpha+1) / (d Gamma(alpha+n) Gamma(alpha+d)) - alpha / d
    (a z-test over 1500 draws)."""
    from scipy.special import gammaln

    n, m = 2000, 1500
    dist = pmp.CRP.dist(alpha=alpha, n=n) if d == 0 else pmp.PitmanYor.dist(alpha=alpha, d=d, n=n)
    draws = pm.draw(dist, draws=m, random_seed=5)
    assert np.array_equal(pmp.canonicalize(draws[:20]), draws[:20])
    k = draws.max(axis=1) + 1
    if d == 0:
        exact = np.sum(alpha / (alpha + np.arange(n)))
    else:
        exact = np.exp(gammaln(alpha + d + n) + gammaln(alpha + 1) - gammaln(alpha + n)
                       - gammaln(alpha + d)) / d - alpha / d
    z = (k.mean() - exact) / (k.std(ddof=1) / np.sqrt(m))
    assert abs(z) < 4.0, (k.mean(), exact)


def test_support_points_and_pm_sample_assigns_gibbs():
    with pm.Model() as model:
        pmp.PitmanYor("a", alpha=1.0, d=0.5, n=5)
        pmp.FixedBlocks("b", n=7, k=3)
        pmp.MFM("c", n=5)
    point = model.initial_point()
    assert point["a"].tolist() == [0] * 5 and point["c"].tolist() == [0] * 5
    assert point["b"].tolist() == [0, 1, 2, 0, 1, 2, 0]
    for name in ("a", "b", "c"):
        assert pmp.Gibbs.competence(model[name]) == pm.step_methods.compound.Competence.IDEAL


# --------------------------------------------------------------------------------------
# Exact posteriors under pmp.Gibbs
# --------------------------------------------------------------------------------------


def run_exact(model, seed, draws=2500, grids=None):
    return assert_exact(model, draws=draws, seed=seed, grids=grids)[1]


def test_pitman_yor_exact():
    n = 6
    with pm.Model() as model:
        z = pmp.PitmanYor("z", alpha=0.5, d=0.4, n=n)
        pmp.CollapsedBetaBernoulli("y", partition=z, a=0.5, b=0.8, observed=binary_data(n, 3, 61))
    # Seed 62, not 61: with the xoshiro streams (issue 11) seed 61's 4 x 2,500 draws gave
    # |z| 4.62 > 4.58 on P(K=5), a fluctuation: the same seed at 4 x 12,000 draws gives
    # worst |z| 1.83, and seeds 1-16 and 62 give worst |z| <= 3.16 (all pass).
    run_exact(model, seed=62)


@pytest.mark.parametrize("k", [2, 3])
def test_fixed_blocks_exact(k):
    n = 6
    Y = np.random.default_rng(70 + k).normal(0.0, 1.5, size=(n, 2))
    with pm.Model() as model:
        z = pmp.FixedBlocks("z", n=n, k=k)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=1.5, sigma=1.0, observed=Y)
    idata = run_exact(model, seed=70 + k)
    assert np.all(np.asarray(idata["posterior"]["z"].values).max(axis=-1) == k - 1)


def test_mfm_exact():
    n = 6
    with pm.Model() as model:
        z = pmp.MFM("z", n=n, gamma=0.8, k_prior=POISSON_PK)
        pmp.CollapsedBetaBernoulli("y", partition=z, a=0.6, b=0.6, observed=binary_data(n, 3, 81))
    run_exact(model, seed=81)


def test_pitman_yor_alpha_free():
    """alpha ~ Gamma(2, 2) free: pm.sample assigns it to pmp.HyperSlice."""
    n = 5
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 2.0)
        z = pmp.PitmanYor("z", alpha=alpha, d=0.3, n=n)
        pmp.CollapsedBetaBernoulli("y", partition=z, a=1.0, b=1.0, observed=binary_data(n, 3, 91))
    run_exact(model, seed=91, grids={"alpha_log__": np.linspace(-20.0, 5.0, 1000)})


def test_mfm_gamma_free():
    """gamma ~ Gamma(2, 2) free: pm.sample assigns it to pmp.HyperSlice."""
    n = 5
    with pm.Model() as model:
        gamma = pm.Gamma("gamma", 2.0, 2.0)
        z = pmp.MFM("z", n=n, gamma=gamma)
        pmp.CollapsedBetaBernoulli("y", partition=z, a=1.0, b=1.0, observed=binary_data(n, 3, 95))
    run_exact(model, seed=95, grids={"gamma_log__": np.linspace(-12.0, 4.0, 800)})


# --------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("d", [-0.1, 1.0, 1.5, np.nan])
def test_pitman_yor_rejects_d_outside_unit_interval(d):
    with pytest.raises(ValueError, match="'d'"):
        pmp.PitmanYor.dist(alpha=1.0, d=d, n=5)


@pytest.mark.parametrize("alpha,d", [(-0.5, 0.5), (-0.6, 0.5), (0.0, 0.0), (-1.0, 0.0)])
def test_pitman_yor_rejects_alpha_not_above_minus_d(alpha, d):
    with pytest.raises(ValueError, match="'alpha' must be > -d"):
        pmp.PitmanYor.dist(alpha=alpha, d=d, n=5)


def test_pitman_yor_random_hyperparameters_checked_by_the_step():
    op = pmp.PitmanYor.dist(alpha=1.0, d=0.5, n=4).owner.op
    with pytest.raises(ValueError, match="alpha > -d"):
        op.check_hyper_values([np.array(-0.7), np.array(0.5)], "partition 'z'")


@pytest.mark.parametrize("k", [0, -1, 7])
def test_fixed_blocks_rejects_k_outside_1_to_n(k):
    with pytest.raises(ValueError, match="'k'"):
        pmp.FixedBlocks.dist(n=6, k=k)


def test_fixed_blocks_initvals_violating_k_are_rejected():
    n = 6
    with pm.Model() as model:
        z = pmp.FixedBlocks("z", n=n, k=2)
        pmp.CollapsedBetaBernoulli("y", partition=z, a=1.0, b=1.0, observed=binary_data(n, 2, 1))
    with pytest.raises(ValueError, match="exactly k = 2"):
        sample(model, draws=10, chains=1, initvals={"z": np.array([0, 1, 2, 0, 1, 2])})
    # And the step itself refuses such a point (e.g. written by another step).
    step = pmp.Gibbs([model["z"]], model=model)
    point = model.initial_point()
    point["z"] = np.zeros(n, dtype=np.int64)
    with pytest.raises(ValueError, match="exactly k = 2"):
        step.step(point)


@pytest.mark.parametrize("gamma", [0.0, -1.0, np.inf])
def test_mfm_rejects_non_positive_gamma(gamma):
    with pytest.raises(ValueError, match="'gamma'"):
        pmp.MFM.dist(n=5, gamma=gamma)


@pytest.mark.parametrize(
    "k_prior,match",
    [
        ([0.5, 0.2], "sum to"),
        ([0.5, -0.1, 0.6], "non-negative"),
        ([[0.5, 0.5]], "1-D"),
        ("poisson", "1-D array"),
        (lambda k: np.zeros(np.shape(k)), "not a log-pmf"),
        (lambda k: -0.01 * np.log(np.asarray(k, float)) - 50, "heavy a tail"),
        (lambda k: np.full(np.shape(k), np.nan), "NaN"),
    ],
)
def test_mfm_rejects_invalid_k_prior(k_prior, match):
    with pytest.raises(ValueError, match=match):
        pmp.MFM.dist(n=5, k_prior=k_prior)


def test_mfm_truncation_of_callable_k_prior():
    log_pk = pmp.distributions.priors.resolve_k_prior(None, "")
    kmax = log_pk.shape[0]
    tail = 0.9**kmax  # P(K > kmax) of Geometric(0.1)
    assert tail <= 1e-12 < 0.9 ** (kmax - 1)
    assert np.isclose(np.exp(log_pk).sum(), 1.0, atol=1e-14)
    # Scalar-only callables work too.
    import math

    scalar = pmp.distributions.priors.resolve_k_prior(lambda k: math.log(0.5) * k, "")
    assert np.allclose(np.exp(scalar[:3]), [0.5, 0.25, 0.125], rtol=1e-9)
