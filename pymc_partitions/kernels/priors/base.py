"""Generic prior primitives, dispatched on the type of the ``prior_params`` record.

Same scheme as :mod:`pymc_partitions.kernels.components.base`.
"""

from typing import Callable, NamedTuple

from numba.extending import overload

from pymc_partitions.kernels.dispatch import (
    OVERLOAD_JIT_OPTIONS,
    has_inverse_temperature,
    lookup,
    overload_callable,
    overload_impl,
)


class PriorFunctions(NamedTuple):
    log_prior_pred: Callable
    log_prior: Callable
    log_prior_block: Callable


_REGISTRY: dict[type, PriorFunctions] = {}


def register(params_class, *, log_prior_pred, log_prior, log_prior_block):
    """Register a prior's njit primitives for its params record class."""
    _REGISTRY[params_class] = PriorFunctions(log_prior_pred, log_prior, log_prior_block)


def _inv_t(prior_params):
    return prior_params.inv_t if has_inverse_temperature(prior_params) else 1.0


def _lookup(params, name):
    return lookup(_REGISTRY, params, name, "partition prior")


def log_prior_pred(prior_params, size, n_blocks):
    """log weight of an item joining a block of ``size`` items (0: a new block), times
    the record's ``inv_t`` (1/t of a tempered target; as every function below)."""
    return _inv_t(prior_params) * _lookup(prior_params, "log_prior_pred")(prior_params, size,
                                                                        n_blocks)


def log_prior(prior_params, sizes, active, n_active, n):
    """Total log prior of the partition with block sizes ``sizes[active[:n_active]]``."""
    return _inv_t(prior_params) * _lookup(prior_params, "log_prior")(prior_params, sizes, active,
                                                                   n_active, n)


def log_prior_block(prior_params, size, c, n_blocks):
    """log weight of a set of ``c`` items joining a block of ``size`` items (0: a new
    block) together, ``n_blocks`` blocks among the other items; up to a term common
    to all blocks the set may join."""
    return _inv_t(prior_params) * _lookup(prior_params, "log_prior_block")(prior_params, size, c,
                                                                         n_blocks)


# The overloads: the prior's primitive times ``prior_params.inv_t``, a run-time field
# (1.0 unless tempered: one compiled kernel serves every temperature; x * 1.0 is x).
@overload(log_prior_pred, jit_options=OVERLOAD_JIT_OPTIONS)
def _ol_log_prior_pred(prior_params, size, n_blocks):
    inner = overload_callable(_REGISTRY, prior_params, "log_prior_pred")
    if inner is None or not has_inverse_temperature(prior_params):
        return overload_impl(_REGISTRY, prior_params, "log_prior_pred")

    def tempered(prior_params, size, n_blocks):
        return prior_params.inv_t * inner(prior_params, size, n_blocks)
    return tempered


@overload(log_prior, jit_options=OVERLOAD_JIT_OPTIONS)
def _ol_log_prior(prior_params, sizes, active, n_active, n):
    inner = overload_callable(_REGISTRY, prior_params, "log_prior")
    if inner is None or not has_inverse_temperature(prior_params):
        return overload_impl(_REGISTRY, prior_params, "log_prior")

    def tempered(prior_params, sizes, active, n_active, n):
        return prior_params.inv_t * inner(prior_params, sizes, active, n_active, n)
    return tempered


@overload(log_prior_block, jit_options=OVERLOAD_JIT_OPTIONS)
def _ol_log_prior_block(prior_params, size, c, n_blocks):
    inner = overload_callable(_REGISTRY, prior_params, "log_prior_block")
    if inner is None or not has_inverse_temperature(prior_params):
        return overload_impl(_REGISTRY, prior_params, "log_prior_block")

    def tempered(prior_params, size, c, n_blocks):
        return prior_params.inv_t * inner(prior_params, size, c, n_blocks)
    return tempered
