"""Label-invariant statistics of a partition's draws, added to the posterior.

Raw labels switch between draws, so R-hat, ESS and trace plots of the labels are
meaningless. Functions of the partition that do not depend on the labels are
ordinary scalars across draws and chains; :func:`add_partition_statistics` puts
chosen ones into the posterior group so ``az.summary``, ``az.rhat``, ``az.ess``
and ``az.plot_trace`` treat them like any other variable.
"""

import numpy as np
import xarray as xr

from pymc_partitions import versions
from pymc_partitions.analysis._draws import partition_variable, posterior_of, read_draws
from pymc_partitions.analysis.distances import distance_function
from pymc_partitions.distributions.validation import integer_arg
from pymc_partitions.partitions import as_labels


def _pairs(pairs, n):
    out = []
    if isinstance(pairs, str) or not hasattr(pairs, "__iter__"):
        raise TypeError(f"'pairs' must be an iterable of (i, j) item index pairs; got {pairs!r}.")
    for pair in pairs:
        try:
            i, j = (integer_arg("pairs", v, "add_partition_statistics") for v in pair)
        except (TypeError, ValueError):
            raise ValueError(
                f"add_partition_statistics: 'pairs' must hold (i, j) pairs of integer item "
                f"indices; got {pair!r}."
            ) from None
        if not (0 <= i < n and 0 <= j < n) or i == j:
            raise ValueError(f"'pairs': ({i}, {j}) must be two distinct items in [0, {n}).")
        out.append((i, j))
    return out


def sorted_block_fractions(draws, n_fractions):
    """Block sizes / n in decreasing order, zero-padded: (..., n_fractions) float64.

    draws : (..., n) integer labels in [0, L).
    """
    flat = draws.reshape(-1, draws.shape[-1])
    n = flat.shape[1]
    size = int(flat.max()) + 1 if flat.min() >= 0 else None
    if size is None:
        raise ValueError("labels must be non-negative integers.")
    rows = flat.shape[0]
    keys = (np.arange(rows, dtype=np.int64)[:, None] * size + flat).reshape(-1)
    counts = np.bincount(keys, minlength=rows * size).reshape(rows, size)
    counts = -np.sort(-counts, axis=1)
    out = np.zeros((flat.shape[0], n_fractions))
    k = min(n_fractions, size)
    out[:, :k] = counts[:, :k] / n
    return out.reshape(*draws.shape[:-1], n_fractions)


def add_partition_statistics(
    idata, var_name=None, pairs=None, reference=None, n_fractions=None, distance="vi"
):
    """Add label-invariant statistics of partition ``var_name`` to ``idata.posterior``.

    idata : the InferenceData / DataTree of ``pm.sample``; modified in place and
        returned.
    pairs : iterable of item pairs (i, j); adds ``{var}_together_{i}_{j}`` (chain,
        draw) float64, 1.0 when i and j share a block (its mean is psm[i, j]).
    reference : (n,) labels of a reference partition (e.g. a point estimate's
        ``labels``); adds ``{var}_{distance}_to_reference``, the distance of each
        draw to it (VI in bits, or Binder: number of discordant pairs).
    n_fractions : int; adds ``{var}_block_frac`` (chain, draw, ``{var}_block_rank``),
        block sizes / n sorted in decreasing order, zero-padded to n_fractions.
    distance : "vi" or "binder", the distance used with ``reference``.
    """
    owner = "add_partition_statistics"
    post = posterior_of(idata, owner, allow_dataset=False, allow_multitrace=False)
    name = partition_variable(post, var_name, owner)
    labels = read_draws(idata, name, keep_chains=True, owner=owner)  # (chains, draws, n)
    chains, draws, n = labels.shape
    coords = {"chain": post["chain"].values, "draw": post["draw"].values}
    new = {}
    if pairs is not None:
        for i, j in _pairs(pairs, n):
            together = (labels[:, :, i] == labels[:, :, j]).astype(np.float64)
            new[f"{name}_together_{i}_{j}"] = xr.DataArray(
                together, dims=("chain", "draw"), coords=coords
            )
    if reference is not None:
        fn = distance_function(distance, "distance", owner)
        key = distance.lower()
        ref = as_labels(getattr(reference, "labels", reference), "reference", owner)
        if ref.shape != (n,):
            raise ValueError(
                f"{owner}: 'reference' must be a label vector of shape ({n},); got {ref.shape}."
            )
        values = fn(labels.reshape(-1, n), ref).reshape(chains, draws)
        new[f"{name}_{key}_to_reference"] = xr.DataArray(
            values, dims=("chain", "draw"), coords=coords
        )
    if n_fractions is not None:
        n_fractions = integer_arg("n_fractions", n_fractions, owner, minimum=1)
        fractions = sorted_block_fractions(labels, n_fractions)
        new[f"{name}_block_frac"] = xr.DataArray(
            fractions,
            dims=("chain", "draw", f"{name}_block_rank"),
            coords={**coords, f"{name}_block_rank": np.arange(int(n_fractions))},
        )
    if not new:
        raise ValueError("Nothing to add: pass pairs=, reference= and/or n_fractions=.")
    return versions.add_posterior_variables(idata, new)
