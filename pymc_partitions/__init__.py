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

Importing the package is light: ``import pymc_partitions.kernels`` (the numba
kernels) loads numba and NumPy only, and so does what the worker processes of the
unbiased runners import (:mod:`.unbiased.worker`). The PyMC-facing API
(:mod:`._api`) is imported, and the hooks installed (:mod:`.hooks`: PyMC's step
registry and every other change made to PyMC / PyTensor), on the first use of a public
name (``pmp.CRP``), or when a model creates a partition variable; PEP 562 module
``__getattr__``. This module is the only importer of :mod:`.hooks`; stack differences
are in :mod:`.versions`.
"""

from pymc_partitions import _lazy

__version__ = "0.1.0"

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
    "LadderWarning",
    "MallowsGibbs",
    "PBC",
    "PartitionModelError",
    "SplitMerge",
    "SubClusters",
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


_hooks_installed = False


def _load_api():
    """Import the PyMC-facing API (:mod:`._api`) and, once, install the hooks
    (:func:`pymc_partitions.hooks.install`); returns the API module. Also called, through
    :func:`pymc_partitions._lazy.load_api`, when a model creates a partition variable."""
    global _hooks_installed
    import importlib

    _api = importlib.import_module(f"{__name__}._api")
    if not _hooks_installed:
        _hooks_installed = True
        from pymc_partitions import hooks

        hooks.install()
    return _api


_lazy.set_api_loader(_load_api)


def __getattr__(name):
    # Loads the PyMC-facing parts once and makes every public name a module global,
    # so this runs only for names not there yet.
    import importlib
    import importlib.util

    # Only the public names load the API. A submodule (``pmp.distributions``, or
    # ``from pymc_partitions import versions`` inside the package) is imported alone:
    # loading the API from the middle of a submodule's import would be an import cycle.
    if name not in __all__:
        if importlib.util.find_spec(f"{__name__}.{name}") is not None:
            return importlib.import_module(f"{__name__}.{name}")
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

    _api = _load_api()

    namespace = globals()
    for key in __all__:
        if key not in namespace and hasattr(_api, key):
            namespace[key] = getattr(_api, key)
    if name in namespace:  # a public name, or a subpackage _api imported
        return namespace[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), *__all__})
