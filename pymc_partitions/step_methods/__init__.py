"""Step methods: the partition samplers and the hyperparameter steps, PyMC
``BlockedStep`` subclasses.

One move per module; each is a thin class over its numba kernel in
:mod:`pymc_partitions.kernels`: settings, the kernel call and an Info record of
what it did, on the one ``step()`` of :class:`.base.PartitionStep` (its docstring
says how a step subclasses it; :mod:`.info` the records, without PyMC). :mod:`.hyperparameters` updates the continuous
variables read only by partition priors and collapsed likelihoods.
:mod:`.chain_state` is the one kernel-state type with its copy and snapshot;
:mod:`.population` the base of steps that PyMC runs as a population of chains;
:mod:`.pbc` the tempered population inside one chain (Population Based Clustering).

The package imports its modules on first use of a name (PEP 562 module
``__getattr__``): :mod:`.coupled_pair` and :mod:`.chain_state` import only the
kernels, and worker processes of the unbiased runners import them without PyMC.
"""

from pymc_partitions._lazy import lazy_names

#: Every public name and its module (imported on first use; the steps import PyMC).
_NAMES = {
    "ARM": "arm",
    "ARMBackgroundWarning": "arm",
    "ApproximateStepWarning": "base",
    "PBC": "pbc",
    "CoupledGibbs": "coupled",
    "EscobarWest": "hyperparameters",
    "Gibbs": "gibbs",
    "HyperSlice": "hyperparameters",
    "ImpossibleConditionalError": "pymc_partitions.kernels.errors",
    "LadderWarning": "pbc",
    "MallowsGibbs": "mallows",
    "PartitionModelError": "target",
    "PartitionStep": "base",
    "PartitionTarget": "target",
    "PopulationStep": "population",
    "SplitMerge": "split_merge",
    "SubClusters": "subclusters",
    "pbc_ladder": "pbc",
}



__all__ = [
    "ARM",
    "ARMBackgroundWarning",
    "ApproximateStepWarning",
    "PBC",
    "CoupledGibbs",
    "EscobarWest",
    "Gibbs",
    "HyperSlice",
    "ImpossibleConditionalError",
    "LadderWarning",
    "MallowsGibbs",
    "PartitionModelError",
    "PartitionStep",
    "PartitionTarget",
    "PopulationStep",
    "SplitMerge",
    "SubClusters",
    "pbc_ladder",
]


__getattr__, __dir__ = lazy_names(globals(), _NAMES)
