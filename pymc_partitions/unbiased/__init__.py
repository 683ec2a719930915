"""Unbiased estimation with coupled chains (Jacob, O'Leary & Atchadé 2020; Nguyen,
Trippe & Broderick 2022).

- :func:`unbiased_estimate` (also ``pmp.unbiased_estimate``): the estimate of E[h] from a
  ``pm.sample`` trace of ``pmp.CoupledGibbs`` (one PyMC chain per coupled pair);
- array level, no PyMC (used by the estimator and by runners of many pairs):
  :func:`pair_estimate` (H_{l:m} of one pair from its h values; :func:`pair_estimates`
  for a stack of pairs of one length), :class:`PairEstimate`,
  :func:`aggregate` -> :class:`UnbiasedEstimate` (means, trimmed mean, standard errors,
  interval, meeting times, Kaplan–Meier survival, an xarray view);
- runners of many pairs on an executor (a local process pool, any
  ``concurrent.futures.Executor``, a Dask client): :func:`coupled_estimates` (also
  ``pmp.coupled_estimates``), and the naive-parallel baseline :func:`naive_estimates`
  -> :class:`NaiveEstimate` (single chains for the same wall time);
- functions h of a partition: :data:`lcp`, :data:`n_blocks`, :func:`co_clustering`,
  :func:`predictive_density`, and :class:`PartitionFunction` to wrap one's own.
"""

from pymc_partitions.unbiased.aggregate import (
    CensoredPairsWarning,
    UnbiasedEstimate,
    aggregate,
    trimmed_mean,
    trimmed_std_error,
)
from pymc_partitions.unbiased.estimator import PairEstimate, pair_estimate, pair_estimates
from pymc_partitions.unbiased.functions import (
    PartitionFunction,
    co_clustering,
    evaluate,
    lcp,
    n_blocks,
    predictive_density,
)
from pymc_partitions.unbiased.naive import NaiveEstimate, naive_estimates
from pymc_partitions.unbiased.runner import coupled_estimates
from pymc_partitions.unbiased.trace import unbiased_estimate

__all__ = [
    "CensoredPairsWarning",
    "NaiveEstimate",
    "PairEstimate",
    "PartitionFunction",
    "UnbiasedEstimate",
    "aggregate",
    "co_clustering",
    "coupled_estimates",
    "evaluate",
    "lcp",
    "n_blocks",
    "naive_estimates",
    "pair_estimate",
    "pair_estimates",
    "predictive_density",
    "trimmed_mean",
    "trimmed_std_error",
    "unbiased_estimate",
]
