"""Split-merge for Generalized Mallows mixtures (issue 34, item 7):
``pmp.MallowsGibbs(..., split_merge=True)``, kernel
:mod:`pymc_partitions.kernels.mallows_split_merge`.

Exactness against enumeration on the problem of ``test_mallows_sampler.py`` (n = 4
items, N = 6 rankings, 203 partitions): the move with the parameter step alone (no
reassignment sweep: split-merge moves alone reach every partition, the parameter
step and the new clusters' exact draws every parameter value) and combined with
Slice-Gibbs, both through ``pm.sample``. Negative controls must fail: the split's
ratio without m(pi_j) / GM(pi_j | phi_b) (as if the new cluster's parameters came
from the prior), and without the launch's proposal probability.
"""

import re

import numpy as np
import pymc as pm
import pytest

import pymc_partitions as pmp
from pymc_partitions.kernels import mallows_split_merge as msm
from tests.helpers import assert_exact, draws_of, exact_posterior, judge, sample
from tests.test_mallows_sampler import gm_model

def README_TEXT():
    from readme import README

    return README.read_text()


STATS = ("split_proposed", "split_accepted", "merge_proposed", "merge_accepted")


def split_merge_step(model, reassign=True, control=msm.EXACT, **kwargs):
    with model:
        step = pmp.MallowsGibbs([model["z"]], split_merge=True, **kwargs)
    step._reassign_sweeps = reassign
    step._split_merge_control = control
    return step


def rates(idata):
    stats = idata["sample_stats"]
    total = {k: int(np.asarray(stats[k].values).sum()) for k in STATS}
    return (total["split_accepted"] / max(total["split_proposed"], 1),
            total["merge_accepted"] / max(total["merge_proposed"], 1))


def test_split_merge_alone_exact():
    """The move and the parameter step, no reassignment sweep (measured on Python
    3.11 / PyMC 5: see the printed row)."""
    model = gm_model()
    step = split_merge_step(model, reassign=False, n_split_merge=5)
    verdict, idata = assert_exact(model, draws=2500, chains=4, seed=11, step=[step])
    stats = idata["sample_stats"]
    for name in STATS:
        assert np.asarray(stats[name].values).dtype == np.int64
    proposed = np.asarray(stats["split_proposed"].values) + np.asarray(
        stats["merge_proposed"].values)
    assert np.all(proposed == 5)
    split_rate, merge_rate = rates(idata)
    assert 0 < split_rate < 1 and 0 < merge_rate < 1
    print(verdict.row(), f"split {split_rate:.3f} merge {merge_rate:.3f}")


def test_split_merge_with_slice_gibbs_exact():
    model = gm_model()
    step = split_merge_step(model, n_split_merge=3, n_restricted_scans=2)
    verdict, idata = assert_exact(model, draws=2500, chains=4, seed=12, step=[step])
    print(verdict.row(), "split %.3f merge %.3f" % rates(idata))


@pytest.mark.parametrize("control", [msm.DROP_NEW_CLUSTER_FACTOR, msm.DROP_LAUNCH_PROBABILITY])
def test_split_merge_negative_control(control):
    """A ratio without m(pi_j) / GM(pi_j | phi_b), or without the launch's proposal
    probability Q, must fail the harness (move and parameter step alone, as in the
    exact test)."""
    model = gm_model()
    exact = exact_posterior(model)
    step = split_merge_step(model, reassign=False, control=control, n_split_merge=5)
    idata = sample(model, draws=2500, chains=4, seed=11, step=[step])
    verdict = judge(exact, draws_of(idata))
    print(control, verdict.row())
    assert not verdict.passed


@pytest.mark.parametrize("method", ["exact_beta", "beta"])
def test_split_merge_refused_for_beta_gibbs(method):
    model = gm_model()
    with model, pytest.raises(ValueError, match="'split_merge'.*method='slice'"):
        pmp.MallowsGibbs([model["z"]], method=method, split_merge=True)


def test_split_merge_stats_only_when_enabled():
    model = gm_model()
    with model:
        plain = pmp.MallowsGibbs([model["z"]])
    assert not set(STATS) & set(plain.stats_dtypes_shapes)
    step = split_merge_step(model)
    assert set(STATS) <= set(step.stats_dtypes_shapes)


def test_split_merge_grows_the_slot_arrays():
    """Splits from a state with no free slot grow the arrays and carry on; the
    statistics stay those of the labels."""
    from pymc_partitions.kernels import mallows as mk

    rng = np.random.default_rng(2)
    orderings = np.stack([rng.permutation(5) for _ in range(24)])
    model = gm_model(alpha=50.0, orderings=orderings)
    step = split_merge_step(model, reassign=False, n_split_merge=60, n_restricted_scans=1,
                            rng=np.random.default_rng(3))
    point = model.initial_point()
    for _ in range(4):
        point, stats = step.step(point)
    ch = step._container
    assert ch.state.sizes.shape[0] > 8 and stats[0]["split_accepted"] >= 0
    counts = np.zeros_like(ch.stats.counts)
    n_at_least = np.zeros_like(ch.stats.n_at_least)
    for i in range(orderings.shape[0]):
        mk.add_ranking(counts, n_at_least, orderings[i], 5, ch.state.labels[i])
    np.testing.assert_array_equal(counts, ch.stats.counts)
    np.testing.assert_array_equal(np.bincount(ch.state.labels, minlength=ch.state.sizes.shape[0]),
                                  ch.state.sizes)


# ------------------------------------------------------------------ mixing (issue 34, 7)
def merged_start(n_per_cluster):
    """Figure 6's data set 1 (seed 1) and its true partition with clusters 0 and 1
    merged: the state a chain at K = 9 of the issue sits in."""
    orderings, labels, _, _ = pmp.datasets.meila_chen_rankings(1, n_per_cluster=n_per_cluster,
                                                               seed=1)
    start = labels.copy()
    start[start == 1] = 0
    return orderings, pmp.canonicalize(start)


@pytest.mark.parametrize("split_merge", [False, True])
def test_split_merge_splits_two_merged_clusters(split_merge):
    """From two true clusters merged (N = 500, n = 20), Slice-Gibbs alone keeps them
    merged for 100 iterations (a ranking at a time cannot pull 50 rankings out of a
    fitted cluster); with split-merge the chain separates them (measured: K = 10 from
    iteration 5 on)."""
    orderings, start = merged_start(50)
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=orderings.shape[0])
        pmp.GeneralizedMallows("y", partition=z, nu=1.0, r=1.0, observed=orderings, n_items=20)
        step = pmp.MallowsGibbs([z], split_merge=split_merge)
        idata = pm.sample(draws=100, tune=0, chains=1, cores=1, step=[step],
                          initvals={"z": start}, progressbar=False, random_seed=3,
                          compute_convergence_checks=False)
    z = np.asarray(idata["posterior"]["z"].values)[0]
    # per draw: do most rankings of true clusters 0 and 1 share one block?
    merged = np.array([np.bincount(d[:50]).argmax() == np.bincount(d[50:100]).argmax()
                       for d in z])
    if split_merge:
        assert int(idata["sample_stats"]["split_accepted"].values.sum()) >= 1
        assert not merged[-50:].any()
    else:
        assert merged.all()


def test_readme_mallows_snippet_chains_agree():
    """The README's Rankings snippet, run verbatim: both chains agree on K, R-hat of
    the label-invariant statistics <= 1.05 (a statistic constant in both chains must
    be the same constant: R-hat is undefined there), within the README's stated time
    (kernels compiled beforehand, as the README's figure is for a warm cache)."""
    import time

    import arviz as az
    from readme import run_snippet, snippet

    warm = gm_model()  # compiles the kernels' signatures the snippet uses
    step = split_merge_step(warm, rng=np.random.default_rng(0))
    point = warm.initial_point()
    for _ in range(2):
        point, _ = step.step(point)
    start = time.perf_counter()
    ns = run_snippet("Rankings (Generalized Mallows mixtures)")
    seconds = time.perf_counter() - start
    idata = ns["idata"]
    stats = idata["sample_stats"]
    post = idata["posterior"]
    K = np.asarray(stats["n_clusters"].values)
    modes = [np.bincount(k).argmax() for k in K]
    print(f"README snippet: {seconds:.1f} s; K per chain {modes}, mean {K.mean(axis=1)}")
    assert modes[0] == modes[1]
    for name, values in [("n_clusters", K.astype(float)),
                         ("largest_cluster_frac", stats["largest_cluster_frac"].values),
                         ("z_entropy", post["z_entropy"].values)]:
        values = np.asarray(values, dtype=float)
        if np.all(values == values.flat[0]):
            continue  # constant in both chains, the same constant
        rhat = float(az.rhat(values))
        print(f"  R-hat {name}: {rhat:.4f}")
        assert rhat <= 1.05, name
    budget = int(re.search(r"runs in under (\d+) s", README_TEXT()).group(1))
    assert seconds < budget, f"{seconds:.1f} s > the README's {budget} s"
    assert "split_merge=True" in snippet("Rankings (Generalized Mallows mixtures)")


def test_outcome_layout_is_the_one_the_info_record_reads():
    """MallowsGibbs reads the split-merge counts with split_merge's layout
    (info.counters(split_merge.Outcomes, ...)): the Mallows kernel must fill the same indices."""
    from pymc_partitions.kernels import split_merge

    names = ("SPLIT_REJECTED", "SPLIT_ACCEPTED", "MERGE_REJECTED", "MERGE_ACCEPTED")
    assert [getattr(msm, k) for k in names] == [getattr(split_merge, k) for k in names]
