"""Block parameters from their conjugate posterior and posterior predictive densities.

Moments of the draws are checked against the conjugate posterior by Monte Carlo
(tolerances: 5 standard errors of the estimated moment); the predictive density is
checked against a direct computation written out here, and against normalisation.
"""

import warnings
from itertools import product

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy.special import logsumexp
from scipy.stats import norm

import pymc_partitions as pmp
from pymc_partitions import versions
from pymc_partitions.analysis.block_parameters import draw_block_parameters
from pymc_partitions.distributions.collapsed import (
    CollapsedLikelihoodRV,
    CollapsedNormalRV,
    collapsed_beta_bernoulli,
    collapsed_normal,
)
from pymc_partitions.distributions.partition import PartitionPriorRV, crp

S = 4000


def _check_moments(draws, mean, var):
    """draws (S, ...) against the exact mean and variance, within 5 standard errors.

    The standard error of the sample variance is sqrt((m4 - var^2) / S), with m4 the
    fourth central moment (estimated from the draws: valid for any distribution).
    """
    s = draws.shape[0]
    assert np.all(np.abs(draws.mean(0) - mean) < 5 * np.sqrt(var / s))
    m4 = ((draws - draws.mean(0)) ** 4).mean(0)
    assert np.all(np.abs(draws.var(0, ddof=1) - var) < 5 * np.sqrt((m4 - var**2) / s))


def test_normal_block_posterior_moments():
    rng = np.random.default_rng(0)
    data = rng.normal(size=(7, 2)) * 2.0
    mu0, tau, sigma = np.array([0.5, -1.0]), np.array([1.0, 2.0]), np.array([0.7, 1.3])
    two = np.array([0, 0, 1, 1, 1, 0, 1])
    three = np.array([0, 0, 1, 1, 2, 0, 2])
    labels = np.stack([two, three] * (S // 2))
    values, sizes = draw_block_parameters(collapsed_normal, rng, labels, data, [mu0, tau, sigma])
    mu = values["mu"]
    assert mu.shape == (S, 3, 2) and sizes.shape == (S, 3)
    assert np.all(np.isnan(mu[0::2, 2])) and not np.any(np.isnan(mu[1::2]))
    assert np.array_equal(sizes[0], [3, 4, 0]) and np.array_equal(sizes[1], [3, 2, 2])
    for rows, draws in [
        (two == 0, mu[0::2, 0]), (two == 1, mu[0::2, 1]),
        (three == 1, mu[1::2, 1]), (three == 2, mu[1::2, 2]),
    ]:
        m, total = rows.sum(), data[rows].sum(0)
        prec = 1 / tau**2 + m / sigma**2
        _check_moments(draws, (mu0 / tau**2 + total / sigma**2) / prec, 1 / prec)


def test_beta_bernoulli_block_posterior_moments():
    rng = np.random.default_rng(1)
    data = (rng.random((9, 3)) < 0.4).astype(float)
    a, b = np.array([1.0, 0.5, 2.0]), np.array([1.0, 2.0, 0.7])
    labels = np.tile([0, 1, 1, 0, 2, 2, 1, 0, 2], (S, 1))
    values, _ = draw_block_parameters(collapsed_beta_bernoulli, rng, labels, data, [a, b])
    theta = values["theta"]
    for k in range(3):
        rows = data[labels[0] == k]
        pa, pb = a + rows.sum(0), b + len(rows) - rows.sum(0)
        _check_moments(theta[:, k], pa / (pa + pb), pa * pb / ((pa + pb) ** 2 * (pa + pb + 1)))


def test_crp_prediction_rule():
    log_w = crp.predictive_log_weights([0.7], np.array([3.0, 1.0, 2.0]))
    np.testing.assert_allclose(np.exp(log_w), np.array([3, 1, 2, 0.7]) / 6.7, rtol=1e-12)
    assert abs(logsumexp(log_w)) < 1e-12


# ------------------------------------------------------------------ with pm.sample
X1 = np.array([-2.1, -1.7, -2.4, 0.1, 0.3, -0.2, 2.2, 1.8, 2.5, 2.0, -1.9, 0.0])
MU0, TAU = 0.3, 2.0


@pytest.fixture(scope="module")
def normal_fit():
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 2.0)
        z = pmp.CRP("z", alpha=alpha, n=X1.size)
        sigma = pm.HalfNormal("sigma", 1.0)
        pmp.CollapsedNormal("y", partition=z, mu0=MU0, tau=TAU, sigma=sigma, observed=X1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = pm.sample(150, tune=150, chains=2, cores=1, random_seed=3,
                              progressbar=False, compute_convergence_checks=False)
    return model, idata


def _posterior(idata, name):
    return np.asarray(versions.posterior_dataset(idata)[name].values)


def test_block_parameters_group(normal_fit):
    model, idata = normal_fit
    pmp.sample_block_parameters(idata, model, seed=4)
    bp = versions.group_dataset(idata, "block_parameters")
    mu, sizes = bp["y_mu"].values, bp["z_block_size"].values
    assert bp["y_mu"].dims == ("chain", "draw", "z_block", "y_mu_dim_0")
    labels, sigma = _posterior(idata, "z"), _posterior(idata, "sigma")
    k = _posterior(idata, "z_n_clusters")
    assert mu.shape[:3] == (2, 150, k.max()) and mu.shape[3] == 1
    # NaN exactly beyond each draw's number of blocks; sizes are the block sizes
    filled = ~np.isnan(mu[..., 0])
    assert np.array_equal(filled.sum(-1), k)
    assert np.array_equal(filled, np.arange(k.max()) < k[..., None])
    for c, d in [(0, 0), (1, 77), (1, 149)]:
        counts = np.bincount(pmp.canonicalize(labels[c, d]))
        assert np.array_equal(sizes[c, d, : counts.size], counts)
    # every draw used its own sigma: standardised residuals against the draw's
    # conjugate posterior are N(0, 1) over all (draw, block)
    resid = []
    for c, d in product(range(2), range(150)):
        lab = pmp.canonicalize(labels[c, d])
        for b in range(k[c, d]):
            rows = X1[lab == b]
            prec = 1 / TAU**2 + rows.size / sigma[c, d] ** 2
            mean = (MU0 / TAU**2 + rows.sum() / sigma[c, d] ** 2) / prec
            resid.append((mu[c, d, b, 0] - mean) * np.sqrt(prec))
    resid = np.array(resid)
    assert abs(resid.mean()) < 5 / np.sqrt(resid.size)
    assert abs(resid.var() - 1) < 5 * np.sqrt(2 / resid.size)
    # readable with ArviZ on either stack; calling again replaces the group
    summary = az.summary(idata, group="block_parameters", var_names=["y_mu"])
    assert len(summary) == k.max()
    pmp.sample_block_parameters(idata, model, seed=5)
    assert not np.array_equal(versions.group_dataset(idata, "block_parameters")["y_mu"].values, mu,
                              equal_nan=True)


def test_block_parameters_given_one_partition(normal_fit):
    model, idata = normal_fit
    fixed = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 0, 1])
    pmp.sample_block_parameters(idata, model, seed=6, group="fixed", partition=fixed)
    bp = versions.group_dataset(idata, "fixed")
    assert np.all(bp["z_block_size"].values == [4, 4, 4])
    mu = bp["y_mu"].values[..., 0].reshape(-1, 3)
    sigma = _posterior(idata, "sigma").ravel()
    for k in range(3):  # N(0, 1) residuals against each draw's conjugate posterior
        rows = X1[fixed == k]
        prec = 1 / TAU**2 + rows.size / sigma**2
        resid = (mu[:, k] - (MU0 / TAU**2 + rows.sum() / sigma**2) / prec) * np.sqrt(prec)
        assert abs(resid.mean()) < 5 / np.sqrt(resid.size)
        assert abs(resid.var() - 1) < 5 * np.sqrt(2 / resid.size)
    with pytest.raises(ValueError, match="'partition' must hold n = 12"):
        pmp.sample_block_parameters(idata, model, partition=fixed[:5])


def test_predictive_density_normal_by_hand(normal_fit):
    model, idata = normal_fit
    x = np.array([-2.0, 0.05, 4.0])
    got = pmp.posterior_predictive_density(idata, model, x)
    labels = _posterior(idata, "z").reshape(-1, X1.size)
    alpha = _posterior(idata, "alpha").ravel()
    sigma = _posterior(idata, "sigma").ravel()
    n = X1.size
    dens = np.zeros(x.size)
    for lab, a, s in zip(labels, alpha, sigma):
        new = a / (n + a) * norm.pdf(x, MU0, np.sqrt(TAU**2 + s**2))
        for b in np.unique(lab):
            rows = X1[lab == b]
            prec = 1 / TAU**2 + rows.size / s**2
            mean = (MU0 / TAU**2 + rows.sum() / s**2) / prec
            new += rows.size / (n + a) * norm.pdf(x, mean, np.sqrt(1 / prec + s**2))
        dens += new
    np.testing.assert_allclose(got, np.log(dens / labels.shape[0]), rtol=1e-10)
    per_draw = pmp.posterior_predictive_density(idata, model, x, combine=False)
    assert per_draw.shape == (2, 150, 3)


def test_predictive_density_integrates_to_one(normal_fit):
    model, idata = normal_fit
    grid = np.linspace(-20.0, 20.0, 4001)
    dens = np.exp(pmp.posterior_predictive_density(idata, model, grid))
    step = grid[1] - grid[0]
    assert abs((dens.sum() - 0.5 * (dens[0] + dens[-1])) * step - 1.0) < 1e-6


def test_predictive_density_beta_bernoulli():
    rng = np.random.default_rng(6)
    data = (rng.random((8, 3)) < 0.5).astype(float)
    alpha, a, b = 0.8, np.array([1.0, 0.5, 2.0]), np.array([1.0, 1.5, 0.5])
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=alpha, n=8)
        pmp.CollapsedBetaBernoulli("y", partition=z, a=a, b=b, observed=data)
        idata = pm.sample(100, tune=50, chains=2, cores=1, random_seed=7, progressbar=False,
                          compute_convergence_checks=False)
    cube = np.array(list(product([0.0, 1.0], repeat=3)))
    got = pmp.posterior_predictive_density(idata, model, cube)
    assert abs(np.exp(got).sum() - 1.0) < 1e-12  # a distribution over {0,1}^3
    labels = _posterior(idata, "z").reshape(-1, 8)
    dens = np.zeros(len(cube))
    for lab in labels:
        blocks = [data[lab == k] for k in np.unique(lab)] + [data[:0]]
        weights = [len(r) / (8 + alpha) for r in blocks[:-1]] + [alpha / (8 + alpha)]
        for rows, w in zip(blocks, weights):
            p1 = (a + rows.sum(0)) / (a + b + len(rows))
            dens += w * np.prod(np.where(cube == 1, p1, 1 - p1), axis=1)
    np.testing.assert_allclose(got, np.log(dens / len(labels)), rtol=1e-10)
    pmp.sample_block_parameters(idata, model, seed=8)
    theta = versions.group_dataset(idata, "block_parameters")["y_theta"].values
    assert theta.shape[-1] == 3 and np.nanmin(theta) > 0 and np.nanmax(theta) < 1


def test_clear_errors(normal_fit, monkeypatch):
    model, idata = normal_fit
    with pytest.raises(ValueError, match="var_names"):
        pmp.sample_block_parameters(idata, model, var_names=["nope"])
    with pytest.raises(ValueError, match="x_new"):
        pmp.posterior_predictive_density(idata, model, np.ones((2, 3)))
    with pytest.raises(ValueError, match="var_name"):
        pmp.posterior_predictive_density(idata, model, [0.0], var_name="nope")
    monkeypatch.setattr(CollapsedNormalRV, "block_posterior_draw",
                        CollapsedLikelihoodRV.block_posterior_draw)
    monkeypatch.setattr(CollapsedNormalRV, "block_log_predictive",
                        CollapsedLikelihoodRV.block_log_predictive)
    with pytest.raises(NotImplementedError, match="likelihood 'y' \\(CollapsedNormalRV\\)"):
        pmp.sample_block_parameters(idata, model)
    with pytest.raises(NotImplementedError, match="block_log_predictive"):
        pmp.posterior_predictive_density(idata, model, [0.0])
    monkeypatch.undo()
    monkeypatch.setattr(
        type(crp), "predictive_log_weights", PartitionPriorRV.predictive_log_weights
    )
    with pytest.raises(NotImplementedError, match="partition prior of 'z'"):
        pmp.posterior_predictive_density(idata, model, [0.0])
