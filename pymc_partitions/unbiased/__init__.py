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

The PyMC-free parts (estimator, aggregation, functions h) are imported with the
package; the PyMC-facing ones (:func:`coupled_estimates`, :func:`naive_estimates`,
:func:`unbiased_estimate`) on first use (PEP 562 module ``__getattr__``): a worker
process of the runners imports :mod:`.worker` (the job and task functions it
unpickles), and with it this package, without PyMC.
"""

from pymc_partitions._lazy import lazy_names
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

#: The names imported on first use, and their modules (these import PyMC).
_LAZY = {
    "NaiveEstimate": "naive",
    "coupled_estimates": "runner",
    "naive_estimates": "naive",
    "unbiased_estimate": "trace",
}

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


__getattr__, __dir__ = lazy_names(globals(), _LAZY)
