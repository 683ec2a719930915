"""Posterior analysis of partitions: distances, label-invariant statistics,
posterior similarity matrices, point estimates and credible balls."""
