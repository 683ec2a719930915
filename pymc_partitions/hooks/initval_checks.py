"""Hook ``initval_checks``: partition ``initvals`` checked before PyMC builds starting
points.

Wraps ``pymc.sampling.mcmc.make_initial_point_fns_per_chain`` (PyMC's
``pymc.initial_point.make_initial_point_fns_per_chain``, bound by name in
``pymc.sampling.mcmc``) with
:func:`pymc_partitions.distributions.initvals.check_partition_initvals` on its
``model`` and ``overrides``.

Why: no PyMC hook sees the per-chain ``initvals`` before the first draw (steps see
chain 0's point only); PyMC's own error for a wrong length or label is a PyTensor type
mismatch, and a start outside the prior's support is not refused.

Relies on: the keywords ``model=`` and ``overrides=`` (a dict, or one per chain);
``sample`` and ``_init_jitter`` calling it by the module-level name.
"""

import inspect

from pymc_partitions.distributions.initvals import check_partition_initvals
from pymc_partitions.hooks._hook import Hook


def _wrapper(original):
    signature = inspect.signature(original)

    def make_initial_point_fns_per_chain(*args, **kwargs):
        """PyMC's function, after ``check_partition_initvals`` on the overrides
        (:mod:`pymc_partitions.hooks.initval_checks`)."""
        bound = signature.bind_partial(*args, **kwargs).arguments
        model, overrides = bound.get("model"), bound.get("overrides")
        if model is not None:  # also the model's own initval= of partitions
            check_partition_initvals(model, overrides)
        return original(*args, **kwargs)

    return make_initial_point_fns_per_chain


HOOK = Hook(
    name="initval_checks",
    why=(
        "initvals of a partition get an error naming the variable, the chain and what "
        "is allowed before PyMC builds starting points. Re-check the keywords model= "
        "and overrides= (a dict or one per chain) and that sample and _init_jitter "
        "call it by the module-level name."
    ),
    without=(
        "a wrong pm.sample(initvals=...) for a partition gets PyTensor's type error instead "
        "of one naming the variable and the chain, and a start outside the prior's support "
        "is not refused."
    ),
    wrap=_wrapper,
    targets=("pymc.sampling.mcmc:make_initial_point_fns_per_chain",),
    relies_on=(
        "pymc.initial_point:make_initial_point_fns_per_chain",
        "pymc.sampling.mcmc:sample",
        "pymc.sampling.mcmc:_init_jitter",
    ),
    fingerprints={
        "5.28": {
            "pymc.initial_point:make_initial_point_fns_per_chain": (
                "(*, model, overrides, jitter_rvs=None, chains)", "1ac9715fd43794a9"),
            "pymc.sampling.mcmc:sample": "bf7ebf30a6f4f8e3",
            "pymc.sampling.mcmc:_init_jitter": "e02eb9b3b8b98778",
        },
        "6.4": {
            "pymc.initial_point:make_initial_point_fns_per_chain": (
                "(*, model, overrides, jitter_rvs=None, chains)", "918ac5750ff53402"),
            "pymc.sampling.mcmc:sample": "05d80c2830f96cff",
            "pymc.sampling.mcmc:_init_jitter": "1386cf0aa32f85b3",
        },
    },
)
