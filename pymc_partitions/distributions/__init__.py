"""PyMC distributions: partition priors and collapsed likelihoods."""

from pymc_partitions.distributions.collapsed import (
    CollapsedBetaBernoulli,
    CollapsedLikelihood,
    CollapsedLikelihoodRV,
    CollapsedNormal,
)
from pymc_partitions.distributions.partition import (
    CRP,
    PartitionPrior,
    PartitionPriorRV,
    partition_summaries,
)
from pymc_partitions.distributions.relational import IRM

__all__ = [
    "CRP",
    "CollapsedBetaBernoulli",
    "CollapsedLikelihood",
    "CollapsedLikelihoodRV",
    "CollapsedNormal",
    "IRM",
    "PartitionPrior",
    "PartitionPriorRV",
    "partition_summaries",
]
