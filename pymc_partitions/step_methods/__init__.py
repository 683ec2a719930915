"""Step methods: the partition samplers and the hyperparameter steps, PyMC
``BlockedStep`` subclasses.

One move per module; each is a thin class over its numba kernel in
:mod:`pymc_partitions.kernels`. :mod:`.hyperparameters` updates the continuous
variables read only by partition priors and collapsed likelihoods.
:mod:`.chain_state` is the one kernel-state type with its copy and snapshot;
:mod:`.population` the base of steps that PyMC runs as a population of chains;
:mod:`.pbc` the tempered population inside one chain (Population Based Clustering).

The package imports its modules on first use of a name (PEP 562 module
``__getattr__``): :mod:`.coupled_pair` and :mod:`.chain_state` import only the
kernels, and worker processes of the unbiased runners import them without PyMC.
"""

#: Every public name and its module (imported on first use; the steps import PyMC).
_NAMES = {
    "ARM": "arm",
    "ARMBackgroundWarning": "arm",
    "ApproximateStepWarning": "base",
    "PBC": "pbc",
    "CoupledGibbs": "coupled",
    "EscobarWest": "hyperparameters",
    "Gibbs": "gibbs",
    "HyperSlice": "hyperparameters",
    "ImpossibleConditionalError": "pymc_partitions.kernels.errors",
    "LadderWarning": "pbc",
    "MallowsGibbs": "mallows",
    "PartitionModelError": "target",
    "PartitionStep": "base",
    "PartitionTarget": "target",
    "PopulationStep": "population",
    "SplitMerge": "split_merge",
    "pbc_ladder": "pbc",
}



__all__ = [
    "ARM",
    "ARMBackgroundWarning",
    "ApproximateStepWarning",
    "PBC",
    "CoupledGibbs",
    "EscobarWest",
    "Gibbs",
    "HyperSlice",
    "ImpossibleConditionalError",
    "LadderWarning",
    "MallowsGibbs",
    "PartitionModelError",
    "PartitionStep",
    "PartitionTarget",
    "PopulationStep",
    "SplitMerge",
    "pbc_ladder",
]


def __getattr__(name):
    import importlib
    import importlib.util

    if name in _NAMES:
        module = _NAMES[name]
        if "." not in module:
            module = f"{__name__}.{module}"
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value
    if importlib.util.find_spec(f"{__name__}.{name}") is not None:  # a submodule
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), *__all__})
