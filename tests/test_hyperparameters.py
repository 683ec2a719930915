"""Hyperparameter steps (issue 17): pmp.EscobarWest and pmp.HyperSlice.

1. Exactness against enumeration with the hyperparameters integrated by quadrature
   (tests/helpers.py): the partition's posterior within the harness's bounds and
   each hyperparameter's posterior mean within 4 MCSE of the exact value. The long
   runs drive the steps PyMC assigns (``assign_step_methods`` +
   ``instantiate_steppers``, so the assignment under test is pm.sample's own)
   directly, without pm.sample's trace and Deterministics.
2. Kernel versus model: the conditional log density the slice step evaluates from
   block sizes and sufficient statistics equals differences of the model's own
   log density (with the transform's Jacobian), for every collapsed likelihood
   with every hyperparameter free; the priors' closed forms in block sizes equal
   their PyTensor log probabilities; the numba-built params equal ``make_params``.
3. PyMC integration: the automatic assignment (and when NUTS keeps a variable),
   the printed step lines, one short pm.sample per step, refusals.
"""

import logging

import arviz as az
import numpy as np
import pymc as pm
import pytest
from helpers import (
    REFERENCE_MODE,
    assert_exact,
    binary_data,
    exact_hyper_means,
    exact_posterior,
    two_groups,
)
from pymc.sampling.mcmc import assign_step_methods, instantiate_steppers
from pymc.step_methods.compound import Competence, CompoundStep
from scipy.special import expit

import pymc_partitions as pmp
from pymc_partitions.versions import group_dataset
from pymc_partitions.kernels import assign_labels, new_state
from pymc_partitions.kernels.components import beta_bernoulli, normal
from pymc_partitions.distributions.statistics import block_moments, block_sums, compact_labels
from pymc_partitions.kernels.hyperparameters import log_likelihood_total
from pymc_partitions.step_methods.hyperparameters import (
    kernel_prior_log_density,
    prior_log_density,
    slice_update,
)
from pymc_partitions.step_methods.target import PartitionModelError

LOG_GRID = np.linspace(-14.0, 5.0, 700)


# ----------------------------------------------------------------------------------
# Driver: the automatically assigned steps, run directly
# ----------------------------------------------------------------------------------


def assigned_steps(model):
    """pm.sample's automatic assignment, instantiated: a CompoundStep."""
    with model:
        _, selected = assign_step_methods(model, None, methods=pm.STEP_METHODS)
        steps = instantiate_steppers(model, [], selected)
    return steps if isinstance(steps, CompoundStep) else CompoundStep(
        steps if isinstance(steps, list) else [steps])


def drive(model, draws, *, tune=200, chains=4, seed=0, record=()):
    """(labels (chains, draws, n), {value name: (chains, draws)}, step names) from
    the assigned steps, each chain started at the model's initial point with its
    own generator, tuning for ``tune`` iterations as pm.sample does."""
    step = assigned_steps(model)
    names = sorted(f"{type(s).__name__}:{','.join(v.name for v in s.vars)}"
                   for s in step.methods)
    labels, hyper = [], {name: [] for name in record}
    for rng in np.random.default_rng(seed).spawn(chains):
        if hasattr(step, "setup_chain"):  # PyMC 6
            step.setup_chain(rng, tune, draws)
        else:  # PyMC 5
            step.set_rng(rng)
        step.reset_tuning()
        point = model.initial_point()
        z_rows, h_rows = [], {name: [] for name in record}
        for i in range(tune + draws):
            if i == tune:
                step.stop_tuning()
            point, _ = step.step(point)
            if i >= tune:
                z_rows.append(point["z"])
                for name in record:
                    h_rows[name].append(float(point[name]))
        labels.append(np.array(z_rows))
        for name in record:
            hyper[name].append(h_rows[name])
    return np.stack(labels), {k: np.array(v) for k, v in hyper.items()}, names


def assert_hyper_exact(model, grids, functions, draws, seed, expected_steps, min_ess=1000.0):
    """The partition (harness) and each hyperparameter's mean (4 MCSE) are exact."""
    exact = exact_posterior(model, "z", grids)
    means = exact_hyper_means(model, functions, "z", grids)
    labels, hyper, names = drive(model, draws, seed=seed, record=list(functions))
    assert names == sorted(expected_steps)
    assert_exact(model, sampler=lambda: labels, exact=exact, min_ess=min_ess)
    for name, f in functions.items():
        values = f(hyper[name])
        ess = float(np.asarray(az.ess(values, method="mean")))
        mcse = float(values.std()) / np.sqrt(ess)
        mean = float(values.mean())
        print(f"{name}: mean {mean:.4f} exact {means[name]:.4f} MCSE {mcse:.4f} "
              f"z {(mean - means[name]) / mcse:.2f}")
        assert abs(mean - means[name]) <= 4 * mcse, (name, mean, means[name], mcse)
        assert ess > 500, (name, ess)


# ----------------------------------------------------------------------------------
# 1. Exactness
# ----------------------------------------------------------------------------------


def test_escobar_west_crp_gamma_exact():
    n = 6
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 1.5)
        z = pmp.CRP("z", alpha=alpha, n=n)
        pmp.CollapsedBetaBernoulli("y", partition=z, a=0.5, b=0.8, observed=binary_data(n, 3, 1))
    assert_hyper_exact(model, {"alpha_log__": LOG_GRID}, {"alpha_log__": np.exp}, 1000, 1,
                       ["EscobarWest:alpha_log__", "Gibbs:z"])


def test_slice_crp_halfnormal_exact():
    n = 6
    with pm.Model() as model:
        alpha = pm.HalfNormal("alpha", 2.0)
        z = pmp.CRP("z", alpha=alpha, n=n)
        pmp.CollapsedBetaBernoulli("y", partition=z, a=0.5, b=0.8, observed=binary_data(n, 3, 2))
    assert_hyper_exact(model, {"alpha_log__": np.linspace(-25.0, 4.0, 900)},
                       {"alpha_log__": np.exp}, 1000, 2, ["HyperSlice:alpha_log__", "Gibbs:z"])


def test_slice_pitman_yor_alpha_and_d_exact():
    n = 5
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 2.0)
        d = pm.Beta("d", 1.0, 2.0)
        z = pmp.PitmanYor("z", alpha=alpha, d=d, n=n)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=2.0, sigma=1.0,
                            observed=two_groups(n, 2, seed=3))
    grids = {"alpha_log__": np.linspace(-12.0, 4.0, 160),
             "d_logodds__": np.linspace(-14.0, 7.0, 160)}
    assert_hyper_exact(model, grids, {"alpha_log__": np.exp, "d_logodds__": expit}, 1000, 3,
                       ["HyperSlice:alpha_log__,d_logodds__", "Gibbs:z"])


def test_slice_mfm_gamma_exact():
    n = 5
    with pm.Model() as model:
        gamma = pm.Gamma("gamma", 2.0, 2.0)
        z = pmp.MFM("z", n=n, gamma=gamma)
        pmp.CollapsedBetaBernoulli("y", partition=z, a=0.5, b=0.5, observed=binary_data(n, 3, 4))
    assert_hyper_exact(model, {"gamma_log__": LOG_GRID}, {"gamma_log__": np.exp}, 1000, 4,
                       ["HyperSlice:gamma_log__", "Gibbs:z"])


def test_slice_normal_sigma_exact():
    n = 6
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=n)
        sigma = pm.HalfNormal("sigma", 1.0)
        # Data where the all-singletons, sigma -> 0 region of the posterior has little
        # mass: there z and sigma move each other slowly (ESS ~300 of 4000 draws at
        # spread 2, tau 2, seed 5), for any sampler alternating the two.
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=2.0, sigma=sigma,
                            observed=two_groups(n, 2, seed=7, spread=1.0))
    assert_hyper_exact(model, {"sigma_log__": np.linspace(-9.0, 3.0, 800)},
                       {"sigma_log__": np.exp}, 1000, 5, ["HyperSlice:sigma_log__", "Gibbs:z"])


def test_slice_beta_bernoulli_a_and_b_exact():
    n = 5
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=n)
        a = pm.Gamma("a", 2.0, 2.0)
        b = pm.Gamma("b", 2.0, 2.0)
        pmp.CollapsedBetaBernoulli("y", partition=z, a=a, b=b, observed=binary_data(n, 4, 6))
    grids = {"a_log__": np.linspace(-10.0, 3.5, 150), "b_log__": np.linspace(-10.0, 3.5, 150)}
    assert_hyper_exact(model, grids, {"a_log__": np.exp, "b_log__": np.exp}, 1000, 6,
                       ["HyperSlice:a_log__,b_log__", "Gibbs:z"])


# ----------------------------------------------------------------------------------
# 2. Kernel versus model
# ----------------------------------------------------------------------------------


def _random_labels(rng, n):
    return pmp.canonicalize(rng.integers(0, rng.integers(1, n + 1), n))


@pytest.mark.parametrize("prior", ["crp", "pitman_yor", "mfm"])
def test_prior_from_block_sizes_equals_model_logp(prior):
    n = 9
    with pm.Model() as model:
        if prior == "crp":
            z = pmp.CRP("z", alpha=pm.HalfNormal("h", 1.0), n=n)
        elif prior == "pitman_yor":
            z = pmp.PitmanYor("z", alpha=pm.HalfNormal("h", 1.0), d=pm.Beta("d", 1, 1), n=n)
        else:
            z = pmp.MFM("z", n=n, gamma=pm.HalfNormal("h", 1.0), k_prior=[0.2, 0.3, 0.1, 0.4])
    others = [model.rvs_to_values[v] for v in model.free_RVs if v is not z]
    logp = model.compile_fn(model.logp(vars=[z], jacobian=False),
                            inputs=[model.rvs_to_values[z], *others], point_fn=False,
                            mode=REFERENCE_MODE)
    hypers = model.compile_fn(model.replace_rvs_by_values(z.owner.op.dist_params(z.owner)[:-1]),
                              inputs=others, point_fn=False, on_unused_input="ignore",
                              mode=REFERENCE_MODE)
    rng = np.random.default_rng(7)
    for _ in range(20):
        labels = _random_labels(rng, n)
        if prior == "mfm" and labels.max() >= 4:
            labels = labels % 4  # K <= kmax = 4: probability > 0
            labels = pmp.canonicalize(labels)
        vals = [rng.normal(size=np.shape(model.initial_point()[v.name])) for v in others]
        values = [np.asarray(v, dtype=np.float64) for v in hypers(*vals)]
        sizes = np.bincount(labels)[np.bincount(labels) > 0].astype(float)
        ours = prior_log_density(z.owner.op, values, sizes, n)
        assert np.isclose(ours, float(logp(labels, *vals)), rtol=1e-10, atol=1e-10)
        # The generic path (the prior's numba log_prior), for priors without a closed form.
        generic = kernel_prior_log_density(z.owner.op, values, sizes, n)
        assert np.isclose(generic, ours, rtol=1e-10, atol=1e-10)
    # Outside the support: -inf, no error.
    if prior == "pitman_yor":
        assert prior_log_density(z.owner.op, [np.float64(-0.5), np.float64(0.3)],
                                 np.array([3.0, 6.0]), n) == -np.inf


def test_blocks_log_likelihoods_equal_kernel_totals():
    """The components' optional fast path (``blocks_statistics`` once per partition,
    ``blocks_log_likelihood`` per evaluation: the slice step's log likelihoods from
    the K blocks' statistics as plain arrays) equals the kernels'
    ``log_likelihood_total`` (per-slot log marginals), and values outside the support
    give -inf."""
    rng = np.random.default_rng(8)
    mu0, tau, sigma = rng.normal(size=3), rng.uniform(0.5, 2, 3), rng.uniform(0.5, 2, 3)
    a, b = rng.uniform(0.2, 3, 4), rng.uniform(0.2, 3, 4)
    x = rng.normal(size=(12, 3))
    labels = _random_labels(rng, 12)
    _, idx, sizes = compact_labels(labels, 12)
    params = normal.make_params(mu0, tau, sigma, n=12)
    stats, state = normal.alloc_stats(12, 3, params), new_state(12)
    assign_labels(state, params, stats, normal.make_data(x), labels)
    ref_total = log_likelihood_total(state, normal.make_params(mu0, 2 * tau, sigma, n=12), stats)
    blocks = normal.blocks_statistics(idx, sizes, normal.make_data(x))
    mean, m2 = block_moments(idx, sizes, x)
    np.testing.assert_array_equal(blocks[1], mean)
    np.testing.assert_array_equal(blocks[2], m2)
    assert np.isclose(normal.blocks_log_likelihood([mu0, 2 * tau, sigma], blocks), ref_total,
                      rtol=1e-12)
    assert normal.blocks_log_likelihood([mu0, tau, -sigma], blocks) == -np.inf
    assert normal.blocks_log_likelihood([mu0 * np.inf, tau, sigma], blocks) == -np.inf
    xb = (rng.random((12, 4)) < 0.4).astype(float)
    params = beta_bernoulli.make_params(a, b, n=12)
    stats, state = beta_bernoulli.alloc_stats(12, 4, params), new_state(12)
    assign_labels(state, params, stats, beta_bernoulli.make_data(xb), labels)
    ref_total = log_likelihood_total(state, beta_bernoulli.make_params(2 * a, b), stats)
    blocks = beta_bernoulli.blocks_statistics(idx, sizes, beta_bernoulli.make_data(xb))
    np.testing.assert_array_equal(blocks[1], block_sums(idx, sizes, xb))
    assert np.isclose(beta_bernoulli.blocks_log_likelihood([2 * a, b], blocks), ref_total,
                      rtol=1e-12)
    assert beta_bernoulli.blocks_log_likelihood([a, 0 * b], blocks) == -np.inf


def test_hyperslice_uses_a_components_fast_path_when_present(monkeypatch):
    """The fast path is an optional primitive of the component module: present, the
    hyperparameter step uses it; absent, it falls back to the kernel state
    (``log_likelihood_total``), with the same log density."""
    from pymc_partitions.step_methods import hyperparameters as hp

    with pm.Model() as model:
        sigma = pm.HalfNormal("sigma", 1.0)
        z = pmp.CRP("z", alpha=1.0, n=8)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=2.0, sigma=sigma,
                            observed=np.random.default_rng(1).normal(size=(8, 2)))
    point = model.initial_point()
    point["z"] = np.array([0, 0, 1, 1, 2, 0, 1, 2])

    def density():
        terms = hp._PartitionTerms(model, z, [sigma], "HyperSlice", None)
        terms.start_chain()
        inputs = terms.inputs(point)
        terms.load(point, inputs)
        return terms._fast[0], terms.log_density("sigma_log__", terms.values(inputs))

    fast, with_fast = density()
    assert fast is not None and fast[1] is normal.blocks_log_likelihood
    monkeypatch.delattr(normal, "blocks_log_likelihood")
    fast, without = density()
    assert fast is None
    assert np.isclose(with_fast, without, rtol=1e-12)
    assert np.isfinite(with_fast)


def _all_free_models():
    from test_compile_all_likelihoods import LIKELIHOODS, build_model, cases

    for likelihood in LIKELIHOODS:
        d, free, vector = cases(likelihood)[-1]  # all free, D = 3 (vectors where allowed)
        yield pytest.param(lambda lik=likelihood, c=(d, free, vector): build_model(lik, *c),
                           id=likelihood)


@pytest.mark.parametrize("make", list(_all_free_models()))
def test_conditional_equals_model_logp_differences(make):
    """For every likelihood with all its hyperparameters free (covariances through
    LKJ Cholesky factors, degrees of freedom shifted: deterministic functions of
    the value variables), the slice step's conditional of each scalar element, from
    statistics, equals the model's full log density (Jacobians included) up to a
    constant, at random partitions and points."""
    model = make()
    hyper_vars = [v for v in model.value_vars if v.name != "z"]
    # FAST_COMPILE: a handful of evaluations of large graphs (LKJ factors), where
    # the C compilation would take most of the test's time.
    fast = {"mode": "FAST_COMPILE"}
    step = pmp.HyperSlice([model.values_to_rvs[v] for v in hyper_vars], model=model,
                          compile_kwargs=fast)
    logp = model.compile_logp(jacobian=True, **fast)
    rng = np.random.default_rng(9)
    base = model.initial_point()
    n = base["z"].shape[0]
    for _ in range(3):
        point = {k: (v + rng.normal(0, 0.3, np.shape(v)) if k != "z" else _random_labels(rng, n))
                 for k, v in base.items()}
        point = {k: np.asarray(v, dtype=base[k].dtype) for k, v in point.items()}
        for terms in step._terms:
            terms.load(point, terms.inputs(point))
        for var in hyper_vars:
            flat = np.ravel(point[var.name])
            for e in range(min(flat.size, 3)):
                moved = dict(point)
                trial = flat.copy()
                trial[e] += rng.normal(0, 0.4)
                moved[var.name] = trial.reshape(np.shape(point[var.name])).astype(var.dtype)
                ours = step.log_conditional(moved, var.name) - step.log_conditional(point,
                                                                                    var.name)
                ref = logp(moved) - logp(point)
                assert np.isclose(ours, ref, rtol=1e-8, atol=1e-8), (var.name, e, ours, ref)


def test_slice_update_is_exact_for_a_known_density():
    """The slice update alone leaves a bimodal 1-D density invariant (Neal 2003):
    long chain mean and tail probability against the exact values."""
    rng = np.random.default_rng(10)

    def logf(x):
        return np.logaddexp(-0.5 * (x + 2) ** 2, np.log(0.5) - 0.5 * ((x - 3) / 0.5) ** 2)

    x, fx, draws = 0.0, logf(0.0), []
    for _ in range(40_000):
        x, _ = slice_update(logf, x, fx, 1.0, 20, rng)
        fx = logf(x)
        draws.append(x)
    draws = np.array(draws)
    w1, w2 = 1.0, 0.5 * 0.5  # mass of each component (sd 1 and 0.5, heights 1 and 0.5)
    exact_mean = (w1 * -2 + w2 * 3) / (w1 + w2)
    mcse = draws.std() / np.sqrt(float(np.asarray(az.ess(draws[None], method="mean"))))
    assert abs(draws.mean() - exact_mean) < 4 * mcse


# ----------------------------------------------------------------------------------
# 3. PyMC integration
# ----------------------------------------------------------------------------------


def quickstart_like(n=12, sigma_elsewhere=False, alpha_prior="gamma"):
    Y = two_groups(n, 2, seed=11)
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 1.0, 1.0) if alpha_prior == "gamma" else pm.Exponential(
            "alpha", 1.0)
        z = pmp.CRP("z", alpha=alpha, n=n)
        sigma = pm.HalfNormal("sigma", 2.0)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=5.0, sigma=sigma, observed=Y)
        if sigma_elsewhere:
            pm.Normal("w", 0.0, sigma, observed=[0.3, -0.2])
    return model


def test_assignment_and_printed_lines(caplog):
    model = quickstart_like()
    with model:
        _, selected = assign_step_methods(model, None, methods=pm.STEP_METHODS)
    kinds = {cls.__name__: [v.name for v in vars] for cls, vars in selected.items()}
    assert kinds == {"Gibbs": ["z"], "EscobarWest": ["alpha_log__"],
                     "HyperSlice": ["sigma_log__"]}
    # Another prior: the slice step; sigma also read by a Normal likelihood: NUTS.
    model = quickstart_like(sigma_elsewhere=True, alpha_prior="exponential")
    with model:
        _, selected = assign_step_methods(model, None, methods=pm.STEP_METHODS)
    kinds = {cls.__name__: [v.name for v in vars] for cls, vars in selected.items()}
    assert kinds == {"Gibbs": ["z"], "HyperSlice": ["alpha_log__"], "NUTS": ["sigma_log__"]}
    # Outside a model context and assignment, competence knows no model: incompatible.
    assert pmp.HyperSlice.competence(model["alpha"], True) == Competence.INCOMPATIBLE
    with model:
        assert pmp.HyperSlice.competence(model["alpha"], True) == Competence.IDEAL
        assert pmp.HyperSlice.competence(model["sigma"], True) == Competence.INCOMPATIBLE
        assert pmp.EscobarWest.competence(model["alpha"], True) == Competence.INCOMPATIBLE
    # pm.sample prints the assignment.
    with caplog.at_level(logging.INFO, logger="pymc"), quickstart_like():
        pm.sample(draws=3, tune=2, chains=1, cores=1, progressbar=False, random_seed=1,
                  compute_convergence_checks=False)
    text = caplog.text
    assert "Gibbs: [z]" in text and "EscobarWest: [alpha]" in text
    assert "HyperSlice: [sigma]" in text


def test_short_pm_sample_with_each_step_and_nuts_by_step():
    """pm.sample runs each step (defaults, explicit, blocked=False), and NUTS stays
    available by step=."""
    model = quickstart_like()
    with model:
        idata = pm.sample(draws=30, tune=20, chains=2, cores=1, progressbar=False,
                          random_seed=2, compute_convergence_checks=False)
    post = idata["posterior"]
    assert np.all(post["alpha"].values > 0) and np.all(post["sigma"].values > 0)
    assert np.ptp(post["alpha"].values) > 0 and np.ptp(post["sigma"].values) > 0
    assert np.all(idata["sample_stats"]["slice_evals"].values >= 2)
    with model:
        steps = [pmp.HyperSlice([model["alpha"], model["sigma"]], blocked=False, w=0.5,
                                max_steps=3), pm.NUTS([model["sigma"]])][:1]
        idata = pm.sample(draws=20, tune=10, chains=1, cores=1, progressbar=False,
                          random_seed=3, step=steps, compute_convergence_checks=False)
        assert np.ptp(idata["posterior"]["alpha"].values) > 0
        idata = pm.sample(draws=20, tune=10, chains=1, cores=1, progressbar=False,
                          random_seed=3, step=[pm.NUTS([model["alpha"], model["sigma"]])],
                          compute_convergence_checks=False)
        assert "diverging" in idata["sample_stats"]


def test_refusals():
    model = quickstart_like(sigma_elsewhere=True, alpha_prior="exponential")
    with model:
        with pytest.raises(PartitionModelError, match=r"'sigma' is also read by 'w'.*NUTS"):
            pmp.HyperSlice([model["sigma"]])
        with pytest.raises(PartitionModelError, match=r"EscobarWest: 'vars'.*pm.Gamma"):
            pmp.EscobarWest([model["alpha"]])
        with pytest.raises(PartitionModelError, match=r"'z' is not continuous"):
            pmp.HyperSlice([model["z"]])


def test_slice_reads_the_data_of_pm_set_data_between_runs():
    """One HyperSlice step reused across two pm.sample calls with pm.set_data between
    them: the second run's sigma follows the new data (noise sd ~3), not the data the
    step was built with (noise sd ~0.1). A step keeping a reference to the first
    array would put sigma near 0.1 again."""
    rng = np.random.default_rng(4)
    y0 = rng.normal(0.0, 0.1, size=(40, 1))
    y1 = rng.normal(0.0, 3.0, size=(40, 1))
    with pm.Model():
        data = pm.Data("data", y0)
        sigma = pm.HalfNormal("sigma", 5.0)
        z = pmp.CRP("z", alpha=0.5, n=40)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=0.1, sigma=sigma, observed=data)
        steps = [pmp.Gibbs([z]), pmp.HyperSlice([sigma])]
        kwargs = dict(draws=150, tune=50, chains=1, step=steps, progressbar=False,
                      compute_convergence_checks=False)
        first = pm.sample(random_seed=1, **kwargs)
        pm.set_data({"data": y1})
        second = pm.sample(random_seed=2, **kwargs)
    s0 = float(group_dataset(first, "posterior")["sigma"].mean())
    s1 = float(group_dataset(second, "posterior")["sigma"].mean())
    assert s0 < 0.3
    assert 2.0 < s1 < 4.5
