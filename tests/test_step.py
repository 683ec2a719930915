"""pmp.Gibbs as a PyMC step: assignment, stats, seeding, chains, errors, diagnostics."""

import numpy as np
import pymc as pm
import pytest
from pymc.step_methods.compound import Competence

import pymc_partitions as pmp
from pymc_partitions.versions import posterior_dataset

pytestmark = pytest.mark.default_backend  # PyMC's own compilation path (numba on PyMC 6)


def small_model(n=8, alpha=None, seed=0):
    rng = np.random.default_rng(seed)
    Y = np.concatenate([rng.normal(-2, 1, (n // 2, 2)), rng.normal(2, 1, (n - n // 2, 2))])
    with pm.Model() as model:
        a = pm.Gamma("alpha", 1.0, 1.0) if alpha is None else alpha
        z = pmp.CRP("z", alpha=a, n=n)
        sigma = pm.HalfNormal("sigma", 1.0)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=2.0, sigma=sigma, observed=Y)
    return model


def run(model, **kwargs):
    kwargs.setdefault("draws", 50)
    kwargs.setdefault("tune", 20)
    kwargs.setdefault("chains", 2)
    kwargs.setdefault("cores", 1)
    kwargs.setdefault("progressbar", False)
    kwargs.setdefault("compute_convergence_checks", False)
    with model:
        return pm.sample(**kwargs)


def test_pm_sample_assigns_gibbs_to_crp_and_hyperparameter_steps_to_the_rest():
    """Gibbs for the partition; alpha (Gamma prior, read by the CRP alone) to
    EscobarWest and sigma (read by the collapsed likelihood alone) to HyperSlice
    (issue 17; NUTS keeps variables with other children: test_hyperparameters.py)."""
    model = small_model()
    with model:
        _, selected = pm.sampling.mcmc.assign_step_methods(model)
    kinds = {cls.__name__: [v.name for v in vars] for cls, vars in selected.items()}
    assert kinds == {"Gibbs": ["z"], "EscobarWest": ["alpha_log__"],
                     "HyperSlice": ["sigma_log__"]}
    assert pmp.Gibbs.competence(model["z"], False) == Competence.IDEAL
    assert pmp.Gibbs.competence(model["alpha"], True) == Competence.INCOMPATIBLE


def test_sampler_stats_and_label_invariant_posterior():
    model = small_model()
    idata = run(model, random_seed=3)
    stats = idata["sample_stats"]
    z = np.asarray(idata["posterior"]["z"].values)
    assert np.array_equal(pmp.canonicalize(z), z)
    assert np.array_equal(np.asarray(stats["n_clusters"].values), z.max(axis=-1) + 1)
    frac = np.asarray(stats["largest_cluster_frac"].values)
    assert np.allclose(frac, np.apply_along_axis(lambda r: np.bincount(r).max() / 8, -1, z))
    post = posterior_dataset(idata)
    for name in ["z_n_clusters", "z_largest_cluster_frac", "z_entropy"]:
        assert name in post
    assert np.array_equal(post["z_n_clusters"].values, z.max(axis=-1) + 1)


def test_log_joint_stat_is_the_collapsed_log_joint():
    # Hyperparameters fixed, so the stat and the stored draw see the same values (with
    # free hyperparameters the stat is at the values the step saw, before NUTS moved them).
    Y = np.random.default_rng(4).normal(size=(8, 2))
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=0.7, n=8)
        pmp.CollapsedNormal("y", partition=z, mu0=0.2, tau=1.5, sigma=0.8, observed=Y)
    idata = run(model, random_seed=4, draws=10)
    logp = model.compile_logp(jacobian=False)
    post = posterior_dataset(idata)
    for c in range(2):
        for d in range(10):
            stat = idata["sample_stats"]["log_joint"].values[c, d]
            assert np.isclose(stat, logp({"z": post["z"].values[c, d]}), rtol=1e-10)


def test_same_seed_same_draws_cores_1_and_2():
    """Gibbs, EscobarWest and HyperSlice (the default assignment) alike."""
    model = small_model()
    a = run(model, random_seed=123, cores=1)
    b = run(model, random_seed=123, cores=2)
    for var in ["z", "alpha", "sigma"]:
        assert np.array_equal(a["posterior"][var].values, b["posterior"][var].values), var
    c = run(model, random_seed=124, cores=1)
    assert not np.array_equal(a["posterior"]["z"].values, c["posterior"]["z"].values)


def test_n_sweeps_and_explicit_step():
    model = small_model(alpha=1.0)
    with model:
        step = pmp.Gibbs([model["z"]], n_sweeps=3)
    idata = run(model, step=step, random_seed=5, draws=20)
    assert idata["posterior"]["z"].shape[-1] == 8
    with model, pytest.raises(ValueError, match="'n_sweeps' must be a positive integer"):
        pmp.Gibbs([model["z"]], n_sweeps=0)


def test_initvals_per_chain_are_used_and_canonicalised():
    """One split-merge update per draw (no Gibbs sweep) moves a partition by at most
    one split or merge, so the first draw shows each chain's own start: K <= 3 from
    two blocks, K >= 7 from eight singletons; the default start (one block) would
    give K <= 2 in both."""
    model = small_model(alpha=1.0)
    starts = [{"z": np.array([3, 3, 3, 3, 5, 5, 5, 5])}, {"z": np.arange(8)}]
    with model:
        step = pmp.SplitMerge([model["z"]], n_gibbs_sweeps=0, n_proposals=1)
    idata = run(model, step=step, initvals=starts, random_seed=6, draws=1, tune=0)
    z = np.asarray(idata["posterior"]["z"].values)
    assert np.array_equal(pmp.canonicalize(z), z)
    k = z.max(axis=-1)[:, 0] + 1
    assert k[0] <= 3 and k[1] >= 7, k


@pytest.mark.parametrize(
    "labels, message",
    [
        (np.array([0, 1, 2]), r"initvals\['z'\] must be a vector of n = 8 labels"),
        (np.array([0, 0, 1, 1, 9, 0, 0, 0]), r"initvals\['z'\] has labels outside \[0, 8\)"),
        (np.array([0, 0, 1, 1, -1, 0, 0, 0]), r"labels outside"),
        (np.array([0, 0.5, 1, 1, 0, 0, 0, 0]), r"integer labels"),
    ],
)
def test_bad_initvals_raise_clear_errors(labels, message):
    model = small_model(alpha=1.0)
    with pytest.raises(ValueError, match=message):
        run(model, initvals={"z": labels}, chains=1)
    with pytest.raises(ValueError, match=message.replace("initvals\\['z'\\]", "initvals\\['z'\\] for chain 1")):
        run(model, initvals=[{"z": np.zeros(8, dtype=int)}, {"z": labels}], chains=2)


def test_models_gibbs_cannot_sample_exactly_are_refused():
    Y = np.zeros((5, 1))
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=5)
        pmp.CollapsedNormal("y", partition=z, observed=Y)
        pm.Normal("w", mu=z.sum(), sigma=1.0, observed=1.0)
    with model, pytest.raises(pmp.PartitionModelError, match="'w' depends on partition 'z'"):
        pmp.Gibbs([z])
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=5)
        pmp.CollapsedNormal("y", partition=z, observed=Y)
        pm.Potential("pot", -z.max())
    with model, pytest.raises(pmp.PartitionModelError, match="Potential 'pot'"):
        pmp.Gibbs([z])
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=5)
    with model, pytest.raises(pmp.PartitionModelError, match="no collapsed likelihood"):
        pmp.Gibbs([z])
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=5)
        s = pm.HalfNormal("s")
        pmp.CollapsedNormal("y", partition=z, observed=Y)
    with model, pytest.raises(pmp.PartitionModelError, match="'s' is not one"):
        pmp.Gibbs([s])


def test_invalid_sampled_hyperparameter_is_reported():
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=4)
        s = pm.Normal("s", 1.0, 0.1)  # wrong support for a standard deviation
        pmp.CollapsedNormal("y", partition=z, sigma=s, observed=np.zeros((4, 1)))
        step = pmp.Gibbs([z])
    point = model.initial_point()
    point["s"] = np.asarray(-0.5)
    with pytest.raises(ValueError, match="hyperparameter 'sigma'.*outside its support"):
        step.step(point)


def test_convergence_checks_use_label_invariant_statistics():
    model = small_model(n=12)
    idata = run(model, random_seed=8, chains=4, draws=150, tune=50)
    import pymc.sampling.mcmc as mcmc

    ours = mcmc.run_convergence_checks(idata, model)
    theirs = mcmc.run_convergence_checks.__wrapped__(idata, model)
    checked = {name for w in ours if w.extra is not None for name in w.extra.data_vars}
    raw = {name for w in theirs if w.extra is not None for name in w.extra.data_vars}
    # Short chains: both raise R-hat/ESS warnings; PyMC's own names the raw labels,
    # ours the label-invariant statistics instead.
    assert "z" in raw
    assert "z" not in checked
    assert {"z_n_clusters", "z_largest_cluster_frac", "z_entropy"} <= checked
    # A model without partitions goes through PyMC's function unchanged.
    with pm.Model() as plain:
        pm.Gamma("alpha", 1.0, 1.0)
    assert [w.message for w in mcmc.run_convergence_checks(idata, plain)] == [
        w.message for w in mcmc.run_convergence_checks.__wrapped__(idata, plain)
    ]


def test_arviz_diagnostics_on_summaries(tmp_path):
    import arviz as az
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    model = small_model(n=10)
    idata = run(model, random_seed=9, chains=2, draws=100)
    summary = az.summary(idata, var_names=["z_n_clusters", "z_largest_cluster_frac", "z_entropy"])
    assert len(summary) == 3
    assert np.isfinite(np.asarray(az.ess(idata, var_names=["z_entropy"])["z_entropy"])).all()
    assert np.isfinite(np.asarray(az.rhat(idata, var_names=["z_n_clusters"])["z_n_clusters"])).all()
    az.plot_trace(idata, var_names=["z_n_clusters", "z_largest_cluster_frac", "z_entropy"])
    plt.savefig(tmp_path / "trace.png")
    plt.close("all")
    assert (tmp_path / "trace.png").stat().st_size > 0
