"""Plain-numpy utilities on partitions given as label vectors."""

import numpy as np


def _not_an_array(value, name, owner, what):
    """A TypeError for a user value that is no array (None, an ``xarray.Dataset``,
    another object), or None if ``value`` may be read as one. Messages start with
    ``{owner}: '{name}'``, or with ``name`` alone when ``owner`` is None."""
    subject = f"{owner}: '{name}'" if owner else name
    if value is None:
        return TypeError(f"{subject} is required ({what}), got None.")
    if type(value).__name__ in ("Dataset", "DataTree") and hasattr(value, "data_vars"):
        return TypeError(
            f"{subject} must be {what}, got an xarray {type(value).__name__}; pick one "
            f"variable (ds['name']) to pass a DataArray."
        )
    return None


def as_array(value, name, owner, what="an array"):
    """``value`` as a numpy array, for user input read by name ``name``.

    An ``xarray.DataArray`` gives its values; None, an ``xarray.Dataset`` and
    ragged nested lists raise an error naming ``name`` and ``owner`` (the function
    or distribution) and saying what is allowed (``what``).
    """
    err = _not_an_array(value, name, owner, what)
    if err is not None:
        raise err
    subject = f"{owner}: '{name}'" if owner else name
    try:
        arr = np.asarray(getattr(value, "values", value) if hasattr(value, "dims") else value)
    except (ValueError, TypeError) as exc:
        raise ValueError(
            f"{subject} must be {what}; it could not be read as one ({exc}). Nested "
            f"lists must be rectangular (every row the same length)."
        ) from None
    if arr.dtype == object:
        raise TypeError(
            f"{subject} must be {what}; it was read as an array of Python objects "
            f"(ragged rows or mixed types?)."
        )
    return arr


def as_labels(labels, name, owner, *, categories=False, integer_dtype=False):
    """Labels of items as an int64 array (any shape), validated.

    Integer and boolean labels are taken as they are; floats must be finite whole
    numbers (labels stored as floats, e.g. read from a table). With ``categories``
    (:func:`canonicalize` only), strings are allowed too: any values encode the
    partition "same value, same block". With ``integer_dtype`` (posterior draws,
    which a trace holds as integers) floats are refused too. Anything else (NaN,
    1.5, complex numbers, ragged lists, None, an ``xarray.Dataset``) raises an
    error naming ``name``. An ``xarray.DataArray`` gives its values.
    """
    what = "integer labels" + (" (or strings)" if categories else "")
    arr = as_array(labels, name, owner, what)
    subject = f"{owner}: '{name}'" if owner else name
    kind = arr.dtype.kind
    if kind in "iu":
        return arr.astype(np.int64, copy=False)
    if kind == "b":
        return arr.astype(np.int64)
    if kind == "f" and integer_dtype:
        raise ValueError(
            f"{subject} must hold integer labels (an integer array, as in a trace); got dtype "
            f"{arr.dtype}. Convert whole-number labels with .astype(int)."
        )
    if kind == "f":
        bad = ~np.isfinite(arr) | (arr != np.round(arr))
        if np.any(bad):
            where = tuple(int(v) for v in np.argwhere(bad)[0]) if arr.ndim else ()
            raise ValueError(
                f"{subject} must hold integer labels; found {arr[where]!r}"
                f"{f' at index {where}' if where else ''}. NaN, inf and fractions do not label "
                f"a block."
            )
        return arr.astype(np.int64)
    if categories and kind in "US":
        return arr
    raise TypeError(f"{subject} must hold {what}, got dtype {arr.dtype}.")


def canonicalize(labels):
    """Canonical labels of the partition ``labels`` encodes.

    Label 0 for item 0's block, new labels in order of first appearance; equal
    partitions get equal vectors. Works on the last axis of an array of label
    vectors.

    >>> canonicalize([3, 3, 1, 7, 1])
    array([0, 0, 1, 2, 1])

    Labels may be integers, booleans, whole-number floats or strings; NaN, other
    floats and scalars raise a ValueError naming ``labels``.
    """
    labels = as_labels(labels, "labels", "canonicalize", categories=True)
    if labels.ndim == 0:
        raise ValueError(
            "canonicalize: 'labels' must be a vector of labels (one per item) or an array of "
            f"such vectors; got the scalar {labels!r}."
        )
    if labels.size == 0:
        return np.zeros(labels.shape, dtype=np.int64)
    if labels.ndim > 1:
        flat = labels.reshape(-1, labels.shape[-1])
        return np.stack([canonicalize(row) for row in flat]).reshape(labels.shape)
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(first.shape[0], dtype=np.int64)
    rank[np.argsort(first)] = np.arange(first.shape[0])
    return rank[inverse.reshape(-1)]


def set_partitions(n):
    """All set partitions of n items as canonical label vectors, shape (Bell(n), n).

    Restricted growth strings in lexicographic order; Bell(7) = 877, Bell(10) = 115975.

    >>> set_partitions(3)
    array([[0, 0, 0],
           [0, 0, 1],
           [0, 1, 0],
           [0, 1, 1],
           [0, 1, 2]])
    """
    if isinstance(n, bool | np.bool_) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"set_partitions: 'n' must be an integer >= 1, got {n!r}.")
    n = int(n)
    rows = [[0]]
    for _ in range(1, n):
        rows = [row + [k] for row in rows for k in range(max(row) + 2)]
    return np.array(rows, dtype=np.int64)
