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

import numpy as np
import pytest

import pymc_partitions as pmp
from pymc_partitions.kernels import mallows_split_merge as msm
from tests.helpers import assert_exact, draws_of, exact_posterior, judge, sample
from tests.test_mallows_sampler import gm_model

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
    ch = step._chain
    assert ch["sizes"].shape[0] > 8 and stats[0]["split_accepted"] >= 0
    counts = np.zeros_like(ch["counts"])
    n_at_least = np.zeros_like(ch["n_at_least"])
    for i in range(orderings.shape[0]):
        mk.add_ranking(counts, n_at_least, orderings[i], 5, ch["labels"][i])
    np.testing.assert_array_equal(counts, ch["counts"])
    np.testing.assert_array_equal(np.bincount(ch["labels"], minlength=ch["sizes"].shape[0]),
                                  ch["sizes"])
