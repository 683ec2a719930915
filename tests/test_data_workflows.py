"""PyMC data workflows on collapsed models: ``pm.Data`` / ``pm.set_data`` and the
posterior predictive (issue 11, defects 2 and 4).

- ``pm.set_data`` with new values of the same shape changes what both the partition
  steps and NUTS's log density see; a new shape or invalid values are refused.
- ``pm.sample_posterior_predictive`` draws each block's parameters from their
  posterior given the partition, the hyperparameters and the block's observed rows:
  for a fixed partition the replicate's mean per block is the exact posterior
  predictive mean (checked within 5 standard errors for every conjugate
  likelihood); ``predictive="mixed"`` keeps block parameters from their prior, as
  do prior predictive draws.
"""

import warnings

import numpy as np
import pymc as pm
import pytest
import xarray as xr

import pymc_partitions as pmp
from pymc_partitions import versions
from pymc_partitions.versions import ancestors
from pymc_partitions.distributions.relational import _irm_block_counts

N = 20
LABELS = np.repeat([0, 1], N // 2)
S = 400  # posterior predictive draws of a fixed partition


def _groups(seed=0, centres=(-5.0, 5.0)):
    rng = np.random.default_rng(seed)
    return np.asarray(centres)[LABELS] + rng.normal(0, 0.3, N)


def _normal_model(observed, **kwargs):
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=N)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=5.0, sigma=0.3, observed=observed,
                            **kwargs)
    return model


def _quiet_sample(model, draws=40, tune=20, chains=1, **kwargs):
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.sample(draws, tune=tune, chains=chains, cores=kwargs.pop("cores", 1),
                         random_seed=kwargs.pop("random_seed", 1), progressbar=False,
                         compute_convergence_checks=False, **kwargs)


def _co_clustered(idata, i, j):
    z = np.asarray(versions.posterior_dataset(idata)["z"].values)
    return float(np.mean(z[..., i] == z[..., j]))


def _reference_logp(data, labels):
    """log p(y, z) of a model built on constant ``data``, at partition ``labels``."""
    model = _normal_model(data)
    return float(model.compile_logp()({"z": labels}))


# ----------------------------------------------------------------------------- pm.set_data
def test_set_data_same_n_gives_the_new_posterior():
    """Same n, new values: the steps and the model's log density (what NUTS
    differentiates) both read the new data; the observed value in the graph stays
    the pm.Data container."""
    old = _groups()
    with pm.Model() as model:
        d = pm.Data("d", old)
        z = pmp.CRP("z", alpha=1.0, n=N)
        y = pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=5.0, sigma=0.3, observed=d)
    assert any(v is d for v in ancestors([model.rvs_to_values[y]]))
    before = _quiet_sample(model)
    assert _co_clustered(before, 0, N - 1) == 0.0  # two groups: the ends apart

    # New values: the first and last five items form one group, the middle ten another.
    new = old.copy()
    new[N - 5 :] = old[:5]
    with model:
        pm.set_data({"d": new})
    labels = np.r_[np.zeros(5), np.ones(10), np.zeros(5)].astype(np.int64)
    logp = float(model.compile_logp()({"z": labels}))
    assert np.isclose(logp, _reference_logp(new, labels), rtol=1e-10)

    after = _quiet_sample(model)
    # The old data give 0.0 and a middle item; the new data put 0 and N - 1 together
    # (a few early draws of the 40 may still hold them apart: the chain starts in one
    # block and tunes for only 20 iterations).
    assert _co_clustered(after, 0, N - 1) > 0.9
    assert _co_clustered(after, 0, N // 2) < 0.1
    post = versions.posterior_dataset(after)
    last = np.asarray(post["z"].values)[0, -1]
    log_joint = float(versions.group_dataset(after, "sample_stats")["log_joint"].values[0, -1])
    assert np.isclose(log_joint, _reference_logp(new, last), rtol=1e-8)


def test_set_data_read_at_chain_start_of_an_existing_step():
    """A step built before pm.set_data reads the new values when a chain starts
    (PyMC 5 copies steps between chains, PyMC 6 may reuse one instance)."""
    old = _groups()
    with pm.Model() as model:
        d = pm.Data("d", old)
        z = pmp.CRP("z", alpha=1.0, n=N)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=5.0, sigma=0.3, observed=d)
        step = pmp.Gibbs([z])
        pm.set_data({"d": np.r_[old[:10], old[:10]]})  # one group
    idata = _quiet_sample(model, chains=2, step=[step])
    assert _co_clustered(idata, 0, N - 1) > 0.9


def test_set_data_with_cores_2():
    """Worker processes see the values set before pm.sample."""
    old = _groups()
    with pm.Model() as model:
        d = pm.Data("d", old)
        z = pmp.CRP("z", alpha=1.0, n=N)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=5.0, sigma=0.3, observed=d)
        pm.set_data({"d": np.r_[old[:10], old[:10]]})  # one group
    idata = _quiet_sample(model, draws=20, chains=2, cores=2)
    assert _co_clustered(idata, 0, N - 1) > 0.9


def test_set_data_new_shape_is_refused():
    x2 = np.random.default_rng(0).normal(size=(N, 2))
    with pm.Model() as model:
        d = pm.Data("d", x2)
        z = pmp.CRP("z", alpha=1.0, n=N)
        pmp.CollapsedNormal("y", partition=z, observed=d)
    logp = model.compile_logp()
    for bad in (np.zeros((N + 1, 2)), np.zeros((N, 3))):
        with model:
            pm.set_data({"d": bad})
            with pytest.raises(ValueError, match=r"CollapsedNormal 'y'.*n = 20 items"):
                pmp.Gibbs([z])
        # NUTS's log density and forward draws refuse it too.
        with pytest.raises(ValueError, match=r"'y'.*must keep the shape \(20, 2\)"):
            logp({"z": LABELS})
        with model, pytest.raises(ValueError, match=r"'y'.*must keep the shape \(20, 2\)"):
            pm.sample_posterior_predictive(_fixed_partition_posterior(LABELS, 2),
                                           progressbar=False)


@pytest.mark.parametrize(
    "likelihood, good, bad, message",
    [
        (pmp.CollapsedNormal, np.zeros(N), np.r_[np.zeros(N - 1), np.nan], "NaN"),
        (pmp.CollapsedBetaBernoulli, np.zeros(N), np.r_[np.zeros(N - 1), 0.5], "only 0 and 1"),
        (pmp.CollapsedPoissonGamma, np.zeros(N), np.r_[np.zeros(N - 1), 1.5], "integer counts"),
        (pmp.CollapsedPoissonGamma, np.zeros(N), np.r_[np.zeros(N - 1), -1.0], "integer counts"),
    ],
)
def test_set_data_new_values_are_validated(likelihood, good, bad, message):
    with pm.Model():
        d = pm.Data("d", good)
        z = pmp.CRP("z", alpha=1.0, n=N)
        likelihood("y", partition=z, observed=d)
        pmp.Gibbs([z])  # valid data: no error
        pm.set_data({"d": bad})
        with pytest.raises(ValueError, match=message):
            pmp.Gibbs([z])


def test_irm_data_options_need_fixed_arrays():
    a = np.zeros((4, 4))
    with pm.Model():
        d = pm.Data("d", a)
        z = pmp.CRP("z", alpha=1.0, n=4)
        with pytest.raises(ValueError, match="pm.Data"):
            pmp.IRM("net", partition=z, observed=d, symmetrize=True)


# ----------------------------------------------------------------------------- predictive
def _fixed_partition_posterior(labels, draws=S):
    return xr.Dataset({"z": (("chain", "draw", "z_dim_0"), np.broadcast_to(labels, (1, draws) +
                                                                            labels.shape))},
                      coords={"chain": [0], "draw": np.arange(draws)})


def _replicates(model, labels, name="y", seed=0):
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pp = pm.sample_posterior_predictive(_fixed_partition_posterior(labels), var_names=[name],
                                            random_seed=seed, progressbar=False)
    return np.asarray(versions.group_dataset(pp, "posterior_predictive")[name].values)[0]


def _blocks(labels):
    return [np.flatnonzero(labels == k) for k in np.unique(labels)]


def _normal_mean(rows):
    prec = 1 / 25 + len(rows) / 0.09
    return (rows.sum(0) / 0.09) / prec


def _cases():
    rng = np.random.default_rng(3)
    yb = (rng.random((N, 3)) < np.where(LABELS[:, None] == 0, 0.9, 0.1)).astype(float)
    yc = rng.poisson(np.where(LABELS[:, None] == 0, 20.0, 1.0), size=(N, 2)).astype(float)
    ym = rng.multinomial(30, [0.8, 0.1, 0.1], size=N).astype(float)
    ym[LABELS == 1] = ym[LABELS == 1][:, ::-1]
    yg = np.c_[_groups(), -_groups(2)]
    eye = np.eye(2)
    return {
        "normal": (
            lambda z, kw: pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=5.0, sigma=0.3,
                                              observed=yg, **kw),
            yg, _normal_mean),
        "beta_bernoulli": (
            lambda z, kw: pmp.CollapsedBetaBernoulli("y", partition=z, a=1.0, b=1.0,
                                                     observed=yb, **kw),
            yb, lambda rows: (1 + rows.sum(0)) / (2 + len(rows))),
        "poisson_gamma": (
            lambda z, kw: pmp.CollapsedPoissonGamma("y", partition=z, a=1.0, b=1.0,
                                                    observed=yc, **kw),
            yc, lambda rows: (1 + rows.sum(0)) / (1 + len(rows))),
        "dirichlet_multinomial": (
            lambda z, kw: pmp.CollapsedDirichletMultinomial("y", partition=z, concentration=1.0,
                                                            observed=ym, **kw),
            ym[:, None, :], lambda rows: 30 * (1 + rows.sum(0)) / (1 + rows.sum(0)).sum(-1,
                                                                                   keepdims=True)),
        "normal_inverse_gamma": (
            lambda z, kw: pmp.CollapsedNormalInverseGamma("y", partition=z, mu0=0.0, kappa0=0.01,
                                                          a0=2.0, b0=1.0, observed=yg, **kw),
            yg, lambda rows: rows.sum(0) / (0.01 + len(rows))),
        "mv_normal": (
            lambda z, kw: pmp.CollapsedMvNormal("y", partition=z, mu0=np.zeros(2),
                                                Sigma0=25 * eye, Sigma=0.09 * eye, observed=yg,
                                                **kw),
            yg, _normal_mean),
        "niw": (
            lambda z, kw: pmp.CollapsedNIW("y", partition=z, mu0=np.zeros(2), kappa0=0.01,
                                           nu0=4.0, Psi0=eye, observed=yg, **kw),
            yg, lambda rows: rows.sum(0) / (0.01 + len(rows))),
    }


@pytest.mark.parametrize("case", list(_cases()))
def test_posterior_predictive_given_the_partition(case):
    """Given the true partition, each block's replicate mean is the exact posterior
    predictive mean (its observed rows' conjugate update), within 5 standard errors;
    with predictive="mixed" it is not (the prior's)."""
    build, data, exact_mean = _cases()[case]

    def model_for(**kw):
        with pm.Model() as model:
            z = pmp.CRP("z", alpha=1.0, n=N)
            build(z, kw)
        return model

    for kw, conditional in (({}, True), ({"predictive": "mixed"}, False)):
        reps = _replicates(model_for(**kw), LABELS)
        assert reps.shape == (S,) + data.shape
        hits = []
        for idx in _blocks(LABELS):
            block = reps[:, idx].mean(1)  # (S, ...) block mean of each replicate
            se = block.std(0) / np.sqrt(S) + 1e-12
            hits.append(np.all(np.abs(block.mean(0) - exact_mean(data[idx])) < 5 * se))
        assert all(hits) if conditional else not all(hits), kw


def test_irm_posterior_predictive_given_the_partition():
    """IRM: the replicate's edge density per block pair is the posterior mean of
    eta_kl = (a + E_kl) / (a + b + P_kl)."""
    rng = np.random.default_rng(4)
    n = 16
    labels = np.repeat([0, 1], n // 2)
    p = np.where(labels[:, None] == labels[None, :], 0.9, 0.05)
    upper = np.triu(rng.random((n, n)) < p, 1)
    adjacency = (upper | upper.T).astype(float)
    for kw, conditional in (({}, True), ({"predictive": "mixed"}, False)):
        with pm.Model() as model:
            z = pmp.CRP("z", alpha=1.0, n=n)
            pmp.IRM("net", partition=z, a=1.0, b=1.0, observed=adjacency, **kw)
        reps = _replicates(model, labels, name="net")
        assert np.all(reps == np.swapaxes(reps, 1, 2)) and not np.any(np.diagonal(reps, 0, 1, 2))
        _, edges, pairs = _irm_block_counts(adjacency, labels)
        exact = (1 + edges) / (2 + pairs)
        got = np.stack([_irm_block_counts(r, labels)[1] / pairs for r in reps])
        se = got.std(0) / np.sqrt(len(reps)) + 1e-12
        assert np.all(np.abs(got.mean(0) - exact) < 5 * se) == conditional


def test_kmeans_energy_has_no_predictive():
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=N)
        pmp.KMeansEnergy("y", partition=z, temperature=1.0, observed=_groups())
    with pytest.raises(NotImplementedError, match="not a probability distribution"):
        _replicates(model, LABELS)


def test_prior_predictive_keeps_prior_block_parameters():
    """Prior predictive draws (the partition drawn too) ignore the observed data:
    the replicates' spread is the prior's sqrt(tau^2 + sigma^2) ~ 5, although the data
    sit at +-5 with sd 0.3 (a leak of the data would show as sd ~ 5 around them)."""
    model = _normal_model(_groups() + 40.0)
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prior = pm.sample_prior_predictive(300, random_seed=3)
    y = np.asarray(versions.group_dataset(prior, "prior_predictive")["y"].values)
    assert abs(y.mean()) < 2.0 and 4.0 < y.std() < 6.0


@pytest.mark.default_backend
def test_posterior_predictive_of_a_fit_and_its_density():
    """End to end with PyMC's default backend: after pm.sample, the replicates of each
    group concentrate around the group's mean (sd of block mean and noise ~ 0.3);
    pmp.posterior_predictive_density and a new step still see one likelihood
    afterwards (PyMC 5 appends the observed variables to model.observed_RVs again)."""
    y = _groups()
    model = _normal_model(y)
    idata = _quiet_sample(model, draws=30)
    x_new = np.array([-5.0, 0.0, 5.0])
    density = pmp.posterior_predictive_density(idata, model, x_new)
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pm.sample_posterior_predictive(idata, random_seed=2, progressbar=False,
                                       extend_inferencedata=True)
    reps = np.asarray(versions.group_dataset(idata, "posterior_predictive")["y"].values)[..., 0]
    for idx, centre in ((LABELS == 0, -5.0), (LABELS == 1, 5.0)):
        assert np.all(np.abs(reps[..., idx] - y[idx].mean()) < 2.0), centre
    np.testing.assert_allclose(pmp.posterior_predictive_density(idata, model, x_new), density)
    with model:
        assert [lik.name for lik in pmp.Gibbs([model["z"]]).target.likelihoods] == ["y"]


def test_predictive_option_is_checked():
    with pm.Model():
        z = pmp.CRP("z", alpha=1.0, n=N)
        with pytest.raises(ValueError, match="'predictive' must be 'conditional'"):
            pmp.CollapsedNormal("y", partition=z, observed=_groups(), predictive="posterior")

