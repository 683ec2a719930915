"""Explicit block parameters of the conjugate components, dispatched on the params type.

The sub-cluster sampler (:mod:`pymc_partitions.kernels.subclusters`; Chang & Fisher
2013, §4, eqs. 8-9) instantiates each block's parameters: it draws them from their
conjugate posterior given the block's sufficient statistics and scores items under
them. A component supports it by three primitives over one float64 row per block
(its own layout; width from ``explicit_width``):

    explicit_width(params) -> int                     # entries per row
    draw_explicit(params, stats, k, stream, theta, row)  # theta[row] ~ p(theta | slot k)
    log_density_explicit(params, theta, row, data, i) -> float  # log f(x_i | theta[row])

registered for its params record class by the component module itself (the optional
explicit arguments of :func:`.base.register`, which call :func:`register_explicit`):
a new likelihood needs only its module, its distribution class and its tests. Today:
the diagonal and dense Normal with known covariance, the Normal-inverse-Gamma, the
Normal-inverse-Wishart, the Beta-Bernoulli, the Poisson-Gamma and the
Dirichlet-multinomial; :func:`supports` tells a step which components it can sample,
so it can refuse the others with a clear message.

This module imports no component (the components import it, through ``base``).
"""

from typing import Callable, NamedTuple

from numba.extending import overload

from pymc_partitions.kernels.dispatch import OVERLOAD_JIT_OPTIONS, lookup, overload_impl


class ExplicitFunctions(NamedTuple):
    explicit_width: Callable
    draw_explicit: Callable
    log_density_explicit: Callable


_EXPLICIT_REGISTRY: dict[type, ExplicitFunctions] = {}


def register_explicit(params_class, *, explicit_width, draw_explicit, log_density_explicit):
    """Register a component's explicit-parameter primitives for its params class."""
    _EXPLICIT_REGISTRY[params_class] = ExplicitFunctions(
        explicit_width, draw_explicit, log_density_explicit)


def supports(params):
    """Whether ``params``' component has explicit-parameter primitives."""
    return type(params) in _EXPLICIT_REGISTRY


def _lookup(params, name):
    return lookup(_EXPLICIT_REGISTRY, params, name, "explicit-parameter component")


def explicit_width(params):
    """Float64 entries of one block's explicit-parameter row."""
    fn = _lookup(params, "explicit_width")
    return int(getattr(fn, "py_func", fn)(params))  # plain Python: nothing to compile


def draw_explicit(params, stats, k, stream, theta, row):
    """theta[row] ~ the conjugate posterior of slot k's parameters (prior if empty)."""
    return _lookup(params, "draw_explicit")(params, stats, k, stream, theta, row)


def log_density_explicit(params, theta, row, data, i):
    """log f(x_i | theta[row]) (untempered: the sampler refuses tempered targets)."""
    return _lookup(params, "log_density_explicit")(params, theta, row, data, i)


@overload(explicit_width, jit_options=OVERLOAD_JIT_OPTIONS)
def _ol_explicit_width(params):
    return overload_impl(_EXPLICIT_REGISTRY, params, "explicit_width")


@overload(draw_explicit, jit_options=OVERLOAD_JIT_OPTIONS)
def _ol_draw_explicit(params, stats, k, stream, theta, row):
    return overload_impl(_EXPLICIT_REGISTRY, params, "draw_explicit")


@overload(log_density_explicit, jit_options=OVERLOAD_JIT_OPTIONS)
def _ol_log_density_explicit(params, theta, row, data, i):
    return overload_impl(_EXPLICIT_REGISTRY, params, "log_density_explicit")
