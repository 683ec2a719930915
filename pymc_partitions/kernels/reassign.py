r"""Reassigning one item: the three primitives every item-level move is written with.

A Gibbs update of item i (Neal 2000, Alg. 3), a restricted scan of split-merge
(Jain & Neal 2004) and a coupled Gibbs step (Nguyen et al. 2022, Alg. 2) all do
the same three things, which every component and prior already implies:

1. :func:`take_out` item i from its block (an emptied block's slot is closed and
   becomes the top free slot, the new-block option of step 2);
2. :func:`conditional_log_weights` of the options i may join: every active slot
   and one new block,

   .. math::

       \log P(z_i = k \mid z_{-i}, x) = \log W_k + \log p(x_i \mid x_{-i,k}) + c,

   :math:`W_k` the prior's weight (``log_prior_pred``: :math:`n_{-i,k}` or
   :math:`\alpha` for the CRP) and the component's predictive (``log_pred``),
   :func:`log_weight` for one slot;
3. :func:`put_in` item i into the chosen slot (opened first if it is the new block).

Option order: option ``a < K`` is the active slot ``state.active[a]`` and option
``K`` is a new block (the top free slot), K = ``state.counts[0]`` after step 1.
Moves that need another order (the label-based couplings) permute the weights
themselves. Costs: :func:`take_out` and :func:`put_in` one component
``remove``/``add`` each; :func:`conditional_log_weights` K + 1 ``log_pred`` calls.
"""

from pymc_partitions.kernels._jit import primitive
from pymc_partitions.kernels.components import add, log_pred, remove
from pymc_partitions.kernels.priors import log_prior_pred
from pymc_partitions.kernels.state import close_slot, top_free_slot


@primitive
def take_out(state, params, stats, data, i):
    """Take item ``i`` out of its slot (label -1); close the slot if it empties.

    Returns the slot i was in. A closed slot goes to the top of the free stack (by
    swap-removal from ``state.active``: the last active slot takes its position).
    """
    k = state.labels[i]
    remove(params, stats, data, i, k)
    state.sizes[k] -= 1
    state.labels[i] = -1
    if state.sizes[k] == 0:
        close_slot(state, k)
    return k


@primitive
def log_weight(state, prior_params, params, stats, data, i, k, n_blocks):
    """Unnormalised log conditional of the unassigned item ``i`` joining slot ``k``
    (an empty slot: a new block) when the other items form ``n_blocks`` blocks."""
    return log_prior_pred(prior_params, state.sizes[k], n_blocks) + log_pred(
        params, stats, data, i, k
    )


@primitive
def conditional_log_weights(state, prior_params, params, stats, data, i, log_w):
    """Write the log weights of the unassigned item ``i``'s options into ``log_w``.

    log_w : (n + 1,) float64; receives ``log_w[a]`` for the active slot
        ``state.active[a]``, a < K, and ``log_w[K]`` for a new block.
    Returns K + 1, the number of options.
    """
    n_active = state.counts[0]
    for a in range(n_active + 1):  # one call site: numba inlines log_weight once
        k = state.active[a] if a < n_active else top_free_slot(state)
        log_w[a] = log_weight(state, prior_params, params, stats, data, i, k, n_active)
    return n_active + 1


@primitive
def put_in(state, params, stats, data, i, k):
    """Put the unassigned item ``i`` into the active slot ``k``."""
    add(params, stats, data, i, k)
    state.sizes[k] += 1
    state.labels[i] = k


__all__ = ["conditional_log_weights", "log_weight", "put_in", "take_out"]
