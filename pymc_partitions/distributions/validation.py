"""Checks on user input, with errors that name the argument and say what is allowed.

Shared by the distributions (at model construction), the step methods, the
analysis functions and the data generators, so that one kind of bad value gets
one kind of message everywhere. Conventions (a demanding PyMC user's
expectations):

- counts (``n``, ``n_sweeps``, ...) are integers: Python or numpy integers, or
  floats holding whole numbers; booleans, None, strings, NaN and inf are refused;
- hyperparameters are numbers, arrays of numbers or PyTensor variables (random
  variables, ``pm.Data``, expressions); an ``xarray.DataArray`` gives its values;
  booleans, strings, complex numbers, None, ragged lists and an
  ``xarray.Dataset`` are refused, and constants must be finite;
- TypeError for a value of the wrong kind, ValueError for a value of the right
  kind outside what is allowed.
"""

import numpy as np
import pytensor.tensor as pt
from pytensor.graph.basic import Constant, Variable

# The plain checks live in a NumPy-only module (imported by worker processes without
# PyMC); they are part of this module's interface too.
from pymc_partitions.arguments import _is_bool, integer_arg, number_arg, seed_arg  # noqa: F401
from pymc_partitions.partitions import as_array


def constant_integer(name, value, owner, minimum=None):
    """:func:`integer_arg` for a value that may also be a PyTensor constant (not a
    random variable or other symbolic value: a ValueError naming ``name``)."""
    if isinstance(value, Variable):
        v = constant_value(value)
        if v is None or v.ndim != 0:
            raise ValueError(
                f"{owner}: '{name}' must be a constant integer (a number, not a random or "
                f"symbolic variable), got {value!r}."
            )
        value = v
    return integer_arg(name, value, owner, minimum)


def hyper_input(name, value, owner, *, positive=False):
    """A user's hyperparameter value, checked: a PyTensor variable unchanged, an
    ``xarray.DataArray`` as its values, a number or array as a float64 array.

    Refused with an error naming ``name``: None, booleans, strings, complex
    numbers, ragged lists, an ``xarray.Dataset``, other objects; constants with NaN
    or inf, and (``positive``) constants <= 0. Shapes are checked by the caller.
    """
    what = "a number, an array of numbers or a PyTensor/PyMC variable"
    if isinstance(value, Variable):
        dtype = getattr(value, "dtype", None)
        if dtype is None or dtype == "bool" or str(dtype).startswith("complex"):
            raise TypeError(f"{owner}: '{name}' must be {what} of real numbers, got {value!r} "
                            f"(dtype {dtype}).")
        if positive:
            check_positive(name, value, owner)
        else:
            _check_finite(name, value, owner)
        return value
    if _is_bool(value):
        raise TypeError(
            f"{owner}: '{name}' must be {what}, got the boolean {value!r}. Pass a number."
        )
    if isinstance(value, str | bytes):
        raise TypeError(f"{owner}: '{name}' must be {what}, got the string {value!r}.")
    arr = as_array(value, name, owner, what)
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{owner}: '{name}' must be {what} of real numbers, got dtype {arr.dtype}.")
    arr = arr.astype(np.float64)
    if positive:
        check_positive(name, arr, owner)
    else:
        _check_finite(name, arr, owner)
    return arr


def _check_finite(name, value, owner):
    v = constant_value(value)
    if v is not None and not np.all(np.isfinite(v)):
        raise ValueError(f"{owner}: '{name}' must be finite, got {v!r}.")


def constant_value(x):
    """The numeric value of ``x`` if it is a constant (number, array or PyTensor
    constant, possibly broadcast/cast), else None."""
    if isinstance(x, int | float | np.ndarray | np.number | list | tuple):
        return np.asarray(x)
    try:
        from pytensor.tensor.basic import get_underlying_scalar_constant_value

        var = pt.as_tensor_variable(x)
        if isinstance(var, Constant):
            return np.asarray(var.data)
        if var.ndim == 0:
            return np.asarray(get_underlying_scalar_constant_value(var))
    except Exception:
        return None
    return None


def check_positive(name, value, owner):
    """Raise if the constant ``value`` of argument ``name`` is not finite and > 0."""
    v = constant_value(value)
    if v is None:
        return
    if not np.all(np.isfinite(v)) or np.any(v <= 0):
        raise ValueError(
            f"{owner}: '{name}' must be positive and finite, got {v!r}. "
            f"Pass a positive number, or a positive random variable (e.g. pm.Gamma) "
            f"to learn it."
        )


def as_hyper_vector(name, value, n_dims, owner):
    """``value`` broadcast to a length-``n_dims`` vector, checking its length."""
    var = pt.as_tensor_variable(value)
    if var.ndim > 1:
        raise ValueError(
            f"{owner}: '{name}' must be a scalar or a vector of length D = {n_dims}, "
            f"got {var.ndim} dimensions."
        )
    if var.ndim == 1 and var.type.shape[0] is not None and var.type.shape[0] not in (1, n_dims):
        raise ValueError(
            f"{owner}: '{name}' has length {var.type.shape[0]} but the data have D = {n_dims} "
            f"columns; pass a scalar or a vector of length {n_dims}."
        )
    return pt.as_tensor_variable(pt.broadcast_to(var.astype("float64"), (n_dims,)))


def observed_value(observed, owner, what="an array or pm.Data"):
    """The value of ``observed`` (an array, ``pm.Data`` or a constant expression),
    as given; a ValueError naming ``observed`` if it is missing or symbolic.
    ``what`` says what the likelihood accepts, for the messages."""
    if observed is None:
        raise ValueError(f"{owner}: 'observed' is required ({what}).")
    if hasattr(observed, "get_value"):  # pm.Data / shared variable
        return observed.get_value()
    if hasattr(observed, "data_vars") or hasattr(observed, "dims"):  # xarray
        return as_array(observed, "observed", owner, what)
    if isinstance(observed, pt.TensorVariable):
        value = constant_value(observed)
        if value is None:
            raise ValueError(
                f"{owner}: 'observed' must be data ({what}), not a symbolic expression."
            )
        return value
    return observed


def observed_matrix(observed, owner, *, binary=False, allow_bool=True):
    """The observed data as an (n, D) float array, validated.

    A 1-D array is read as D = 1. NaN or inf, the wrong number of dimensions and,
    with ``binary``, values other than 0 and 1 raise a ValueError naming
    ``observed``. Booleans are read as 0/1 unless ``allow_bool`` is False (data of
    a real-valued likelihood: a TypeError saying how to pass them on purpose).
    Ragged lists, strings, complex numbers and an ``xarray.Dataset`` are refused; an
    ``xarray.DataArray`` gives its values.
    """
    data = as_array(observed_value(observed, owner), "observed", owner, "an (n, D) array")
    if data.dtype == bool and not allow_bool:
        raise TypeError(
            f"{owner}: 'observed' is boolean, but this likelihood models real-valued data. "
            f"Pass observed.astype(float) to model 0/1 values as reals, or use "
            f"pmp.CollapsedBetaBernoulli for binary data."
        )
    if data.ndim == 1:
        data = data[:, None]
    if data.ndim != 2:
        raise ValueError(
            f"{owner}: 'observed' must be an (n, D) array (or a length-n vector for D = 1); "
            f"got shape {data.shape}."
        )
    if data.shape[0] == 0 or data.shape[1] == 0:
        raise ValueError(f"{owner}: 'observed' is empty (shape {data.shape}).")
    if data.dtype.kind not in "iufb":
        raise ValueError(
            f"{owner}: 'observed' must hold real numbers, got dtype {data.dtype}."
        )
    data = data.astype(np.float64)
    if not np.all(np.isfinite(data)):
        bad = np.argwhere(~np.isfinite(data))[0]
        raise ValueError(
            f"{owner}: 'observed' contains NaN or inf (first at row {bad[0]}, column {bad[1]}). "
            f"Remove or impute those entries; collapsed likelihoods need complete data."
        )
    if binary and not np.all((data == 0) | (data == 1)):
        bad = np.argwhere((data != 0) & (data != 1))[0]
        raise ValueError(
            f"{owner}: 'observed' must contain only 0 and 1; found {data[bad[0], bad[1]]!r} "
            f"at row {bad[0]}, column {bad[1]}."
        )
    return data
