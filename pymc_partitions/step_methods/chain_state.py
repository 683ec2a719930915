"""One chain's kernel state, and the one way to copy it.

:class:`ChainState` holds everything a move reads or writes for one partition: the
partition (:class:`~pymc_partitions.kernels.state.PartitionState`), every
component's sufficient statistics and bookkeeping (nested ``NamedTuple`` records
of arrays: counts and sums, the MvNormal component's data in the current basis and
its item-to-slot map, the IRM's edge-count table and its own slot lists, the
colouring constraint's vertex slots), the canonical labels last written, the
scratch arrays and the hyperparameter values the caches were computed with.

Population samplers keep several states at once (ARM's chains, PBC's ladder,
DESIGN §8) and move between them. They never write ad-hoc copies per move; they
use the functions here, which know nothing about any component:

- :func:`copy_into` ``(dst, src)``: make ``dst`` an exact copy of ``src`` in place
  (no allocation), for saving and restoring a state on the hot path;
- :func:`clone` ``(src)``: a new, independent state equal to ``src``;
- :func:`snapshot` ``(chain, out)``: the canonical labels in a compact integer
  dtype (:func:`label_dtype`), for histories.

Every array in the state is *owned* by the state (:attr:`ChainState.owned`) except
the observed data that a component references instead of copying (the MvNormal
component's ``x``): that is read-only input shared by all states of one target, and
copying skips it. "Exact copy" means bit-identical arrays and, because the scratch
``order`` (the Gibbs sweep's permutation, shuffled in place) is copied too, the same
subsequent draws from the same random stream.
"""

from dataclasses import dataclass, field

import numpy as np

from pymc_partitions.kernels import canonical_labels


@dataclass
class ChainState:
    """One chain's kernel state (see :mod:`pymc_partitions.kernels.state`).

    Build with :func:`chain_state` (or :meth:`PartitionTarget.new_chain_state
    <pymc_partitions.step_methods.target.PartitionTarget.new_chain_state>`), which
    records the owned arrays.
    """

    state: object
    stats: object
    labels: np.ndarray  # canonical labels last written to the trace, (n,) int64
    log_w: np.ndarray  # (n + 1,) float64 scratch
    order: np.ndarray  # (n,) int64 scratch: the sweep permutation, shuffled in place
    scratch: np.ndarray  # (n,) int64 scratch
    hyper_values: list  # hyperparameter values the statistics' caches were computed with
    #: Every array of the state except shared read-only data, in a fixed order.
    owned: tuple = field(default=(), repr=False, compare=False)


def _leaves(tree, out):
    """Append the arrays of a nest of tuples / NamedTuples to ``out`` (depth first)."""
    if isinstance(tree, np.ndarray):
        out.append(tree)
    elif isinstance(tree, tuple):
        for item in tree:
            _leaves(item, out)
    return out


def _parts(chain):
    return (chain.state, chain.stats, chain.labels, chain.log_w, chain.order, chain.scratch)


def chain_state(state, stats, n, hyper_values, shared=()):
    """A :class:`ChainState` over ``state`` and ``stats`` with fresh scratch arrays.

    ``shared``: arrays the statistics reference but do not own (observed data, a
    nest of tuples of arrays); every other array of the state is owned.
    """
    chain = ChainState(
        state=state,
        stats=stats,
        labels=np.full(n, -1, dtype=np.int64),
        log_w=np.empty(n + 1),
        order=np.arange(n, dtype=np.int64),
        scratch=np.empty(n, dtype=np.int64),
        hyper_values=hyper_values,
    )
    chain.owned = _owned(_parts(chain), shared)
    return chain


def _owned(parts, shared):
    not_owned = {id(a) for a in _leaves(shared, [])}
    owned, seen = [], set()
    for a in _leaves(parts, []):
        if id(a) not in not_owned and id(a) not in seen:
            seen.add(id(a))
            owned.append(a)
    return tuple(owned)


def copy_into(dst, src):
    """Make ``dst`` an exact copy of ``src``, in place: every owned array copied, the
    hyperparameter values shared (they are replaced, never written).

    Both states must come from the same target (same structure and shapes): a
    ValueError otherwise. Costs one ``np.copyto`` per owned array (about 20 for a
    Normal likelihood; the IRM's (n, n) edge table dominates for networks).
    """
    d_arrays, s_arrays = dst.owned, src.owned
    if len(d_arrays) != len(s_arrays):
        raise ValueError(
            f"copy_into: 'dst' and 'src' have different structures ({len(d_arrays)} and "
            f"{len(s_arrays)} arrays); copy only between states of one target."
        )
    for d, s in zip(d_arrays, s_arrays):
        if d.shape != s.shape or d.dtype != s.dtype:
            raise ValueError(
                f"copy_into: an array of 'dst' has shape {d.shape} {d.dtype}, the one of "
                f"'src' {s.shape} {s.dtype}; copy only between states of one target."
            )
        np.copyto(d, s)
    dst.hyper_values = src.hyper_values


def _map(tree, fn):
    if isinstance(tree, np.ndarray):
        return fn(tree)
    if isinstance(tree, tuple):
        items = [_map(item, fn) for item in tree]
        return type(tree)(*items) if hasattr(tree, "_fields") else tuple(items)
    return tree


def clone(src):
    """A new state equal to ``src`` that shares no owned array with it (shared
    read-only data stays shared). Allocates; for repeated copies allocate once and
    use :func:`copy_into`."""
    owned = {id(a) for a in src.owned}
    copies = {}

    def copy(a):
        if id(a) not in owned:
            return a
        if id(a) not in copies:
            copies[id(a)] = a.copy()
        return copies[id(a)]

    state, stats, labels, log_w, order, scratch = _map(_parts(src), copy)
    return ChainState(
        state=state, stats=stats, labels=labels, log_w=log_w, order=order, scratch=scratch,
        hyper_values=src.hyper_values, owned=tuple(copies[id(a)] for a in src.owned),
    )


def label_dtype(n):
    """The smallest of int16 / int32 / int64 holding labels 0..n-1 (a history of T
    partitions of n items costs T n 2 bytes up to n = 32767)."""
    for dtype in (np.int16, np.int32):
        if n - 1 <= np.iinfo(dtype).max:
            return np.dtype(dtype)
    return np.dtype(np.int64)


def snapshot(chain, out=None):
    """The canonical labels of ``chain``'s partition (label 0 for item 0's block, new
    labels in order of first appearance), as ``(n,)`` :func:`label_dtype` (n).

    ``out``: an (n,) integer array to write into (e.g. a row of a preallocated
    history), else a new array. Uses ``chain.scratch``; the state is not changed.
    O(n).
    """
    labels = chain.state.labels
    n = labels.shape[0]
    if out is None:
        out = np.empty(n, dtype=label_dtype(n))
    elif out.shape != (n,) or out.dtype.kind != "i" or np.iinfo(out.dtype).max < n - 1:
        raise ValueError(
            f"snapshot: 'out' must be an ({n},) integer array able to hold labels up to "
            f"{n - 1}, got shape {out.shape} and dtype {out.dtype}."
        )
    canonical_labels(labels, out, chain.scratch)
    return out


__all__ = ["ChainState", "chain_state", "clone", "copy_into", "label_dtype", "snapshot"]
