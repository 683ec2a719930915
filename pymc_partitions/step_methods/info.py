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

Kernels report what happened through int64 counters they fill (plain numba arrays,
no record types: a kernel's signature and compiled code are unchanged; passing a
record costs ~1.3 us a call). Each kernel module names its counters once, beside
the index constants it fills them at, as a documented ``NamedTuple`` *layout*
whose i-th field is entry i (:class:`pymc_partitions.kernels.split_merge.Outcomes`,
shared by the mutation; :class:`pymc_partitions.kernels.arm.Counts`;
:class:`pymc_partitions.kernels.crossover.Outcomes`). :func:`counters` reads a
filled array by its layout, and :func:`record` builds a move's Info from such
readings plus the values only the step knows (timings, flags): a step converts
no field by hand.

This module imports no PyMC (the unbiased runners' workers import
:mod:`.coupled_pair`, which reports a :class:`CoupledInfo`).
"""

import functools
import re
import typing
from typing import NamedTuple

import numpy as np


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


@functools.cache
def _reading_plan(layout):
    """``((name, i, j), ...)`` of a counter layout: reading ``name`` is entry i plus
    entry j (j = -1: entry i alone); see :func:`counters`."""
    fields = layout._fields
    plan = []
    for i, name in enumerate(fields):
        if name.endswith("_accepted") and f"{name[:-9]}_rejected" in fields:
            continue  # read with its _rejected pair
        if name.endswith("_rejected") and f"{name[:-9]}_accepted" in fields:
            accepted = fields.index(f"{name[:-9]}_accepted")
            plan.append((f"{name[:-9]}_proposed", i, accepted))
            plan.append((f"{name[:-9]}_accepted", accepted, -1))
        else:
            plan.append((name, i, -1))
    return tuple(plan)


def counters(layout, counts):
    """``{name: int}`` of a kernel's filled int64 ``counts`` (1-D, one entry per field
    of the NamedTuple class ``layout``, in order), with one generic rule: a pair
    ``X_rejected``, ``X_accepted`` reads as ``X_proposed`` (their sum) and
    ``X_accepted`` (e.g. split-merge's four outcomes read as ``split_proposed``,
    ``split_accepted``, ``merge_proposed``, ``merge_accepted``). A length other than
    the layout's is a ValueError (the layout and the kernel disagree)."""
    values = counts.tolist()
    if len(values) != len(layout._fields) or counts.ndim != 1:
        raise ValueError(f"counters: {layout.__name__} names {len(layout._fields)} counters, "
                         f"the kernel filled an array of shape {counts.shape}.")
    return {name: values[i] + (values[j] if j >= 0 else 0)
            for name, i, j in _reading_plan(layout)}


@functools.cache
def _field_set(info):
    return frozenset(info._fields)


def record(info, *readings, **values):
    """The ``info`` NamedTuple class filled by name: each field from ``values`` (what
    only the step knows) or else from the first of ``readings`` (dicts from
    :func:`counters`) that has it. A field found nowhere, or a ``values`` key that
    is not a field, is a TypeError; counters the record does not report (e.g.
    ``crossover_no_move``) are left out."""
    if not values.keys() <= _field_set(info):
        unknown = sorted(set(values) - _field_set(info))
        raise TypeError(f"record: {info.__name__} has no field(s) {unknown}.")
    merged = {}
    for reading in reversed(readings):
        merged.update(reading)
    merged.update(values)
    try:
        return info._make([merged[name] for name in info._fields])
    except KeyError as missing:
        raise TypeError(f"record: no value and no counter for "
                        f"{info.__name__}.{missing.args[0]}.") from None


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
    "counters",
    "record",
    "stats_dtypes_shapes",
    "undocumented",
]
