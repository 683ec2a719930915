r"""Collapsed Gibbs sampling of a partition: Neal (2000), Algorithm 3.

Each item in turn is taken out of its block and put back with probability

.. math::

    P(z_i = k \mid z_{-i}, x) \propto
    \begin{cases}
      n_{-i,k}\; p(x_i \mid x_{-i,k}) & \text{an existing block } k, \\
      \alpha\; p(x_i) & \text{a new block}
    \end{cases}

(Neal 2000, eq. 3.7; the block parameters are integrated out). The prior weights
come from the prior's ``log_prior_pred``, the predictive from the component's
``log_pred``, so the same code serves every (component, prior) pair. One sweep
visits every item once, in a uniformly random order. Cost per item: K + 1
``log_pred`` calls, one ``remove`` and one ``add``: O(K D) for diagonal Gaussians.

Example
-------
>>> import numpy as np
>>> from pymc_partitions.kernels import new_state, assign_labels, gibbs
>>> from pymc_partitions.kernels.random import new_stream
>>> from pymc_partitions.kernels.components import normal
>>> from pymc_partitions.kernels.priors import crp
>>> x = np.random.default_rng(0).normal(size=(50, 2))
>>> params = normal.make_params(np.zeros(2), np.ones(2), np.ones(2), n=50)
>>> stats, data, state = normal.alloc_stats(50, 2, params), normal.make_data(x), new_state(50)
>>> assign_labels(state, params, stats, data, np.zeros(50, dtype=np.int64))
>>> gibbs.run_sweeps(new_stream(1), 10, state, crp.make_params(1.0, 50), params, stats,
...                  data, np.empty(51), np.arange(50))
"""

from pymc_partitions.kernels._jit import entry, primitive
from pymc_partitions.kernels.bookkeeping import open_new_block
from pymc_partitions.kernels.random import shuffle, uniform
from pymc_partitions.kernels.reassign import conditional_log_weights, put_in, take_out
from pymc_partitions.kernels.state import NO_CHOICE, sample_log_weights


@primitive
def update_item(state, prior_params, params, stats, data, i, u, log_w):
    """Reassign item ``i`` by its full conditional, using the uniform ``u``.

    ``log_w`` is (n + 1,) float64 scratch. Returns the slot item i now occupies, or
    ``NO_CHOICE`` (-1) if no block has positive weight (every log weight -inf, or a
    NaN): item i is then put back into its block, so the state stays as it was.
    """
    # 1. Take item i out of its block. An emptied block's slot goes to the top of
    #    the free stack, where it is the new-block candidate below.
    k_old = take_out(state, params, stats, data, i)
    # 2. Unnormalised log conditional of each existing block and of one new block.
    n_options = conditional_log_weights(state, prior_params, params, stats, data, i, log_w)
    # 3. Draw the block and put item i into it.
    a, _ = sample_log_weights(log_w, n_options, u)
    # With no choice, undo step 1: a closed k_old is still the top free slot, so it
    # reopens. (One call site of open_new_block: numba inlines it once.)
    if a == NO_CHOICE:
        opens = state.sizes[k_old] == 0
    else:
        opens = a == n_options - 1
    if opens:
        k = open_new_block(state, params, stats)
    else:
        k = k_old if a == NO_CHOICE else state.active[a]
    put_in(state, params, stats, data, i, k)
    return k if a != NO_CHOICE else NO_CHOICE


@primitive
def sweep_in_order(stream, state, prior_params, params, stats, data, log_w, order):
    """One sweep: update each item of ``order`` in turn with a uniform from ``stream``.
    Returns -1, or the first item with no block of positive weight (the sweep stops)."""
    for t in range(order.shape[0]):
        i = order[t]
        if update_item(
            state, prior_params, params, stats, data, i, uniform(stream), log_w
        ) == NO_CHOICE:
            return i
    return -1


@entry
def run_sweeps(stream, n_sweeps, state, prior_params, params, stats, data, log_w, order):
    """Run ``n_sweeps`` Gibbs sweeps, drawing from ``stream``.

    Each sweep visits the items in a fresh uniformly random order. ``stream``: (4,)
    uint64, a :mod:`~pymc_partitions.kernels.random` stream, advanced in place;
    ``log_w``: (n + 1,) float64 scratch; ``order``: (n,) int64 scratch holding a
    permutation of 0..n-1.

    Returns -1, or the item whose full conditional had no block of positive weight
    (see :func:`update_item`); the sweeps stop there, the state a valid partition.
    Callers must raise (``pymc_partitions.kernels.errors.check_item``).
    """
    n = order.shape[0]
    for _ in range(n_sweeps):
        shuffle(stream, order, n)
        failed = sweep_in_order(stream, state, prior_params, params, stats, data, log_w, order)
        if failed >= 0:
            return failed
    return -1


@entry
def run_sweeps_in_order(stream, n_sweeps, state, prior_params, params, stats, data, log_w,
                        order):
    """Run ``n_sweeps`` systematic-scan Gibbs sweeps: the items in the order ``order``
    holds (e.g. 0..n-1), the same at every sweep, drawing from ``stream``.

    A systematic scan leaves the target invariant like the random scan (each update
    does); the coupled sampler of Nguyen et al.'s reference implementation visits the
    items in index order, and ``pmp.CoupledGibbs(scan="systematic")`` reproduces it
    (the single-chain kernel must then be this one too). Returns as
    :func:`run_sweeps`.
    """
    for _ in range(n_sweeps):
        failed = sweep_in_order(stream, state, prior_params, params, stats, data, log_w, order)
        if failed >= 0:
            return failed
    return -1
