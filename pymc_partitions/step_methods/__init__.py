"""Step methods: the partition samplers and the hyperparameter steps, PyMC
``BlockedStep`` subclasses.

One move per module; each is a thin class over its numba kernel in
:mod:`pymc_partitions.kernels`. :mod:`.hyperparameters` updates the continuous
variables read only by partition priors and collapsed likelihoods.
:mod:`.chain_state` is the one kernel-state type with its copy and snapshot;
:mod:`.population` the base of steps that PyMC runs as a population of chains;
:mod:`.pbc` the tempered population inside one chain (Population Based Clustering).
"""

from pymc_partitions.kernels.errors import ImpossibleConditionalError
from pymc_partitions.step_methods.arm import ARM, ARMBackgroundWarning
from pymc_partitions.step_methods.base import ApproximateStepWarning, PartitionStep
from pymc_partitions.step_methods.coupled import CoupledGibbs
from pymc_partitions.step_methods.gibbs import Gibbs
from pymc_partitions.step_methods.hyperparameters import EscobarWest, HyperSlice
from pymc_partitions.step_methods.mallows import MallowsGibbs
from pymc_partitions.step_methods.pbc import PBC, LadderWarning, pbc_ladder
from pymc_partitions.step_methods.population import PopulationStep
from pymc_partitions.step_methods.split_merge import SplitMerge
from pymc_partitions.step_methods.target import PartitionModelError, PartitionTarget

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
    "pbc_ladder",
]
