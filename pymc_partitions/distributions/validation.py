"""Checks on user input at model construction, with errors that name the argument."""

import numpy as np
import pytensor.tensor as pt
from pytensor.graph.basic import Constant


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
    if isinstance(observed, pt.TensorVariable):
        value = constant_value(observed)
        if value is None:
            raise ValueError(
                f"{owner}: 'observed' must be data ({what}), not a symbolic expression."
            )
        return value
    return observed


def observed_matrix(observed, owner, *, binary=False):
    """The observed data as an (n, D) float array, validated.

    A 1-D array is read as D = 1. NaN or inf, the wrong number of dimensions and,
    with ``binary``, values other than 0 and 1 raise a ValueError naming
    ``observed``.
    """
    data = np.asarray(observed_value(observed, owner))
    if data.ndim == 1:
        data = data[:, None]
    if data.ndim != 2:
        raise ValueError(
            f"{owner}: 'observed' must be an (n, D) array (or a length-n vector for D = 1); "
            f"got shape {data.shape}."
        )
    if data.shape[0] == 0 or data.shape[1] == 0:
        raise ValueError(f"{owner}: 'observed' is empty (shape {data.shape}).")
    if not np.issubdtype(data.dtype, np.number) and data.dtype != bool:
        raise ValueError(f"{owner}: 'observed' must be numeric, got dtype {data.dtype}.")
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
