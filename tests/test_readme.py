"""The README's snippets stay true: every ```python block is run by a test.

This module checks the claim (each block is named by a ``run_snippet`` call in some
test module) and runs the blocks no other module owns: the quick start, the
analysis block that continues it, the coupled estimates and ARM on NIPS."""

import re
from collections import Counter
from pathlib import Path

import arviz as az
import matplotlib
import numpy as np
import pymc as pm
import pytest

import pymc_partitions as pmp
from helpers import data_file
from readme import run_snippet, snippets

matplotlib.use("Agg")

TESTS = Path(__file__).resolve().parent
_CLAIM = re.compile(r"run_snippet\(\s*\"([^\"]+)\"(?:\s*,\s*(\d+))?")


def claimed():
    """``Counter`` of (heading, index) claimed by ``run_snippet(<heading in quotes>, index)``
    calls in the test modules."""
    found = Counter()
    for path in TESTS.glob("test_*.py"):
        for heading, index in _CLAIM.findall(path.read_text()):
            found[(heading, int(index or 0))] += 1
    return found


def test_every_readme_snippet_is_run_by_a_test():
    seen = Counter()
    blocks = []
    for heading, _ in snippets():
        blocks.append((heading, seen[heading]))
        seen[heading] += 1
    claims = claimed()
    unclaimed = [block for block in blocks if block not in claims]
    assert not unclaimed, f"README python blocks no test runs: {unclaimed}"
    stale = [claim for claim in claims if claim not in blocks]
    assert not stale, f"tests run README blocks that are gone: {stale}"


@pytest.fixture(scope="module")
def quick_start():
    """The first block's namespace (pm.sample with its seed), run once for the module."""
    return run_snippet("pymc-partitions")


def test_quick_start_finds_the_three_groups(quick_start):
    """README issue 34, item 11: with a scalar sigma the standardised columns' different
    spreads split each group (K 13.0, the three largest blocks 57 % of the points);
    with a noise scale per column the three groups hold nearly every point."""
    idata = quick_start["idata"].copy()
    pmp.add_partition_statistics(idata, "z", n_fractions=3)
    fractions = idata.posterior["z_block_frac"]
    top3 = fractions.sum(fractions.dims[-1])
    assert float(top3.mean()) > 0.9  # 0.95 measured; 0.57 with a scalar sigma
    k = idata.sample_stats["n_clusters"]
    assert float(k.mean()) < 8  # 5.3 measured; 13.0 with a scalar sigma
    for name in ("n_clusters", "largest_cluster_frac"):
        values = np.asarray(idata.sample_stats[name], dtype=float)  # (chain, draw): both ArviZ
        assert float(np.asarray(az.rhat(values))) <= 1.05, name


def test_analysis_block_runs_on_the_quick_start(quick_start):
    namespace = run_snippet("Analysis", namespace=dict(quick_start))
    est, ball, psm = namespace["est"], namespace["ball"], namespace["psm"]
    n = len(namespace["Y"])
    assert psm.shape == (n, n) and est.labels.shape == (n,)
    sizes = np.sort(np.bincount(est.labels))[::-1]
    assert sizes[:3].sum() >= 0.97 * n  # the three groups, and at most a few stray points
    assert ball.radius >= 0
    assert "z_vi_to_reference" in namespace["idata"].posterior


def test_coupled_estimates_block_agrees_with_a_long_gibbs_run():
    """The estimate's 95 % interval is checked against the posterior mean of the
    largest block's share from Gibbs chains on the same model (a z-test on the
    difference, with both standard errors)."""
    namespace = run_snippet("Unbiased estimates from coupled chains")
    est = namespace["est"]
    assert est.n_estimates == 400 and np.isfinite(est.mean)
    with namespace["model"]:
        idata = pm.sample(draws=2000, tune=500, chains=2, random_seed=3, progressbar=False,
                          compute_convergence_checks=False)
    lcp = np.asarray(idata.sample_stats["largest_cluster_frac"], dtype=float)  # (chain, draw)
    gibbs_mean = float(lcp.mean())
    gibbs_se = float(lcp.std()) / np.sqrt(float(np.asarray(az.ess(lcp))))
    se = np.hypot(est.std_error, gibbs_se)
    assert abs(est.mean - gibbs_mean) < 4 * se, (est.mean, gibbs_mean, se)
    assert est.survival() is not None


def test_arm_block_on_nips():
    """The ARM block on NIPS234 (8 chains): it samples, every chain had background
    information after its first draws, and ARM's own splits and merges were accepted
    (not only the Gibbs sweeps)."""
    data_file("networks/NIPS234.csv")  # a clear failure (CI) or skip without the data
    namespace = run_snippet("Adaptive Reconfiguration Moves (ARM)")
    stats = namespace["idata"].sample_stats
    assert stats.sizes["chain"] == 8
    assert not bool(stats["no_background"].all("draw").any())
    accepted = stats["split_accepted"] + stats["merge_accepted"]
    assert int(accepted.sum()) > 0
