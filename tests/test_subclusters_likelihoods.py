"""pmp.SubClusters for every collapsed likelihood with conjugate block-parameter draws
(issue 33): the explicit-parameter primitives of each component (kernels/components/
*.py; the conjugate posteriors Chang & Fisher 2013 draw block parameters from)
against scipy's densities and against the closed-form conjugate posteriors of the
distribution classes (the NumPy reference of ``block_posterior_draw``), then the
sampler against the exact posterior over all set partitions (CRP, n = 5, fixed
hyperparameters), and the refusals of likelihoods without explicit draws."""

import numpy as np
import pymc as pm
import pytest
import scipy.stats as sps
from helpers import assert_exact, binary_data, two_groups
from test_exact_count_likelihoods import counts_data, matrices_data

import pymc_partitions as pmp
from pymc_partitions.distributions.counts import (
    CollapsedDirichletMultinomialRV,
    CollapsedPoissonGammaRV,
)
from pymc_partitions.distributions.gaussian import CollapsedMvNormalRV, CollapsedNIWRV
from pymc_partitions.distributions.normal_inverse_gamma import CollapsedNormalInverseGammaRV
from pymc_partitions.kernels.components import add
from pymc_partitions.kernels.components.explicit import (
    draw_explicit,
    explicit_width,
    log_density_explicit,
    supports,
)
from pymc_partitions.kernels.random import new_stream
from pymc_partitions.step_methods.target import PartitionModelError

S = np.array([[1.0, 0.6], [0.6, 1.5]])
S0 = np.array([[2.0, -0.8], [-0.8, 1.2]])
N_DRAWS = 20000
Z_MAX = 4.5  # per feature; ~20 features a case: family-wise level ~1e-4 (fixed seeds)


# ------------------------------------------------------------------ per-component cases
# Each case: the likelihood's op, its hyperparameters (hyper_names order), data, a
# decoder of an explicit row into named parameters (the component's row layout), the
# log density of one item under them by scipy, and the features whose means over
# draws are compared with their closed-form posterior expectations (given the block's
# rows, from the distribution class's NumPy posterior).


def _mvn_decode(params, row):
    d = params.m0.shape[0]
    return {"mu": np.linalg.solve(params.W.T, row[:d])}


def _mvn_logpdf(par, hypers, x):
    return sps.multivariate_normal(par["mu"], hypers[2]).logpdf(x)


def _mvn_features(par, hypers, rows):
    mean, cov, _ = CollapsedMvNormalRV._posterior(rows, hypers)
    mu = par["mu"]
    r = mu - mean
    feats = np.concatenate([mu, r * r, [r[0] * r[1]]])
    expect = np.concatenate([mean, np.diag(cov), [cov[0, 1]]])
    return feats, expect


def _niw_decode(params, row):
    d = params.mu0.shape[0]
    x = row[d:d + d * d].reshape(d, d)
    prec = x @ x.T
    return {"mu": row[:d], "prec": prec, "Sigma": np.linalg.inv(prec)}


def _niw_logpdf(par, hypers, x):
    return sps.multivariate_normal(par["mu"], par["Sigma"]).logpdf(x)


def _niw_features(par, hypers, rows):
    mean, kappa, nu, psi = CollapsedNIWRV._posterior(rows, hypers)
    d = mean.shape[0]
    e_sigma = psi / (nu - d - 1)  # IW(Psi, nu) mean
    v = np.linalg.inv(psi)
    e_prec = nu * v  # Wishart(Psi^-1, nu) mean
    var_prec = nu * (v**2 + np.outer(np.diag(v), np.diag(v)))
    r = par["mu"] - mean
    dp = par["prec"] - e_prec
    iu = np.triu_indices(d)
    feats = np.concatenate([par["mu"], par["Sigma"][iu], par["prec"][iu], r * r, (dp * dp)[iu]])
    expect = np.concatenate([mean, e_sigma[iu], e_prec[iu], np.diag(e_sigma) / kappa,
                             var_prec[iu]])
    return feats, expect


def _nig_decode(params, row):
    d = params.mu0.shape[0]
    return {"mu": row[:d], "sigma2": 1.0 / row[d:2 * d]}


def _nig_logpdf(par, hypers, x):
    return sps.norm.logpdf(x, par["mu"], np.sqrt(par["sigma2"])).sum()


def _nig_features(par, hypers, rows):
    loc, kappa, a, b = CollapsedNormalInverseGammaRV._posterior(rows, hypers)
    prec = 1.0 / par["sigma2"]
    r, dp = par["mu"] - loc, prec - a / b
    feats = np.concatenate([par["mu"], prec, r * r, dp * dp])
    expect = np.concatenate([loc, a / b, b / ((a - 1.0) * kappa), a / b**2])
    return feats, expect


def _pg_decode(params, row):
    return {"rate": np.exp(row[:params.a.shape[0]])}


def _pg_logpdf(par, hypers, x):
    return sps.poisson.logpmf(x, par["rate"]).sum()


def _pg_features(par, hypers, rows):
    shape, rate = CollapsedPoissonGammaRV._posterior(rows, hypers)
    r = par["rate"] - shape / rate
    return np.concatenate([par["rate"], r * r]), np.concatenate([shape / rate, shape / rate**2])


def _dm_decode(params, row):
    return {"theta": np.exp(row.reshape(params.conc.shape))}


def _dm_logpdf(par, hypers, y):
    theta = par["theta"]
    return sum(sps.multinomial(int(y[p].sum()), theta[p] / theta[p].sum()).logpmf(y[p])
               for p in range(y.shape[0]))


def _dm_features(par, hypers, rows):
    post = CollapsedDirichletMultinomialRV._posterior(rows, hypers)
    mean = post / post.sum(axis=1, keepdims=True)
    var = mean * (1.0 - mean) / (post.sum(axis=1, keepdims=True) + 1.0)
    r = par["theta"] - mean
    return np.concatenate([par["theta"].ravel(), (r * r).ravel()]), np.concatenate(
        [mean.ravel(), var.ravel()])


CASES = {
    "mv_normal": (pmp.CollapsedMvNormal, [np.array([0.0, 0.5]), S0, S],
                  two_groups(8, 2, seed=11), _mvn_decode, _mvn_logpdf, _mvn_features),
    "niw": (pmp.CollapsedNIW, [np.array([0.0, 0.5]), np.array(0.5), np.array(7.0), S],
            two_groups(8, 2, seed=12), _niw_decode, _niw_logpdf, _niw_features),
    "normal_inverse_gamma": (
        pmp.CollapsedNormalInverseGamma,
        [np.array([0.0, 0.5]), np.array([0.5, 1.0]), np.array([3.0, 2.5]), np.array([1.0, 2.0])],
        two_groups(8, 2, seed=13), _nig_decode, _nig_logpdf, _nig_features),
    "poisson_gamma": (pmp.CollapsedPoissonGamma,
                      [np.array([1.0, 2.0, 0.5]), np.array([0.5, 1.0, 0.3])],
                      counts_data(8, 3, seed=14), _pg_decode, _pg_logpdf, _pg_features),
    "dirichlet_multinomial": (pmp.CollapsedDirichletMultinomial,
                              [np.array([[0.5, 1.0, 2.0], [1.0, 1.0, 0.3]])],
                              matrices_data(8, 2, 3, seed=15), _dm_decode, _dm_logpdf,
                              _dm_features),
}


def component(name, block):
    """(op, hypers, x, params, stats, data) with the items ``block`` in slot 0 and
    slot 1 empty."""
    dist, hypers, x, *_ = CASES[name]
    op = dist.rv_op
    data = op.kernel_data(x)
    params = op.kernel_params(hypers, x.shape[0])
    stats = op.alloc_stats(2, data, params)
    for i in block:
        add(params, stats, data, i, 0)
    return op, hypers, x, params, stats, data


@pytest.mark.parametrize("name", sorted(CASES))
def test_log_density_explicit_is_scipys(name):
    """At parameters drawn by ``draw_explicit`` (posterior of a block of 3 items, and
    the prior), the row decoded by the component's layout gives scipy's log density
    of every item; the row is as wide as ``explicit_width`` says."""
    _, hypers, x, params, stats, data = component(name, [0, 2, 5])
    decode, logpdf = CASES[name][3], CASES[name][4]
    assert supports(params)
    width = explicit_width(params)
    theta = np.full((4, width), np.nan)
    stream = new_stream(1)
    for row in range(4):
        draw_explicit(params, stats, row % 2, stream, theta, row)
    assert np.all(np.isfinite(theta))
    for row in range(4):
        par = decode(params, theta[row])
        for i in range(x.shape[0]):
            got = log_density_explicit(params, theta, row, data, i)
            np.testing.assert_allclose(got, logpdf(par, hypers, x[i]), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("block", [[1, 3, 4, 6], []], ids=["block", "empty"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_draw_explicit_is_the_conjugate_posterior(name, block):
    """Means over 20000 draws of the parameters and of their squared deviations (and
    the Wishart precision's) against the closed-form posterior moments given the
    block's rows (the prior for an empty slot): every z-score below 4.5."""
    _, hypers, x, params, stats, data = component(name, block)
    decode, features = CASES[name][3], CASES[name][5]
    theta = np.zeros((1, explicit_width(params)))
    stream = new_stream(2)
    rows = x[block]
    feats, expect = [], None
    for _ in range(N_DRAWS):
        draw_explicit(params, stats, 0, stream, theta, 0)
        f, expect = features(decode(params, theta[0]), hypers, rows)
        feats.append(f)
    feats = np.array(feats)
    z = (feats.mean(axis=0) - expect) / (feats.std(axis=0, ddof=1) / np.sqrt(N_DRAWS))
    assert np.all(np.abs(z) < Z_MAX), np.round(z, 2)


# ------------------------------------------------------------------ exact enumeration


def check_exact(build, n, draws, seed):
    """pmp.SubClusters on CRP(1) and the likelihood ``build(z)`` adds (fixed
    hyperparameters) against the exact posterior over all partitions of n items."""
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=n)
        build(z)
    step = pmp.SubClusters([model["z"]], model=model, n_proposals=2, n_launch=2,
                           n_gibbs_sweeps=0)
    idata = assert_exact(model, draws=draws, seed=seed, step=[step])[1]
    stats = idata.sample_stats
    assert int(stats["split_accepted"].sum()) > 0 and int(stats["merge_accepted"].sum()) > 0


EXACT = {
    "mv_normal": lambda z: pmp.CollapsedMvNormal(
        "y", partition=z, mu0=[0.0, 0.5], Sigma0=S0, Sigma=S, observed=two_groups(5, 2, seed=41)),
    "niw": lambda z: pmp.CollapsedNIW(
        "y", partition=z, mu0=0.0, kappa0=0.5, nu0=3.0, Psi0=S,
        observed=two_groups(5, 2, seed=42)),
    "normal_inverse_gamma": lambda z: pmp.CollapsedNormalInverseGamma(
        "y", z, mu0=[0.0, 0.5], kappa0=[0.5, 1.0], a0=[2.0, 1.5], b0=[1.0, 2.0],
        observed=two_groups(5, 2, seed=43)),
    "poisson_gamma": lambda z: pmp.CollapsedPoissonGamma(
        "y", z, a=[1.0, 2.0, 0.5], b=[0.5, 1.0, 0.3], observed=counts_data(5, 3, seed=44)),
    "dirichlet_multinomial": lambda z: pmp.CollapsedDirichletMultinomial(
        "y", z, concentration=np.array([[0.5, 1.0, 2.0], [1.0, 1.0, 0.3]]),
        observed=matrices_data(5, 2, 3, seed=45)),
}


@pytest.mark.parametrize("name", sorted(EXACT))
def test_subclusters_exact(name):
    check_exact(EXACT[name], 5, 2500, 40 + sorted(EXACT).index(name))


# ------------------------------------------------------------------ refusals


def _irm(z):
    adj = (np.random.default_rng(1).random((5, 5)) < 0.4).astype(float)
    pmp.IRM("y", partition=z, a=1.0, b=1.0, observed=np.triu(adj, 1) + np.triu(adj, 1).T)


def _kmeans(z):
    pmp.KMeansEnergy("y", partition=z, temperature=1.0, observed=two_groups(5, 2, seed=1))


@pytest.mark.parametrize("build", [_irm, _kmeans], ids=["irm", "kmeans_energy"])
def test_refuses_likelihoods_without_explicit_draws(build):
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=5)
        build(z)
    with pytest.raises(PartitionModelError,
                       match=r"likelihood 'y' \(\w+\) has no explicit-parameter draws.*"
                             r"CollapsedPoissonGamma.*pmp\.Gibbs or pmp\.SplitMerge"):
        pmp.SubClusters([model["z"]], model=model)


def test_refuses_proper_coloring():
    ring = np.array([[i, (i + 1) % 5] for i in range(5)])
    with pm.Model() as model:
        pmp.ProperColoring("z", ring, q=3, n=5)
        pmp.CollapsedBetaBernoulli("y", partition=model["z"], a=1.0, b=1.0,
                                   observed=binary_data(5, 3, 1))
    with pytest.raises(PartitionModelError, match=r"pmp\.Gibbs or pmp\.SplitMerge"):
        pmp.SubClusters([model["z"]], model=model)
