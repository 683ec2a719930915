"""Leave-one-out terms of collapsed likelihoods (``pmp.compute_log_likelihood``).

1. Each likelihood's term log p(y_i | y_-i, x, z_-i) equals the value computed from
   the model's own PyTensor log densities: item i's label summed over the blocks of
   z_-i and a new one, weighted by the prior (and the other likelihoods x), minus
   log p(y_-i | z_-i) on the data without item i (without node i's row and column
   for the IRM).
2. With n = 8, ``az.loo`` on these terms from ``pm.sample`` draws is within 0.1 of
   the exact elpd_loo = sum_i log p(y_i | y_-i), from marginal likelihoods over all
   partitions of 8 and of 7 items; the same identity holds exactly over the exact
   posterior. Controls that must be far off: PyMC's joint term, and the terms that
   condition on z_i too.
3. ``pm.compute_log_likelihood`` and ``pm.sample(idata_kwargs={"log_likelihood":
   True})`` give these terms (and PyMC's own for other observed variables).
"""

import functools
import warnings
import zlib

import arviz as az
import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
import xarray as xr
from helpers import REFERENCE_MODE, KernelChain, exact_posterior, sample
from scipy.special import logsumexp

import pymc_partitions as pmp
from pymc_partitions import versions
from pymc_partitions.analysis.loo import _has_group
from pymc_partitions.kernels.components import add, log_pred, remove

N = 7
RTOL = 1e-8


def posterior_idata(posterior):
    """An InferenceData (ArviZ < 1) or DataTree (ArviZ >= 1) holding ``posterior``
    (dict of arrays with leading (chain, draw) axes)."""
    if int(az.__version__.split(".")[0]) >= 1:
        return az.from_dict({"posterior": posterior})
    return az.from_dict(posterior=posterior)


def spd(rng, d, scale):
    a = rng.normal(size=(d, d))
    return scale * (a @ a.T / d + 0.5 * np.eye(d))


def random_graph(rng, n, density):
    upper = np.triu(rng.random((n, n)) < density, 1)
    return (upper | upper.T).astype(float)


def drop_row(x, i):
    return np.delete(x, i, axis=0)


def drop_node(x, i):
    return np.delete(np.delete(x, i, axis=0), i, axis=1)


def logp_fn(build, ndim):
    """``f(labels, x)``: the PyTensor log density of ``build(z, y)`` (a ``.dist``) at
    labels and data of any number of items."""
    z = pt.lvector("z")
    y = pt.tensor("y", shape=(None,) * ndim, dtype="float64")
    fn = pytensor.function([z, y], pm.logp(build(z, y), y).sum(), mode=REFERENCE_MODE)
    return lambda labels, x: float(fn(np.asarray(labels, dtype=np.int64), x))


def crp_logp(alpha, n):
    z = pt.lvector("z")
    fn = pytensor.function([z], pm.logp(pmp.CRP.dist(alpha=alpha, n=n), z), mode=REFERENCE_MODE)
    return lambda labels: float(fn(np.asarray(labels, dtype=np.int64)))


def oracle(labels, i, prior, f_y, x, drop, others=()):
    """log p(y_i | y_-i, x, z_-i) from model log densities: sum over item i's label k
    (each block of z_-i, and a new one) of p(z^k) p(x | z^k) p(y | z^k), normalised
    by the same without y, over p(y_-i | z_-i)."""
    rest = np.delete(np.arange(labels.shape[0]), i)
    num, den = [], []
    for k in [*np.unique(labels[rest]), labels.max() + 1]:
        zk = labels.copy()
        zk[i] = k
        zk = pmp.canonicalize(zk)
        base = prior(zk) + sum(f(zk, d) for f, d in others)
        den.append(base)
        num.append(base + f_y(zk, x))
    return logsumexp(num) - logsumexp(den) - f_y(pmp.canonicalize(labels[rest]), drop(x, i))


def random_partitions(rng, shape, n, n_blocks=3):
    z = pmp.canonicalize(rng.integers(0, n_blocks, size=(*shape, n)))
    z[0, 1] = z[0, 0]  # a repeated draw (the kernel copies it)
    return z


def assert_close(values, reference, what):
    err = np.abs(values - reference)
    assert np.all(err <= RTOL * np.abs(reference) + 1e-9), (what, values, reference)


# ------------------------------------------------------------------ 1. every likelihood
def _dm_dist(z, y):
    return pmp.CollapsedDirichletMultinomial.dist(z, np.array([[0.8, 1.5, 0.4], [1.1, 0.6, 2.0]]),
                                                  y.sum(axis=2))


def _likelihood_cases():
    r = np.random.default_rng(11)
    mvn = {"mu0": np.array([0.1, -0.3]), "Sigma0": spd(r, 2, 2.0), "Sigma": spd(r, 2, 0.7)}
    niw = {"mu0": np.array([0.4, 0.2]), "kappa0": 0.7, "nu0": 3.5, "Psi0": spd(r, 2, 1.5)}
    mvn_items = r.normal(0, 1.5, (N, 2))
    return {
        # name: (class, hypers, observed, .dist builder, data ndim, drop)
        "normal": (
            pmp.CollapsedNormal,
            {"mu0": [0.3, -0.2], "tau": [1.5, 0.8], "sigma": [0.6, 1.1]},
            r.normal(0, 1.5, (N, 2)),
            lambda z, y: pmp.CollapsedNormal.dist(z, mu0=[0.3, -0.2], tau=[1.5, 0.8],
                                                  sigma=[0.6, 1.1], n_dims=2),
            2, drop_row,
        ),
        "beta_bernoulli": (
            pmp.CollapsedBetaBernoulli,
            {"a": [0.7, 1.3, 2.0], "b": 1.1},
            (r.random((N, 3)) < 0.4).astype(float),
            lambda z, y: pmp.CollapsedBetaBernoulli.dist(z, a=[0.7, 1.3, 2.0], b=1.1, n_dims=3),
            2, drop_row,
        ),
        "normal_inverse_gamma": (
            pmp.CollapsedNormalInverseGamma,
            {"mu0": 0.2, "kappa0": 0.8, "a0": 2.0, "b0": 1.5},
            r.normal(0, 2.0, (N, 2)),
            lambda z, y: pmp.CollapsedNormalInverseGamma.dist(z, mu0=0.2, kappa0=0.8, a0=2.0,
                                                              b0=1.5, n_dims=2),
            2, drop_row,
        ),
        "poisson_gamma": (
            pmp.CollapsedPoissonGamma,
            {"a": [2.0, 0.7], "b": 0.5},
            r.poisson(3.0, (N, 2)).astype(float),
            lambda z, y: pmp.CollapsedPoissonGamma.dist(z, a=[2.0, 0.7], b=0.5, n_dims=2),
            2, drop_row,
        ),
        "dirichlet_multinomial": (
            pmp.CollapsedDirichletMultinomial,
            {"concentration": np.array([[0.8, 1.5, 0.4], [1.1, 0.6, 2.0]])},
            r.multinomial(6, [0.5, 0.3, 0.2], size=(N, 2)).astype(float),
            _dm_dist, 3, drop_row,
        ),
        "mv_normal": (
            pmp.CollapsedMvNormal, mvn, mvn_items,
            lambda z, y: pmp.CollapsedMvNormal.dist(z, n_dims=2, **mvn), 2, drop_row,
        ),
        "niw": (
            pmp.CollapsedNIW, niw, r.normal(0, 1.5, (N, 2)),
            lambda z, y: pmp.CollapsedNIW.dist(z, n_dims=2, **niw), 2, drop_row,
        ),
        "irm": (
            pmp.IRM, {"a": 0.8, "b": 1.4}, random_graph(r, N, 0.45),
            lambda z, y: pmp.IRM.dist(z, a=0.8, b=1.4), 2, drop_node,
        ),
    }


CASES = _likelihood_cases()
ALPHA = 1.3


@pytest.mark.parametrize("case", sorted(CASES))
def test_terms_equal_model_logp(case):
    """Every likelihood: the kernel's term of every item and draw equals the value from
    the model's PyTensor log densities, dims (chain, draw, item) with item the observed
    variable's first dimension."""
    cls, hypers, x, build, ndim, drop = CASES[case]
    rng = np.random.default_rng(zlib.crc32(case.encode()))
    dims = ("item", *[f"axis_{j}" for j in range(1, x.ndim)])
    coords = {name: [f"{name}{j}" for j in range(size)] for name, size in zip(dims, x.shape)}
    with pm.Model(coords=coords) as model:
        z = pmp.CRP("z", alpha=ALPHA, n=N)
        cls("y", partition=z, observed=x, dims=dims, **hypers)
    labels = random_partitions(rng, (2, 3), N)
    ll = pmp.compute_log_likelihood(posterior_idata({"z": labels}), model,
                                    extend_inferencedata=False)["y"]
    assert ll.dims == ("chain", "draw", "item")
    assert list(ll["item"].values) == coords["item"]
    prior, f_y = crp_logp(ALPHA, N), logp_fn(build, ndim)
    ref = np.array([[[oracle(row, i, prior, f_y, x, drop) for i in range(N)] for row in chain]
                    for chain in labels])
    assert_close(ll.values, ref, case)


def test_free_hyperparameters_are_read_per_draw():
    """alpha and sigma from the posterior, draw by draw (runs of equal values share one
    kernel call: repeated values are included)."""
    rng = np.random.default_rng(3)
    x = rng.normal(0, 1.5, (N, 1))
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        sigma = pm.HalfNormal("sigma", 1.0)
        z = pmp.CRP("z", alpha=alpha, n=N)
        pmp.CollapsedNormal("y", partition=z, mu0=0.1, tau=1.2, sigma=sigma, observed=x)
    labels = random_partitions(rng, (2, 4), N)
    sigmas = np.array([[0.5, 0.5, 0.9, 0.9], [0.9, 1.7, 1.7, 0.3]])
    alphas = np.array([[0.4, 0.4, 0.4, 2.5], [2.5, 2.5, 1.0, 1.0]])
    idata = posterior_idata({"z": labels, "sigma": sigmas, "alpha": alphas})
    ll = pmp.compute_log_likelihood(idata, model)["log_likelihood"]["y"].values
    zs, ys, a_s, s_s = pt.lvector(), pt.dmatrix(), pt.dscalar(), pt.dscalar()
    f = pytensor.function([zs, ys, s_s], pm.logp(
        pmp.CollapsedNormal.dist(zs, 0.1, 1.2, s_s, n_dims=1), ys).sum(), mode=REFERENCE_MODE)
    g = pytensor.function([zs, a_s], pm.logp(pmp.CRP.dist(alpha=a_s, n=N), zs), mode=REFERENCE_MODE)
    for c in range(2):
        for d in range(4):
            a, sd = alphas[c, d], sigmas[c, d]
            ref = [oracle(labels[c, d], i, lambda zz, a=a: float(g(zz, a)),
                          lambda zz, xx, sd=sd: float(f(zz, xx, sd)), x, drop_row)
                   for i in range(N)]
            assert_close(ll[c, d], np.array(ref), (c, d))


def test_colouring_other_likelihood_and_energy():
    """A proper-colouring prior, a second likelihood and a k-means energy on one
    partition: the term of y leaves out y_i only; the colouring, the other likelihood
    and the energy weigh item i's blocks. The energy has no predictive density: asked
    for by name it is refused, otherwise left out with a warning."""
    rng = np.random.default_rng(5)
    edges = np.array([[0, 1], [1, 2], [2, 3], [4, 5], [5, 6], [6, 0]])
    q = 4
    xn = rng.normal(0, 1.5, (N, 2))
    xb = (rng.random((N, 3)) < 0.5).astype(float)
    with pm.Model() as model:
        z = pmp.ProperColoring("z", edges, q=q, n=N)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=1.3, sigma=0.8, observed=xn)
        pmp.CollapsedBetaBernoulli("b", partition=z, a=0.9, b=1.4, observed=xb)
        pmp.KMeansEnergy("energy", partition=z, temperature=2.0, observed=xn)
    labels = []
    while len(labels) < 6:
        cand = rng.integers(0, q, N)
        if not np.any(cand[edges[:, 0]] == cand[edges[:, 1]]):
            labels.append(pmp.canonicalize(cand))
    idata = posterior_idata({"z": np.array(labels).reshape(2, 3, N)})
    labels = np.asarray(idata["posterior"]["z"].values)
    with pytest.raises(ValueError, match=r"\['energy'\] are Gibbs energies"):
        pmp.compute_log_likelihood(idata, model, var_names=["energy"])
    # Through PyMC (never raises after sampling): the energy is left out with a warning.
    with pytest.warns(UserWarning, match="leave-one-out is not defined"):
        ll = pm.compute_log_likelihood(idata, model=model, var_names=["y", "energy"],
                                       extend_inferencedata=False, progressbar=False)
    assert list(ll.data_vars) == ["y"]
    zs = pt.lvector()
    g = pytensor.function([zs], pm.logp(pmp.ProperColoring.dist(edges, q=q, n=N), zs),
                          mode=REFERENCE_MODE)
    prior = lambda zz: float(g(zz))
    f_y = logp_fn(lambda z, y: pmp.CollapsedNormal.dist(z, 0.0, 1.3, 0.8, n_dims=2), 2)
    others = [
        (logp_fn(lambda z, y: pmp.CollapsedBetaBernoulli.dist(z, 0.9, 1.4, n_dims=3), 2), xb),
        (logp_fn(lambda z, y: pmp.KMeansEnergy.dist(z, 2.0, n_dims=2), 2), xn),
    ]
    ref = np.array([[[oracle(row, i, prior, f_y, xn, drop_row, others) for i in range(N)]
                     for row in chain] for chain in labels])
    assert_close(ll["y"].values, ref, "y")
    with pm.Model() as energy_only:
        z = pmp.CRP("z", alpha=ALPHA, n=N)
        pmp.KMeansEnergy("energy", partition=z, temperature=2.0, observed=xn)
    with pytest.warns(UserWarning, match="Left out"), pytest.raises(
        ValueError, match="no collapsed likelihood for which leave-one-out is defined"
    ):
        pmp.compute_log_likelihood(idata, energy_only)


def test_bad_arguments():
    rng = np.random.default_rng(9)
    x = rng.normal(size=(N, 1))
    with pm.Model() as model:
        sigma = pm.HalfNormal("sigma", 1.0)
        z = pmp.CRP("z", alpha=1.0, n=N)
        pmp.CollapsedNormal("y", partition=z, sigma=sigma, observed=x)
        pm.Normal("w", 0.0, sigma, observed=[0.3])
    labels = random_partitions(rng, (1, 2), N)
    with pytest.raises(ValueError, match=r"var_names \['w'\] are not collapsed likelihoods"):
        pmp.compute_log_likelihood(posterior_idata({"z": labels, "sigma": np.ones((1, 2))}),
                                   model, var_names=["w"])
    with pytest.raises(ValueError, match="'sigma', which has no draws in the posterior"):
        pmp.compute_log_likelihood(posterior_idata({"z": labels}), model)
    with pytest.raises(ValueError, match="partition 'z' has no draws"):
        pmp.compute_log_likelihood(posterior_idata({"sigma": np.ones((1, 2))}), model)
    with pytest.raises(ValueError, match=r"sample_dims \['sample'\] must be dimensions"):
        pmp.compute_log_likelihood(posterior_idata({"z": labels, "sigma": np.ones((1, 2))}),
                                   model, sample_dims=["sample"])
    bad = labels.copy()
    bad[0, 0, 3] = N
    with pytest.raises(ValueError, match=r"labels in \[0, 7\)"):
        pmp.compute_log_likelihood(posterior_idata({"z": bad, "sigma": np.ones((1, 2))}), model)


# ------------------------------------------------------------------ 2. exact elpd_loo, n = 8
N8 = 8
H8 = {"mu0": 0.0, "tau": 2.0, "sigma": 0.7}
ALPHA8 = 1.0


def _data8():
    rng = np.random.default_rng(1)
    return np.concatenate([rng.normal(-1.5, 0.7, 4), rng.normal(1.5, 0.7, 4)])[:, None]


def _model8(y):
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=ALPHA8, n=y.shape[0])
        pmp.CollapsedNormal("y", partition=z, observed=y, **H8)
    return model


@functools.cache
def exact_elpd_terms():
    """log p(y_i | y_-i) = log p(y) - log p(y_-i): marginal likelihoods summed over all
    partitions of n and of n - 1 items (the CRP of n - 1 items is the marginal of
    z_-i), from the PyTensor log densities of the prior and the likelihood."""
    y = _data8()
    zs, ys = pt.lvector(), pt.dmatrix()
    f = pytensor.function([zs, ys], pm.logp(
        pmp.CollapsedNormal.dist(zs, H8["mu0"], H8["tau"], H8["sigma"], n_dims=1), ys).sum(),
        mode=REFERENCE_MODE)
    priors = {n: crp_logp(ALPHA8, n) for n in (N8, N8 - 1)}

    def log_marginal(x):
        prior = priors[x.shape[0]]
        return logsumexp([prior(p) + f(p, x) for p in pmp.set_partitions(x.shape[0])])

    full = log_marginal(y)
    return np.array([full - log_marginal(np.delete(y, i, axis=0)) for i in range(N8)])


def _loo(idata, var_name):
    res = az.loo(idata, var_name=var_name)
    elpd = res.elpd_loo if hasattr(res, "elpd_loo") else res.elpd
    return float(elpd), np.asarray(res.pareto_k).ravel()


def _conditional_terms(model, labels, in_sample):
    """Negative controls, per draw and item: log p(y_i | y_-i, z) with z_i fixed (the
    term conditioned on the item's own label), or with item i left in its block."""
    chain = KernelChain(model)
    flat = labels.reshape(-1, labels.shape[-1])
    unique, inverse = np.unique(flat, axis=0, return_inverse=True)
    values = np.empty(unique.shape)
    for u, row in enumerate(unique):
        chain.reload(row)
        for i in range(row.shape[0]):
            k = int(chain.state.labels[i])
            if in_sample:
                values[u, i] = log_pred(chain.params, chain.stats, chain.data, i, k)
                continue
            remove(chain.params, chain.stats, chain.data, i, k)
            values[u, i] = log_pred(chain.params, chain.stats, chain.data, i, k)
            add(chain.params, chain.stats, chain.data, i, k)
    return values[inverse.ravel()].reshape(labels.shape)


def test_exact_identity_over_all_partitions():
    """Over the exact posterior (all Bell(8) = 4140 partitions), the terms satisfy
    1 / E[1 / p(y_i | y_-i, z_-i)] = p(y_i | y_-i) exactly: the importance identity
    PSIS estimates, with no Monte Carlo error."""
    y = _data8()
    model = _model8(y)
    exact = exact_posterior(model)
    parts = exact.partitions
    ll = pmp.compute_log_likelihood(posterior_idata({"z": parts[None]}), model,
                                    extend_inferencedata=False)["y"].values[0]
    identity = -logsumexp(exact.log_post[:, None] - ll, axis=0)
    np.testing.assert_allclose(identity, exact_elpd_terms(), rtol=1e-9)


def test_psis_loo_matches_exact_elpd():
    """``az.loo`` on the terms of pm.sample draws is within 0.1 of the exact elpd_loo;
    PyMC's joint term and the terms conditioned on z_i are far off."""
    y = _data8()
    model = _model8(y)
    exact = exact_elpd_terms().sum()
    idata = sample(model, draws=1500, chains=4, seed=3)
    pm.compute_log_likelihood(idata, model=model, progressbar=False)  # our terms, via PyMC
    psis, k = _loo(idata, "y")
    labels = np.asarray(idata["posterior"]["z"].values)
    joint = pm.compute_log_likelihood.__wrapped__(idata, model=model, progressbar=False,
                                                  extend_inferencedata=False)["y"]
    controls = {
        "joint": joint,
        "z_i fixed": _conditional_terms(model, labels, in_sample=False),
        "in-sample": _conditional_terms(model, labels, in_sample=True),
    }
    ll = versions.group_dataset(idata, "log_likelihood")
    for name, values in controls.items():
        ll[name] = xr.DataArray(np.asarray(values), dims=joint.dims if name == "joint"
                                else ll["y"].dims)
    versions.add_group(idata, "log_likelihood", ll)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Pareto k warnings of the controls
        off = {name: _loo(idata, name) for name in controls}
    print(f"\nexact elpd_loo {exact:.4f}  PSIS {psis:.4f}  difference {psis - exact:+.4f}")
    print(f"Pareto k: max {np.nanmax(k):.2f}, > 0.7: {int(np.sum(k > 0.7))}, "
          f"non-finite: {int(np.sum(~np.isfinite(k)))} of {k.size}; k = {np.round(k, 2)}")
    for name, (value, kc) in off.items():
        print(f"control {name}: elpd_loo {value:.4f} (off by {value - exact:+.4f}), "
              f"max k {np.nanmax(kc):.2f}")
    assert abs(psis - exact) < 0.1
    for name, (value, _) in off.items():  # each would fail the test
        assert abs(value - exact) > 0.1, name


# ------------------------------------------------------------------ 3. through PyMC
def test_pymc_compute_log_likelihood_gives_the_terms():
    """pm.compute_log_likelihood and pm.sample(idata_kwargs={"log_likelihood": True}):
    the collapsed likelihood gets the pointwise terms (not one joint term per draw),
    any other observed variable PyMC's own."""
    rng = np.random.default_rng(2)
    x = rng.normal(0, 1.5, (N, 1))
    with pm.Model() as model:
        sigma = pm.HalfNormal("sigma", 1.0)
        z = pmp.CRP("z", alpha=1.0, n=N)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=1.0, sigma=sigma, observed=x)
        pm.Normal("w", 0.0, sigma, observed=[0.3, -0.5])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # PyMC 6 deprecates idata_kwargs
        idata = sample(model, draws=30, chains=2, tune=30,
                       idata_kwargs={"log_likelihood": True})
    got = versions.group_dataset(idata, "log_likelihood")
    assert got["y"].dims == ("chain", "draw", "y_dim_0")
    assert got["w"].dims == ("chain", "draw", "w_dim_0")
    ours = pmp.compute_log_likelihood(idata, model, extend_inferencedata=False)
    np.testing.assert_allclose(got["y"].values, ours["y"].values, rtol=1e-12)
    # Extending an existing group replaces y and keeps the other variables.
    pmp.compute_log_likelihood(idata, model)
    assert sorted(versions.group_dataset(idata, "log_likelihood").data_vars) == ["w", "y"]
    sig = np.asarray(idata["posterior"]["sigma"].values)[..., None]
    w_ref = -0.5 * (np.array([0.3, -0.5]) / sig) ** 2 - np.log(sig) - 0.5 * np.log(2 * np.pi)
    np.testing.assert_allclose(got["w"].values, w_ref, rtol=1e-10)
    with model:
        only = pm.compute_log_likelihood(idata, var_names=["y"], extend_inferencedata=False,
                                         progressbar=False)
    assert list(only.data_vars) == ["y"] and only["y"].shape[-1] == N


# ------------------------------------------------------------------ 4. GeneralizedMallows
# Issue 34, item 1: pm.compute_log_likelihood stored one joint (chain, draw) term for a
# GeneralizedMallows (az.loo: "1 data point") while pmp.compute_log_likelihood refused
# it; and pm.sample(idata_kwargs={"log_likelihood": True}) with n > 7 items failed
# only after the last draw. Both entries now refuse with one message, before sampling.
GM_ORDERINGS = np.array([[0, 1, 2, 3], [1, 0, 2, 3], [3, 2, 1, 0], [2, 3, -1, -1]])


def gm_loo_model(n_items=None):
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=GM_ORDERINGS.shape[0])
        pmp.GeneralizedMallows("y", partition=z, nu=1.0, r=0.6, observed=GM_ORDERINGS,
                               n_items=n_items)
    return model


def test_mallows_log_likelihood_refused_by_both_entries():
    model = gm_loo_model()
    idata = sample(model, draws=10, chains=1, tune=0)
    messages = []
    for call in (lambda: pm.compute_log_likelihood(idata, model=model, progressbar=False),
                 lambda: pm.compute_log_likelihood(idata, var_names=["y"], model=model,
                                                   progressbar=False),
                 lambda: pmp.compute_log_likelihood(idata, model),
                 lambda: pmp.compute_log_likelihood(idata, model, var_names=["y"])):
        with pytest.raises(ValueError, match="GeneralizedMallows 'y': no pointwise") as err:
            call()
        messages.append(str(err.value))
    assert len(set(messages)) == 1
    assert "idata_kwargs" in messages[0] and "var_names" in messages[0]
    assert not _has_group(idata, "log_likelihood")


@pytest.mark.parametrize("n_items", [None, 8])
def test_mallows_log_likelihood_refused_before_the_first_draw(n_items):
    """pm.sample(idata_kwargs={"log_likelihood": True}) refuses before any draw (the
    callback never runs), with the same message, for n <= 7 and n > 7 items."""
    model = gm_loo_model(n_items)
    draws = []
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # PyMC 6 deprecates idata_kwargs
        with pytest.raises(ValueError, match="GeneralizedMallows 'y': no pointwise"):
            pm.sample(draws=5, tune=0, chains=1, cores=1, progressbar=False,
                      compute_convergence_checks=False, idata_kwargs={"log_likelihood": True},
                      callback=lambda trace, draw: draws.append(draw))
        with pytest.raises(ValueError, match="GeneralizedMallows 'y': no pointwise"):
            pm.sample(draws=5, tune=0, chains=1, cores=1, progressbar=False,
                      idata_kwargs={"log_likelihood": ["y"]},
                      callback=lambda trace, draw: draws.append(draw))
    assert draws == []
