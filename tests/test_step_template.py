"""The one step template (``step_methods/base.py``) and the Info records
(``step_methods/info.py``): every step's statistics are its records' fields, declared
from them and written as they are; a step written as the base class's docstring
says is exact; the records' checks can fail."""

from typing import Annotated, NamedTuple

import numpy as np
import pymc as pm
import pytest
from helpers import assert_exact, binary_data, draws_of, exact_posterior, judge, sample

import pymc_partitions as pmp
from pymc_partitions.versions import group_dataset
from pymc_partitions.kernels import gibbs
from pymc_partitions.kernels.tempering import temper
from pymc_partitions.step_methods.base import PartitionStep
from pymc_partitions.step_methods.info import (
    CoupledInfo,
    NoInfo,
    Summary,
    stats_dtypes_shapes,
    undocumented,
)

STEPS = {
    "Gibbs": (pmp.Gibbs, {}),
    "SplitMerge": (pmp.SplitMerge, {}),
    "ARM": (pmp.ARM, {}),
    "PBC": (pmp.PBC, {"temperatures": (2.0, 1.0)}),
    "CoupledGibbs": (pmp.CoupledGibbs, {}),
    "SubClusters": (pmp.SubClusters, {}),
}


def bernoulli_model(n=5, alpha=0.8):
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=alpha, n=n)
        pmp.CollapsedBetaBernoulli("y", partition=z, a=0.6, b=0.6, observed=binary_data(n, 3, 5))
    return model


@pytest.mark.parametrize("name", list(STEPS))
def test_statistics_are_declared_from_the_info_record(name):
    cls, _ = STEPS[name]
    assert cls.stats_dtypes_shapes == stats_dtypes_shapes(Summary, cls.Info)
    assert list(cls.stats_dtypes_shapes)[:3] == ["n_clusters", "largest_cluster_frac",
                                                 "log_joint"]
    assert undocumented(cls.Info) == [], f"{cls.Info.__name__}: fields without a line"
    assert undocumented(Summary) == []


@pytest.mark.parametrize("name", list(STEPS))
def test_a_step_returns_its_records_fields_with_their_dtypes(name):
    """One iteration through the template: the statistics are exactly the declared
    ones (names, order), each value representable in its declared dtype."""
    cls, kwargs = STEPS[name]
    model = bernoulli_model()
    with model:
        step = cls([model["z"]], rng=3, **kwargs)
    point = model.initial_point()
    if name == "ARM":
        other = dict(point, z=np.arange(5, dtype=np.int64))
        step.link_population([point, other], 0)
    for _ in range(3):  # ARM: a history from the second iteration on
        point, (stats,) = step.step(point)
        assert list(stats) == list(cls.stats_dtypes_shapes)
        for key, (dtype, shape) in cls.stats_dtypes_shapes.items():
            value = stats[key]
            if dtype is object:
                assert isinstance(value, np.ndarray), key
            else:
                assert np.asarray(value, dtype=dtype) == value, key
                assert np.ndim(value) == len(shape), key
    assert step.iteration == 3


def test_info_checks_fail_on_bad_records():
    """Negative controls of the record checks: an undocumented field, a statistic
    written by two records, a class that is no NamedTuple."""

    class Half(NamedTuple):
        """One field described.

        Attributes
        ----------
        documented
            Described.
        """

        documented: np.int64
        forgotten: np.float64

    assert undocumented(Half) == ["forgotten"]
    with pytest.raises(ValueError, match="'n_clusters'"):
        stats_dtypes_shapes(Summary, Summary)
    with pytest.raises(TypeError, match="not a NamedTuple"):
        stats_dtypes_shapes(dict)
    assert stats_dtypes_shapes(NoInfo) == {}


def test_shapes_from_annotations():
    class Shaped(NamedTuple):
        """A matrix per draw.

        Attributes
        ----------
        sigma
            (K, n) int16.
        """

        sigma: Annotated[np.int16, (None, None)]

    assert stats_dtypes_shapes(Shaped) == {"sigma": (np.int16, [None, None])}
    assert stats_dtypes_shapes(CoupledInfo)["coupled_labels"] == (object, [])


# ------------------------------------------------- a step written from the docstring


class SweepInfo(NamedTuple):
    """What one iteration of :class:`Sweeps` did.

    Attributes
    ----------
    n_items_visited
        Item updates made.
    """

    n_items_visited: np.int64


class Sweeps(PartitionStep):
    """Gibbs sweeps as a new move would be written on the template (the base class's
    docstring); ``inv_t`` != 1 is the negative control: it samples pi^inv_t."""

    name = "test_template_sweeps"
    move_description = "a test sweep"
    Info = SweepInfo

    def __init__(self, vars, n_sweeps=2, inv_t=1.0, **kwargs):
        self.n_sweeps = n_sweeps
        self.inv_t = inv_t
        super().__init__(vars, **kwargs)

    def move(self, chain, args):
        prior, params = args.prior_params, args.params
        if self.inv_t != 1.0:
            prior, params = temper(prior, params, self.inv_t)
        failed = gibbs.run_sweeps(args.stream, self.n_sweeps, chain.state, prior, params,
                                  chain.stats, args.data, chain.log_w, chain.order)
        self.fail_if(failed, args)
        return SweepInfo(self.n_sweeps * self.target.n)


def test_a_step_written_on_the_template_is_exact():
    model = bernoulli_model()
    with model:
        step = [Sweeps([model["z"]])]
    _, idata = assert_exact(model, draws=1500, seed=4, step=step)
    visited = group_dataset(idata, "sample_stats")["n_items_visited"].values
    assert (visited == 10).all()


def test_the_template_step_sampling_a_tempered_target_is_caught():
    """Negative control: the same step drawing from pi^(1/2) fails the harness."""
    model = bernoulli_model()
    exact = exact_posterior(model)
    with model:
        step = [Sweeps([model["z"]], inv_t=0.5)]
    idata = sample(model, draws=1500, seed=4, step=step)
    verdict = judge(exact, draws_of(idata))
    assert not verdict.passed, verdict.row()


def test_the_kernels_share_the_outcome_layout_the_records_read():
    """Each kernel's counter layout (the NamedTuple info.counters reads by name) puts
    every field at the index constant the kernel fills it at, and documents it; the
    mutation and ARM start with split-merge's four outcomes."""
    from pymc_partitions.kernels import arm, crossover, mutation, split_merge
    from pymc_partitions.step_methods.info import undocumented

    constants = {
        split_merge.Outcomes: {"split_rejected": split_merge.SPLIT_REJECTED,
                               "split_accepted": split_merge.SPLIT_ACCEPTED,
                               "merge_rejected": split_merge.MERGE_REJECTED,
                               "merge_accepted": split_merge.MERGE_ACCEPTED},
        mutation.Outcomes: {"split_rejected": mutation.SPLIT_REJECTED,
                            "split_accepted": mutation.SPLIT_ACCEPTED,
                            "merge_rejected": mutation.MERGE_REJECTED,
                            "merge_accepted": mutation.MERGE_ACCEPTED},
        arm.Counts: {"split_rejected": arm.SPLIT_REJECTED, "split_accepted": arm.SPLIT_ACCEPTED,
                     "merge_rejected": arm.MERGE_REJECTED, "merge_accepted": arm.MERGE_ACCEPTED,
                     "block_moves": arm.BLOCK_MOVES,
                     "outside_moves_proposed": arm.OUTSIDE_PROPOSED,
                     "outside_moves_accepted": arm.OUTSIDE_ACCEPTED},
        crossover.Outcomes: {"crossover_no_move": crossover.NO_MOVE,
                             "crossover_rejected": crossover.REJECTED,
                             "crossover_accepted": crossover.ACCEPTED},
    }
    for layout, index in constants.items():
        assert layout._fields == tuple(sorted(index, key=index.get)), layout
        assert list(index.values()) == sorted(index.values()) == list(range(len(index)))
        assert undocumented(layout) == [], layout
    assert arm.Counts._fields[:4] == split_merge.Outcomes._fields


def test_counters_and_record_read_a_filled_array_by_name():
    """The generic reader pairs X_rejected/X_accepted into X_proposed/X_accepted, and
    record fills an Info by name; a layout/array mismatch or a missing field raises."""
    from pymc_partitions.kernels import arm
    from pymc_partitions.step_methods.arm import ARMInfo
    from pymc_partitions.step_methods.info import counters, record

    read = counters(arm.Counts, np.array([2, 3, 5, 7, 11, 13, 17]))
    assert read == {"split_proposed": 5, "split_accepted": 3, "merge_proposed": 12,
                    "merge_accepted": 7, "block_moves": 11, "outside_moves_proposed": 13,
                    "outside_moves_accepted": 17}
    info = record(ARMInfo, read, no_background=False, arm_seconds=1.0, gibbs_seconds=2.0)
    assert info.merge_proposed == 12 and info.gibbs_seconds == 2.0
    with pytest.raises(ValueError, match="Counts names 7"):
        counters(arm.Counts, np.zeros(5, dtype=np.int64))
    with pytest.raises(TypeError, match="arm_seconds"):
        record(ARMInfo, read, no_background=False, gibbs_seconds=2.0)
    with pytest.raises(TypeError, match="no field"):
        record(ARMInfo, read, no_background=False, arm_seconds=1.0, gibbs_seconds=2.0, oops=1)

    class Two(NamedTuple):
        """a, b"""

        a: np.int64
        b: np.int64

    assert record(Two, {"a": 1}, {"a": 9, "b": 2}) == Two(1, 2)
