"""The CRP variable and the collapsed likelihoods as PyMC distributions."""

import math

import numpy as np
import pymc as pm
import pytest
from scipy.special import gammaln

import pymc_partitions as pmp


def ewens(labels, alpha):
    sizes = np.bincount(labels)
    sizes = sizes[sizes > 0]
    n = len(labels)
    return (len(sizes) * math.log(alpha) + gammaln(alpha) - gammaln(alpha + n)
            + gammaln(sizes).sum())


def test_set_partitions_counts_bell_numbers():
    bell = [1, 2, 5, 15, 52, 203, 877]
    for n, b in enumerate(bell, start=1):
        parts = pmp.set_partitions(n)
        assert parts.shape == (b, n)
        assert len({tuple(p) for p in parts}) == b
        assert np.array_equal(pmp.canonicalize(parts), parts)


def test_canonicalize():
    assert pmp.canonicalize([3, 3, 1, 7, 1]).tolist() == [0, 0, 1, 2, 1]
    assert pmp.canonicalize([[2, 0], [0, 0]]).tolist() == [[0, 1], [0, 0]]


def test_crp_logp_is_ewens_and_normalised():
    alpha, n = 1.7, 5
    z = pmp.CRP.dist(alpha=alpha, n=n)
    parts = pmp.set_partitions(n)
    logps = np.array([pm.logp(z, p).eval() for p in parts])
    assert np.allclose(logps, [ewens(p, alpha) for p in parts], rtol=1e-12)
    assert np.isclose(np.logaddexp.reduce(logps), 0.0, atol=1e-12)
    # Any labelling of a partition has the partition's probability; out of range is -inf.
    assert np.isclose(pm.logp(z, np.array([4, 4, 2, 2, 0])).eval(), ewens(np.array([0, 0, 1, 1, 2]), alpha))
    assert pm.logp(z, np.array([0, 1, 5, 0, 0])).eval() == -np.inf
    assert pm.logp(z, np.array([0, -1, 0, 0, 0])).eval() == -np.inf


def test_crp_logp_gradient_in_alpha():
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        pmp.CRP("z", alpha=alpha, n=6)
    dlogp = model.compile_dlogp(vars=[alpha])
    point = model.initial_point()
    point["z"] = np.array([0, 0, 1, 1, 2, 0])
    assert np.isfinite(dlogp(point)).all() and np.abs(dlogp(point)).sum() > 0


def test_crp_forward_draws_are_canonical_and_ewens_distributed():
    alpha, n = 1.3, 4
    draws = pm.draw(pmp.CRP.dist(alpha=alpha, n=n), draws=20000, random_seed=1)
    assert draws.shape == (20000, n) and draws.dtype == np.int64
    assert np.array_equal(pmp.canonicalize(draws), draws)
    parts = pmp.set_partitions(n)
    index = {tuple(p): i for i, p in enumerate(parts)}
    freq = np.bincount([index[tuple(d)] for d in draws], minlength=len(parts)) / len(draws)
    exact = np.exp([ewens(p, alpha) for p in parts])
    # iid draws: TV bound as in helpers.tv_test with M = 20000, delta = 1e-4.
    bound = 0.5 * np.sqrt(exact * (1 - exact) / 20000).sum() + np.sqrt(np.log(1e4) / 40000)
    assert 0.5 * np.abs(freq - exact).sum() < bound


def test_prior_predictive_and_summaries():
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        z = pmp.CRP("z", alpha=alpha, n=8)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=1.0, sigma=0.5,
                            observed=np.zeros((8, 2)))
        pmp.CollapsedBetaBernoulli("b", partition=z, a=1.0, b=1.0, observed=np.zeros((8, 3)))
        prior = pm.sample_prior_predictive(50, random_seed=2)
    zs = np.asarray(prior["prior"]["z"].values).reshape(-1, 8)
    assert np.array_equal(pmp.canonicalize(zs), zs)
    n_clusters = np.asarray(prior["prior"]["z_n_clusters"].values).ravel()
    assert np.array_equal(n_clusters, zs.max(axis=1) + 1)
    frac = np.asarray(prior["prior"]["z_largest_cluster_frac"].values).ravel()
    assert np.allclose(frac, [np.bincount(r).max() / 8 for r in zs])
    ys = np.asarray(prior["prior_predictive"]["y"].values)
    assert ys.shape[-2:] == (8, 2)
    bs = np.asarray(prior["prior_predictive"]["b"].values)
    assert set(np.unique(bs)) <= {0.0, 1.0}
    assert model["z"].owner.op.name == "crp"


def test_support_point_is_one_block():
    with pm.Model() as model:
        pmp.CRP("z", alpha=1.0, n=5)
    assert model.initial_point()["z"].tolist() == [0, 0, 0, 0, 0]


def test_summaries_can_be_switched_off():
    with pm.Model() as model:
        pmp.CRP("z", alpha=1.0, n=5, summaries=False)
    assert not model.deterministics


# ------------------------------------------------------------------- input errors


@pytest.mark.parametrize("alpha", [0.0, -1.0, np.inf, np.nan])
def test_constant_alpha_must_be_positive(alpha):
    with pm.Model():
        with pytest.raises(ValueError, match="'alpha' must be positive"):
            pmp.CRP("z", alpha=alpha, n=5)


@pytest.mark.parametrize("n", [0, -3, 2.5])
def test_n_must_be_positive_integer(n):
    with pm.Model():
        with pytest.raises(ValueError, match="'n'"):
            pmp.CRP("z", alpha=1.0, n=n)


def test_observed_with_nan_or_inf():
    Y = np.zeros((5, 2))
    Y[3, 1] = np.nan
    with pm.Model():
        z = pmp.CRP("z", alpha=1.0, n=5)
        with pytest.raises(ValueError, match="'observed' contains NaN or inf.*row 3, column 1"):
            pmp.CollapsedNormal("y", partition=z, observed=Y)
        Y[3, 1] = np.inf
        with pytest.raises(ValueError, match="NaN or inf"):
            pmp.CollapsedBetaBernoulli("b", partition=z, observed=Y)


def test_observed_shape_and_length():
    with pm.Model():
        z = pmp.CRP("z", alpha=1.0, n=5)
        with pytest.raises(ValueError, match="'observed' has 4 rows but partition 'z' has n = 5"):
            pmp.CollapsedNormal("y", partition=z, observed=np.zeros((4, 2)))
        with pytest.raises(ValueError, match=r"'observed' must be an \(n, D\) array"):
            pmp.CollapsedNormal("y2", partition=z, observed=np.zeros((5, 2, 2)))
        with pytest.raises(ValueError, match="'observed' is required"):
            pmp.CollapsedNormal("y3", partition=z)


def test_beta_bernoulli_requires_binary_data():
    with pm.Model():
        z = pmp.CRP("z", alpha=1.0, n=3)
        with pytest.raises(ValueError, match="only 0 and 1.*row 1, column 0"):
            pmp.CollapsedBetaBernoulli("b", partition=z, observed=np.array([[0, 1], [2, 0], [1, 1]]))


def test_hyperparameter_errors():
    with pm.Model():
        z = pmp.CRP("z", alpha=1.0, n=3)
        with pytest.raises(ValueError, match="'sigma' must be positive"):
            pmp.CollapsedNormal("y", partition=z, sigma=0.0, observed=np.zeros((3, 2)))
        with pytest.raises(ValueError, match="'tau' has length 3 but the data have D = 2"):
            pmp.CollapsedNormal("y2", partition=z, tau=[1.0, 1.0, 1.0], observed=np.zeros((3, 2)))
        with pytest.raises(ValueError, match="'a' must be positive"):
            pmp.CollapsedBetaBernoulli("b", partition=z, a=-1.0, observed=np.zeros((3, 1)))


def test_partition_must_be_a_partition_variable():
    with pm.Model():
        z = pmp.CRP("z", alpha=1.0, n=3)
        with pytest.raises(ValueError, match="'partition' must be a partition variable"):
            pmp.CollapsedNormal("y", partition=z[::-1], observed=np.zeros((3, 1)))
        with pytest.raises(ValueError, match="'partition' must be a partition variable"):
            pmp.CollapsedNormal("y2", partition=np.zeros(3, dtype=int), observed=np.zeros((3, 1)))


def test_vector_observed_is_one_dimension():
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=4)
        y = pmp.CollapsedNormal("y", partition=z, observed=np.arange(4.0))
    assert model.rvs_to_values[y].data.shape == (4, 1)
    with pm.Model() as column:  # the same density as the (4, 1) column
        z2 = pmp.CRP("z", alpha=1.0, n=4)
        pmp.CollapsedNormal("y", partition=z2, observed=np.arange(4.0)[:, None])
    labels = {"z": np.array([0, 0, 1, 0])}
    assert np.isclose(model.compile_logp()(labels), column.compile_logp()(labels), rtol=1e-12)


def test_forward_draw_shapes():
    z = pmp.CRP.dist(alpha=1.0, n=6)
    y = pmp.CollapsedNormal.dist(z, 0.0, 1.0, 0.5, n_dims=2)
    assert pm.draw(y, random_seed=1).shape == (6, 2)
    assert pm.draw(y, draws=3, random_seed=1).shape == (3, 6, 2)
    b = pmp.CollapsedBetaBernoulli.dist(z, [1.0, 1.0, 1.0], 1.0)
    assert pm.draw(b, draws=2, random_seed=1).shape == (2, 6, 3)
    batched = pm.draw(pmp.CRP.dist(alpha=np.array([0.1, 50.0]), n=6), random_seed=1)
    assert batched.shape == (2, 6)
    assert np.array_equal(pmp.canonicalize(batched), batched)
