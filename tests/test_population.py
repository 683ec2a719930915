"""The population step base (``step_methods/population.py``): PyMC runs it as a
population step on both stacks, each chain sees the other chains' points of the
previous iteration, ``cores=1`` and ``cores=2`` give the same draws, a population
move built on it is exact, one chain is refused clearly, and an exception in a
worker process reaches the caller as itself (not as PyMC's bare ``EOFError``).

The steps here are test probes, not samplers of the library: :class:`Probe` does a
Gibbs sweep and records a function of another chain's labels; :class:`Swap` adds
the simplest exact population move, a fixed exchange of partitions between paired
chains.
"""

import pickle
from typing import NamedTuple

import numpy as np
import pymc as pm
import pytest
from helpers import assert_exact, binary_data, two_groups
from pymc.step_methods.arraystep import PopulationArrayStepShared

import pymc_partitions as pmp
from pymc_partitions.step_methods.worker_failure import WorkerFailure
from pymc_partitions.versions import group_dataset
from pymc_partitions.kernels import gibbs
from pymc_partitions.step_methods.chain_state import copy_into
from pymc_partitions.step_methods.population import PopulationStep


def coclustering_distance(a, b):
    """Number of ordered pairs (i, j) co-clustered in one partition and not the other."""
    return int(((a[:, None] == a[None]) != (b[:, None] == b[None])).sum())


class ProbeInfo(NamedTuple):
    """What the probe saw.

    Attributes
    ----------
    other_distance
        Co-clustering distance between this chain's and the next chain's labels.
    iteration
        This chain's completed iterations before this one.
    """

    other_distance: np.int64
    iteration: np.int64


class Probe(PopulationStep):
    """One Gibbs sweep; records the co-clustering distance between this chain's and
    the next chain's labels as the population showed them, and the iteration."""

    name = "test_population_probe"
    Info = ProbeInfo

    def move(self, chain, args):
        labels = self.population_labels()
        assert labels.dtype == np.int16
        own, other = labels[self.this_chain], labels[(self.this_chain + 1) % len(labels)]
        failed = gibbs.run_sweeps(args.stream, 1, chain.state, args.prior_params, args.params,
                                  chain.stats, args.data, chain.log_w, chain.order)
        self.fail_if(failed, args)
        return ProbeInfo(coclustering_distance(own, other), self.iteration)


class Swap(Probe):
    """At odd iterations chains (0, 1), (2, 3), ... exchange partitions (each loads
    its partner's labels of the previous iteration), then one Gibbs sweep.

    Exact for the product of the chains' targets when they are identical (fixed
    hyperparameters): the exchange is a fixed permutation of the chains, which
    leaves a product of identical distributions invariant, whatever the others do
    in the same iteration; the sweep leaves each factor invariant."""

    name = "test_population_swap"

    def move(self, chain, args):
        partner = self.this_chain ^ 1
        if self.iteration % 2 == 1 and partner < len(self.population):
            labels = np.asarray(self.population[partner][self.target.name], dtype=np.int64)
            copy_into(chain, self.new_chain(labels, args))
        return super().move(chain, args)


class Boom(Probe):
    """Raises in chain 1 at its fourth iteration."""

    name = "test_population_boom"

    def move(self, chain, args):
        if self.this_chain == 1 and self.iteration == 3:
            raise pmp.ImpossibleConditionalError("boom in chain 1", 2)
        return super().move(chain, args)


class Solo(Probe):
    """A population step that declares it can run alone."""

    name = "test_population_solo"
    min_chains = 1


def normal_model(n=8, free_alpha=False):
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 2.0) if free_alpha else 1.0
        z = pmp.CRP("z", alpha=alpha, n=n)
        pmp.CollapsedNormal("y", z, mu0=0.0, tau=2.0, sigma=1.0, observed=two_groups(n, 2, 3))
    return model


def run(model, step_cls, chains, cores=1, draws=20, extra_steps=(), **kwargs):
    with model:
        return pm.sample(draws=draws, tune=kwargs.pop("tune", 0), chains=chains, cores=cores,
                         step=[step_cls([model["z"]]), *extra_steps], random_seed=7,
                         progressbar=False, compute_convergence_checks=False, **kwargs)


@pytest.mark.parametrize("chains", [2, 3, 4])
def test_each_chain_sees_the_previous_iteration_of_the_others(chains):
    """Chain c's stat at draw t is computed from the population PyMC showed it; it
    equals the distance between the trace's draws t - 1 of chains c and c + 1 (the
    starting points at t = 0), so the population holds exactly the previous
    iteration's points of every chain."""
    idata = run(normal_model(), Probe, chains)
    z = group_dataset(idata, "posterior")["z"].values
    stats = group_dataset(idata, "sample_stats")
    seen = stats["other_distance"].values
    assert np.array_equal(stats["iteration"].values, np.tile(np.arange(z.shape[1]), (chains, 1)))
    assert np.all(seen[:, 0] == 0)  # every chain starts at one block
    for c in range(chains):
        other = (c + 1) % chains
        want = [coclustering_distance(z[c, t - 1], z[other, t - 1]) for t in range(1, z.shape[1])]
        assert np.array_equal(seen[c, 1:], want), c
    assert seen[:, 1:].any()  # the chains moved apart: the check is not vacuous


def test_cores_1_and_2_give_the_same_draws():
    """Population sampling in one process and in worker processes (one per chain),
    with alpha moved by pmp.EscobarWest in the same pm.sample call: identical draws,
    stats and hyperparameters for the same seed."""
    model = normal_model(free_alpha=True)
    results = [run(model, Probe, 3, cores=cores, draws=15, tune=5) for cores in (1, 2)]
    post = [group_dataset(r, "posterior") for r in results]
    stats = [group_dataset(r, "sample_stats") for r in results]
    assert np.array_equal(post[0]["z"].values, post[1]["z"].values)
    assert np.array_equal(post[0]["alpha"].values, post[1]["alpha"].values)
    assert np.array_equal(stats[0]["other_distance"].values, stats[1]["other_distance"].values)
    assert np.unique(post[0]["alpha"].values).size > 5  # alpha moved


def test_runs_with_nuts_hyperparameters():
    """alpha by NUTS in the same pm.sample call: the population step reads it afresh
    at every iteration. (Not compared across cores: PyMC shallow-copies NUTS per
    chain, so with cores=1 the chains share one potential, its momentum generator
    and its mass-matrix adaptation, while each worker process gets its own copy;
    NUTS draws then differ between cores=1 and cores=2 whatever our step does.)"""
    model = normal_model(free_alpha=True)
    with model:
        idata = run(model, Probe, 2, draws=15, tune=5, extra_steps=[pm.NUTS([model["alpha"]])])
    alpha = group_dataset(idata, "posterior")["alpha"].values
    assert np.unique(alpha).size > 5
    assert group_dataset(idata, "sample_stats")["n_clusters"].values.max() > 1


def test_exchange_move_on_the_population_is_exact():
    """The Swap probe (partitions exchanged between paired chains at every other
    iteration, then a Gibbs sweep) on Beta-Bernoulli with n = 6: the pooled draws of
    4 chains match the exact posterior (shared harness)."""
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=6)
        pmp.CollapsedBetaBernoulli("y", z, a=0.5, b=0.8, observed=binary_data(6, 3, 6))
        step = Swap([z])
    _, idata = assert_exact(model, draws=1500, step=[step], chains=4, tune=50)
    # The exchanges happened: at odd iterations a chain starts from its partner's
    # labels, so its distance to the partner was measured on the exchanged pair.
    assert group_dataset(idata, "sample_stats")["other_distance"].values.any()


def test_one_chain_is_refused_unless_the_step_allows_it():
    model = normal_model()
    with pytest.raises(ValueError, match=r"at least 2 chains .* got 1"):
        run(model, Probe, chains=1)
    idata = run(model, Solo, chains=1, draws=5)  # min_chains = 1: runs, sees itself only
    assert np.all(group_dataset(idata, "sample_stats")["other_distance"].values == 0)


@pytest.mark.parametrize("cores", [1, 2])
def test_an_exception_in_a_chain_reaches_the_caller(cores):
    """PyMC's worker would log the exception and exit, and pm.sample would raise a bare
    EOFError; the population_worker_errors hook sends it back: the same exception type and message,
    with the chain and the worker's traceback in a note."""
    with pytest.raises(pmp.ImpossibleConditionalError, match="boom in chain 1") as info:
        run(normal_model(), Boom, chains=2, cores=cores, draws=10)
    notes = "".join(getattr(info.value, "__notes__", []))
    if cores == 2:
        assert "chain 1" in notes and "in move" in notes  # the worker's traceback
    else:
        assert not notes  # raised in this process, with its own traceback


def test_worker_failure_survives_an_unpicklable_exception():
    class Unpicklable(Exception):
        def __init__(self, message):
            super().__init__(message)
            self.hook = lambda: None

    try:
        raise Unpicklable("cannot travel")
    except Unpicklable as err:
        failure = WorkerFailure(3, err)
    received = pickle.loads(pickle.dumps(failure))
    with pytest.raises(RuntimeError, match="Unpicklable: cannot travel") as info:
        received.reraise()
    assert "chain 3" in "".join(info.value.__notes__)


def test_link_population_checks_every_starting_point():
    model = normal_model()
    step = Probe([model["z"]], model=model)
    assert isinstance(step, PopulationArrayStepShared)
    good = model.initial_point()
    bad = dict(good, z=np.arange(good["z"].size + 1))
    with pytest.raises(ValueError, match="initvals") as info:
        step.link_population([good, bad], 0)
    assert "chain 1" in "".join(info.value.__notes__)
    step.link_population([good, good, good], 2)
    assert step.other_chains == [0, 1]
    assert step.population_labels().shape == (3, good["z"].size)
