"""Reading partition draws from a ``pm.sample`` result or a plain label array.

A ``pm.sample`` result is an ``InferenceData`` / ``DataTree`` (the default), its
posterior ``Dataset``, or PyMC's ``MultiTrace`` (``return_inferencedata=False``). A
``MultiTrace`` is read through :func:`multitrace_posterior` (its values per chain,
``trace.get_values(name, combine=False)``) by the functions that only read draws;
the functions that add to the result refuse it with :func:`multitrace_refusal`,
which says how to convert it.
"""

import numpy as np
import xarray as xr

from pymc_partitions import versions
from pymc_partitions.partitions import as_labels


def is_multitrace(obj):
    """True for PyMC's ``MultiTrace`` (``pm.sample(..., return_inferencedata=False)``)."""
    from pymc.backends.base import MultiTrace

    return isinstance(obj, MultiTrace)


def multitrace_refusal(owner, arg="idata", why=None):
    """The TypeError for a ``MultiTrace`` given to a function that needs an
    ``InferenceData`` (``why``; default: it adds to its result)."""
    why = why or f"a MultiTrace cannot hold what {owner} adds"
    return TypeError(
        f"{owner}: '{arg}' is a MultiTrace (pm.sample(..., return_inferencedata=False)); "
        f"{why}. Convert it first, idata = pm.to_inference_data(trace, model=model), or "
        f"sample with return_inferencedata=True (the default)."
    )


def multitrace_posterior(trace, owner, arg="idata"):
    """The draws of a ``MultiTrace`` as a posterior ``xarray.Dataset``: every variable
    with dims (chain, draw, ``{name}_dim_k``...), the values of each chain from
    ``trace.get_values(name, combine=False)``. Chains must hold as many draws each
    (as ``pm.sample`` returns them); otherwise a ValueError naming ``arg``."""
    variables, n_draws = {}, None
    for name in trace.varnames:
        per_chain = [np.asarray(v) for v in trace.get_values(name, combine=False)]
        lengths = sorted({v.shape[0] for v in per_chain})
        if len(lengths) > 1:
            raise ValueError(
                f"{owner}: the chains of the MultiTrace '{arg}' hold different numbers of "
                f"draws {lengths}; slice it to a common length first (trace[:n])."
            )
        values = np.stack(per_chain)
        n_draws = values.shape[1]
        dims = ("chain", "draw") + tuple(f"{name}_dim_{k}" for k in range(values.ndim - 2))
        variables[name] = (dims, values)
    coords = {"chain": list(trace.chains), "draw": np.arange(n_draws or 0)}
    return xr.Dataset(variables, coords=coords)


def _is_dataset(obj):
    return hasattr(obj, "data_vars") and not hasattr(obj, "groups") and not hasattr(obj, "children")


def _is_trace(obj):
    return not isinstance(obj, np.ndarray | list | tuple) and _has_posterior(obj)


def _has_posterior(obj):
    try:
        versions.posterior_dataset(obj)
    except (KeyError, TypeError, AttributeError, IndexError, ValueError):
        return False
    return True


def posterior_of(obj, owner, arg="idata", allow_dataset=True, allow_multitrace=True):
    """The posterior of a ``pm.sample`` result (``InferenceData`` / ``DataTree``) as
    an ``xarray.Dataset``; with ``allow_dataset`` a posterior ``Dataset`` passes as
    it is; a ``MultiTrace`` is read by :func:`multitrace_posterior`, or refused
    (``allow_multitrace=False``: the caller adds to the result) with a TypeError
    saying how to convert it. Anything else raises a TypeError naming ``arg``."""
    if allow_dataset and _is_dataset(obj):
        return obj
    if is_multitrace(obj):
        if not allow_multitrace:
            raise multitrace_refusal(owner, arg)
        return multitrace_posterior(obj, owner, arg)
    if _is_trace(obj):
        return versions.posterior_dataset(obj)
    alt = (" or its posterior Dataset" if allow_dataset else "") + (
        " or a MultiTrace" if allow_multitrace else "")
    raise TypeError(
        f"{owner}: '{arg}' must be the result of pm.sample (an InferenceData or DataTree with "
        f"a posterior group){alt}; got {type(obj).__name__}."
    )


def partition_variable(post, var_name, owner="read_draws"):
    """Name of the partition variable in the posterior dataset ``post``.

    ``var_name`` must name an integer variable with one item dimension, (chain,
    draw, n), holding labels in [0, n) (what a partition variable's trace holds:
    canonical labels); anything else is a ValueError naming ``var_name``, so that
    e.g. the summary ``z_n_clusters`` is not read as a partition. Without
    ``var_name`` the one integer variable with an item dimension is used.
    """
    if var_name is not None:
        if not isinstance(var_name, str):
            raise TypeError(f"{owner}: 'var_name' must be a variable name (str), got {var_name!r}.")
        if var_name not in post.data_vars:
            raise ValueError(
                f"{owner}: 'var_name' = {var_name!r} is not in the posterior; it holds "
                f"{sorted(post.data_vars)}."
            )
        da = post[var_name]
        if da.ndim != 3 or not np.issubdtype(da.dtype, np.integer):
            raise ValueError(
                f"{owner}: 'var_name' = {var_name!r} is not a partition variable: a partition's "
                f"trace is integer labels with dims (chain, draw, item), but "
                f"{var_name!r} has dims {da.dims} and dtype {da.dtype}. Pass the partition "
                f"variable's name (e.g. 'z', not its summaries such as 'z_n_clusters')."
            )
        n = da.shape[-1]
        lo, hi = (int(v) for v in (da.min(), da.max())) if da.size else (0, 0)
        if lo < 0 or hi >= n:
            raise ValueError(
                f"{owner}: 'var_name' = {var_name!r} is not a partition variable: its values span "
                f"[{lo}, {hi}], but a partition of n = {n} items has labels in [0, {n})."
            )
        return var_name
    found = [
        name
        for name, da in post.data_vars.items()
        if da.ndim == 3 and np.issubdtype(da.dtype, np.integer)
    ]
    if len(found) != 1:
        raise ValueError(
            f"{owner}: pass 'var_name' to say which posterior variable is the partition "
            f"(integer variables with one item dimension: {found})."
        )
    return found[0]


def read_draws(draws_or_idata, var_name=None, keep_chains=False, owner="read_draws",
               arg="draws_or_idata"):
    """Partition draws as an int64 array.

    draws_or_idata : an InferenceData / DataTree from ``pm.sample``, its posterior
        ``Dataset`` or a ``MultiTrace`` (``return_inferencedata=False``) (``var_name``
        names the partition), or integer labels of shape
        (draws, n) or (chains, draws, n) (an array, nested lists or an
        ``xarray.DataArray``; booleans are read as labels 0/1, floats are refused).
    Returns (draws, n) with chains stacked, or (chains, draws, n) when
    ``keep_chains`` (a 2-D input is then one chain). Errors name ``arg`` and
    ``owner`` (the calling function).
    """
    if _is_dataset(draws_or_idata) or is_multitrace(draws_or_idata) or _is_trace(draws_or_idata):
        post = posterior_of(draws_or_idata, owner, arg)
        name = partition_variable(post, var_name, owner)
        arr = np.asarray(post[name].transpose("chain", "draw", ...).values)
    else:
        arr = as_labels(draws_or_idata, arg, owner, integer_dtype=True)
    if arr.ndim == 2:
        arr = arr[None]
    if arr.ndim != 3 or arr.shape[1] == 0 or arr.shape[2] == 0:
        raise ValueError(
            f"{owner}: '{arg}' must be integer labels of shape (draws, n) or (chains, draws, "
            f"n), or a pm.sample result with var_name=; got shape {arr.shape}."
        )
    arr = arr.astype(np.int64, copy=False)
    return arr if keep_chains else arr.reshape(-1, arr.shape[-1])
