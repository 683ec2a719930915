"""Type dispatch shared by components and priors.

A registry maps a params record class (a ``NamedTuple``) to the njit primitives of
one component or prior. Generic functions look the implementation up from the
params' type: in Python from the value, in numba (through ``overload``) from the
numba type's ``instance_class`` at compile time.
"""

from numba import njit

# Implementations run inside kernels compiled without reference counting (see _jit).
OVERLOAD_JIT_OPTIONS = {"_nrt": False}

# Registered plain-Python implementations (wrappers such as ``Pair``'s), jitted once.
_JITTED = {}


def params_class(params):
    """The record class of ``params``: a value's type, or a numba type's class."""
    return getattr(params, "instance_class", None) or type(params)


def lookup(registry, params, name, kind):
    """The primitive ``name`` registered for ``params``' class; a clear error if none."""
    cls = params_class(params)
    try:
        return getattr(registry[cls], name)
    except KeyError:
        raise TypeError(f"no {kind} is registered for params of type {cls!r}") from None


def overload_impl(registry, params, name):
    """For ``numba.extending.overload``: the Python function numba compiles, or None."""
    cls = getattr(params, "instance_class", None)
    if cls in registry:
        fn = getattr(registry[cls], name)
        return getattr(fn, "py_func", fn)
    return None


def overload_callable(registry, params, name):
    """For an overload that wraps the implementation: the registered njit function (a
    plain Python one jitted to inline), or None."""
    cls = getattr(params, "instance_class", None)
    if cls not in registry:
        return None
    fn = getattr(registry[cls], name)
    if not hasattr(fn, "py_func"):
        if fn not in _JITTED:
            _JITTED[fn] = njit(inline="always")(fn)
        fn = _JITTED[fn]
    return fn


def has_inverse_temperature(params):
    """Whether the record class of ``params`` (a value or a numba type) has the
    ``inv_t`` field of a temperable target; a record without it (a user's component
    written before tempering was a field) is read untempered."""
    return "inv_t" in getattr(params_class(params), "_fields", ())
