"""pymc-partitions: Bayesian inference over partitions of data in PyMC.

>>> import pymc as pm, pymc_partitions as pmp
>>> with pm.Model():
...     alpha = pm.Gamma("alpha", 1.0, 1.0)
...     z = pmp.CRP("z", alpha=alpha, n=100)
...     sigma = pm.HalfNormal("sigma", 1.0)
...     pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=1.0, sigma=sigma, observed=Y)
...     idata = pm.sample()          # NUTS for alpha and sigma, pmp.Gibbs for z

Layers: :mod:`.distributions` (partition priors, collapsed likelihoods) →
:mod:`.step_methods` (PyMC steps) → :mod:`.kernels` (numba); beside them
:mod:`.analysis` (distances, similarity, point estimates, credible balls, block
parameters, leave-one-out log-likelihoods), :mod:`.plots`, :mod:`.datasets`, and
:mod:`.partitions` (plain-numpy partition utilities), :mod:`.unbiased` (unbiased
estimates from coupled chains: ``pmp.unbiased_estimate``, ``pmp.coupled_estimates`` on
any executor, the naive-parallel baseline ``pmp.naive_estimates``, built-in functions h).
"""

from pymc_partitions import compat, datasets, plots, unbiased
from pymc_partitions.analysis import (
    CredibleBall,
    PointEstimate,
    add_partition_statistics,
    adjusted_rand_index,
    binder_loss,
    credible_ball,
    dahl_estimate,
    expected_loss,
    hamming_distance,
    point_estimate,
    rand_index,
    similarity_matrix,
    variation_of_information,
)
from pymc_partitions.analysis.block_parameters import (
    posterior_predictive_density,
    sample_block_parameters,
)
from pymc_partitions.analysis.loo import compute_log_likelihood
from pymc_partitions.distributions import (
    CRP,
    IRM,
    MFM,
    CollapsedBetaBernoulli,
    CollapsedDirichletMultinomial,
    CollapsedMvNormal,
    CollapsedNIW,
    CollapsedNormal,
    CollapsedNormalInverseGamma,
    CollapsedPoissonGamma,
    ColoringMixingWarning,
    FixedBlocks,
    GeneralizedMallows,
    KMeansEnergy,
    PitmanYor,
    ProperColoring,
    partition_summaries,
)
from pymc_partitions.partitions import canonicalize, set_partitions
from pymc_partitions.step_methods import (
    ARM,
    PBC,
    ARMBackgroundWarning,
    ApproximateStepWarning,
    CoupledGibbs,
    EscobarWest,
    Gibbs,
    HyperSlice,
    ImpossibleConditionalError,
    MallowsGibbs,
    PartitionModelError,
    SplitMerge,
    pbc_ladder,
)
from pymc_partitions.unbiased import (
    NaiveEstimate,
    UnbiasedEstimate,
    coupled_estimates,
    naive_estimates,
    unbiased_estimate,
)

__version__ = "0.1.0"

# Every change made to PyMC / PyTensor at import is one entry of compat.PATCHES
# (step registration, label-invariant convergence checks, initvals checks, quiet
# object-mode notices for our ops): see the compat module docstring.
compat.install_patches()

__all__ = [
    # partition priors
    "CRP",
    "FixedBlocks",
    "MFM",
    "PitmanYor",
    "ColoringMixingWarning",
    "ProperColoring",
    # collapsed likelihoods
    "CollapsedBetaBernoulli",
    "CollapsedDirichletMultinomial",
    "CollapsedMvNormal",
    "CollapsedNIW",
    "CollapsedNormal",
    "CollapsedNormalInverseGamma",
    "CollapsedPoissonGamma",
    "GeneralizedMallows",
    "IRM",
    "KMeansEnergy",
    # step methods
    "ARM",
    "ARMBackgroundWarning",
    "ApproximateStepWarning",
    "CoupledGibbs",
    "EscobarWest",
    "Gibbs",
    "HyperSlice",
    "ImpossibleConditionalError",
    "MallowsGibbs",
    "PBC",
    "PartitionModelError",
    "SplitMerge",
    "pbc_ladder",
    # analysis
    "CredibleBall",
    "PointEstimate",
    "add_partition_statistics",
    "adjusted_rand_index",
    "binder_loss",
    "compute_log_likelihood",
    "credible_ball",
    "dahl_estimate",
    "expected_loss",
    "hamming_distance",
    "point_estimate",
    "posterior_predictive_density",
    "rand_index",
    "sample_block_parameters",
    "similarity_matrix",
    "variation_of_information",
    # unbiased estimation with coupled chains (built-in h's: pmp.unbiased.lcp, ...)
    "NaiveEstimate",
    "UnbiasedEstimate",
    "coupled_estimates",
    "naive_estimates",
    "unbiased_estimate",
    # modules and utilities
    "canonicalize",
    "datasets",
    "partition_summaries",
    "plots",
    "set_partitions",
    "unbiased",
]
