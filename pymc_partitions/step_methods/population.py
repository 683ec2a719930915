"""What every population partition step shares: PyMC's population contract on top
of :class:`~pymc_partitions.step_methods.base.PartitionStep`.

How ``pm.sample`` runs a population step (PyMC 5.28 and 6.4 alike,
``pymc/sampling/population.py``; established by reading the code and by
``tests/test_population.py``):

- A step that is a ``PopulationArrayStepShared`` (alone or inside the
  ``CompoundStep``) switches ``pm.sample`` to population sampling, whatever
  ``cores``. Each chain gets a shallow copy of the step, seeded with the chain's
  generator (``set_rng`` on PyMC 5, ``setup_chain`` on PyMC 6), then
  ``link_population(points, c)`` with the list of the S chains' current points.
- Every iteration steps all chains from the *same* list of points (the points of
  the previous iteration; the list is updated only once every chain has stepped),
  so chain c's step sees the other chains' previous-iteration points in
  ``self.population``, and the order in which chains step does not matter.
- ``cores=1``: the chains step in turn in the main process. ``cores > 1``: one
  worker process per *chain* (not per core) holds the chain's step (pickled after
  seeding and linking); each iteration the main process sends every worker the
  whole population (S points) through a pipe and waits for all S updates, so an
  iteration is as slow as its slowest chain plus S^2 point transfers. Both modes
  give the same draws for the same ``random_seed``: each chain's randomness comes
  only from its own generator and the population it is shown.
- PyMC copies each chain's steps *shallowly*. Our steps make their per-chain state
  in ``start_chain`` and are unaffected, as are pmp.EscobarWest / pmp.HyperSlice.
  But NUTS keeps its potential (mass-matrix adaptation and the generator of its
  momenta) and step-size adaptation in sub-objects: with ``cores=1`` all chains'
  NUTS share one of each, with ``cores > 1`` every worker unpickles its own copy of
  that shared object. So with NUTS in the same ``pm.sample`` call the draws differ
  between ``cores=1`` and ``cores > 1`` (measured on both stacks: equal first draws,
  then apart), whatever the population step does. Not fixed here.
- An exception in a worker reaches PyMC's main process only as ``EOFError``;
  the hook :mod:`pymc_partitions.hooks.population_worker_errors` sends it back
  and re-raises it there with the chain and the worker's traceback.
- PyMC's own ``link_population`` refuses fewer than 3 chains; :class:`PopulationStep`
  overrides it and needs :attr:`PopulationStep.min_chains` (2 unless a subclass
  says otherwise).
"""

import numpy as np
from pymc.step_methods.arraystep import PopulationArrayStepShared

from pymc_partitions.kernels import canonical_labels
from pymc_partitions.step_methods.base import PartitionStep
from pymc_partitions.step_methods.chain_state import label_dtype


class PopulationStep(PartitionStep, PopulationArrayStepShared):
    """Base class of partition samplers that read the other chains (a population step).

    Everything :class:`~pymc_partitions.step_methods.base.PartitionStep` does for one
    chain (``vars`` first, the model read once, declared stats, competence, per-chain
    kernel streams, the starting point, hyperparameters read afresh from the point
    every iteration so NUTS or a hyperparameter step can move them), plus PyMC's
    population contract: ``pm.sample`` runs the chains as one population, and
    during :meth:`move` (run by the base class's one ``step()``) the step reads the
    other chains' points of the previous iteration in ``self.population``
    (``self.this_chain``, ``self.other_chains``;
    :meth:`population_labels` gives their partitions as compact labels), and
    ``self.iteration`` counts this chain's completed iterations (tuning included).

    Chains: at least :attr:`min_chains` (2 here; a subclass that can run alone sets
    1 and documents what it then does). With fewer, ``pm.sample`` stops before the
    first draw with a ValueError saying so; PyMC's own rule (at least 3) does not
    apply. The starting point of every chain and its hyperparameter values are
    checked in ``link_population``, in PyMC's main process before any worker
    starts, so bad ``initvals`` fail there with the usual messages.

    A population move must leave the product of the chains' targets invariant
    while the chains are updated *simultaneously* from the previous population
    (that is how PyMC runs them); reading others' states as adaptation information
    (ARM) or not at all is safe, a Metropolis move that conditions on another chain's
    current state generally is not.
    """

    #: Fewer chains than this: ``pm.sample`` stops with a ValueError.
    min_chains = 2

    def __init__(self, vars, **kwargs):
        super().__init__(vars, **kwargs)
        # PopulationArrayStepShared.__init__ is not called (PartitionStep does the
        # set-up); these are its attributes, set by link_population.
        self.population = None
        self.this_chain = None
        self.other_chains = None

    def link_population(self, population, chain_index):
        """Link to PyMC's list of the chains' points (PyMC calls this once per chain,
        after seeding and before the first draw, in the main process).

        Checks the number of chains and every chain's starting partition and
        hyperparameter values, so bad input fails here rather than as a bare
        ``EOFError`` from a worker process.
        """
        owner = type(self).__name__
        n_chains = len(population)
        if n_chains < self.min_chains:
            raise ValueError(
                f"{owner} is a population step: it needs at least {self.min_chains} chains "
                f"(pm.sample(chains=...)), got {n_chains}. Run pm.sample with "
                f"chains={max(self.min_chains, 2)} or more, or use a single-chain step "
                f"(pmp.Gibbs, pmp.SplitMerge)."
            )
        for c, point in enumerate(population):
            try:
                self.target.validate_labels(point[self.target.name])
                self.target.params(point)
            except (TypeError, ValueError) as err:
                err.add_note(f"({owner}: checking the starting point of chain {c})")
                raise
        self.population = population
        self.this_chain = chain_index
        self.other_chains = [c for c in range(n_chains) if c != chain_index]

    def astep(self, q0):  # pragma: no cover - PyMC's abstract method; step() is used
        raise NotImplementedError(f"{type(self).__name__} steps through step(point).")

    def population_labels(self, out=None):
        """The canonical labels of every chain's point in ``self.population`` (the
        previous iteration's, this chain's included) as an (S, n) array of
        :func:`~pymc_partitions.step_methods.chain_state.label_dtype` (n) (or written
        into ``out``). O(S n)."""
        if self.population is None:
            raise RuntimeError(
                f"{type(self).__name__}.population_labels: the step is not linked to a "
                f"population (pm.sample links it when it runs the chains as one)."
            )
        n = self.target.n
        if out is None:
            out = np.empty((len(self.population), n), dtype=label_dtype(n))
        relabel = np.empty(n, dtype=np.int64)
        for c, point in enumerate(self.population):
            canonical_labels(np.asarray(point[self.target.name], dtype=np.int64), out[c], relabel)
        return out


__all__ = ["PopulationStep"]
