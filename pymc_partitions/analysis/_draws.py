"""Reading partition draws from a ``pm.sample`` result or a plain label array."""

import numpy as np

from pymc_partitions import compat


def _is_trace(obj):
    return not isinstance(obj, np.ndarray | list | tuple) and _has_posterior(obj)


def _has_posterior(obj):
    try:
        compat.posterior_dataset(obj)
    except (KeyError, TypeError, AttributeError, IndexError):
        return False
    return True


def partition_variable(post, var_name):
    """Name of the partition variable in the posterior dataset ``post``."""
    if var_name is not None:
        if var_name not in post.data_vars:
            raise ValueError(
                f"var_name={var_name!r} is not in the posterior; it holds "
                f"{sorted(post.data_vars)}."
            )
        return var_name
    found = [
        name
        for name, da in post.data_vars.items()
        if da.ndim == 3 and np.issubdtype(da.dtype, np.integer)
    ]
    if len(found) != 1:
        raise ValueError(
            "Pass var_name= to say which posterior variable is the partition "
            f"(integer variables with one item dimension: {found})."
        )
    return found[0]


def read_draws(draws_or_idata, var_name=None, keep_chains=False):
    """Partition draws as an int64 array.

    draws_or_idata : an InferenceData / DataTree from ``pm.sample`` (the posterior
        group is read, ``var_name`` names the partition), or an integer array of
        shape (draws, n) or (chains, draws, n).
    Returns (draws, n) with chains stacked, or (chains, draws, n) when
    ``keep_chains`` (a 2-D input is then one chain).
    """
    if _is_trace(draws_or_idata):
        post = compat.posterior_dataset(draws_or_idata)
        name = partition_variable(post, var_name)
        arr = np.asarray(post[name].transpose("chain", "draw", ...).values)
    else:
        arr = np.asarray(draws_or_idata)
    if arr.ndim == 2:
        arr = arr[None]
    if arr.ndim != 3 or arr.shape[1] == 0 or arr.shape[2] == 0:
        raise ValueError(
            "draws must be an integer array of shape (draws, n) or (chains, draws, n), or a "
            f"pm.sample result with var_name=; got shape {arr.shape}."
        )
    if not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"draws must hold integer labels; got dtype {arr.dtype}.")
    arr = arr.astype(np.int64, copy=False)
    return arr if keep_chains else arr.reshape(-1, arr.shape[-1])
