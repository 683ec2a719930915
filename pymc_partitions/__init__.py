"""pymc-partitions: Bayesian inference over partitions of data in PyMC.

>>> import pymc as pm, pymc_partitions as pmp
>>> with pm.Model():
...     alpha = pm.Gamma("alpha", 1.0, 1.0)
...     z = pmp.CRP("z", alpha=alpha, n=100)
...     sigma = pm.HalfNormal("sigma", 1.0)
...     pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=1.0, sigma=sigma, observed=Y)
...     idata = pm.sample()          # NUTS for alpha and sigma, pmp.Gibbs for z

Layers: :mod:`.distributions` (partition priors, collapsed likelihoods) →
:mod:`.step_methods` (PyMC steps) → :mod:`.kernels` (numba); :mod:`.partitions`
holds plain-numpy partition utilities.
"""

from pymc_partitions import compat
from pymc_partitions.distributions import (
    CRP,
    CollapsedBetaBernoulli,
    CollapsedMvNormal,
    CollapsedNIW,
    CollapsedNormal,
    partition_summaries,
)
from pymc_partitions.partitions import canonicalize, set_partitions
from pymc_partitions.step_methods import Gibbs, PartitionModelError

__version__ = "0.1.0"

compat.register_step_methods([Gibbs])
compat.install_convergence_checks()
compat.install_initval_checks()
compat.quiet_object_mode_warnings(["crp_rv", "collapsed_normal_rv", "collapsed_beta_bernoulli_rv"])
compat.quiet_object_mode_warnings(["collapsed_mv_normal_rv", "collapsed_niw_rv"])

__all__ = [
    "CRP",
    "CollapsedBetaBernoulli",
    "CollapsedMvNormal",
    "CollapsedNIW",
    "CollapsedNormal",
    "Gibbs",
    "PartitionModelError",
    "canonicalize",
    "partition_summaries",
    "set_partitions",
]
