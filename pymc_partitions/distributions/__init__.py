"""PyMC distributions: partition priors and collapsed likelihoods."""

from pymc_partitions.distributions.collapsed import (
    CollapsedBetaBernoulli,
    CollapsedLikelihood,
    CollapsedLikelihoodRV,
    CollapsedNormal,
)
from pymc_partitions.distributions.counts import (
    CollapsedDirichletMultinomial,
    CollapsedPoissonGamma,
)
from pymc_partitions.distributions.energies import KMeansEnergy
from pymc_partitions.distributions.normal_inverse_gamma import CollapsedNormalInverseGamma
from pymc_partitions.distributions.partition import (
    CRP,
    PartitionPrior,
    PartitionPriorRV,
    partition_summaries,
)

__all__ = [
    "CRP",
    "CollapsedBetaBernoulli",
    "CollapsedDirichletMultinomial",
    "CollapsedLikelihood",
    "CollapsedLikelihoodRV",
    "CollapsedNormal",
    "CollapsedNormalInverseGamma",
    "CollapsedPoissonGamma",
    "KMeansEnergy",
    "PartitionPrior",
    "PartitionPriorRV",
    "partition_summaries",
]
