"""The PyMC-facing API of the package, imported on first use of ``pmp.<name>``
(see the package docstring): the distributions, step methods, analysis and
unbiased estimators. The package ``__init__`` installs the hooks after importing it."""


from pymc_partitions import datasets, plots, unbiased
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
    ARMBackgroundWarning,
    ApproximateStepWarning,
    PBC,
    CoupledGibbs,
    EscobarWest,
    Gibbs,
    HyperSlice,
    ImpossibleConditionalError,
    LadderWarning,
    MallowsGibbs,
    PartitionModelError,
    SplitMerge,
    SubClusters,
    pbc_ladder,
)
from pymc_partitions.unbiased import (
    NaiveEstimate,
    UnbiasedEstimate,
    coupled_estimates,
    naive_estimates,
    unbiased_estimate,
)
