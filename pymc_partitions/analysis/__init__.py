"""Posterior analysis of partitions: distances, label-invariant statistics,
posterior similarity matrices, point estimates and credible balls."""

from pymc_partitions.analysis.credible_ball import CredibleBall, credible_ball
from pymc_partitions.analysis.distances import (
    adjusted_rand_index,
    binder_loss,
    hamming_distance,
    rand_index,
    variation_of_information,
)
from pymc_partitions.analysis.point_estimates import (
    PointEstimate,
    SearchBudgetWarning,
    dahl_estimate,
    expected_loss,
    point_estimate,
)
from pymc_partitions.analysis.similarity import similarity_matrix
from pymc_partitions.analysis.statistics import add_partition_statistics
from pymc_partitions.analysis.block_parameters import (
    posterior_predictive_density,
    sample_block_parameters,
)
