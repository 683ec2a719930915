"""pmp.Gibbs against the exact posterior over all set partitions (DESIGN §6)."""

import numpy as np
import pymc as pm
import pytest
from helpers import assert_exact, binary_data, kernel_draws, two_groups

import pymc_partitions as pmp
from pymc_partitions.kernels import sweep_block

ALPHA_GRID = {"alpha_log__": np.linspace(-25.0, 7.0, 1200)}


@pytest.mark.parametrize("n", [5, 6, 7])
def test_beta_bernoulli_fixed_hyperparameters(n):
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=n)
        pmp.CollapsedBetaBernoulli("y", partition=z, a=0.5, b=0.8, observed=binary_data(n, 3, n))
    assert_exact(model, draws=2500, seed=n)


def test_normal_fixed_hyperparameters_vector():
    n = 6
    Y = np.random.default_rng(3).normal(0.0, 1.3, size=(n, 2))
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.5, n=n)
        pmp.CollapsedNormal(
            "y", partition=z, mu0=[0.0, 0.5], tau=[1.0, 1.5], sigma=[1.0, 0.8], observed=Y
        )
    assert_exact(model, draws=2500, seed=11)


def test_two_likelihoods_on_one_partition():
    n = 6
    rng = np.random.default_rng(5)
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=n)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=1.0, sigma=1.0,
                            observed=rng.normal(0, 1.5, n))
        pmp.CollapsedBetaBernoulli("x", partition=z, a=1.0, b=1.0,
                                   observed=binary_data(n, 2, seed=6))
    assert_exact(model, draws=2500, seed=12)


def test_beta_bernoulli_alpha_sampled_by_nuts():
    n = 5
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        z = pmp.CRP("z", alpha=alpha, n=n)
        pmp.CollapsedBetaBernoulli("y", partition=z, a=1.0, b=1.0, observed=binary_data(n, 3, 21))
        nuts = pm.NUTS([alpha])  # explicitly: pm.sample would pick pmp.EscobarWest
    assert_exact(model, draws=2000, seed=21, grids=ALPHA_GRID, step=[nuts])


def test_normal_alpha_and_sigma_sampled_by_nuts():
    n = 5
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        z = pmp.CRP("z", alpha=alpha, n=n)
        sigma = pm.HalfNormal("sigma", 1.0)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=2.0, sigma=sigma,
                            observed=two_groups(n, 2, seed=31))
        nuts = pm.NUTS([alpha, sigma])  # explicitly: pm.sample would pick EscobarWest, HyperSlice
    grids = ALPHA_GRID | {"sigma_log__": np.linspace(-8.0, 4.0, 800)}
    assert_exact(model, draws=2000, seed=31, grids=grids, step=[nuts])


def block_gibbs_move(rng, chain):
    """Gibbs by the block primitive: each item in turn is the set C = {i} of
    ``sweep_block`` (Herlau et al. eq. 5, sampling branch) over every other block
    and one new block. Its conditional is Neal's, computed through
    ``log_prior_block`` and the chain rule instead of ``log_prior_pred``."""
    state = chain.state
    items = np.empty(1, dtype=np.int64)
    for i in rng.permutation(chain.n):
        items[0] = i
        k_i = state.labels[i]
        active = state.active[: state.counts[0]]
        others = active[active != k_i] if state.sizes[k_i] == 1 else active
        candidates = np.append(others, -1).astype(np.int64)
        sweep_block.sweep_block_entry(state, chain.prior, chain.params, chain.stats, chain.data,
                                      items, candidates, -1, rng.random(), chain.log_w)


@pytest.mark.parametrize("prior", ["crp", "pitman_yor", "fixed_blocks"])
def test_block_sweep_sampling_path_exact(prior):
    n = 6
    with pm.Model() as model:
        if prior == "crp":
            z = pmp.CRP("z", alpha=0.8, n=n)
        elif prior == "pitman_yor":
            z = pmp.PitmanYor("z", alpha=0.5, d=0.4, n=n)
        else:
            z = pmp.FixedBlocks("z", n=n, k=2)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=2.0, sigma=1.0,
                            observed=two_groups(n, 2, seed=51))
    start = np.array([0, 0, 0, 1, 1, 1]) if prior == "fixed_blocks" else None
    assert_exact(model, sampler=lambda: kernel_draws(model, block_gibbs_move, 2500, seed=5,
                                                     start=start))
