"""``pmp.ARM`` (Herlau et al. 2016) through ``pm.sample``: a population step whose
background information comes from the chains' own history, exact against the
enumerated posterior (with the adaptive history running, alone and with Gibbs
sweeps, with alpha sampled by NUTS in the same call), ``cores=1`` equal to
``cores=2``, its statistics and its refusals. The kernel's unique paths and exact
T are ``tests/test_arm.py``'s."""

import warnings

import numpy as np
import pymc as pm
import pytest
from helpers import assert_exact, binary_data, sample, two_groups

import pymc_partitions as pmp
from pymc_partitions.versions import posterior_dataset

N = 6
# Dispersed starts: ARM alone moves only where two chains' histories differ.
STARTS = [np.zeros(N, dtype=np.int64), np.arange(N), np.array([0, 0, 0, 1, 1, 1]),
          np.array([0, 1, 0, 1, 0, 1])]


def bernoulli_model(alpha=0.8):
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=alpha, n=N)
        pmp.CollapsedBetaBernoulli("y", partition=z, a=0.6, b=0.6, observed=binary_data(N, 4, 5))
    return model


def normal_model():
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=0.9, n=N)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=2.0, sigma=0.8,
                            observed=two_groups(N, 2, 3))
    return model


def irm_model():
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=0.9, n=N)
        upper = np.triu(np.random.default_rng(1).random((N, N)) < 0.5, 1)
        pmp.IRM("A", partition=z, a=0.7, b=1.3, observed=(upper | upper.T).astype(float))
    return model


def initvals():
    return [{"z": s} for s in STARTS]


@pytest.mark.parametrize("make, n_gibbs, variant",
                         [(bernoulli_model, 0, "arm"), (bernoulli_model, 1, "arm"),
                          (normal_model, 1, "arm"), (bernoulli_model, 0, "extended")],
                         ids=["bernoulli-arm-alone", "bernoulli-arm-gibbs", "normal-arm-gibbs",
                              "bernoulli-extended-alone"])
def test_exact_with_the_adaptive_history(make, n_gibbs, variant):
    model = make()
    with model:
        step = pmp.ARM([model["z"]], variant=variant, n_gibbs_sweeps=n_gibbs)
    _, idata = assert_exact(model, draws=2500, seed=11, step=step, initvals=initvals())
    stats = idata["sample_stats"]
    proposed = int(stats["split_proposed"].sum() + stats["merge_proposed"].sum())
    accepted = int(stats["split_accepted"].sum() + stats["merge_accepted"].sum())
    assert proposed > 0.9 * stats["split_proposed"].size and 0 < accepted < proposed
    assert int(stats["block_moves"].sum()) > 0  # blocks of c moved as wholes
    outside = stats["outside_moves_proposed"].values, stats["outside_moves_accepted"].values
    if variant == "extended":  # blocks from outside S moved (line 8a), some accepted
        assert outside[0].sum() > 0 and 0 < outside[1].sum() <= outside[0].sum()
        assert (outside[1] <= outside[0]).all()
    else:
        assert outside[0].sum() == 0 and outside[1].sum() == 0


@pytest.mark.parametrize("n_gibbs", [0, 1], ids=["alone", "gibbs"])
@pytest.mark.parametrize("make", [bernoulli_model, normal_model, irm_model],
                         ids=["bernoulli", "normal", "irm"])
@pytest.mark.parametrize("variant", ["sarm", "bsm"])
def test_exact_ablations_with_the_adaptive_history(variant, make, n_gibbs):
    """§3.6.2's sARM and bSM through ``pm.sample``, 4 chains, the history running."""
    model = make()
    with model:
        step = pmp.ARM([model["z"]], variant=variant, n_gibbs_sweeps=n_gibbs)
    _, idata = assert_exact(model, draws=2500, seed=14, step=step, initvals=initvals())
    stats = idata["sample_stats"]
    proposed = int(stats["split_proposed"].sum() + stats["merge_proposed"].sum())
    accepted = int(stats["split_accepted"].sum() + stats["merge_accepted"].sum())
    assert proposed > 0.9 * stats["split_proposed"].size and 0 < accepted < proposed
    if variant == "sarm":
        assert int(stats["block_moves"].sum()) == 0  # no block moves (lines 5-8)


def test_exact_srm_alone():
    model = bernoulli_model()
    with model:
        step = pmp.ARM([model["z"]], variant="srm", n_gibbs_sweeps=0)
    assert_exact(model, draws=2500, seed=12, step=step, initvals=initvals())


def test_exact_with_alpha_by_nuts():
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 2.0)
        z = pmp.CRP("z", alpha=alpha, n=N)
        pmp.CollapsedBetaBernoulli("y", partition=z, a=0.6, b=0.6, observed=binary_data(N, 4, 5))
        steps = [pmp.ARM([z]), pm.NUTS([alpha])]
    assert_exact(model, draws=2500, seed=13, step=steps, initvals=initvals(),
                 grids={"alpha_log__": np.linspace(-12.0, 4.0, 160)})


def test_cores_1_and_2_give_the_same_draws_and_stats_are_declared():
    model = bernoulli_model()

    def run(cores):
        with model:
            step = pmp.ARM([model["z"]])
        return sample(model, draws=30, chains=3, seed=5, step=step, tune=10, cores=cores,
                      initvals=initvals()[:3])

    a, b = run(1), run(2)
    assert np.array_equal(posterior_dataset(a)["z"].values, posterior_dataset(b)["z"].values)
    for name in ("split_proposed", "split_accepted", "merge_proposed", "merge_accepted",
                 "block_moves", "outside_moves_proposed", "outside_moves_accepted",
                 "no_background", "arm_seconds", "gibbs_seconds", "log_joint"):
        assert name in a["sample_stats"], name
    assert (a["sample_stats"]["gibbs_seconds"].values > 0).all()


def test_one_chain_and_bad_arguments():
    model = bernoulli_model()
    with model:
        with pytest.raises(ValueError, match="needs at least 2 chains"):
            pm.sample(draws=5, tune=5, chains=1, step=pmp.ARM([model["z"]]), progressbar=False,
                      compute_convergence_checks=False)
        idata = pm.sample(draws=5, tune=5, chains=1, step=pmp.ARM([model["z"]], variant="srm"),
                          progressbar=False, compute_convergence_checks=False, random_seed=1)
        assert posterior_dataset(idata)["z"].shape == (1, 5, N)
        with pytest.raises(ValueError, match="'variant' must be one of"):
            pmp.ARM([model["z"]], variant="jain_neal")
        with pytest.raises(ValueError, match="'n_restricted_scans'"):
            pmp.ARM([model["z"]], variant="bsm", n_restricted_scans=-1)
        with pytest.raises(ValueError, match="needs at least 2 chains"):
            pm.sample(draws=5, tune=5, chains=1, step=pmp.ARM([model["z"]], variant="sarm"),
                      progressbar=False, compute_convergence_checks=False)
        with pytest.raises(ValueError, match="'n_gibbs_sweeps'"):
            pmp.ARM([model["z"]], n_gibbs_sweeps=-1)
        with pytest.raises(ValueError, match="'max_window'"):
            pmp.ARM([model["z"]], max_window=1)
        with pytest.raises(TypeError, match="'relabel'"):
            pmp.ARM([model["z"]], relabel="yes")


def test_identical_starts_without_gibbs_sweeps_warn_at_the_start_and_after_sampling():
    """From the default start (every chain one block) with n_gibbs_sweeps=0 no chain can
    draw two different earlier partitions: nothing moves, no_background in every draw.
    An ARMBackgroundWarning says so when sampling starts and, after sampling, names
    the chains that never had background information; both name initvals and
    initval="prior". Dispersed starts (or Gibbs sweeps, or "srm") warn nothing."""
    model = bernoulli_model()
    kwargs = {"draws": 3, "tune": 0, "chains": 2, "cores": 1, "random_seed": 1,
              "progressbar": False}
    with model:
        with pytest.warns(pmp.ARMBackgroundWarning) as record:
            idata = pm.sample(step=pmp.ARM([model["z"]], n_gibbs_sweeps=0), **kwargs)
    messages = [str(w.message) for w in record if w.category is pmp.ARMBackgroundWarning]
    assert len(messages) == 2, messages
    start, after = messages
    assert "all 2 chains start from the same partition of 'z'" in start
    assert "n_gibbs_sweeps" in start
    assert "chain(s) [0, 1] of partition 'z' never had background" in after
    for message in messages:
        assert "initvals=[{'z': labels_0}" in message and 'initval="prior"' in message
    assert (posterior_dataset(idata)["z"].values == 0).all()
    assert idata["sample_stats"]["no_background"].values.all()

    with model, warnings.catch_warnings():
        warnings.simplefilter("error", pmp.ARMBackgroundWarning)
        idata = pm.sample(step=pmp.ARM([model["z"]], n_gibbs_sweeps=0), initvals=initvals()[:2],
                          **kwargs)
        assert not idata["sample_stats"]["no_background"].values[:, 1:].any()
        # The start check alone (it runs when PyMC links the chains): identical starts
        # are no trap with Gibbs sweeps or for "srm", which needs no history.
        points = [model.initial_point()] * 3
        for options in ({"n_gibbs_sweeps": 1}, {"variant": "srm", "n_gibbs_sweeps": 0}):
            pmp.ARM([model["z"]], **options).link_population(points, 0)
        with pytest.raises(pmp.ARMBackgroundWarning, match="all 3 chains"):
            pmp.ARM([model["z"]], n_gibbs_sweeps=0).link_population(points, 0)
