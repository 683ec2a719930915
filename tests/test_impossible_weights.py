"""A full conditional with no admissible block is an error, never a silent index -1.

Every kernel path that samples from log weights is driven into a conditional whose
weights are all -inf (CRP with alpha = 0 where only a new block is possible) or
contain a NaN (a NaN datum): the kernel must report it and leave the state as it
was before the failing update; the step must raise a ValueError naming the
partition, its prior and the likelihoods observed on it.
"""

import numpy as np
import pymc as pm
import pytest

import pymc_partitions as pmp
from pymc_partitions.kernels import assign_labels, gibbs, new_state, split_merge, sweep_block
from pymc_partitions.kernels.components import normal
from pymc_partitions.kernels.errors import ImpossibleConditionalError, check_item
from pymc_partitions.kernels.priors import crp
from pymc_partitions.kernels.random import new_stream


def setup(x, labels, alpha=1.0):
    """(state, prior, params, stats, data) of CollapsedNormal data ``x`` at ``labels``."""
    n, d = x.shape
    params = normal.make_params(np.zeros(d), np.ones(d), np.ones(d), n=n)
    stats, data, state = normal.alloc_stats(n, d, params), normal.make_data(x), new_state(n)
    assign_labels(state, params, stats, data, np.asarray(labels, dtype=np.int64))
    with np.errstate(divide="ignore"):
        prior = crp.make_params(alpha, n)
    return state, prior, params, stats, data


def snapshot(state, stats):
    return [a.copy() for a in state], [a.copy() for a in stats]


def assert_unchanged(before, state, stats):
    for old, new in zip(before[0], state):
        np.testing.assert_array_equal(old, new)
    for old, new in zip(before[1], stats):
        np.testing.assert_allclose(old, new, rtol=1e-12, atol=1e-12, equal_nan=True)


def nan_data(n=6):
    x = np.random.default_rng(0).normal(size=(n, 2))
    x[3, 0] = np.nan
    return x


# ---------------------------------------------------------------- Gibbs (run_sweeps)
def test_gibbs_all_minus_inf_reports_item_and_keeps_state():
    # One item, alpha = 0: after removing it the only option is a new block, weight 0.
    state, prior, params, stats, data = setup(np.zeros((1, 1)), [0], alpha=0.0)
    before = snapshot(state, stats)
    failed = gibbs.run_sweeps(new_stream(1), 3, state, prior, params, stats, data, np.empty(2),
                              np.arange(1))
    assert failed == 0
    assert_unchanged(before, state, stats)
    with pytest.raises(ImpossibleConditionalError, match="item 0"):
        check_item(failed, "gibbs")


def test_gibbs_nan_weight_reports_item_and_keeps_state():
    x = nan_data()
    state, prior, params, stats, data = setup(x, np.zeros(6))
    before = snapshot(state, stats)
    failed = gibbs.run_sweeps(new_stream(1), 1, state, prior, params, stats, data, np.empty(7),
                              np.arange(6))
    # Every item's one existing block holds the NaN: the first item visited fails.
    assert 0 <= failed < 6
    assert_unchanged(before, state, stats)


def test_gibbs_finite_weights_report_no_failure():
    state, prior, params, stats, data = setup(
        np.random.default_rng(1).normal(size=(8, 2)), np.zeros(8)
    )
    assert gibbs.run_sweeps(new_stream(1), 2, state, prior, params, stats, data, np.empty(9),
                            np.arange(8)) == -1


# ---------------------------------------------------------------- sweep_block_entry
@pytest.mark.parametrize("forced", [-1, 0])
def test_sweep_block_no_candidate_raises_and_keeps_state(forced):
    # C = the whole (only) block, alpha = 0, the only candidate is a new block.
    state, prior, params, stats, data = setup(np.zeros((3, 1)), [0, 0, 0], alpha=0.0)
    before = snapshot(state, stats)
    with pytest.raises(ValueError, match="no candidate block has positive probability"):
        sweep_block.sweep_block_entry(
            state, prior, params, stats, data, np.arange(3), np.array([-1]), forced, 0.5,
            np.empty(1),
        )
    assert_unchanged(before, state, stats)


def test_sweep_block_nan_weight_raises_and_keeps_state():
    state, prior, params, stats, data = setup(nan_data(), [0, 0, 0, 1, 1, 2])
    before = snapshot(state, stats)
    slot = state.labels[0]
    with pytest.raises(ValueError, match="no candidate block"):
        sweep_block.sweep_block_entry(
            state, prior, params, stats, data, np.array([0, 1]),
            np.array([slot, state.labels[3], -1]), -1, 0.5, np.empty(3),
        )
    assert_unchanged(before, state, stats)


# ---------------------------------------------------------------- split-merge
@pytest.mark.parametrize("proposal", [split_merge.RESTRICTED_GIBBS, split_merge.SEQUENTIAL])
@pytest.mark.parametrize("labels", [[0, 0, 0, 0, 0, 0], [0, 1, 0, 1, 0, 1]])
def test_split_merge_update_nan_raises_and_restores(labels, proposal):
    # (0, 1): a split of one block, or a merge of two; item 3's NaN enters S.
    state, prior, params, stats, data = setup(nan_data(), labels)
    before = snapshot(state, stats)
    members, origin = np.empty(6, dtype=np.int64), np.empty(6, dtype=np.int64)
    with pytest.raises(ValueError, match="NaN"):
        split_merge.split_merge_entry(state, prior, params, stats, data, 0, 1, 7, 2,
                                      proposal, members, origin)
    np.testing.assert_array_equal(
        pmp.canonicalize(state.labels), pmp.canonicalize(np.asarray(before[0][0]))
    )
    np.testing.assert_array_equal(np.sort(state.sizes), np.sort(before[0][1]))


def test_restricted_update_nan_raises():
    state, prior, params, stats, data = setup(nan_data(), [0, 1, 0, 1, 0, 1])
    ka, kb = state.labels[0], state.labels[1]
    with pytest.raises(ValueError, match="NaN"):
        split_merge.restricted_update_entry(state, prior, params, stats, data, 2, ka, kb,
                                            0.5, -1)
    assert state.labels[2] == ka  # stays in place


@pytest.mark.parametrize("n_proposals, n_gibbs", [(3, 0), (0, 1)])
def test_run_split_merge_reports_item(n_proposals, n_gibbs):
    state, prior, params, stats, data = setup(nan_data(), np.zeros(6))
    before = snapshot(state, stats)
    scratch = [np.empty(6, dtype=np.int64) for _ in range(2)]
    outcomes = np.zeros(4, dtype=np.int64)
    stream = new_stream(1)
    failed = split_merge.run_split_merge(
        stream, n_proposals, 2, split_merge.RESTRICTED_GIBBS, state, prior, params, stats, data,
        *scratch, outcomes,
    )
    if failed < 0:  # SM(t, m, n)'s n Gibbs sweeps
        failed = gibbs.run_sweeps(stream, n_gibbs, state, prior, params, stats, data,
                                  np.empty(7), np.arange(6))
    assert 0 <= failed < 6
    assert outcomes.sum() == 0  # the failed update is not counted
    np.testing.assert_array_equal(state.labels, before[0][0])


# ---------------------------------------------------------------- through the step
def overflow_model(step_cls):
    # 1e200 squared overflows the Normal's sufficient statistics: NaN predictives.
    y = np.array([[0.0], [1e200], [-1e200], [3.0]])
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=4)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=1.0, sigma=1.0, observed=y)
        step = step_cls([z])
    return model, step


@pytest.mark.parametrize("step_cls", [pmp.Gibbs, pmp.SplitMerge])
def test_step_names_partition_prior_and_likelihood(step_cls):
    model, step = overflow_model(step_cls)
    with pytest.raises(ValueError) as info:
        step.step(model.initial_point())
    message = str(info.value)
    assert isinstance(info.value, pmp.ImpossibleConditionalError)
    for part in ["partition 'z'", "pmp.CRP", "'y'", "pmp.CollapsedNormal", "item ",
                 "alpha", "hyperparameter"]:
        assert part in message, (part, message)
    assert f"item {info.value.item}" in message


def test_pm_sample_raises_clear_error():
    model, step = overflow_model(pmp.Gibbs)
    with model, pytest.raises(ValueError, match=r"partition 'z' \(prior pmp.CRP"):
        pm.sample(draws=2, tune=0, chains=1, cores=1, step=[step], progressbar=False,
                  compute_convergence_checks=False, random_seed=1)
