"""PyMC distributions: partition priors and collapsed likelihoods."""

from pymc_partitions.distributions.collapsed import (
    CollapsedBetaBernoulli,
    CollapsedLikelihood,
    CollapsedLikelihoodRV,
    CollapsedNormal,
)
from pymc_partitions.distributions.gaussian import CollapsedMvNormal, CollapsedNIW
from pymc_partitions.distributions.partition import (
    CRP,
    PartitionPrior,
    PartitionPriorRV,
    partition_summaries,
)

__all__ = [
    "CRP",
    "CollapsedBetaBernoulli",
    "CollapsedLikelihood",
    "CollapsedLikelihoodRV",
    "CollapsedMvNormal",
    "CollapsedNIW",
    "CollapsedNormal",
    "PartitionPrior",
    "PartitionPriorRV",
    "partition_summaries",
]
