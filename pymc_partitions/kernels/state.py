"""Partition state shared by every move: labels, block sizes and slot bookkeeping.

A partition of n items lives in n *slots* (a partition has at most n blocks).
Each slot is either active (holds a non-empty block) or free; opening and closing
a slot are O(1) swap-removals, so no move ever scans the slots. Slot numbers are
internal: :func:`canonical_labels` turns them into the labels the trace stores
(label 0 for item 0's block, new labels in order of first appearance).
"""

from typing import NamedTuple

import numpy as np

from pymc_partitions.kernels._jit import primitive

# Returned in place of an index by samplers that find no admissible choice.
NO_CHOICE = -1


class PartitionState(NamedTuple):
    """The partition; every field is an int64 array.

    labels : (n,) slot of each item; -1 while an item is unassigned
    sizes : (n,) number of items in each slot
    active : (n,) ``active[:counts[0]]`` lists the active slots
    free : (n,) ``free[:counts[1]]`` is a stack of free slots; its top is where a new
        block opens
    where : (n,) position of each slot inside ``active`` or ``free``
    counts : (2,) ``[number of active slots, number of free slots]``
    """

    labels: np.ndarray
    sizes: np.ndarray
    active: np.ndarray
    free: np.ndarray
    where: np.ndarray
    counts: np.ndarray


def new_state(n):
    """The state of ``n`` unassigned items (every slot free, slot 0 on top)."""
    return PartitionState(
        labels=np.full(n, -1, dtype=np.int64),
        sizes=np.zeros(n, dtype=np.int64),
        active=np.zeros(n, dtype=np.int64),
        free=np.arange(n - 1, -1, -1, dtype=np.int64),
        where=np.arange(n - 1, -1, -1, dtype=np.int64),
        counts=np.array([0, n], dtype=np.int64),
    )


@primitive
def open_slot(state, k):
    """Move free slot ``k`` to the active list (O(1))."""
    active, free, where, counts = state.active, state.free, state.where, state.counts
    pos = where[k]
    top = free[counts[1] - 1]
    free[pos] = top
    where[top] = pos
    counts[1] -= 1
    active[counts[0]] = k
    where[k] = counts[0]
    counts[0] += 1


@primitive
def close_slot(state, k):
    """Move active slot ``k`` (now empty) to the top of the free stack (O(1))."""
    active, free, where, counts = state.active, state.free, state.where, state.counts
    pos = where[k]
    last = active[counts[0] - 1]
    active[pos] = last
    where[last] = pos
    counts[0] -= 1
    free[counts[1]] = k
    where[k] = counts[1]
    counts[1] += 1


@primitive
def top_free_slot(state):
    """The slot a new block would open in (the top of the free stack)."""
    return state.free[state.counts[1] - 1]


@primitive
def canonical_labels(labels, out, relabel):
    """Write the canonical labels of the partition given by slot ``labels`` into ``out``.

    Parameters
    ----------
    labels : (n,) int64
        Slot numbers in ``[0, n)``.
    out : (n,) int64
        Receives label 0 for item 0's block and new labels in order of first
        appearance.
    relabel : (n,) int64
        Scratch.

    Returns the number of blocks.
    """
    n = labels.shape[0]
    relabel[:] = -1
    n_blocks = 0
    for i in range(n):
        k = labels[i]
        if relabel[k] < 0:
            relabel[k] = n_blocks
            n_blocks += 1
        out[i] = relabel[k]
    return n_blocks


@primitive
def log_sum_exp(log_w, m):
    """``log sum exp(log_w[:m])``, stable for large magnitudes."""
    top = -np.inf
    for a in range(m):
        if log_w[a] > top:
            top = log_w[a]
    if top == -np.inf:
        return top
    total = 0.0
    for a in range(m):
        total += np.exp(log_w[a] - top)
    return top + np.log(total)


@primitive
def sample_log_weights(log_w, m, u):
    """Draw from the categorical with unnormalised log weights ``log_w[:m]``.

    ``u`` is a uniform draw on [0, 1). Returns ``(index, log probability of the
    index)``. Inverse-CDF sampling, so one uniform per draw: two chains fed the
    same uniforms make the same choice whenever their weights agree. One pass of
    exponentials; ``log_w[:m]`` is overwritten with the unnormalised weights.

    Returns ``(-1, nan)`` when there is no distribution to draw from: every weight
    is -inf, or one is NaN or +inf. Callers must check (see :data:`NO_CHOICE`).
    """
    top = -np.inf
    for a in range(m):
        if log_w[a] > top:
            top = log_w[a]
    total = 0.0
    for a in range(m):
        w = np.exp(log_w[a] - top)
        log_w[a] = w
        total += w
    # All -inf gives exp(-inf + inf) = NaN, as do a NaN and a +inf weight: one test
    # on the total catches every impossible case without another pass.
    if not total > 0.0:
        return NO_CHOICE, np.nan
    target = u * total
    acc = 0.0
    chosen = -1
    for a in range(m):
        acc += log_w[a]
        if target < acc and log_w[a] > 0.0:
            chosen = a
            break
    if chosen < 0:
        # Rounding left the target above the accumulated mass: last positive weight.
        for a in range(m - 1, -1, -1):
            if log_w[a] > 0.0:
                chosen = a
                break
    return chosen, np.log(log_w[chosen] / total)
