"""PyMC distributions: partition priors and collapsed likelihoods."""

from pymc_partitions.distributions.collapsed import (
    CollapsedBetaBernoulli,
    CollapsedLikelihood,
    CollapsedLikelihoodRV,
    CollapsedNormal,
)
from pymc_partitions.distributions.coloring import ColoringMixingWarning, ProperColoring
from pymc_partitions.distributions.counts import (
    CollapsedDirichletMultinomial,
    CollapsedPoissonGamma,
)
from pymc_partitions.distributions.energies import KMeansEnergy
from pymc_partitions.distributions.gaussian import CollapsedMvNormal, CollapsedNIW
from pymc_partitions.distributions.mallows import GeneralizedMallows
from pymc_partitions.distributions.partition import (
    CRP,
    PartitionPrior,
    PartitionPriorRV,
    partition_summaries,
)
from pymc_partitions.distributions.normal_inverse_gamma import CollapsedNormalInverseGamma
from pymc_partitions.distributions.priors import MFM, FixedBlocks, PitmanYor
from pymc_partitions.distributions.relational import IRM

__all__ = [
    "CRP",
    "CollapsedBetaBernoulli",
    "CollapsedDirichletMultinomial",
    "CollapsedLikelihood",
    "CollapsedLikelihoodRV",
    "CollapsedMvNormal",
    "CollapsedNIW",
    "CollapsedNormal",
    "IRM",
    "FixedBlocks",
    "GeneralizedMallows",
    "MFM",
    "CollapsedNormalInverseGamma",
    "CollapsedPoissonGamma",
    "KMeansEnergy",
    "PartitionPrior",
    "PartitionPriorRV",
    "PitmanYor",
    "ColoringMixingWarning",
    "ProperColoring",
    "partition_summaries",
]
