"""Same draws for the same seed: every sampler's fixed-seed trace against one recorded
on main at 7864a8c (issue 31 item 6: reshaping the step layer must change no draw).

Each case runs a small ``pm.sample`` (or ``pmp.coupled_estimates``) with a fixed
seed; the posterior draws and every sampler statistic must equal the recording
bit for bit (floats compared exactly too: the same arithmetic in the same order).
Wall-clock statistics are left out. A statistic that is no longer reported fails the test (renaming one breaks users'
code); a new statistic is allowed.

Re-record only for a deliberate change of behaviour, and say so in the commit::

    PMP_RECORD_SAME_DRAWS=1 python -m pytest tests/test_same_draws.py

The recording is per stack (PyMC 5 / PyMC 6 differ in how chains are seeded), in
``tests/data/same_draws_pymc{major}.npz``.
"""

import os
from pathlib import Path

import numpy as np
import pymc as pm
import pytest
from helpers import binary_data, two_groups

import pymc_partitions as pmp
from pymc_partitions.versions import group_dataset

PAD = -1
RECORD = os.environ.get("PMP_RECORD_SAME_DRAWS") == "1"
DATA = Path(__file__).parent / "data" / f"same_draws_pymc{pm.__version__.split('.')[0]}.npz"
N = 6
ORDERINGS = np.array([[0, 1, 2, 3], [1, 0, 2, 3], [0, 1, PAD, PAD], [3, 2, 1, 0],
                      [2, 3, PAD, PAD], [3, 2, PAD, PAD]], dtype=np.int64)


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


def free_model():
    """alpha and sigma free: the default steps (Gibbs, EscobarWest, HyperSlice)."""
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 2.0)
        sigma = pm.HalfNormal("sigma", 1.0)
        z = pmp.CRP("z", alpha=alpha, n=N)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=2.0, sigma=sigma,
                            observed=two_groups(N, 2, 3))
    return model


def mallows_model(alpha=0.8):
    with pm.Model() as model:
        if alpha == "gamma":
            alpha = pm.Gamma("alpha", 2.0, 2.0)
        z = pmp.CRP("z", alpha=alpha, n=ORDERINGS.shape[0])
        pmp.GeneralizedMallows("y", partition=z, nu=1.0, r=0.6, observed=ORDERINGS)
    return model


# name -> (model factory, step factory or None for the default steps, chains)
CASES = {
    "default-free": (free_model, None, 2),
    "gibbs": (normal_model, lambda m: [pmp.Gibbs([m["z"]])], 2),
    "split_merge": (bernoulli_model, lambda m: [pmp.SplitMerge([m["z"]])], 2),
    "split_merge-random": (bernoulli_model,
                           lambda m: [pmp.SplitMerge([m["z"]], proposal="random",
                                                     n_proposals=3)], 2),
    "split_merge-sequential": (normal_model,
                               lambda m: [pmp.SplitMerge([m["z"]], proposal="sequential",
                                                         n_proposals=3)], 2),
    "arm": (bernoulli_model, lambda m: [pmp.ARM([m["z"]])], 2),
    "arm-extended": (bernoulli_model, lambda m: [pmp.ARM([m["z"]], variant="extended")], 2),
    "arm-sarm": (normal_model, lambda m: [pmp.ARM([m["z"]], variant="sarm")], 2),
    "pbc": (bernoulli_model, lambda m: [pmp.PBC([m["z"]], temperatures=(4.0, 2.0, 1.0))], 2),
    "coupled-ot": (normal_model, lambda m: [pmp.CoupledGibbs([m["z"]], start="prior")], 2),
    "coupled-maximal-sm": (bernoulli_model,
                           lambda m: [pmp.CoupledGibbs([m["z"]], coupling="maximal",
                                                       split_merge=True, start="prior")], 2),
    "mallows": (mallows_model, lambda m: [pmp.MallowsGibbs([m["z"]])], 2),
    "mallows-sm": (lambda: mallows_model("gamma"),
                   lambda m: [pmp.MallowsGibbs([m["z"]], split_merge=True)], 2),
    "mallows-beta": (mallows_model, lambda m: [pmp.MallowsGibbs([m["z"]], method="exact_beta")],
                     2),
}


def is_timing(stat):
    """Wall-clock statistics (ours end in ``_seconds``) differ run to run."""
    return stat.endswith("seconds") or stat.endswith("_time")


def run_case(name):
    make, steps, chains = CASES[name]
    model = make()
    with model:
        idata = pm.sample(draws=12, tune=4, chains=chains, cores=1, random_seed=20261127,
                          step=None if steps is None else steps(model), progressbar=False,
                          compute_convergence_checks=False)
    arrays = {}
    for group in ("posterior", "sample_stats"):
        dataset = group_dataset(idata, group)
        for var in dataset.data_vars:
            if not is_timing(var):
                arrays[f"{name}/{group}/{var}"] = np.asarray(dataset[var].values)
    return arrays


def run_estimates():
    model = bernoulli_model()
    result = pmp.coupled_estimates(model, "z", h=pmp.unbiased.n_blocks, burn_in=2, m=6, n_pairs=3,
                                   executor="serial", random_seed=7, progressbar=False)
    return {"coupled_estimates/estimates": np.asarray(result.estimates),
            "coupled_estimates/meeting_times": np.asarray(result.meeting_times)}


def recorded():
    if not DATA.exists():
        pytest.skip(f"no recording at {DATA} (record with PMP_RECORD_SAME_DRAWS=1)")
    with np.load(DATA) as data:
        return {key: data[key] for key in data.files}


def compare(name, arrays, reference):
    prefix = f"{name}/"
    expected = {k: v for k, v in reference.items() if k.startswith(prefix)}
    assert expected, f"nothing recorded for {name}"
    missing = sorted(set(expected) - set(arrays))
    assert not missing, f"{name}: no longer reported: {missing}"
    for key, want in expected.items():
        got = arrays[key]
        assert got.shape == want.shape, f"{key}: shape {got.shape}, recorded {want.shape}"
        assert np.array_equal(got, want, equal_nan=want.dtype.kind == "f"), (
            f"{key}: differs from the recording at {np.argwhere(got != want)[:5].tolist()}")


@pytest.mark.skipif(RECORD, reason="recording")
@pytest.mark.parametrize("name", list(CASES))
def test_same_draws_as_recorded(name):
    compare(name, run_case(name), recorded())


@pytest.mark.skipif(RECORD, reason="recording")
def test_coupled_estimates_same_as_recorded():
    compare("coupled_estimates", run_estimates(), recorded())


def test_a_changed_draw_is_detected():
    """The comparison itself can fail: one label changed."""
    arrays = {"x/posterior/z": np.zeros((2, 3, 4), dtype=np.int64)}
    changed = {"x/posterior/z": arrays["x/posterior/z"].copy()}
    changed["x/posterior/z"][1, 2, 3] = 1
    with pytest.raises(AssertionError, match="differs"):
        compare("x", changed, arrays)
    with pytest.raises(AssertionError, match="no longer reported"):
        compare("x", {}, arrays)


@pytest.mark.skipif(not RECORD, reason="PMP_RECORD_SAME_DRAWS=1 records")
def test_record():
    arrays = {}
    for name in CASES:
        arrays.update(run_case(name))
    arrays.update(run_estimates())
    DATA.parent.mkdir(exist_ok=True)
    np.savez_compressed(DATA, **arrays)
