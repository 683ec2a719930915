"""pmp.Gibbs against the exact posterior over all set partitions (DESIGN §6)."""

import numpy as np
import pymc as pm
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


def binary_data(n, d, seed):
    return (np.random.default_rng(seed).random((n, d)) < 0.5).astype(float)


def normal_data(n, d, seed):
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 2, size=(2, d))
    return centres[rng.integers(0, 2, n)] + rng.normal(0, 1, size=(n, d))


@pytest.mark.parametrize("n", [5, 6, 7])
def test_beta_bernoulli_fixed_hyperparameters(n):
    Y = binary_data(n, 3, seed=n)
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=n)
        pmp.CollapsedBetaBernoulli("y", partition=z, a=0.5, b=0.8, observed=Y)
    partitions = pmp.set_partitions(n)
    log_post = fixed_hyper_log_posterior(model, "z", partitions)
    idata = sample(model, draws=5000, seed=n)
    tv, bound, ess = tv_test(idata, "z", partitions, log_post)
    print(f"TV {tv:.4f} bound {bound:.4f} ESS {ess:.0f} max p {np.exp(log_post).max():.3f}")
    assert tv < bound, (tv, bound, ess)


def test_normal_fixed_hyperparameters_vector():
    n = 6
    Y = np.random.default_rng(3).normal(0.0, 1.3, size=(n, 2))
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.5, n=n)
        pmp.CollapsedNormal(
            "y", partition=z, mu0=[0.0, 0.5], tau=[1.0, 1.5], sigma=[1.0, 0.8], observed=Y
        )
    partitions = pmp.set_partitions(n)
    log_post = fixed_hyper_log_posterior(model, "z", partitions)
    idata = sample(model, draws=5000, seed=11)
    tv, bound, ess = tv_test(idata, "z", partitions, log_post)
    print(f"TV {tv:.4f} bound {bound:.4f} ESS {ess:.0f} max p {np.exp(log_post).max():.3f}")
    assert tv < bound, (tv, bound, ess)


def test_two_likelihoods_on_one_partition():
    n = 6
    rng = np.random.default_rng(5)
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=n)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=1.0, sigma=1.0,
                            observed=rng.normal(0, 1.5, n))
        pmp.CollapsedBetaBernoulli("x", partition=z, a=1.0, b=1.0,
                                   observed=binary_data(n, 2, seed=6))
    partitions = pmp.set_partitions(n)
    log_post = fixed_hyper_log_posterior(model, "z", partitions)
    idata = sample(model, draws=5000, seed=12)
    tv, bound, ess = tv_test(idata, "z", partitions, log_post)
    print(f"TV {tv:.4f} bound {bound:.4f} ESS {ess:.0f} max p {np.exp(log_post).max():.3f}")
    assert tv < bound, (tv, bound, ess)


def test_beta_bernoulli_alpha_sampled_by_nuts():
    n = 5
    Y = binary_data(n, 3, seed=21)
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        z = pmp.CRP("z", alpha=alpha, n=n)
        pmp.CollapsedBetaBernoulli("y", partition=z, a=1.0, b=1.0, observed=Y)
    partitions = pmp.set_partitions(n)
    grid = np.linspace(-25.0, 7.0, 1200)
    prior_term = integrate_log_scale(model, [alpha, z], "alpha_log__", partitions, "z", grid)
    lik = terms_over_partitions(model, [model["y"]], partitions, "z")
    log_post = exact_log_posterior(model, "z", [prior_term, lik])
    idata = sample(model, draws=4000, seed=21)
    tv, bound, ess = tv_test(idata, "z", partitions, log_post)
    print(f"TV {tv:.4f} bound {bound:.4f} ESS {ess:.0f} max p {np.exp(log_post).max():.3f}")
    assert tv < bound, (tv, bound, ess)


def test_normal_alpha_and_sigma_sampled_by_nuts():
    n = 5
    Y = normal_data(n, 2, seed=31)
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        z = pmp.CRP("z", alpha=alpha, n=n)
        sigma = pm.HalfNormal("sigma", 1.0)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=2.0, sigma=sigma, observed=Y)
    partitions = pmp.set_partitions(n)
    grid = np.linspace(-25.0, 7.0, 1200)
    prior_term = integrate_log_scale(model, [alpha, z], "alpha_log__", partitions, "z", grid)
    sigma_grid = np.linspace(-8.0, 4.0, 800)
    lik_term = integrate_log_scale(
        model, [sigma, model["y"]], "sigma_log__", partitions, "z", sigma_grid
    )
    log_post = exact_log_posterior(model, "z", [prior_term, lik_term])
    idata = sample(model, draws=4000, seed=31)
    tv, bound, ess = tv_test(idata, "z", partitions, log_post)
    print(f"TV {tv:.4f} bound {bound:.4f} ESS {ess:.0f} max p {np.exp(log_post).max():.3f}")
    assert tv < bound, (tv, bound, ess)


def test_the_bound_detects_a_wrong_sampler():
    """Negative control: draws from a model with alpha = 3 fail the test against the
    exact posterior of alpha = 1, so the bound has power at these run lengths."""
    n = 6
    Y = binary_data(n, 3, seed=6)

    def model_with(alpha):
        with pm.Model() as model:
            z = pmp.CRP("z", alpha=alpha, n=n)
            pmp.CollapsedBetaBernoulli("y", partition=z, a=0.5, b=0.8, observed=Y)
        return model

    partitions = pmp.set_partitions(n)
    log_post = fixed_hyper_log_posterior(model_with(1.0), "z", partitions)
    idata = sample(model_with(3.0), draws=5000, seed=6)
    tv, bound, ess = tv_test(idata, "z", partitions, log_post)
    print(f"TV {tv:.4f} bound {bound:.4f} ESS {ess:.0f} max p {np.exp(log_post).max():.3f}")
    assert tv > bound, (tv, bound, ess)
