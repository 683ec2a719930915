"""Posterior analysis of partitions: distances, label-invariant statistics,
posterior similarity matrices, point estimates and credible balls."""

from pymc_partitions.analysis.block_parameters import (
    posterior_predictive_density,
    sample_block_parameters,
)
