r"""PBC mutation: the split/merge-one-item Metropolis-Hastings move of Goswami, Liu &
Wong (2005), §3.1, acceptance eq. (3).

One update of a partition with blocks :math:`\mathcal A = \{A_1, \dots, A_K\}`
(one member of the population, at whatever target the params give: wrap them with
:func:`~pymc_partitions.kernels.tempering.temper` for :math:`\pi^{1/t}`):

1. choose an item j uniformly among the n items (§3.1: "randomly among the d
   coordinates"); j lies in :math:`A_{k_0}`;
2. propose, by the cases of §3.1,

   - :math:`|A_{k_0}| = 1`: merge j into a block :math:`A_{k_1}`, :math:`k_1`
     uniform among the K - 1 others;
   - :math:`|A_{k_0}| > 1`, K = 1: split j off into a new block;
   - :math:`|A_{k_0}| > 1`, K > 1: split j off with probability :math:`q_s`, else
     (:math:`q_m = 1 - q_s`) merge it into a uniform :math:`A_{k_1}`, k_1 != k_0;

   (n = 1: nothing to propose);
3. accept with probability :math:`\min(1, r_m)`, eq. (3),

   .. math:: r_m = \frac{f(y)}{f(x)} \frac{T(y, x)}{T(x, y)},

   with T of §3.1 (after eq. 3) for the forward move and the same formula with
   the roles of x and y exchanged for the reverse one. The term p(I = i | ·) of
   eq. (3) is 1: the population sampler mutates every member in turn (Algorithm
   4.1), whatever the states. The 1/n of choosing j is the same both ways (j is
   chosen independently of the state), as the paper notes.

The reverse probability, written out (L: the number of blocks of y) and computed
here, not assumed to cancel:

============================  ==========================  ======================
move x -> y                   T(x, y)                     T(y, x)
============================  ==========================  ======================
split, K = 1                  1                           1/(L - 1) = 1
split, K > 1                  q_s                         1/(L - 1) = 1/K
merge, j alone in x           1/(K - 1)                   1 if L = 1, else q_s
merge, j not alone in x       q_m/(K - 1)                 q_m/(L - 1), L = K
============================  ==========================  ======================

(The reverse of a split puts j, alone in y, back: a forced merge into one of the
L - 1 = K other blocks; the reverse of a merge of a singleton splits j off, with
probability 1 when y has one block; the reverse of a merge of a non-singleton
merges j back into :math:`A_{k_0} \setminus \{j\}`.) So the ratio
:math:`T(y, x)/T(x, y)` is 1/K for a split from K = 1 (1/1), :math:`1/(K q_s)`
for a split from K > 1, :math:`(K - 1) q_s` (or K - 1 when L = 1) for a merge of
a singleton, and 1 for a move between blocks.

The target ratio :math:`f(y)/f(x)` moves a single item, so it is the ratio of j's
two conditional weights given the other items (``reassign.log_weight``: the
prior's ``log_prior_pred`` plus the component's ``log_pred``, both evaluated with
j taken out and the same number of other blocks): O(D) for diagonal components,
exact for every Gibbs-type prior (the term common to all blocks cancels), and 1/t
times the untempered value for a tempered target (``inv_t`` of the records).

Randomness: from a :mod:`~pymc_partitions.kernels.random` stream, in this order:
j, the split/merge coin (only when both are possible), k_1 (only for a merge),
the acceptance uniform.

A NaN ratio (a NaN weight) is an error, not a rejection: the state is restored and
the update returns ``FAILED`` (``run_mutations`` returns the item j).
"""

import numpy as np

from pymc_partitions.kernels._jit import entry, primitive
from pymc_partitions.kernels.bookkeeping import open_new_block
from pymc_partitions.kernels.random import bounded, uniform
from pymc_partitions.kernels.reassign import log_weight, put_in, take_out
from pymc_partitions.kernels.split_merge import Outcomes
from pymc_partitions.kernels.state import top_free_slot

# Outcomes of one update (index into ``run_mutations``' ``outcomes``, whose layout
# is split-merge's, :class:`~.split_merge.Outcomes`, named ``Outcomes`` here too).
SPLIT_REJECTED, SPLIT_ACCEPTED, MERGE_REJECTED, MERGE_ACCEPTED = 0, 1, 2, 3
# n = 1: no move exists; nothing is counted.
NO_MOVE = 4
# A NaN ratio: the state is restored, nothing is counted.
FAILED = 5


@primitive
def proposal_log_ratio(split, j_alone, n_blocks, log_qs):
    r"""``(log T(y, x) - log T(x, y), number of blocks L of y)`` of the §3.1 proposal
    from a partition with ``n_blocks`` = K blocks, j alone in its block or not.

    ``split``: j is split off (otherwise merged into another block). The table of
    the module docstring."""
    big_k = n_blocks
    if split:
        # Forward: 1 when K = 1 (forced split), else q_s. Reverse: j alone in y
        # (L = K + 1 blocks), so a forced merge into one of L - 1 = K blocks.
        log_fwd = 0.0 if big_k == 1 else log_qs
        return -np.log(big_k) - log_fwd, big_k + 1
    if j_alone:
        # Forward: forced merge, 1/(K - 1). Reverse: j not alone in y with L = K - 1
        # blocks: split forced if L = 1, else with probability q_s.
        log_rev = 0.0 if big_k == 2 else log_qs
        return log_rev + np.log(big_k - 1), big_k - 1
    # j moves between blocks: q_m/(K - 1) both ways (L = K, j not alone in y), so
    # the ratio is 1 (checked by the table, not assumed).
    return 0.0, big_k


@primitive
def mutation_update(stream, state, prior_params, params, stats, data, j, q_s):
    """One §3.1 mutation of item ``j`` with split probability ``q_s`` in (0, 1).

    Returns ``(outcome, log_ratio)``: outcome one of ``SPLIT_REJECTED``,
    ``SPLIT_ACCEPTED``, ``MERGE_REJECTED``, ``MERGE_ACCEPTED``, ``NO_MOVE`` (n = 1),
    ``FAILED`` (NaN ratio; the state is restored); log_ratio the log of eq. (3)'s
    r_m (-inf for a proposal outside the support).
    """
    labels, sizes, active, counts = state.labels, state.sizes, state.active, state.counts
    k0 = labels[j]
    n_blocks = counts[0]
    j_alone = sizes[k0] == 1
    if j_alone and n_blocks == 1:
        return NO_MOVE, 0.0
    # 1. The proposal (§3.1's cases).
    if j_alone:
        split = False
    elif n_blocks == 1:
        split = True
    else:
        split = uniform(stream) < q_s
    k1 = -1
    if not split:
        # k1 uniform among the K - 1 active slots other than k0.
        a = bounded(stream, n_blocks - 1)
        if a >= state.where[k0]:
            a += 1
        k1 = active[a]
    log_q_ratio, _ = proposal_log_ratio(split, j_alone, n_blocks, np.log(q_s))
    u_accept = uniform(stream)
    # 2. f(y)/f(x) from j's conditional weights given the other items.
    take_out(state, params, stats, data, j)  # a singleton's k0 becomes the top free slot
    others = counts[0]
    log_old = log_weight(state, prior_params, params, stats, data, j, k0, others)
    target = top_free_slot(state) if split else k1
    log_new = log_weight(state, prior_params, params, stats, data, j, target, others)
    if log_new == -np.inf:
        log_ratio = -np.inf  # outside the support: reject (also when log_old is -inf)
    else:
        log_ratio = log_new - log_old + log_q_ratio
    if np.isnan(log_ratio):
        outcome = FAILED
        accept = False
    else:
        accept = np.log(u_accept) < log_ratio
        if split:
            outcome = SPLIT_ACCEPTED if accept else SPLIT_REJECTED
        else:
            outcome = MERGE_ACCEPTED if accept else MERGE_REJECTED
    # 3. Put j where the decision says.
    if accept:
        k = open_new_block(state, params, stats) if split else k1
    else:
        # A closed k0 is still the top free slot, so it reopens.
        k = open_new_block(state, params, stats) if sizes[k0] == 0 else k0
    put_in(state, params, stats, data, j, k)
    return outcome, log_ratio


@entry
def run_mutations(stream, n_updates, state, prior_params, params, stats, data, q_s,
                  outcomes):
    """``n_updates`` §3.1 mutations, each of an item j drawn uniformly from ``stream``.

    stream : (4,) uint64, advanced in place. outcomes : (4,) int64, incremented at
    each update's outcome (``SPLIT_REJECTED`` ... ``MERGE_ACCEPTED``).

    Returns -1, or the item whose update met a NaN ratio (the run stops there, the
    state as before that update). Callers must raise (``errors.check_item``).
    """
    n = state.labels.shape[0]
    for _ in range(n_updates):
        j = bounded(stream, n)
        outcome, _ = mutation_update(stream, state, prior_params, params, stats, data, j, q_s)
        if outcome == FAILED:
            return j
        if outcome != NO_MOVE:
            outcomes[outcome] += 1
    return -1


@entry
def mutation_entry(stream, state, prior_params, params, stats, data, j, q_s):
    """One :func:`mutation_update` of item ``j`` from Python (tests): ``(outcome,
    log_ratio)``."""
    return mutation_update(stream, state, prior_params, params, stats, data, j, q_s)


__all__ = [
    "FAILED",
    "MERGE_ACCEPTED",
    "MERGE_REJECTED",
    "NO_MOVE",
    "Outcomes",
    "SPLIT_ACCEPTED",
    "SPLIT_REJECTED",
    "mutation_entry",
    "mutation_update",
    "proposal_log_ratio",
]
