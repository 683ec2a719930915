"""Population Based Clustering (Goswami, Liu & Wong 2005): the tempered target as a
dispatch wrapper, the mutation (§3.1) and random exchange (§3.6) kernels, and their
exactness on a temperature ladder against the enumerated targets."""

import numpy as np
import pymc as pm
import pytest
from helpers import Exact, KernelChain, assert_exact, binary_data, exact_posterior, kernel_draws
from scipy.special import logsumexp

import pymc_partitions as pmp
from pymc_partitions.kernels import gibbs
from pymc_partitions.kernels.bookkeeping import log_joint_entry
from pymc_partitions.kernels.components import log_marginal, log_pred
from pymc_partitions.kernels.errors import check_item
from pymc_partitions.kernels.priors import log_prior_block, log_prior_pred
from pymc_partitions.kernels.tempering import Tempered, TemperedPrior, temper, untempered

N_ITEMS = 6


def bernoulli_model(n=N_ITEMS, seed=6):
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=n)
        pmp.CollapsedBetaBernoulli("y", partition=z, a=0.5, b=0.8,
                                   observed=binary_data(n, 3, seed))
    return model


def dirichlet_multinomial_model(n=N_ITEMS, seed=3):
    counts = np.random.default_rng(seed).integers(0, 5, size=(n, 4))
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=0.8, n=n)
        pmp.CollapsedDirichletMultinomial("y", z, concentration=1.5, observed=counts)
    return model


def kmeans_model(n=N_ITEMS, k=3, seed=8):
    """The k-means energy of Goswami et al. §7.3 with a fixed number of blocks."""
    rng = np.random.default_rng(seed)
    y = rng.normal(0.0, 1.0, size=(n, 2)) + np.repeat([[0.0, 0.0], [2.5, 0.0], [0.0, 2.5]],
                                                       -(-n // 3), axis=0)[:n]
    with pm.Model() as model:
        z = pmp.FixedBlocks("z", n=n, k=k)
        pmp.KMeansEnergy("y", z, temperature=2.0, observed=y)
    return model


def k_block_start(n, k):
    """Labels 0..k-1 then k-1 repeated: a partition with exactly k blocks."""
    return np.minimum(np.arange(n), k - 1).astype(np.int64)


MODELS = {
    "beta-bernoulli": (bernoulli_model, None),
    "dirichlet-multinomial": (dirichlet_multinomial_model, None),
    "kmeans-fixed-blocks": (kmeans_model, k_block_start(N_ITEMS, 3)),
}


def tempered_exact(exact, inv_t):
    """The exact target pi(z)^(1/t), normalised, from the exact pi."""
    log_p = exact.log_post * inv_t
    return Exact(exact.partitions, log_p - logsumexp(log_p))


# ------------------------------------------------------------------ 1. tempering


@pytest.mark.parametrize("name", list(MODELS))
def test_tempered_log_target_differences(name):
    """Every primitive the moves read returns 1/t times its untempered value, and so
    do log-target differences between random partitions."""
    build, start = MODELS[name]
    model = build()
    chain = KernelChain(model, start=start)
    inv_t = 0.37
    prior_t, params_t = temper(chain.prior, chain.params, inv_t)
    assert untempered(prior_t, params_t) == (chain.prior, chain.params)
    stats, data = chain.stats, chain.data
    # Primitives, dispatched from Python.
    for k in range(chain.n):
        for i in range(chain.n):
            ref = log_pred(chain.params, stats, data, i, k)
            assert log_pred(params_t, stats, data, i, k) == inv_t * ref
        assert log_marginal(params_t, stats, k) == inv_t * log_marginal(chain.params, stats, k)
    for size in range(chain.n):
        for n_blocks in range(1, chain.n):
            ref = log_prior_pred(chain.prior, size, n_blocks)
            assert log_prior_pred(prior_t, size, n_blocks) == inv_t * ref
            ref = log_prior_block(chain.prior, size, 2, n_blocks)
            assert log_prior_block(prior_t, size, 2, n_blocks) == inv_t * ref
    # Log-target differences (compiled log joint) over random partitions in the support.
    partitions = pmp.set_partitions(chain.n)
    exact = exact_posterior(model)
    rows = np.flatnonzero(np.isfinite(exact.log_post))
    rows = np.random.default_rng(1).choice(rows, size=12, replace=False)
    values = []
    for row in rows:
        chain.reload(partitions[row])
        values.append((log_joint_entry(chain.state, chain.prior, chain.params, chain.stats),
                       log_joint_entry(chain.state, prior_t, params_t, chain.stats)))
    values = np.array(values)
    assert np.all(np.isfinite(values))
    np.testing.assert_allclose(np.diff(values[:, 1]), inv_t * np.diff(values[:, 0]),
                               rtol=1e-12, atol=1e-12)
    # ... the untempered ones being the model's own log-density differences.
    np.testing.assert_allclose(np.diff(values[:, 0]), np.diff(exact.log_post[rows]),
                               rtol=1e-9, atol=1e-9)


def test_temper_validates():
    with pytest.raises(ValueError, match="inverse temperature"):
        temper(None, None, 0.0)
    with pytest.raises(ValueError, match="inverse temperature"):
        temper(None, None, np.inf)


def tempered_gibbs_move(inv_t):
    def move(rng, chain):
        failed = gibbs.run_sweeps(chain.stream, 1, chain.state, TemperedPrior(chain.prior, inv_t),
                                  chain.params, chain.stats, chain.data, chain.log_w, chain.order)
        check_item(failed, "tempered gibbs")
    return move


@pytest.mark.parametrize("name", ["beta-bernoulli", "kmeans-fixed-blocks"])
def test_tempered_gibbs_exact(name):
    """A Gibbs sweep on the tempered target samples p(z | y)^(1/t), t = 2."""
    build, start = MODELS[name]
    model = build()
    inv_t = 0.5
    exact = tempered_exact(exact_posterior(model), inv_t)
    assert_exact(model, exact=exact, sampler=lambda: kernel_draws(
        model, tempered_gibbs_move(inv_t), 1500, seed=3, start=start,
        wrap_params=lambda p: Tempered(p, inv_t)))
