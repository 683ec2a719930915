"""Normal-Inverse-Gamma, Poisson-Gamma, Dirichlet-multinomial and the k-means energy:
kernels against the model's PyTensor log density, conjugate block posteriors,
forward draws and input errors."""

import zlib

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from helpers import REFERENCE_MODE, check_log_preds, load_all_but
from scipy import stats as sps

import pymc_partitions as pmp
from pymc_partitions.kernels import assign_labels, gibbs, new_state, summarise
from pymc_partitions.kernels.components import add, combine, log_pred, remove
from pymc_partitions.kernels.priors import crp
from pymc_partitions.kernels.random import new_stream

RTOL = 1e-8


def rel_err(a, b):
    return abs(a - b) / max(abs(b), 1e-300)


# ---------------------------------------------------------------- the families under test


def nig_hypers(r, d):
    return [r.normal(size=d), r.uniform(0.3, 2, d), r.uniform(0.6, 3, d), r.uniform(0.3, 2, d)]


def pg_hypers(r, d):
    return [r.uniform(0.3, 3, d), r.uniform(0.2, 2, d)]


def dm_hypers(r, shape):
    return [r.uniform(0.2, 2.5, shape)]


def km_hypers(r, d):
    return [r.uniform(0.5, 3, d)]


def normal_rows(r, n, d):
    return r.normal(0, 2, size=(n, d)) + r.normal(0, 3, size=d)


def count_rows(r, n, d):
    return r.poisson(r.gamma(1.0, 3.0, size=d), size=(n, d)).astype(float)


def count_matrices(r, n, shape):
    p, c = shape
    theta = r.dirichlet(np.full(c, 0.7), size=(2, p))
    z = r.integers(0, 2, n)
    tot = r.integers(0, 12, size=(n, p))
    y = np.empty((n, p, c))
    for i in range(n):
        for q in range(p):
            y[i, q] = r.multinomial(tot[i, q], theta[z[i], q])
    return y


CASES = {
    "nig_D1": (pmp.CollapsedNormalInverseGamma, 1, nig_hypers, normal_rows),
    "nig_D3": (pmp.CollapsedNormalInverseGamma, 3, nig_hypers, normal_rows),
    "pg_D1": (pmp.CollapsedPoissonGamma, 1, pg_hypers, count_rows),
    "pg_D4": (pmp.CollapsedPoissonGamma, 4, pg_hypers, count_rows),
    "dm_P1_C4": (pmp.CollapsedDirichletMultinomial, (1, 4), dm_hypers, count_matrices),
    "dm_P3_C4": (pmp.CollapsedDirichletMultinomial, (3, 4), dm_hypers, count_matrices),
    "dm_P2_C2": (pmp.CollapsedDirichletMultinomial, (2, 2), dm_hypers, count_matrices),
    "km_D1": (pmp.KMeansEnergy, 1, km_hypers, normal_rows),
    "km_D3": (pmp.KMeansEnergy, 3, km_hypers, normal_rows),
}


def logp_fn(dist_cls, dims, hypers):
    """Compiled PyTensor logp of ``dist_cls`` as a function of (labels, data)."""
    z = pt.lvector("z")
    if dist_cls is pmp.CollapsedDirichletMultinomial:
        y, t = pt.tensor3("y", dtype="float64"), pt.dmatrix("t")
        rv = dist_cls.dist(z, pt.as_tensor(hypers[0]), t)
        f = pytensor.function([z, y, t], pm.logp(rv, y).sum(), mode=REFERENCE_MODE)
        return lambda labels, x: float(f(labels, x, x.sum(axis=2)))
    y = pt.dmatrix("y")
    rv = dist_cls.dist(z, *[np.asarray(h, dtype=float) for h in hypers], n_dims=dims)
    f = pytensor.function([z, y], pm.logp(rv, y).sum(), mode=REFERENCE_MODE)
    return lambda labels, x: float(f(labels, x))


def kernel_objects(dist_cls, x, hypers, n):
    """The op's own binding: data, params and empty statistics."""
    op = dist_cls.rv_op
    data = op.kernel_data(x)
    params = op.kernel_params([np.asarray(h, dtype=float) for h in hypers], n)
    return params, op.alloc_stats(n, data, params), data


@pytest.mark.parametrize("case", sorted(CASES))
def test_log_pred_equals_logp_difference(case):
    dist_cls, dims, make_hypers, make_x = CASES[case]
    rng = np.random.default_rng(zlib.crc32(case.encode()))
    n = 12
    for trial in range(4):
        x = make_x(rng, n, dims)
        hypers = make_hypers(rng, dims)
        f = logp_fn(dist_cls, dims, hypers)
        labels = pmp.canonicalize(rng.integers(0, 4, n))
        params, stats, data = kernel_objects(dist_cls, x, hypers, n)
        state = new_state(n)
        i = int(rng.integers(n))
        load_all_but(state, params, stats, data, labels, skip=i)
        check_log_preds(f, params, stats, data, state, x, labels, i, RTOL)


@pytest.mark.parametrize("case", ["nig_D3", "pg_D4", "dm_P3_C4", "km_D3"])
def test_log_joint_after_gibbs_sweeps_equals_model_logp(case):
    """Hundreds of incremental add/remove steps (Gibbs sweeps) leave statistics whose
    log joint is the model's log density of the resulting partition."""
    dist_cls, dims, make_hypers, make_x = CASES[case]
    rng = np.random.default_rng(zlib.crc32(case.encode()) + 1)
    n, alpha = 15, 1.3
    x = make_x(rng, n, dims)
    hypers = make_hypers(rng, dims)
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=alpha, n=n)
        dist_cls("y", z, *hypers, observed=x)
    logp = model.compile_logp(jacobian=False)
    params, stats, data = kernel_objects(dist_cls, x, hypers, n)
    state = new_state(n)
    assign_labels(state, params, stats, data, pmp.canonicalize(rng.integers(0, 4, n)))
    prior = crp.make_params(alpha, n)
    canon, scratch = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    stream = new_stream(0)
    for rep in range(5):
        gibbs.run_sweeps(stream, 20, state, prior, params, stats, data, np.empty(n + 1),
                         np.arange(n, dtype=np.int64))
        _, _, kernel = summarise(state, prior, params, stats, canon, scratch)
        ref = float(logp({"z": canon.copy()}))
        assert rel_err(kernel, ref) <= RTOL, (case, rep, kernel, ref)


def test_two_families_on_one_partition_log_joint():
    rng = np.random.default_rng(4)
    n, alpha = 10, 0.8
    xc = count_rows(rng, n, 3)
    xm = count_matrices(rng, n, (2, 4))
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=alpha, n=n)
        pmp.CollapsedPoissonGamma("c", z, a=1.5, b=0.5, observed=xc)
        pmp.CollapsedDirichletMultinomial("m", z, concentration=0.7, observed=xm)
    logp = model.compile_logp(jacobian=False)
    pa, sa, da = kernel_objects(pmp.CollapsedPoissonGamma, xc, [np.full(3, 1.5), np.full(3, 0.5)], n)
    pb, sb, db = kernel_objects(pmp.CollapsedDirichletMultinomial, xm, [np.full((2, 4), 0.7)], n)
    params, stats, data = combine([pa, pb], [sa, sb], [da, db])
    state = new_state(n)
    labels = pmp.canonicalize(rng.integers(0, 3, n))
    assign_labels(state, params, stats, data, labels)
    canon = np.empty(n, dtype=np.int64)
    _, _, kernel = summarise(state, crp.make_params(alpha, n), params, stats, canon,
                             np.empty(n, dtype=np.int64))
    assert rel_err(kernel, float(logp({"z": labels}))) <= RTOL


def test_nig_is_stable_for_data_far_from_zero():
    """Centred statistics: values near 1e6 with spread 1e-3 keep their predictive
    after thousands of incremental removals and additions. Raw sums of squares would
    lose every digit here (sum x^2 ~ 1e13 against a centred sum of squares ~ 1e-5);
    the Welford updates keep at least four."""
    rng = np.random.default_rng(2)
    n = 8
    x = 1e6 + 1e-3 * rng.normal(size=(n + 1, 1))  # row n is the new item
    hypers = [np.array([1e6]), np.array([1.0]), np.array([2.0]), np.array([1e-9])]
    params, stats, data = kernel_objects(pmp.CollapsedNormalInverseGamma, x, hypers, n + 1)
    state = new_state(n + 1)
    load_all_but(state, params, stats, data, np.zeros(n + 1, dtype=np.int64), skip=n)
    for _ in range(200):
        for i in range(n - 1):
            remove(params, stats, data, i, 0)
        for i in range(n - 1):
            add(params, stats, data, i, 0)
    ref = pmp.CollapsedNormalInverseGamma.rv_op.block_log_predictive(x[n:], x[:n], hypers)[0]
    assert rel_err(log_pred(params, stats, data, n, 0), ref) < 1e-4
    centred = ((x[:n] - x[:n].mean()) ** 2).sum()
    assert rel_err(stats.m2[0, 0], centred) < 1e-4


# ---------------------------------------------------------------- conjugate block posteriors


@pytest.mark.parametrize("case", ["nig_D3", "pg_D4", "dm_P3_C4"])
def test_block_log_predictive_matches_kernel(case):
    dist_cls, dims, make_hypers, make_x = CASES[case]
    rng = np.random.default_rng(9)
    n = 9
    x = make_x(rng, n, dims)
    hypers = make_hypers(rng, dims)
    op = dist_cls.rv_op
    params, stats, data = kernel_objects(dist_cls, x, hypers, n)
    state = new_state(n)
    labels = np.r_[np.zeros(n - 3, dtype=np.int64), 1, 1, 2]
    assign_labels(state, params, stats, data, labels)
    new_rows = x[-3:]
    ref = op.block_log_predictive(new_rows, x[: n - 3], hypers)
    assert ref.shape == (3,)
    for j, i in enumerate(range(n - 3, n)):
        k = int(labels[i])
        remove(params, stats, data, i, k)
        assert rel_err(log_pred(params, stats, data, i, 0), ref[j]) <= RTOL
        add(params, stats, data, i, k)
    # Empty block: the prior predictive.
    prior = op.block_log_predictive(new_rows[:1], x[:0], hypers)[0]
    p2, s2, d2 = kernel_objects(dist_cls, x, hypers, n)
    assert rel_err(log_pred(p2, s2, d2, n - 3, 0), prior) <= RTOL


def test_block_posterior_draws_have_conjugate_moments():
    rng = np.random.default_rng(1)
    # Poisson-Gamma: rate ~ Gamma(a + S, b + m).
    rows = np.array([[3.0, 0.0], [5.0, 1.0], [4.0, 0.0]])
    op = pmp.CollapsedPoissonGamma.rv_op
    draws = np.array([op.block_posterior_draw(rng, rows, [np.array([2.0, 1.0]), np.array([1.0, 0.5])])["rate"]
                      for _ in range(20000)])
    expect = np.array([(2 + 12) / 4, (1 + 1) / 3.5])
    assert np.allclose(draws.mean(axis=0), expect, rtol=0.02)
    # NIG: E[sigma2] = b_m / (a_m - 1), E[mu] = mu_m.
    op = pmp.CollapsedNormalInverseGamma.rv_op
    rows = rng.normal(2.0, 0.5, size=(6, 1))
    hyp = [np.array([0.0]), np.array([2.0]), np.array([3.0]), np.array([1.0])]
    d = [op.block_posterior_draw(rng, rows, hyp) for _ in range(20000)]
    mu = np.array([v["mu"][0] for v in d])
    s2 = np.array([v["sigma2"][0] for v in d])
    m, mean = 6, rows.mean()
    b_m = 1.0 + 0.5 * ((rows - mean) ** 2).sum() + 0.5 * 2 * m * mean**2 / 8
    assert abs(mu.mean() - m * mean / 8) < 4 * np.sqrt(b_m / 5 / 8 / 20000) + 1e-3
    assert abs(s2.mean() - b_m / (3 + 3 - 1)) / (b_m / 5) < 0.03
    # Dirichlet-multinomial: E[theta_p] = (c + X_p) / sum.
    op = pmp.CollapsedDirichletMultinomial.rv_op
    rows = np.array([[[3.0, 1.0, 0.0]], [[2.0, 0.0, 1.0]]])
    th = np.array([op.block_posterior_draw(rng, rows, [np.full((1, 3), 0.5)])["theta"]
                   for _ in range(20000)])
    assert th.shape == (20000, 1, 3)
    assert np.allclose(th.mean(axis=0)[0], np.array([5.5, 1.5, 1.5]) / 8.5, atol=0.01)


def test_block_log_predictive_sums_to_one():
    """Predictive probabilities over all outcomes (small supports) sum to 1."""
    rows = np.array([[[2.0, 1.0, 0.0], [0.0, 3.0, 0.0]]])
    op = pmp.CollapsedDirichletMultinomial.rv_op
    outcomes = [np.array([[a, b, 2 - a - b], [c, 1 - c, 0]], dtype=float)
                for a in range(3) for b in range(3 - a) for c in range(2)]
    outcomes += [np.array([[a, b, 2 - a - b], [0, 0, 1]], dtype=float)
                 for a in range(3) for b in range(3 - a)]
    lp = op.block_log_predictive(np.array(outcomes), rows, [np.full((2, 3), 0.8)])
    assert np.isclose(np.exp(lp).sum(), 1.0, atol=1e-12)
    op = pmp.CollapsedPoissonGamma.rv_op
    lp = op.block_log_predictive(np.arange(400.0)[:, None], np.array([[3.0], [1.0]]),
                                 [np.array([1.3]), np.array([0.7])])
    assert np.isclose(np.exp(lp).sum(), 1.0, atol=1e-10)
    op = pmp.CollapsedNormalInverseGamma.rv_op
    grid = np.linspace(-60, 60, 200001)[:, None]
    lp = op.block_log_predictive(grid, np.array([[0.5], [1.5], [0.9]]),
                                 [np.array([0.0]), np.array([1.0]), np.array([2.0]), np.array([1.0])])
    assert np.isclose(np.trapezoid(np.exp(lp), grid[:, 0]) if hasattr(np, "trapezoid")
                      else np.trapz(np.exp(lp), grid[:, 0]), 1.0, atol=1e-5)


# ---------------------------------------------------------------- forward draws


def test_forward_draws():
    z = pmp.CRP.dist(alpha=1.0, n=6)
    y = pmp.CollapsedNormalInverseGamma.dist(z, 0.0, 1.0, 2.0, 1.0, n_dims=2)
    assert pm.draw(y, random_seed=1).shape == (6, 2)
    assert pm.draw(y, draws=3, random_seed=1).shape == (3, 6, 2)
    c = pmp.CollapsedPoissonGamma.dist(z, [2.0, 1.0, 3.0], 0.5)
    cd = pm.draw(c, draws=4, random_seed=2)
    assert cd.shape == (4, 6, 3) and np.all(cd >= 0) and np.all(cd == np.round(cd))
    totals = np.tile([[5.0, 7.0]], (6, 1))
    m = pmp.CollapsedDirichletMultinomial.dist(z, 0.5, totals, n_categories=4)
    md = pm.draw(m, draws=3, random_seed=3)
    assert md.shape == (3, 6, 2, 4)
    assert np.array_equal(md.sum(axis=-1), np.broadcast_to(totals, (3, 6, 2)))
    k = pmp.KMeansEnergy.dist(z, 1.0, n_dims=2)
    with pytest.raises(NotImplementedError, match="Gibbs energy"):
        pm.draw(k, random_seed=1)


def test_poisson_gamma_prior_predictive_moments():
    """Within one block (alpha tiny) counts are NegBin(a, b/(b+1)) marginally."""
    z = pmp.CRP.dist(alpha=1e-8, n=2)
    c = pmp.CollapsedPoissonGamma.dist(z, 2.0, 0.5, n_dims=1)
    d = pm.draw(c, draws=20000, random_seed=5)[:, 0, 0]
    # Mean a/b = 4, variance a/b + a/b^2 = 12.
    assert abs(d.mean() - 4.0) < 0.15 and abs(d.var() - 12.0) < 1.0


def test_prior_predictive_in_a_model():
    Y = np.random.default_rng(0).poisson(3.0, size=(5, 2, 4)).astype(float)
    with pm.Model():
        z = pmp.CRP("z", alpha=1.0, n=5)
        pmp.CollapsedDirichletMultinomial("m", z, concentration=1.0, observed=Y)
        pmp.CollapsedNormalInverseGamma("y", z, observed=np.zeros((5, 2)))
        prior = pm.sample_prior_predictive(20, random_seed=1)
    md = np.asarray(prior["prior_predictive"]["m"].values).reshape(-1, 5, 2, 4)
    assert np.array_equal(md.sum(-1), np.broadcast_to(Y.sum(-1), md.shape[:-1]))


# ---------------------------------------------------------------- input errors


def test_count_errors():
    with pm.Model():
        z = pmp.CRP("z", alpha=1.0, n=3)
        with pytest.raises(ValueError, match="'observed' must hold non-negative integer counts"):
            pmp.CollapsedPoissonGamma("a", z, observed=np.array([[0, 1], [-1, 0], [1, 1]]))
        with pytest.raises(ValueError, match="non-negative integer counts; found 0.5"):
            pmp.CollapsedPoissonGamma("b", z, observed=np.array([[0, 1], [0.5, 0], [1, 1]]))
        with pytest.raises(ValueError, match="NaN or inf"):
            pmp.CollapsedPoissonGamma("c", z, observed=np.array([[0, 1], [np.nan, 0], [1, 1]]))
        bad = np.ones((3, 2, 4))
        bad[1, 1, 2] = -2
        with pytest.raises(ValueError, match=r"non-negative integer counts; found -2.0 at index \(1, 1, 2\)"):
            pmp.CollapsedDirichletMultinomial("d", z, observed=bad)
        bad[1, 1, 2] = 1.5
        with pytest.raises(ValueError, match="non-negative integer counts"):
            pmp.CollapsedDirichletMultinomial("e", z, observed=bad)
        bad[1, 1, 2] = np.nan
        with pytest.raises(ValueError, match=r"NaN or inf \(first at index \(1, 1, 2\)\)"):
            pmp.CollapsedDirichletMultinomial("f", z, observed=bad)
        with pytest.raises(ValueError, match="NaN or inf"):
            pmp.CollapsedNormalInverseGamma("g", z, observed=np.array([1.0, np.inf, 0.0]))
        with pytest.raises(ValueError, match="NaN or inf"):
            pmp.KMeansEnergy("h", z, observed=np.array([1.0, np.nan, 0.0]))


def test_shape_errors():
    with pm.Model():
        z = pmp.CRP("z", alpha=1.0, n=3)
        Y = np.ones((3, 2, 4))
        with pytest.raises(ValueError, match=r"'concentration' has shape \(3, 4\) but the data have P = 2"):
            pmp.CollapsedDirichletMultinomial("a", z, concentration=np.ones((3, 4)), observed=Y)
        with pytest.raises(ValueError, match=r"'concentration' has shape \(5,\)"):
            pmp.CollapsedDirichletMultinomial("b", z, concentration=np.ones(5), observed=Y)
        with pytest.raises(ValueError, match=r"'observed' must be an \(n, P, C\) array"):
            pmp.CollapsedDirichletMultinomial("c", z, observed=np.ones((3, 2, 4, 1)))
        with pytest.raises(ValueError, match="'observed' has 4 rows but partition 'z' has n = 3"):
            pmp.CollapsedDirichletMultinomial("d", z, observed=np.ones((4, 2, 4)))
        with pytest.raises(ValueError, match="'observed' has 2 rows"):
            pmp.CollapsedPoissonGamma("e", z, observed=np.ones((2, 2)))
        with pytest.raises(ValueError, match="'kappa0' has length 3 but the data have D = 2"):
            pmp.CollapsedNormalInverseGamma("f", z, kappa0=np.ones(3), observed=np.ones((3, 2)))
        with pytest.raises(ValueError, match="'temperature' has length 3 but the data have D = 2"):
            pmp.KMeansEnergy("g", z, temperature=np.ones(3), observed=np.ones((3, 2)))


@pytest.mark.parametrize(
    "cls, kwargs, name",
    [
        (pmp.CollapsedNormalInverseGamma, {"kappa0": 0.0}, "kappa0"),
        (pmp.CollapsedNormalInverseGamma, {"a0": -1.0}, "a0"),
        (pmp.CollapsedNormalInverseGamma, {"b0": np.nan}, "b0"),
        (pmp.CollapsedPoissonGamma, {"a": 0.0}, "a"),
        (pmp.CollapsedPoissonGamma, {"b": [1.0, -1.0]}, "b"),
        (pmp.CollapsedDirichletMultinomial, {"concentration": 0.0}, "concentration"),
        (pmp.CollapsedDirichletMultinomial, {"concentration": [1.0, 1.0, 1.0, -0.5]}, "concentration"),
        (pmp.KMeansEnergy, {"temperature": 0.0}, "temperature"),
        (pmp.KMeansEnergy, {"temperature": np.inf}, "temperature"),
    ],
)
def test_non_positive_hyperparameters(cls, kwargs, name):
    Y = np.ones((3, 2, 4)) if cls is pmp.CollapsedDirichletMultinomial else np.ones((3, 2))
    with pm.Model():
        z = pmp.CRP("z", alpha=1.0, n=3)
        with pytest.raises(ValueError, match=f"'{name}' must be positive"):
            cls("y", z, observed=Y, **kwargs)


def test_kmeans_energy_refuses_a_free_temperature():
    with pm.Model():
        z = pmp.CRP("z", alpha=1.0, n=3)
        t = pm.Gamma("t", 2.0, 1.0)
        with pytest.raises(ValueError, match="'temperature' must be a positive constant.*wrong target"):
            pmp.KMeansEnergy("y", z, temperature=t, observed=np.ones((3, 2)))
        with pytest.raises(ValueError, match="'temperature' must be a positive constant"):
            pmp.KMeansEnergy.dist(z, t, n_dims=2)


def test_count_vector_is_one_position():
    Y = np.array([[1, 2, 0, 0], [0, 0, 3, 1], [2, 2, 0, 0]])
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=3)
        m = pmp.CollapsedDirichletMultinomial("m", z, concentration=[0.5, 1.0, 1.0, 2.0], observed=Y)
    assert model.rvs_to_values[m].data.shape == (3, 1, 4)
    # The logp is the Dirichlet-multinomial of scipy for one block.
    logp = model.compile_logp(vars=[m], jacobian=False)
    ref = 0.0
    conc = np.array([0.5, 1.0, 1.0, 2.0])
    x = np.zeros(4)
    for row in Y:  # chain rule: predictive of each row given the previous ones
        ref += sps.dirichlet_multinomial.logpmf(row, conc + x, row.sum())
        x += row
    assert np.isclose(float(logp({"z": np.zeros(3, dtype=np.int64)})), ref, rtol=1e-12)


def test_poisson_gamma_logp_one_block_matches_scipy():
    Y = np.array([[3, 0], [1, 2], [0, 0], [4, 1]], dtype=float)
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=4)
        c = pmp.CollapsedPoissonGamma("c", z, a=[2.0, 0.5], b=[1.0, 3.0], observed=Y)
    logp = model.compile_logp(vars=[c], jacobian=False)
    a, b = np.array([2.0, 0.5]), np.array([1.0, 3.0])
    ref, s = 0.0, np.zeros(2)
    for m, row in enumerate(Y):
        ref += sps.nbinom.logpmf(row, a + s, (b + m) / (b + m + 1)).sum()
        s += row
    assert np.isclose(float(logp({"z": np.zeros(4, dtype=np.int64)})), ref, rtol=1e-12)
    assert np.isclose(float(logp({"z": np.array([0, 1, 2, 3])})),
                      sum(sps.nbinom.logpmf(r, a, b / (b + 1)).sum() for r in Y), rtol=1e-12)


def test_nig_logp_one_item_is_student_t():
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=1)
        y = pmp.CollapsedNormalInverseGamma("y", z, mu0=0.5, kappa0=2.0, a0=3.0, b0=1.5,
                                            observed=np.array([1.7]))
    logp = model.compile_logp(vars=[y], jacobian=False)
    scale = np.sqrt(1.5 * 3.0 / (3.0 * 2.0))
    ref = sps.t.logpdf(1.7, df=6.0, loc=0.5, scale=scale)
    assert np.isclose(float(logp({"z": np.zeros(1, dtype=np.int64)})), ref, rtol=1e-12)


def test_kmeans_energy_logp_is_within_sum_of_squares():
    Y = np.random.default_rng(0).normal(size=(7, 2))
    labels = np.array([0, 0, 1, 1, 1, 2, 0])
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=7)
        e = pmp.KMeansEnergy("e", z, temperature=0.5, observed=Y)
    logp = model.compile_logp(vars=[e], jacobian=False)
    w = sum(((Y[labels == k] - Y[labels == k].mean(0)) ** 2).sum() for k in range(3))
    assert np.isclose(float(logp({"z": labels})), -w / 0.5, rtol=1e-12)


def test_dirichlet_multinomial_logp_requires_consistent_totals():
    z = pt.lvector("z")
    rv = pmp.CollapsedDirichletMultinomial.dist(z, np.ones((1, 2)), np.array([[3.0], [2.0]]))
    y = np.array([[[1.0, 2.0]], [[1.0, 1.0]]])
    assert np.isfinite(pm.logp(rv, y).eval({z: np.array([0, 0])}))
    y_bad = np.array([[[1.0, 2.0]], [[1.0, 0.0]]])
    assert pm.logp(rv, y_bad).eval({z: np.array([0, 0])}) == -np.inf
