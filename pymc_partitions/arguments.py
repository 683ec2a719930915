"""Checks on plain user arguments (counts, numbers, seeds), with errors that name
the argument and say what is allowed: the conventions of
:mod:`pymc_partitions.distributions.validation`, which re-exports these.

NumPy only: worker processes of the unbiased runners import this (the estimator's
and the built-in functions h's checks) without PyMC or PyTensor, which
:mod:`.distributions` loads.
"""

import numbers

import numpy as np


def _is_bool(value):
    return isinstance(value, bool | np.bool_) or (
        isinstance(value, np.ndarray) and value.dtype == bool
    )


def integer_arg(name, value, owner, minimum=None):
    """``value`` as a Python int: an integer, or a float holding a whole number.

    Booleans, None, strings, NaN, inf and arrays of more than one value raise a
    TypeError or ValueError naming ``name``; so does a value below ``minimum``.
    """
    allowed = {None: "an integer", 0: "a non-negative integer (>= 0)",
               1: "a positive integer (>= 1)"}.get(minimum, f"an integer >= {minimum}")
    if _is_bool(value) or not isinstance(value, numbers.Real | np.ndarray):
        raise TypeError(f"{owner}: '{name}' must be {allowed}, got {value!r}.")
    arr = np.asarray(value)
    if arr.ndim != 0 or arr.dtype.kind not in "iuf":
        raise TypeError(f"{owner}: '{name}' must be {allowed} (one number), got {value!r}.")
    if not np.isfinite(arr) or float(arr) != np.round(float(arr)):
        raise ValueError(f"{owner}: '{name}' must be {allowed}, got {value!r}.")
    out = int(arr)
    if minimum is not None and out < minimum:
        raise ValueError(f"{owner}: '{name}' must be {allowed}, got {value!r}.")
    return out


def seed_arg(name, value, owner):
    """A seed for ``numpy.random.default_rng``: None, a non-negative integer (not a
    boolean), a sequence of them, a ``SeedSequence`` or a ``Generator`` (returned
    as it is); anything else raises a TypeError naming ``name``."""
    if value is None or isinstance(value, np.random.Generator | np.random.SeedSequence):
        return value
    if not _is_bool(value):
        try:
            np.random.default_rng(value)
            return value
        except (TypeError, ValueError):
            pass
    raise TypeError(
        f"{owner}: '{name}' must be None, a non-negative integer or a numpy Generator, "
        f"got {value!r}."
    )


def number_arg(name, value, owner, *, low=None, high=None, low_open=False, high_open=False):
    """``value`` as a finite Python float in the interval given by ``low`` / ``high``
    (closed unless ``low_open`` / ``high_open``). Booleans, None, strings, NaN and
    inf raise an error naming ``name``."""
    lo = "" if low is None else f"{'>' if low_open else '>='} {low}"
    hi = "" if high is None else f"{'<' if high_open else '<='} {high}"
    allowed = "a finite number" + (f" {lo}" if lo else "") + (" and" if lo and hi else "") + (
        f" {hi}" if hi else "")
    if _is_bool(value) or not isinstance(value, numbers.Real | np.ndarray):
        raise TypeError(f"{owner}: '{name}' must be {allowed}, got {value!r}.")
    arr = np.asarray(value)
    if arr.ndim != 0 or arr.dtype.kind not in "iuf":
        raise TypeError(f"{owner}: '{name}' must be {allowed} (one number), got {value!r}.")
    x = float(arr)
    if (
        not np.isfinite(x)
        or (low is not None and (x <= low if low_open else x < low))
        or (high is not None and (x >= high if high_open else x > high))
    ):
        raise ValueError(f"{owner}: '{name}' must be {allowed}, got {value!r}.")
    return x


__all__ = ["integer_arg", "number_arg", "seed_arg"]
