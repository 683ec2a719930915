"""CollapsedMvNormal and CollapsedNIW: kernel equals model, exact enumeration with
pmp.Gibbs, forced block moves, conjugate block posteriors, forward draws and input
errors (DESIGN §6)."""

import zlib

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from helpers import (
    REFERENCE_MODE,
    assert_exact,
    check_log_preds,
    load_all_but,
    random_block_move,
    two_groups,
)

import pymc_partitions as pmp
from pymc_partitions.kernels import (
    assign_labels,
    gibbs,
    new_state,
    refresh_all,
    summarise,
    sweep_block,
)
from pymc_partitions.kernels.components import add, combine, log_pred, mv_normal, niw
from pymc_partitions.kernels.priors import crp
from pymc_partitions.kernels.random import new_stream
from pymc_partitions.kernels.state import open_slot
from pymc_partitions.step_methods.target import PartitionTarget

RTOL = 1e-8


def rel_err(a, b):
    return abs(a - b) / max(abs(b), 1e-300)


def spd(rng, d, scale=1.0):
    a = rng.normal(size=(d, d))
    return scale * (a @ a.T / d + 0.5 * np.eye(d))


def mvn_hypers(rng, d):
    return (rng.normal(size=d), spd(rng, d, 2.0), spd(rng, d, 0.7))


def niw_hypers(rng, d):
    return (rng.normal(size=d), float(rng.uniform(0.3, 2.0)), float(d - 1 + rng.uniform(0.5, 3.0)),
            spd(rng, d, 1.5))


LIKELIHOODS = {
    "mvn": (pmp.CollapsedMvNormal, mv_normal, mvn_hypers),
    "niw": (pmp.CollapsedNIW, niw, niw_hypers),
}


_LOGP_FNS = {}


def likelihood_logp_fn(dist_cls, n_dims, hypers):
    """PyTensor logp of ``dist_cls`` as a function of (labels, data) at ``hypers``;
    compiled once per (likelihood, D) with the hyperparameters as inputs."""
    key = (dist_cls, n_dims)
    if key not in _LOGP_FNS:
        z, y = pt.lvector("z"), pt.dmatrix("y")
        inputs = [pt.tensor(f"h{j}", shape=(None,) * np.ndim(h), dtype="float64")
                  for j, h in enumerate(hypers)]
        rv = dist_cls.dist(z, *inputs, n_dims=n_dims)
        _LOGP_FNS[key] = pytensor.function([z, y, *inputs], pm.logp(rv, y).sum(),
                                           mode=REFERENCE_MODE)
    fn = _LOGP_FNS[key]
    values = [np.asarray(h, dtype=np.float64) for h in hypers]
    return lambda labels, x: float(fn(np.asarray(labels, dtype=np.int64), x, *values))


def kernel_objects(module, x, hypers, n):
    params = module.make_params(*hypers, n=n)
    data = module.make_data(x)
    return params, module.alloc_stats(n, data, params), data


@pytest.mark.parametrize("d", [1, 3])
@pytest.mark.parametrize("lik", sorted(LIKELIHOODS))
def test_log_pred_equals_logp_difference(lik, d):
    """Every log_pred equals the model's logp difference, before and after a change
    of hyperparameters (the refresh path the step takes); the log joint too."""
    dist_cls, module, make_hypers = LIKELIHOODS[lik]
    rng = np.random.default_rng(zlib.crc32(f"{lik}{d}".encode()))
    n = 12
    for trial in range(3):
        x = rng.normal(0.5, 2.0, size=(n, d))
        hypers = make_hypers(rng, d)
        labels = pmp.canonicalize(rng.integers(0, 4, n))
        i = int(rng.integers(n))
        params, stats, data = kernel_objects(module, x, hypers, n)
        state = new_state(n)
        load_all_but(state, params, stats, data, labels, skip=i)
        check_log_preds(likelihood_logp_fn(dist_cls, d, hypers), params, stats, data, state, x,
                        labels, i, RTOL)
        # New hyperparameters: params rebuilt, every active slot and the top free
        # slot refreshed (PartitionTarget.kernel_args), statistics kept.
        hypers2 = make_hypers(rng, d)
        params2 = module.make_params(*hypers2, n=n)
        refresh_all(state, params2, stats)
        f2 = likelihood_logp_fn(dist_cls, d, hypers2)
        check_log_preds(f2, params2, stats, data, state, x, labels, i, RTOL)
        # Item i added under the new hyperparameters: log joint of the full partition.
        k = int(labels[i])
        if state.sizes[k] == 0:
            open_slot(state, k)
        add(params2, stats, data, i, k)
        state.sizes[k] += 1
        state.labels[i] = labels[i]
        canon = np.empty(n, dtype=np.int64)
        alpha = 1.3
        _, _, lj = summarise(state, crp.make_params(alpha, n), params2, stats, canon,
                             np.empty(n, dtype=np.int64))
        ref = f2(labels, x) + float(pm.logp(pmp.CRP.dist(alpha=alpha, n=n), labels).eval())
        assert rel_err(lj, ref) <= RTOL, (lj, ref)


def test_block_move_probabilities_equal_model_ratios():
    """Forced sweep_{C,I} (Herlau et al. eqs. 5-6) with both likelihoods on one
    partition: each candidate's log probability is the softmax of the model's log joint."""
    rng = np.random.default_rng(13)
    n, d, alpha = 8, 2, 0.9
    xm, xn = rng.normal(0, 2, size=(n, d)), rng.normal(0, 2, size=(n, d))
    hm, hn = mvn_hypers(rng, d), niw_hypers(rng, d)
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=alpha, n=n)
        pmp.CollapsedMvNormal("ym", z, *hm, observed=xm)
        pmp.CollapsedNIW("yn", z, *hn, observed=xn)
    fn = model.compile_logp(jacobian=False, mode=REFERENCE_MODE)
    pm_, pn_ = mv_normal.make_params(*hm, n=n), niw.make_params(*hn, n=n)
    for trial in range(4):
        labels = pmp.canonicalize(rng.integers(0, 3, n))
        items, candidates, ref, ref_logp = random_block_move(rng, labels, lambda z: fn({"z": z}))
        for forced in range(len(candidates)):
            dm, dn = mv_normal.make_data(xm), niw.make_data(xn)
            params, stats, data = combine(
                [pm_, pn_],
                [mv_normal.alloc_stats(n, dm, pm_), niw.alloc_stats(n, dn, pn_)],
                [dm, dn],
            )
            state = new_state(n)
            assign_labels(state, params, stats, data, labels)
            chosen, log_p, _ = sweep_block.sweep_block_entry(
                state, crp.make_params(alpha, n), params, stats, data, items, candidates,
                forced, 0.5, np.empty(len(candidates)),
            )
            assert chosen == forced
            assert rel_err(log_p, ref_logp[forced]) <= RTOL or abs(log_p - ref_logp[forced]) < 1e-12
            canon = np.empty(n, dtype=np.int64)
            _, _, lj = summarise(state, crp.make_params(alpha, n), params, stats, canon,
                                 np.empty(n, dtype=np.int64))
            assert rel_err(lj, ref[forced]) <= RTOL


# ------------------------------------------------------------ exact enumeration


S_FIXED = np.array([[1.0, 0.6], [0.6, 1.5]])
S0_FIXED = np.array([[2.0, -0.8], [-0.8, 1.2]])


def test_exact_mv_normal_fixed_hyperparameters():
    n = 6
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.2, n=n)
        pmp.CollapsedMvNormal("y", partition=z, mu0=[0.0, 0.5], Sigma0=S0_FIXED, Sigma=S_FIXED,
                              observed=two_groups(n, 2, seed=41))
    assert_exact(model, draws=2500, seed=41)


def test_exact_niw_fixed_hyperparameters():
    n = 6
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=n)
        pmp.CollapsedNIW("y", partition=z, mu0=0.0, kappa0=0.5, nu0=3.0, Psi0=S_FIXED,
                         observed=two_groups(n, 2, seed=42))
    assert_exact(model, draws=2500, seed=42)


def test_exact_mv_normal_covariance_scale_sampled():
    """Sigma = s^2 S with s ~ HalfNormal: the reference integrates s out by
    quadrature; the step refreshes the kernel (new basis W) at every draw.

    pm.sample assigns pmp.HyperSlice to s (it is read by the collapsed likelihood
    alone; NUTS remains available by step=, its gradient in Sigma is checked by
    ``test_logp_gradients_in_matrix_hyperparameters``). The exactness run moves s by
    Metropolis: the same refresh path of the partition step, at a fraction of the
    cost."""
    n = 5
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=n)
        s = pm.HalfNormal("s", 1.0)
        pmp.CollapsedMvNormal("y", partition=z, mu0=0.0, Sigma0=S0_FIXED,
                              Sigma=s**2 * S_FIXED, observed=two_groups(n, 2, seed=43))
        _, assigned = pm.sampling.mcmc.assign_step_methods(model)
        steps = [pm.Metropolis([s]), pmp.Gibbs([z])]
    assert [v.name for v in assigned[pmp.HyperSlice]] == ["s_log__"]
    assert_exact(model, draws=2500, seed=43, step=steps,
                 grids={"s_log__": np.linspace(-8.0, 4.0, 400)})


@pytest.mark.parametrize("lik", ["mv_normal", "niw"])
def test_statistics_stay_exact_over_many_sweeps(lik):
    """No drift: after many Gibbs sweeps (thousands of incremental adds and removes,
    rank-one Cholesky updates for the NIW) the kernel's log joint equals the model's
    log density of the same partition, and equals that of a state rebuilt from the
    labels."""
    n, d = 40, 3
    rng = np.random.default_rng(7)
    x = two_groups(n, d, seed=7) * 3.0 + 50.0  # far from zero: rounding shows
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=n)
        if lik == "mv_normal":
            pmp.CollapsedMvNormal("y", partition=z, mu0=50.0, Sigma0=4.0 * np.eye(d),
                                  Sigma=spd(rng, d), observed=x)
        else:
            pmp.CollapsedNIW("y", partition=z, mu0=50.0, kappa0=0.3, nu0=d + 2.0,
                             Psi0=spd(rng, d), observed=x)
    logp = model.compile_logp(jacobian=False)
    target = PartitionTarget(model, model.rvs_to_values[z], "test")
    values, prior, per_lik = target.params(model.initial_point())
    chain = target.new_chain_state(rng.integers(0, 4, n), values, per_lik)
    params, stats, data = target.kernel_args(chain, values, per_lik)
    state = chain.state
    canon, scratch = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    stream = new_stream(0)
    for sweep in range(10):
        gibbs.run_sweeps(stream, 50, state, prior, params, stats, data, np.empty(n + 1),
                         np.arange(n, dtype=np.int64))
        _, _, kernel = summarise(state, prior, params, stats, canon, scratch)
        reference = float(logp({"z": canon}))
        fresh = target.new_chain_state(canon.copy(), values, per_lik)
        _, _, rebuilt = summarise(fresh.state, prior, params, fresh.stats, canon.copy(), scratch)
        assert rel_err(kernel, reference) <= RTOL, (sweep, kernel, reference)
        assert rel_err(kernel, rebuilt) <= 1e-10, (sweep, kernel, rebuilt)


def test_logp_gradients_in_matrix_hyperparameters():
    """NUTS differentiates the logp in Sigma0, Sigma and Psi0: gradients match central
    differences (on symmetric perturbations)."""
    rng = np.random.default_rng(3)
    n, d = 6, 2
    x = rng.normal(size=(n, d))
    labels = np.array([0, 0, 1, 1, 1, 2])
    z, y = pt.lvector("z"), pt.dmatrix("y")
    mats = [pt.dmatrix("A"), pt.dmatrix("B")]
    cases = [
        (pmp.CollapsedMvNormal.dist(z, 0.3, mats[0], mats[1], n_dims=d), mats, [S0_FIXED, S_FIXED]),
        (pmp.CollapsedNIW.dist(z, 0.3, 0.7, 3.5, mats[0], n_dims=d), mats[:1], [S_FIXED]),
    ]
    for rv, inputs, values in cases:
        lp = pm.logp(rv, y).sum()
        f = pytensor.function([z, y, *inputs], [lp, *pytensor.grad(lp, inputs)],
                              mode=REFERENCE_MODE)
        out = f(labels, x, *values)
        for j, grad in enumerate(out[1:]):
            e = np.array([[0.0, 1.0], [1.0, 0.0]])  # symmetric direction
            h = 1e-5
            plus = [v + h * e if q == j else v for q, v in enumerate(values)]
            minus = [v - h * e if q == j else v for q, v in enumerate(values)]
            fd = (f(labels, x, *plus)[0] - f(labels, x, *minus)[0]) / (2 * h)
            assert np.isclose(np.sum(grad * e), fd, rtol=1e-5, atol=1e-7), (np.sum(grad * e), fd)


# --------------------------------------------- conjugate block posteriors, forward draws


@pytest.mark.parametrize("lik", sorted(LIKELIHOODS))
def test_block_log_predictive_equals_kernel(lik):
    dist_cls, module, make_hypers = LIKELIHOODS[lik]
    rng = np.random.default_rng(5)
    d, n = 3, 7
    x = rng.normal(0, 2, size=(n, d))
    hypers = make_hypers(rng, d)
    op = dist_cls.rv_op
    params, stats, data = kernel_objects(module, x, hypers, n)
    state = new_state(n)
    labels = np.array([0, 0, 0, 0, 1, 2, 2])
    load_all_but(state, params, stats, data, labels, skip=6)
    new = op.block_log_predictive(x[[6, 5]], x[:4], hypers)
    assert new.shape == (2,)
    assert rel_err(new[0], log_pred(params, stats, data, 6, 0)) <= RTOL
    assert rel_err(new[1], log_pred(params, stats, data, 5, 0)) <= RTOL
    prior = op.block_log_predictive(x[[6]], x[:0], hypers)
    new_slot = int(state.free[state.counts[1] - 1])
    assert rel_err(prior[0], log_pred(params, stats, data, 6, new_slot)) <= RTOL


def test_block_posterior_draw_moments():
    rng = np.random.default_rng(8)
    d = 2
    rows = rng.normal(1.0, 1.0, size=(4, d))
    hm = (np.zeros(d), S0_FIXED, S_FIXED)
    draws = np.array([pmp.CollapsedMvNormal.rv_op.block_posterior_draw(rng, rows, hm)["mu"]
                      for _ in range(4000)])
    p0, p = np.linalg.inv(S0_FIXED), np.linalg.inv(S_FIXED)
    cov = np.linalg.inv(p0 + 4 * p)
    mean = cov @ (p @ rows.sum(axis=0))
    assert np.all(np.abs(draws.mean(axis=0) - mean) < 5 * np.sqrt(np.diag(cov) / 4000))
    assert np.allclose(np.cov(draws.T), cov, rtol=0.15, atol=0.01)
    hn = (np.zeros(d), 0.5, 5.0, S_FIXED)
    out = [pmp.CollapsedNIW.rv_op.block_posterior_draw(rng, rows, hn) for _ in range(4000)]
    mus, sigmas = np.array([o["mu"] for o in out]), np.array([o["Sigma"] for o in out])
    kappa, nu = 4.5, 9.0
    r = rows
    psi = S_FIXED + r.T @ r - np.outer(r.sum(0), r.sum(0)) / kappa
    e_sigma = psi / (nu - d - 1)
    assert np.allclose(mus.mean(axis=0), r.sum(0) / kappa, atol=5 * np.sqrt(e_sigma.max() / kappa / 4000))
    assert np.allclose(sigmas.mean(axis=0), e_sigma, rtol=0.1, atol=0.05)


def test_forward_draws():
    z = pmp.CRP.dist(alpha=1.0, n=6)
    y = pmp.CollapsedMvNormal.dist(z, 0.0, S0_FIXED, S_FIXED)
    assert pm.draw(y, random_seed=1).shape == (6, 2)
    assert pm.draw(y, draws=3, random_seed=1).shape == (3, 6, 2)
    w = pmp.CollapsedNIW.dist(z, [0.0, 1.0, 2.0], 1.0, 4.0, np.eye(3))
    assert pm.draw(w, draws=2, random_seed=1).shape == (2, 6, 3)
    # One block: rows share a mean, so Cov(y_0) = Sigma + Sigma0, Cov(y_0, y_1) = Sigma0.
    one = pmp.CollapsedMvNormal.dist(pt.zeros(2, dtype="int64"), 0.0, S0_FIXED, S_FIXED)
    draws = pm.draw(one, draws=4000, random_seed=2)
    c = np.cov(draws.reshape(4000, 4).T)
    assert np.allclose(c[:2, :2], S_FIXED + S0_FIXED, atol=0.3)
    assert np.allclose(c[:2, 2:], S0_FIXED, atol=0.3)
    with pm.Model():
        zz = pmp.CRP("z", alpha=1.0, n=5)
        pmp.CollapsedMvNormal("y", zz, 0.0, S0_FIXED, S_FIXED, observed=np.zeros((5, 2)))
        pmp.CollapsedNIW("w", zz, 0.0, 1.0, 3.0, S_FIXED, observed=np.zeros((5, 2)))
        prior = pm.sample_prior_predictive(5, random_seed=3)
    assert np.asarray(prior["prior_predictive"]["y"].values).shape[-2:] == (5, 2)
    assert np.asarray(prior["prior_predictive"]["w"].values).shape[-2:] == (5, 2)


# ------------------------------------------------------------------- input errors


def test_input_errors():
    Y = np.zeros((4, 2))
    bad = np.array([[1.0, 2.0], [2.0, 1.0]])  # symmetric, indefinite
    with pm.Model():
        z = pmp.CRP("z", alpha=1.0, n=4)
        with pytest.raises(ValueError, match="'Sigma0' must be positive definite"):
            pmp.CollapsedMvNormal("a", z, 0.0, bad, S_FIXED, observed=Y)
        with pytest.raises(ValueError, match="'Sigma' must be symmetric"):
            pmp.CollapsedMvNormal("b", z, 0.0, S0_FIXED, np.array([[1.0, 0.5], [0.0, 1.0]]),
                                  observed=Y)
        with pytest.raises(ValueError, match=r"'Sigma' must be a \(2, 2\) matrix"):
            pmp.CollapsedMvNormal("c", z, 0.0, S0_FIXED, np.eye(3), observed=Y)
        with pytest.raises(ValueError, match="'Sigma' is required"):
            pmp.CollapsedMvNormal("d", z, 0.0, S0_FIXED, observed=Y)
        with pytest.raises(ValueError, match="'mu0' has length 3"):
            pmp.CollapsedMvNormal("e", z, [0.0, 0.0, 0.0], S0_FIXED, S_FIXED, observed=Y)
        with pytest.raises(ValueError, match="'Psi0' must be positive definite"):
            pmp.CollapsedNIW("f", z, 0.0, 1.0, 3.0, bad, observed=Y)
        with pytest.raises(ValueError, match=r"'nu0' must be > D - 1 = 1"):
            pmp.CollapsedNIW("g", z, 0.0, 1.0, 1.0, S_FIXED, observed=Y)
        with pytest.raises(ValueError, match="'kappa0' must be positive"):
            pmp.CollapsedNIW("h", z, 0.0, 0.0, 3.0, S_FIXED, observed=Y)
        with pytest.raises(ValueError, match=r"'Psi0' must be a \(2, 2\) matrix"):
            pmp.CollapsedNIW("i", z, 0.0, 1.0, 3.0, np.eye(2)[0], observed=Y)
        Y2 = Y.copy()
        Y2[2, 1] = np.nan
        with pytest.raises(ValueError, match="'observed' contains NaN or inf.*row 2, column 1"):
            pmp.CollapsedMvNormal("j", z, 0.0, S0_FIXED, S_FIXED, observed=Y2)
        with pytest.raises(ValueError, match="'observed' contains NaN"):
            pmp.CollapsedNIW("k", z, 0.0, 1.0, 3.0, S_FIXED, observed=Y2)
    # Sampled values are checked too (PartitionTarget calls check_hyper_values).
    with pytest.raises(ValueError, match="'Sigma' must be positive definite"):
        pmp.CollapsedMvNormal.rv_op.check_hyper_values([np.zeros(2), S0_FIXED, bad], "'y'")
    with pytest.raises(ValueError, match="'nu0' = 0.5 must be > D - 1 = 1"):
        pmp.CollapsedNIW.rv_op.check_hyper_values([np.zeros(2), np.array(1.0), np.array(0.5),
                                                    S_FIXED], "'y'")
    with pytest.raises(ValueError, match="'Psi0' must be positive definite"):
        niw.make_params(np.zeros(2), 1.0, 3.0, bad, n=4)
