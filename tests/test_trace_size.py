"""The warning pm.sample gives before storing partition labels that need a lot of
memory (pymc_partitions.trace_size; issue 33: n = 10^6 stores 8 MB a draw)."""

import warnings

import numpy as np
import pymc as pm
import pytest

import pymc_partitions as pmp
from pymc_partitions import trace_size
from pymc_partitions.trace_size import TraceSizeWarning, check_trace_size


def model_of(n):
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        z = pmp.CRP("z", alpha=alpha, n=n)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=1.0, sigma=1.0,
                            observed=np.linspace(-1, 1, n))
    return model


def test_warns_for_large_n_times_draws_with_size_and_remedies():
    model = model_of(10**6)  # creating the model is cheap; nothing is sampled
    with pytest.warns(TraceSizeWarning) as record:
        peak = check_trace_size(model, draws=1000, tune=1000, chains=4)
    message = str(record[0].message)
    # 4 chains x 1000 draws x 10^6 labels x 8 bytes = 29.8 GiB kept
    assert "4 chains x 1000 draws" in message and "'z' (n = 1000000)" in message
    assert "29.8 GiB in the posterior" in message
    assert peak == pytest.approx(8.0 * 10**6 * 4 * (2000 + 1000))
    for remedy in ("draws=", "var_names=['alpha', 'z_n_clusters', 'z_largest_cluster_frac', "
                   "'z_entropy']", "n_sweeps=k", "thin"):
        assert remedy in message, remedy


def test_quiet_for_small_runs_and_without_stored_labels():
    with warnings.catch_warnings():
        warnings.simplefilter("error", TraceSizeWarning)
        assert check_trace_size(model_of(300), draws=1000, tune=1000, chains=4) > 0
        # labels not stored (only the summaries): nothing to warn about, even at n = 10^6
        big = model_of(10**6)
        assert check_trace_size(big, draws=1000, chains=4, var_names=["alpha", "z_n_clusters"]) == 0
        # a few draws of a large partition fit
        check_trace_size(big, draws=10, tune=0, chains=1)


def test_pm_sample_warns_before_the_first_draw(monkeypatch):
    """Through pm.sample (the sample_checks wrapper), with the threshold lowered so a
    small model trips it; the remedy it names (var_names of the summaries) works."""
    monkeypatch.setattr(trace_size, "WARN_BYTES", 1000)
    model = model_of(20)
    with pytest.warns(TraceSizeWarning, match=r"2 chains x 5 draws"):
        pm.sample(model=model, draws=5, tune=2, chains=2, cores=1, progressbar=False,
                  random_seed=1, compute_convergence_checks=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TraceSizeWarning)
        idata = pm.sample(model=model, draws=5, tune=2, chains=2, cores=1, progressbar=False,
                          random_seed=1, var_names=["alpha", "z_n_clusters", "z_entropy"])
    posterior = pmp.versions.posterior_dataset(idata)
    assert "z" not in posterior and posterior["z_n_clusters"].shape == (2, 5)
