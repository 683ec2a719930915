"""Step methods: the partition samplers, PyMC ``BlockedStep`` subclasses.

One move per module; each is a thin class over its numba kernel in
:mod:`pymc_partitions.kernels`.
"""

from pymc_partitions.kernels.errors import ImpossibleConditionalError
from pymc_partitions.step_methods.base import PartitionStep
from pymc_partitions.step_methods.coupled import CoupledGibbs
from pymc_partitions.step_methods.gibbs import Gibbs
from pymc_partitions.step_methods.split_merge import SplitMerge
from pymc_partitions.step_methods.target import PartitionModelError, PartitionTarget

__all__ = [
    "CoupledGibbs",
    "Gibbs",
    "ImpossibleConditionalError",
    "PartitionModelError",
    "PartitionStep",
    "PartitionTarget",
    "SplitMerge",
]
