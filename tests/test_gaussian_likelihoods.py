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
    exact_log_posterior,
    fixed_hyper_log_posterior,
    integrate_log_scale,
    sample,
    terms_over_partitions,
    tv_test,
)

import pymc_partitions as pmp
from pymc_partitions.compat import small_function_mode
from pymc_partitions.kernels import assign_labels, new_state, refresh_all, summarise, sweep_block
from pymc_partitions.kernels.components import add, combine, log_pred, mv_normal, niw
from pymc_partitions.kernels.priors import crp
from pymc_partitions.kernels.state import open_slot

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
                                           mode=small_function_mode())
    fn = _LOGP_FNS[key]
    values = [np.asarray(h, dtype=np.float64) for h in hypers]
    return lambda labels, x: float(fn(np.asarray(labels, dtype=np.int64), x, *values))


def kernel_objects(module, x, hypers, n):
    params = module.make_params(*hypers, n=n)
    data = module.make_data(x)
    return params, module.alloc_stats(n, data, params), data


def load_all_but(state, params, stats, data, labels, skip):
    """Load ``labels`` for every item except ``skip`` (left unassigned)."""
    for j in range(labels.shape[0]):
        if j == skip:
            continue
        k = int(labels[j])
        if state.sizes[k] == 0:
            open_slot(state, k)
        add(params, stats, data, j, k)
        state.sizes[k] += 1
        state.labels[j] = k


def check_log_preds(f, params, stats, data, state, x, labels, i):
    n = labels.shape[0]
    rest = np.delete(np.arange(n), i)
    new_slot = int(state.free[state.counts[1] - 1])
    for k in list(np.unique(labels[rest])) + [None]:
        members = rest[labels[rest] == k] if k is not None else np.array([], dtype=int)
        slot = int(k) if k is not None else new_slot
        kernel = log_pred(params, stats, data, i, slot)
        with_i = np.append(members, i)
        model = f(np.zeros(len(with_i), dtype=np.int64), x[with_i])
        without = f(np.zeros(len(members), dtype=np.int64), x[members]) if len(members) else 0.0
        assert rel_err(kernel, model - without) <= RTOL, (k, kernel, model - without)
    # Full-data form: i in block k versus i alone, on all n rows.
    for k in np.unique(labels[rest]):
        joined, alone = labels.copy(), labels.copy()
        joined[i] = k
        alone[i] = labels.max() + 1
        diff = f(pmp.canonicalize(joined), x) - f(pmp.canonicalize(alone), x)
        kernel = log_pred(params, stats, data, i, int(k)) - log_pred(params, stats, data, i, new_slot)
        assert rel_err(kernel, diff) <= RTOL or abs(kernel - diff) < 1e-12


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
                        labels, i)
        # New hyperparameters: params rebuilt, every active slot and the top free
        # slot refreshed (PartitionTarget.kernel_args), statistics kept.
        hypers2 = make_hypers(rng, d)
        params2 = module.make_params(*hypers2, n=n)
        refresh_all(state, params2, stats)
        f2 = likelihood_logp_fn(dist_cls, d, hypers2)
        check_log_preds(f2, params2, stats, data, state, x, labels, i)
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
    fn = model.compile_logp(jacobian=False, mode=small_function_mode())
    pm_, pn_ = mv_normal.make_params(*hm, n=n), niw.make_params(*hn, n=n)
    for trial in range(4):
        labels = pmp.canonicalize(rng.integers(0, 3, n))
        source = int(rng.integers(labels.max() + 1))
        members = np.flatnonzero(labels == source)
        items = np.sort(rng.choice(members, size=int(rng.integers(1, len(members) + 1)),
                                   replace=False)).astype(np.int64)
        candidates = np.array(list(range(labels.max() + 1)) + [-1], dtype=np.int64)
        ref = []
        for k in candidates:
            z2 = labels.copy()
            z2[items] = k if k >= 0 else n + 5
            ref.append(float(fn({"z": pmp.canonicalize(z2)})))
        ref = np.array(ref)
        ref_logp = ref - np.logaddexp.reduce(ref)
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


def clustered(n, d, seed):
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 2, size=(2, d))
    return centres[rng.integers(0, 2, n)] + rng.normal(0, 1, size=(n, d))


S_FIXED = np.array([[1.0, 0.6], [0.6, 1.5]])
S0_FIXED = np.array([[2.0, -0.8], [-0.8, 1.2]])


def test_exact_mv_normal_fixed_hyperparameters():
    n = 6
    Y = clustered(n, 2, seed=41)
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.2, n=n)
        pmp.CollapsedMvNormal("y", partition=z, mu0=[0.0, 0.5], Sigma0=S0_FIXED, Sigma=S_FIXED,
                              observed=Y)
    partitions = pmp.set_partitions(n)
    log_post = fixed_hyper_log_posterior(model, "z", partitions)
    idata = sample(model, draws=4000, seed=41)
    tv, bound, ess = tv_test(idata, "z", partitions, log_post)
    print(f"TV {tv:.4f} bound {bound:.4f} ESS {ess:.0f} max p {np.exp(log_post).max():.3f}")
    assert tv < bound, (tv, bound, ess)


def test_exact_niw_fixed_hyperparameters():
    n = 6
    Y = clustered(n, 2, seed=42)
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=n)
        pmp.CollapsedNIW("y", partition=z, mu0=0.0, kappa0=0.5, nu0=3.0, Psi0=S_FIXED,
                         observed=Y)
    partitions = pmp.set_partitions(n)
    log_post = fixed_hyper_log_posterior(model, "z", partitions)
    idata = sample(model, draws=4000, seed=42)
    tv, bound, ess = tv_test(idata, "z", partitions, log_post)
    print(f"TV {tv:.4f} bound {bound:.4f} ESS {ess:.0f} max p {np.exp(log_post).max():.3f}")
    assert tv < bound, (tv, bound, ess)


def test_exact_mv_normal_covariance_scale_sampled_by_nuts():
    """Sigma = s^2 S with s ~ HalfNormal sampled by NUTS: the reference integrates s
    out by quadrature; the step refreshes the kernel (new basis W) at every draw."""
    n = 5
    Y = clustered(n, 2, seed=43)
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=n)
        s = pm.HalfNormal("s", 1.0)
        pmp.CollapsedMvNormal("y", partition=z, mu0=0.0, Sigma0=S0_FIXED,
                              Sigma=s**2 * S_FIXED, observed=Y)
    partitions = pmp.set_partitions(n)
    prior = terms_over_partitions(model, [z], partitions, "z")
    lik = integrate_log_scale(model, [s, model["y"]], "s_log__", partitions, "z",
                              np.linspace(-8.0, 4.0, 400))
    log_post = exact_log_posterior(model, "z", [prior, lik])
    with model:  # explicit NUTS: fails if the logp had no gradient in Sigma
        steps = [pm.NUTS([s]), pmp.Gibbs([z])]
    idata = sample(model, draws=1500, seed=43, step=steps)
    tv, bound, ess = tv_test(idata, "z", partitions, log_post)
    print(f"TV {tv:.4f} bound {bound:.4f} ESS {ess:.0f} max p {np.exp(log_post).max():.3f}")
    assert tv < bound, (tv, bound, ess)


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
                              mode=small_function_mode())
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
