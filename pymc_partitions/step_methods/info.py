r"""Info records: what one iteration of a move did, as a small documented record.

BlackJAX's model (``blackjax/mcmc/mala.py``: a step returns ``(state, info)``, the
info a ``NamedTuple`` such as ``MALAInfo(acceptance_rate, is_accepted)``): every
partition step's move returns one ``typing.NamedTuple`` whose fields are its
sampler statistics. The field's annotation is its dtype, a numpy scalar type
(``np.int64``, ``np.float64``, ``bool``) or ``object`` for a per-draw array that
PyMC's trace stores as an object (it comes out of ``pm.sample`` as a
(chain, draw, ...) array); a statistic with a fixed number of dimensions is
``Annotated[dtype, shape]`` (e.g. ``Annotated[np.int16, (None, None)]``). The
record's docstring names every field with a one-line description (numpydoc
``Attributes``), checked by :func:`undocumented`.

:class:`~pymc_partitions.step_methods.base.PartitionStep` declares
``stats_dtypes_shapes`` from :class:`Summary` (the label-invariant statistics of
every partition step) and the step's ``Info`` (:func:`stats_dtypes_shapes`), and
writes a move's record into the trace as it is: there is no per-step conversion.

Kernels report what happened through counters they fill (numba arrays, no record
types: a kernel's signature and compile units are unchanged); the counters'
layout is declared once, beside the kernel (``SPLIT_REJECTED ... MERGE_ACCEPTED``
of :mod:`~pymc_partitions.kernels.split_merge`, shared by
:mod:`~pymc_partitions.kernels.mutation` and :mod:`~pymc_partitions.kernels.arm`),
and read here once (:func:`split_merge_counts`).

This module imports no PyMC (the unbiased runners' workers import
:mod:`.coupled_pair`, which reports a :class:`CoupledInfo`).
"""

import re
import typing
from typing import NamedTuple

import numpy as np

from pymc_partitions.kernels.split_merge import (
    MERGE_ACCEPTED,
    MERGE_REJECTED,
    SPLIT_ACCEPTED,
    SPLIT_REJECTED,
)


def _dtype_shape(annotation):
    if typing.get_origin(annotation) is typing.Annotated:
        dtype, shape = typing.get_args(annotation)[:2]
        return dtype, list(shape)
    return annotation, []


def stats_dtypes_shapes(*records):
    """``{field: (dtype, shape)}`` of the fields of the NamedTuple classes
    ``records``, in order (PyMC's ``stats_dtypes_shapes``). A field named twice is a
    ValueError (two records would write one statistic)."""
    out = {}
    for record in records:
        if not (isinstance(record, type) and issubclass(record, tuple)
                and hasattr(record, "_fields")):
            raise TypeError(f"stats_dtypes_shapes: {record!r} is not a NamedTuple class.")
        hints = typing.get_type_hints(record, include_extras=True)
        for name in record._fields:
            if name in out:
                raise ValueError(f"stats_dtypes_shapes: the statistic '{name}' is a field of "
                                 f"two records ({record.__name__} and one before it).")
            if name not in hints:
                raise TypeError(f"{record.__name__}.{name}: annotate the field with its dtype "
                                f"(e.g. np.int64).")
            out[name] = _dtype_shape(hints[name])
    return out


def undocumented(record):
    """The fields of ``record`` that its docstring does not describe: a line of the
    docstring starts with the field's name, or with names separated by commas
    (numpydoc's ``a, b`` for fields described together) among which it is."""
    doc = record.__doc__ or ""
    return [name for name in record._fields
            if not re.search(rf"^\s*(\w+,\s*)*{re.escape(name)}(,|\s*$)", doc,
                             flags=re.MULTILINE)]


class Summary(NamedTuple):
    """The label-invariant statistics of every partition step's draw.

    Attributes
    ----------
    n_clusters
        Number of blocks of the draw.
    largest_cluster_frac
        Size of the largest block / n.
    log_joint
        Collapsed log p(y, z | hyperparameters) of the draw, at the hyperparameter
        values the step read (another step may move them later in the iteration).
    """

    n_clusters: np.int64
    largest_cluster_frac: np.float64
    log_joint: np.float64


class NoInfo(NamedTuple):
    """A move that reports nothing beyond :class:`Summary` (e.g. Gibbs sweeps)."""


def split_merge_counts(outcomes):
    """``{split_proposed, split_accepted, merge_proposed, merge_accepted}`` as Python
    ints, from a kernel's outcome counters (indices ``SPLIT_REJECTED`` ...
    ``MERGE_ACCEPTED`` of :mod:`~pymc_partitions.kernels.split_merge`, the layout
    :mod:`~pymc_partitions.kernels.mutation` and :mod:`~pymc_partitions.kernels.arm`
    share): the four fields of the records of split/merge moves."""
    split_rejected, split_accepted = int(outcomes[SPLIT_REJECTED]), int(outcomes[SPLIT_ACCEPTED])
    merge_rejected, merge_accepted = int(outcomes[MERGE_REJECTED]), int(outcomes[MERGE_ACCEPTED])
    return {
        "split_proposed": split_rejected + split_accepted,
        "split_accepted": split_accepted,
        "merge_proposed": merge_rejected + merge_accepted,
        "merge_accepted": merge_accepted,
    }


class CoupledInfo(NamedTuple):
    """What one move of a lag-1 coupled pair did (:class:`.coupled_pair.CoupledPair`).

    Attributes
    ----------
    coupled_labels
        (n,) int64 canonical labels of Y_{t-1} (X_t's once met).
    sweep
        t, the number of moves X has made.
    meeting_sweep
        tau once the pair has met, -1 before.
    coupling_distance
        d(X_t, Y_{t-1}) of eq. 5 of Nguyen et al. (2022) (0 once met).
    """

    coupled_labels: object
    sweep: np.int64
    meeting_sweep: np.int64
    coupling_distance: np.float64


__all__ = [
    "CoupledInfo",
    "NoInfo",
    "Summary",
    "split_merge_counts",
    "stats_dtypes_shapes",
    "undocumented",
]
