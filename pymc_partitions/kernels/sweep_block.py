"""Joint reassignment of a set of items: ``sweep_{C,I}`` of Herlau et al. (2016), eqs. 5-6.

The items C (all in one block, or all unassigned) are moved together into one of
the candidate blocks :math:`I = (A_1, \\dots, A_m)`, block :math:`A_k` chosen with

.. math::

    \\pi_k = \\frac{q(z^{(k)})}{\\sum_{l} q(z^{(l)})}, \\qquad
    z^{(k)} = (z \\setminus (C \\cup A_k)) \\cup (C \\cup A_k)

(eq. 5). :math:`q(z^{(k)})` is computed up to a factor common to all candidates:
the prior part by the prior's ``log_prior_block`` (C joining a block of a given
size as a whole), the likelihood part by the component's ``log_pred_block``: by
default the chain rule (C's items added to :math:`A_k` one at a time, their
predictive terms summed, then taken out again; one item: its predictive term),
in closed form where the component has one (the IRM). The forced variant (eq. 6)
puts C into a given candidate and returns its probability, which
Metropolis-Hastings moves need for reverse proposals. Cost: |I| ``log_pred_block``
calls (by the chain rule O(|C| |I|) component ``add``/``remove``/``log_pred``
calls).

``sweep_block(state, prior_params, params, stats, data, items, candidates, forced, u, log_w)``

items : (c,) int64
    The items C, all currently in one slot or all with label -1.
candidates : (m,) int64
    Slot numbers of the candidate blocks; -1, or a slot left empty once C is
    taken out, stands for a new block. Distinct.
forced : int
    -1 to draw the block from :math:`\\pi` with the uniform ``u``; otherwise the
    index into ``candidates`` to assign C to (eq. 6).
log_w : (m,) float64
    Scratch.

Returns ``(index, log pi_index, slot)``: the chosen candidate's index, its log
probability under eq. 5 and the slot C now occupies. When no candidate has positive
weight (every log q is -inf, or one is NaN) C goes back where it was and the index
is ``NO_CHOICE`` (-1); ``sweep_block_entry`` then raises :class:`ValueError`.
"""

import numpy as np

from pymc_partitions.kernels._jit import entry, primitive
from pymc_partitions.kernels.bookkeeping import open_new_block
from pymc_partitions.kernels.components import add, log_pred_block, remove
from pymc_partitions.kernels.errors import NO_CANDIDATE_MESSAGE
from pymc_partitions.kernels.priors import log_prior_block, log_prior_pred
from pymc_partitions.kernels.state import (
    NO_CHOICE,
    close_slot,
    log_sum_exp,
    sample_log_weights,
    top_free_slot,
)


@primitive
def log_join(state, prior_params, params, stats, data, items, k, n_blocks):
    """log q(C joins slot k) up to a term common to all slots C may join; leaves the
    state as it was. The prior part is the prior's ``log_prior_block`` (one call: a
    chain of ``log_prior_pred`` ratios is 0/0 for priors such as a fixed number of
    blocks), for one item its ``log_prior_pred`` (the Gibbs weight: the same weights up
    to a common term, tabulated; both are checked against the model in
    ``tests/test_priors.py``); the likelihood part is the component's
    ``log_pred_block`` (the chain rule over C's items unless the component has a
    closed form)."""
    size = state.sizes[k]
    if items.shape[0] == 1:  # the Gibbs weight: a table lookup, not log-gamma ratios
        prior = log_prior_pred(prior_params, size, n_blocks)
    else:
        prior = log_prior_block(prior_params, size, items.shape[0], n_blocks)
    return prior + log_pred_block(params, stats, data, items, k)


@primitive
def sweep_block(state, prior_params, params, stats, data, items, candidates, forced, u, log_w):
    """``sweep_{C,I}`` (eq. 5), or its forced form (eq. 6) when ``forced >= 0``."""
    labels, sizes, counts = state.labels, state.sizes, state.counts
    # 1. Take C out of its block (if it is in one).
    k_from = labels[items[0]]
    if k_from >= 0:
        for j in range(items.shape[0]):
            remove(params, stats, data, items[j], k_from)
            sizes[k_from] -= 1
            labels[items[j]] = -1
        if sizes[k_from] == 0:
            close_slot(state, k_from)
    # 2. log q(z^(k)) up to a constant common to all candidates (eq. 5).
    n_blocks = counts[0]
    k_new = top_free_slot(state)
    m = candidates.shape[0]
    for a in range(m):
        k = candidates[a]
        if k < 0 or sizes[k] == 0:
            k = k_new
        log_w[a] = log_join(state, prior_params, params, stats, data, items, k, n_blocks)
    # 3. Draw the candidate (eq. 5) or force it (eq. 6); its log probability.
    if forced < 0:
        chosen, log_p = sample_log_weights(log_w, m, u)
    else:
        log_total = log_sum_exp(log_w, m)
        # -inf: no candidate possible; NaN: a NaN weight (log_sum_exp propagates it).
        chosen = forced if log_total > -np.inf else NO_CHOICE
        log_p = log_w[forced] - log_total
    # 4. Put C into the chosen block; with no choice, back into k_from (still the
    #    top free slot if it was closed), or leave it unassigned.
    if chosen == NO_CHOICE:
        k = k_from
        if k < 0:
            return NO_CHOICE, np.nan, k
    else:
        k = candidates[chosen]
    if k < 0 or sizes[k] == 0:
        k = open_new_block(state, params, stats)
    for j in range(items.shape[0]):
        add(params, stats, data, items[j], k)
        sizes[k] += 1
        labels[items[j]] = k
    return chosen, log_p, k


@entry
def sweep_block_entry(state, prior_params, params, stats, data, items, candidates, forced, u, log_w):
    """Entry point for :func:`sweep_block` from Python (moves inline the primitive).

    Raises ``ValueError`` (state unchanged) when no candidate has positive weight.
    """
    chosen, log_p, k = sweep_block(
        state, prior_params, params, stats, data, items, candidates, forced, u, log_w
    )
    if chosen == NO_CHOICE:
        raise ValueError(NO_CANDIDATE_MESSAGE)
    return chosen, log_p, k
