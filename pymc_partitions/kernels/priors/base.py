"""Generic prior primitives, dispatched on the type of the ``prior_params`` record.

Same scheme as :mod:`pymc_partitions.kernels.components.base`.
"""

from typing import Callable, NamedTuple

from numba.extending import overload

from pymc_partitions.kernels.dispatch import OVERLOAD_JIT_OPTIONS, lookup, overload_impl


class PriorFunctions(NamedTuple):
    log_prior_pred: Callable
    log_prior: Callable
    log_prior_block: Callable


_REGISTRY: dict[type, PriorFunctions] = {}


def register(params_class, *, log_prior_pred, log_prior, log_prior_block):
    """Register a prior's njit primitives for its params record class."""
    _REGISTRY[params_class] = PriorFunctions(log_prior_pred, log_prior, log_prior_block)


def _lookup(params, name):
    return lookup(_REGISTRY, params, name, "partition prior")


def log_prior_pred(prior_params, size, n_blocks):
    """log weight of an item joining a block of ``size`` items (0: a new block)."""
    return _lookup(prior_params, "log_prior_pred")(prior_params, size, n_blocks)


def log_prior(prior_params, sizes, active, n_active, n):
    """Total log prior of the partition with block sizes ``sizes[active[:n_active]]``."""
    return _lookup(prior_params, "log_prior")(prior_params, sizes, active, n_active, n)


def log_prior_block(prior_params, size, c, n_blocks):
    """log weight of a set of ``c`` items joining a block of ``size`` items (0: a new
    block) together, ``n_blocks`` blocks among the other items; up to a term common
    to all blocks the set may join."""
    return _lookup(prior_params, "log_prior_block")(prior_params, size, c, n_blocks)


def _impl_for(prior_params, name):
    return overload_impl(_REGISTRY, prior_params, name)


@overload(log_prior_pred, jit_options=OVERLOAD_JIT_OPTIONS)
def _ol_log_prior_pred(prior_params, size, n_blocks):
    return _impl_for(prior_params, "log_prior_pred")


@overload(log_prior, jit_options=OVERLOAD_JIT_OPTIONS)
def _ol_log_prior(prior_params, sizes, active, n_active, n):
    return _impl_for(prior_params, "log_prior")


@overload(log_prior_block, jit_options=OVERLOAD_JIT_OPTIONS)
def _ol_log_prior_block(prior_params, size, c, n_blocks):
    return _impl_for(prior_params, "log_prior_block")
