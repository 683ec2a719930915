"""Generic component primitives, dispatched on the type of the ``params`` record.

A component module defines its ``params`` as a ``NamedTuple`` class and registers
its five njit primitives for that class with :func:`register`. Moves call the
generic functions of this module (``log_pred(params, stats, data, i, k)`` and so
on); numba resolves them at compile time from ``type(params)`` and inlines the
component's code, so one move compiles once per component and is cached on disk.
Called from Python, the same functions dispatch through the registry (tests use
this).

Several likelihoods observed on one partition are one :class:`Pair` (nested for
more than two): params ``Pair(first, second)``, stats and data plain 2-tuples;
their log densities add.
"""

from typing import Any, Callable, NamedTuple

import numpy as np
from numba.extending import overload

from pymc_partitions.kernels.components.explicit import register_explicit
from pymc_partitions.kernels.dispatch import (
    OVERLOAD_JIT_OPTIONS,
    has_inverse_temperature,
    lookup,
    overload_callable,
    overload_impl,
)


class ComponentFunctions(NamedTuple):
    log_pred: Callable
    add: Callable
    remove: Callable
    refresh: Callable
    log_marginal: Callable
    log_pred_block: Callable


_REGISTRY: dict[type, ComponentFunctions] = {}


def register(params_class, *, log_pred, add, remove, refresh, log_marginal,
             log_pred_block=None, explicit_width=None, draw_explicit=None,
             log_density_explicit=None):
    """Register a component's njit primitives for its params record class.

    ``log_pred_block`` is optional: without it, a block's predictive term is the
    chain rule over its items (:func:`chain_rule_log_pred_block`).

    ``explicit_width``, ``draw_explicit`` and ``log_density_explicit`` are optional
    too, all three or none: a component's explicit block parameters (conjugate
    posterior draws and the item density given them, :mod:`.explicit`), which the
    sub-cluster sampler needs; they are registered there for ``params_class``."""
    explicit = (explicit_width, draw_explicit, log_density_explicit)
    if any(fn is not None for fn in explicit):
        if any(fn is None for fn in explicit):
            raise TypeError(
                f"register({params_class.__name__}): pass all three of 'explicit_width', "
                f"'draw_explicit' and 'log_density_explicit', or none of them."
            )
        register_explicit(params_class, explicit_width=explicit_width,
                          draw_explicit=draw_explicit,
                          log_density_explicit=log_density_explicit)
    _REGISTRY[params_class] = ComponentFunctions(
        log_pred, add, remove, refresh, log_marginal,
        chain_rule_log_pred_block if log_pred_block is None else log_pred_block,
    )


def row_data(x):
    """Data tuple ``(x,)`` from an (N, D) float array (C-contiguous float64): the data
    of every component whose items are rows of one real matrix (the Gaussian family,
    k-means energy)."""
    return (np.ascontiguousarray(x, dtype=np.float64),)


def alloc_slots(stats_class, n_slots, *tails, extra=(), dtypes=None, params=None,
                refresh=None):
    """A component's statistics for ``n_slots`` empty slots.

    ``stats_class`` is the component's stats ``NamedTuple``; its first field is the
    (n_slots,) int64 item count, then one zero-filled array of shape
    ``(n_slots, *tail)`` per entry of ``tails`` (float64 unless ``dtypes`` maps the
    field's name to another dtype), then the ``extra`` fields as given (arrays that
    are not per slot). With ``refresh`` (the component's primitive), every slot's
    caches are then set from ``params`` (the prior predictive).
    """
    fields = stats_class._fields[1 : 1 + len(tails)]
    dtypes = dtypes or {}
    slot_arrays = [
        np.zeros((n_slots, *tail), dtype=dtypes.get(name, np.float64))
        for name, tail in zip(fields, tails)
    ]
    stats = stats_class(np.zeros(n_slots, dtype=np.int64), *slot_arrays, *extra)
    if refresh is not None:
        refresh_slots(params, stats, refresh)
    return stats


def refresh_slots(params, stats, refresh):
    """Call the component primitive ``refresh`` on every slot of ``stats``."""
    for k in range(stats.count.shape[0]):
        refresh(params, stats, k)


def _inv_t(params):
    return params.inv_t if has_inverse_temperature(params) else 1.0


def _lookup(params, name):
    return lookup(_REGISTRY, params, name, "likelihood component")


def log_pred(params, stats, data, i, k):
    """log p(x_i | items in slot k); for an empty slot the prior predictive (times the
    record's ``inv_t``, as every log density below)."""
    return _inv_t(params) * _lookup(params, "log_pred")(params, stats, data, i, k)


def add(params, stats, data, i, k):
    """Item i joins slot k: update the slot's statistics and caches."""
    return _lookup(params, "add")(params, stats, data, i, k)


def remove(params, stats, data, i, k):
    """Item i leaves slot k: update the slot's statistics and caches."""
    return _lookup(params, "remove")(params, stats, data, i, k)


def refresh(params, stats, k):
    """Recompute slot k's caches from its statistics (after params changed)."""
    return _lookup(params, "refresh")(params, stats, k)


def log_marginal(params, stats, k):
    """log p(x of slot k's items); 0 for an empty slot."""
    return _inv_t(params) * _lookup(params, "log_marginal")(params, stats, k)


def log_pred_block(params, stats, data, items, k):
    """log p(x_C | items in slot k) for the unassigned items C = ``items`` ((c,) int64)
    joining slot k together; for an empty slot the prior predictive of C. Leaves the
    statistics as they were."""
    return _inv_t(params) * _lookup(params, "log_pred_block")(params, stats, data, items, k)


def _untempered_log_pred(params, stats, data, i, k):
    """The component's own ``log_pred``, without the record's ``inv_t`` (for primitives
    built on it, which the generic function then multiplies once)."""
    return _lookup(params, "log_pred")(params, stats, data, i, k)


def chain_rule_log_pred_block(params, stats, data, items, k):
    """The default ``log_pred_block``: the chain rule, C's items added to slot k one at
    a time, their predictive terms summed, then taken out again (c ``log_pred``, c
    ``add`` and c ``remove`` calls; one item: its predictive term alone)."""
    if items.shape[0] == 1:
        return _untempered_log_pred(params, stats, data, items[0], k)
    acc = 0.0
    for j in range(items.shape[0]):
        acc += _untempered_log_pred(params, stats, data, items[j], k)
        add(params, stats, data, items[j], k)
    for j in range(items.shape[0]):
        remove(params, stats, data, items[j], k)
    return acc


def _impl_for(params, name):
    return overload_impl(_REGISTRY, params, name)


def _times_inv_t(params, name):
    """The overload of a log density: the component's primitive times ``params.inv_t``
    (a run-time field, 1.0 unless tempered: one compiled kernel serves every
    temperature, and x * 1.0 is x bit for bit)."""
    inner = overload_callable(_REGISTRY, params, name)
    if inner is None or not has_inverse_temperature(params):
        return _impl_for(params, name)
    # (numba needs the overload's argument names to be the generic function's)
    if name == "log_marginal":
        def tempered_log_marginal(params, stats, k):
            return params.inv_t * inner(params, stats, k)
        return tempered_log_marginal
    if name == "log_pred_block":
        def tempered_log_pred_block(params, stats, data, items, k):
            return params.inv_t * inner(params, stats, data, items, k)
        return tempered_log_pred_block

    def tempered_log_pred(params, stats, data, i, k):
        return params.inv_t * inner(params, stats, data, i, k)
    return tempered_log_pred


@overload(log_pred, jit_options=OVERLOAD_JIT_OPTIONS)
def _ol_log_pred(params, stats, data, i, k):
    return _times_inv_t(params, "log_pred")


@overload(_untempered_log_pred, jit_options=OVERLOAD_JIT_OPTIONS)
def _ol_untempered_log_pred(params, stats, data, i, k):
    return _impl_for(params, "log_pred")


@overload(add, jit_options=OVERLOAD_JIT_OPTIONS)
def _ol_add(params, stats, data, i, k):
    return _impl_for(params, "add")


@overload(remove, jit_options=OVERLOAD_JIT_OPTIONS)
def _ol_remove(params, stats, data, i, k):
    return _impl_for(params, "remove")


@overload(refresh, jit_options=OVERLOAD_JIT_OPTIONS)
def _ol_refresh(params, stats, k):
    return _impl_for(params, "refresh")


@overload(log_marginal, jit_options=OVERLOAD_JIT_OPTIONS)
def _ol_log_marginal(params, stats, k):
    return _times_inv_t(params, "log_marginal")


@overload(log_pred_block, jit_options=OVERLOAD_JIT_OPTIONS)
def _ol_log_pred_block(params, stats, data, items, k):
    return _times_inv_t(params, "log_pred_block")


class Pair(NamedTuple):
    """Params of two components observed on one partition (their log densities add)."""

    first: Any
    second: Any
    inv_t: float = 1.0  # 1/t: a tempered target (kernels/tempering.py)


def _pair_log_pred(params, stats, data, i, k):
    return log_pred(params.first, stats[0], data[0], i, k) + log_pred(
        params.second, stats[1], data[1], i, k
    )


def _pair_add(params, stats, data, i, k):
    add(params.first, stats[0], data[0], i, k)
    add(params.second, stats[1], data[1], i, k)


def _pair_remove(params, stats, data, i, k):
    remove(params.first, stats[0], data[0], i, k)
    remove(params.second, stats[1], data[1], i, k)


def _pair_refresh(params, stats, k):
    refresh(params.first, stats[0], k)
    refresh(params.second, stats[1], k)


def _pair_log_marginal(params, stats, k):
    return log_marginal(params.first, stats[0], k) + log_marginal(params.second, stats[1], k)


def _pair_log_pred_block(params, stats, data, items, k):
    return log_pred_block(params.first, stats[0], data[0], items, k) + log_pred_block(
        params.second, stats[1], data[1], items, k
    )


register(
    Pair,
    log_pred=_pair_log_pred,
    add=_pair_add,
    remove=_pair_remove,
    refresh=_pair_refresh,
    log_marginal=_pair_log_marginal,
    log_pred_block=_pair_log_pred_block,
)


def combine(params, stats, data):
    """Nest per-component lists into the params/stats/data of one summed component.

    A single component is returned unchanged; ``[a, b, c]`` becomes
    ``Pair(Pair(a, b), c)`` with stats ``((sa, sb), sc)`` and data likewise.
    """
    p, s, d = params[0], stats[0], data[0]
    for p2, s2, d2 in zip(params[1:], stats[1:], data[1:]):
        p, s, d = Pair(p, p2), (s, s2), (d, d2)
    return p, s, d
