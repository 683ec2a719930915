"""Kernels every move needs around its proposals: load labels, refresh caches, score."""

from pymc_partitions.kernels._jit import entry, primitive
from pymc_partitions.kernels.components import add, log_marginal, refresh
from pymc_partitions.kernels.priors import log_prior
from pymc_partitions.kernels.reassign import put_in, take_out
from pymc_partitions.kernels.state import canonical_labels, open_slot, top_free_slot


@primitive
def refresh_blocks(state, params, stats):
    """Recompute the caches of the active slots and of the top free slot.

    Call after the hyperparameters changed: O(K) component ``refresh`` calls.
    (Deeper free slots are refreshed when they reach the top of the stack.)
    """
    counts = state.counts
    for a in range(counts[0]):
        refresh(params, stats, state.active[a])
    if counts[1] > 0:
        refresh(params, stats, top_free_slot(state))


@primitive
def open_new_block(state, params, stats):
    """Open the top free slot for a new block and return it.

    The slot below becomes the new-block candidate; its caches are refreshed so
    they match the current hyperparameters (free slots hold empty statistics).
    """
    k = top_free_slot(state)
    open_slot(state, k)
    if state.counts[1] > 0:
        refresh(params, stats, top_free_slot(state))
    return k


@primitive
def move_item(state, params, stats, data, i, k):
    """Move item ``i`` from its slot to the active slot ``k``; an emptied slot is freed."""
    take_out(state, params, stats, data, i)
    put_in(state, params, stats, data, i, k)


@entry
def refresh_all(state, params, stats):
    """Entry point for :func:`refresh_blocks`."""
    refresh_blocks(state, params, stats)


@entry
def assign_labels(state, params, stats, data, slot_labels):
    """Load a partition into a state whose items are all unassigned.

    ``slot_labels``: (n,) int64 in [0, n); item i goes to slot ``slot_labels[i]``.
    O(n) component ``add`` calls.
    """
    for i in range(slot_labels.shape[0]):
        k = slot_labels[i]
        if state.sizes[k] == 0:
            open_slot(state, k)
        add(params, stats, data, i, k)
        state.sizes[k] += 1
        state.labels[i] = k
    refresh_blocks(state, params, stats)


@primitive
def log_joint(state, prior_params, params, stats):
    """log p(z) + log p(x | z), the collapsed log joint of the current partition."""
    counts = state.counts
    acc = log_prior(prior_params, state.sizes, state.active, counts[0], state.labels.shape[0])
    for a in range(counts[0]):
        acc += log_marginal(params, stats, state.active[a])
    return acc


@entry
def log_joint_entry(state, prior_params, params, stats):
    """Entry point for :func:`log_joint` (a population's per-member log targets)."""
    return log_joint(state, prior_params, params, stats)


@entry
def summarise(state, prior_params, params, stats, canon, scratch):
    """Canonical labels and the per-draw statistics of the current partition.

    canon : (n,) int64, receives the canonical labels
    scratch : (n,) int64
    Returns ``(n_blocks, largest block size, log joint)``.
    """
    n_blocks = canonical_labels(state.labels, canon, scratch)
    largest = 0
    for a in range(state.counts[0]):
        largest = max(largest, state.sizes[state.active[a]])
    return n_blocks, largest, log_joint(state, prior_params, params, stats)


__all__ = [
    "assign_labels",
    "log_joint",
    "log_joint_entry",
    "move_item",
    "open_new_block",
    "refresh_all",
    "refresh_blocks",
    "summarise",
]
