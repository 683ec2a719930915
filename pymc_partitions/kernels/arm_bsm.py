r"""bSM: Jain & Neal's restricted-Gibbs split-merge launched from ARM's background
information, the ablation of Herlau, Mørup, Schmidt & Teh (2016), §3.6.2.

bSM is Algorithm 1 (Jain & Neal 2004; :mod:`.split_merge`) with ARM's quintet
(i, j, z^a, z^b) (§2.4: z^a, z^b from the chains' history, (i, j) a pair on which
they disagree) and ARM's initialisation of the launch state: instead of spreading
S = z_i u z_j \ {i, j} uniformly at random over the two new blocks, "we set
z_i^(l) = c_i and z_j^(l) = c_j where c is the coarsest common refinement between
z, z^a and z^b". One Metropolis-Hastings update (lines of Algorithm 1):

- line 1, the launch state: z^(l) = z \ (z_i u z_j), plus c_i and c_j as the two
  new blocks (eqs. 9-10 with c's blocks for {i}, {j}); each other block A of c
  inside z_i u z_j is put as a whole into one of the two by a restricted block
  Gibbs move, ``sweep_{A,I}`` with I = (z_i^(l), z_j^(l)) (eq. 5,
  :mod:`.sweep_block`), by block size descending, then first element ascending
  (ARM's order, §2.4), so the launch is built "in a similar way as ARM";
- line 2: t intermediate restricted Gibbs scans of S (eqs. 11-12,
  :func:`.split_merge.restricted_update`);
- lines 3-4, merge (z_i != z_j): z* joins the two blocks; T(z|z*) is one restricted
  scan from the launch state forced to z (eqs. 13-14), T(z*|z) = 1;
- lines 5-6, split (z_i = z_j): z* is one more restricted scan from the launch
  state (eqs. 15-16), T(z*|z) the product of its choices, T(z|z*) = 1;

accepted with probability min{1, q(z*) T(z|z*) / (q(z) T(z*|z))} (eq. 8), q the
collapsed log joint (``bookkeeping.log_joint``), so the move is exact for every
component and prior the shared primitives serve. The final scan's paths are unique
(each item's last choice is its block in z*), so T is the product of its
restricted conditionals.

Choices where the paper is silent or ambiguous (all are part of the background
information, so any fixed choice keeps the move exact):

1. **Which z enters c.** Jain & Neal's move is exact because the launch state's
   distribution is the same from the split and from the merged partition of the
   pair (§3.1 of Jain & Neal): the launch is an index of the kernel, not a function
   of how S is split now. c = z^a v z^b v z computed from a split z would cut c
   along z's split and break that. The launch is therefore always built from the
   merged partition: c = z^a v z^b v z^merge restricted to S = z^a v z^b on S. For
   a split this is the paper's c; for a merge it is the c of the reverse split,
   built from z* (as ARM's reverse is built from z*). c_i != c_j because z^a and
   z^b disagree on (i, j).
2. **The rest of S in the launch** ("in a similar way as ARM"): the other blocks
   of c are placed as wholes by restricted block Gibbs moves (ARM's lines 5-8,
   restricted to the two launch blocks), not uniformly at random. Any launch
   distribution that depends on z only through z^merge keeps the move exact.
3. **Scan order**: S in ``order`` (ARM's item order, a fresh random relabelling
   per update when the step's ``relabel``), for the intermediate and final scans.
4. **No admissible candidate** while building the launch (every weight -inf, e.g.
   a colouring constraint) abandons the update: it is rejected. The launch is the
   same from both partitions of the pair, so the move is then the identity both
   ways. A final scan with no admissible candidate is rejected, as in
   :mod:`.split_merge`. A NaN is ``FAILED``.

Randomness: within an update every decision is ``counter_uniform(key, c)`` with c =
A(1) for the launch placement of block A, (s + 1) n + h for item h in scan s (the
final scan is s = t) and (t + 2) n for the acceptance, as in :mod:`.split_merge`.

Cost of one update: O(n) bookkeeping, O(|S| |c_S|) to form c on S, O(|S|)
component calls to place c's blocks, O((t + 1) |S|) restricted updates (2
predictive terms each), and two log joints (O(K) ``log_marginal`` calls).
"""

import numpy as np

from pymc_partitions.kernels._jit import entry, primitive, routine
from pymc_partitions.kernels.arm import (
    ABANDONED,
    BLOCK_MOVES,
    BUILT,
    FAILED,
    INVALID,
    INVALID_MESSAGE,
    MERGE_ACCEPTED,
    MERGE_REJECTED,
    NAN,
    SPLIT_ACCEPTED,
    SPLIT_REJECTED,
    UNREACHABLE,
    block_gibbs,
    disagree,
    draw_pair,
    order_blocks,
    refine,
    restore,
)
from pymc_partitions.kernels.bookkeeping import log_joint, move_item, open_new_block
from pymc_partitions.kernels.errors import NAN_SPLIT_MERGE_MESSAGE
from pymc_partitions.kernels.random import counter_uniform, random_key, shuffle
from pymc_partitions.kernels.reassign import take_out
from pymc_partitions.kernels.split_merge import restricted_update
from pymc_partitions.kernels.state import NO_CHOICE

MERGE_MESSAGE = "pymc_partitions kernel: a bSM proposal starts from i and j in one block."


@primitive
def same_partition(labels, target, target_slot, slot_target):
    """Whether the slot labels and the target labels make the same partition.
    O(n); ``target_slot``, ``slot_target`` (n,) scratch."""
    n = labels.shape[0]
    for h in range(n):
        target_slot[target[h]] = -1
        slot_target[labels[h]] = -1
    for h in range(n):
        t, k = target[h], labels[h]
        if target_slot[t] < 0 and slot_target[k] < 0:
            target_slot[t] = k
            slot_target[k] = t
        elif target_slot[t] != k or slot_target[k] != t:
            return False
    return True


@routine
def split_from_launch(state, prior_params, params, stats, data, i, j, za, zb, order,
                      n_scans, key, forced, target, scr, log_w):
    """The split of Algorithm 1 from the merged state (i and j in one block), which
    becomes z*: the launch state from c (lines 1-2), then the final restricted scan,
    sampled (``forced`` False; eqs. 15-16) or forced toward the partition of the
    labels ``target`` (eqs. 13-14).

    Returns ``(status, log T, blocks of c with two or more items placed in the
    launch)``, status as :func:`.arm.construct`'s (``BUILT``, ``ABANDONED``,
    ``UNREACHABLE``, ``NAN``); the state is a valid partition only when ``BUILT``.
    """
    labels = state.labels
    n = labels.shape[0]
    ki = labels[i]
    cblock, crep, csize, cstart, cand = scr.cblock, scr.crep, scr.csize, scr.cstart, scr.cand
    # c = z^a v z^b on S (z is one block there: choice 1).
    m = refine(labels, i, j, ki, ki, za, zb, order, False, False, scr)
    bi, bj = cblock[i], cblock[j]
    # Line 1 (eqs. 9-10): z^(l) = z \ S, plus c_i and c_j; the rest of S unplaced.
    for h in range(n):
        b = cblock[h]
        if b >= 0 and b != bi and b != bj:
            take_out(state, params, stats, data, h)
    kj = open_new_block(state, params, stats)
    for a in range(csize[bj]):
        move_item(state, params, stats, data, scr.citems[cstart[bj] + a], kj)
    # The other blocks of c as wholes into z_i^(l) or z_j^(l) (choice 2).
    n_block_moves = 0
    n_g, _ = order_blocks(scr, m, bi, bj)
    for g in range(n_g):
        b = scr.gorder[g]
        cand[0] = ki
        cand[1] = kj
        chosen, log_p, _ = block_gibbs(state, prior_params, params, stats, data,
                                       scr.citems[cstart[b]:cstart[b] + csize[b]], cand[:2],
                                       -1, counter_uniform(key, crep[b]), log_w)
        if chosen == NO_CHOICE:
            return (UNREACHABLE if forced else ABANDONED), -np.inf, n_block_moves
        if np.isnan(log_p):
            return NAN, log_p, n_block_moves
        if csize[b] > 1:
            n_block_moves += 1
    # Line 2 (eqs. 11-12): t intermediate restricted scans.
    for s in range(n_scans):
        for p in range(n):
            h = order[p]
            if cblock[h] < 0 or h == i or h == j:
                continue
            _, log_p = restricted_update(state, prior_params, params, stats, data, h, ki, kj,
                                         counter_uniform(key, (s + 1) * n + h), -1)
            if np.isnan(log_p):
                return NAN, log_p, n_block_moves
    # The final scan: sampled (eqs. 15-16) or forced toward the target (eqs. 13-14).
    t_i, t_j = target[i], target[j]
    if forced and t_i == t_j:
        return UNREACHABLE, -np.inf, n_block_moves
    log_q = 0.0
    for p in range(n):
        h = order[p]
        if cblock[h] < 0 or h == i or h == j:
            continue
        force = -1
        if forced:
            if target[h] == t_i:
                force = 0
            elif target[h] == t_j:
                force = 1
            else:
                return UNREACHABLE, -np.inf, n_block_moves
        _, log_p = restricted_update(state, prior_params, params, stats, data, h, ki, kj,
                                     counter_uniform(key, (n_scans + 1) * n + h), force)
        if np.isnan(log_p):
            return NAN, log_p, n_block_moves
        if log_p == -np.inf:
            return (UNREACHABLE if forced else ABANDONED), -np.inf, n_block_moves
        log_q += log_p
    if forced and not same_partition(labels, target, scr.target_slot, scr.o_rep):
        return UNREACHABLE, -np.inf, n_block_moves
    return BUILT, log_q, n_block_moves


@primitive  # inlined: a routine here re-optimised all it links once more (kernels rule 4)
def bsm_update(state, prior_params, params, stats, data, i, j, za, zb, order, n_scans, key,
               scr, log_w):
    """One bSM Metropolis-Hastings update.

    za, zb : (n,) int64 labels of z^a, z^b, disagreeing on (i, j); order : (n,) int64,
    a permutation of the items (scan order and the order of c's blocks); n_scans : t;
    key : int64, the key of the update's counter-based uniforms; scr :
    :func:`.arm.new_scratch`; log_w : (n + 1,) float64 scratch.

    Returns ``(outcome, log T(z*|z), log T(z|z*), log MH ratio, block moves)`` as
    :func:`.arm.arm_update`; block moves: the blocks of c of two or more items
    placed as wholes in the launch state.
    """
    labels = state.labels
    n = labels.shape[0]
    if i == j or not disagree(za, zb, i, j):
        return INVALID, np.nan, np.nan, np.nan, 0
    ki, kj = labels[i], labels[j]
    split = ki == kj
    rejected = SPLIT_REJECTED if split else MERGE_REJECTED
    zsave, zstar = scr.zsave, scr.zstar
    for h in range(n):
        zsave[h] = labels[h]
    # The two modes as run-time booleans (see arm.arm_update).
    sampled, forced = i < 0, i >= 0
    log_before = log_joint(state, prior_params, params, stats)
    if split:
        status, log_fwd, n_moves = split_from_launch(state, prior_params, params, stats, data,
                                                     i, j, za, zb, order, n_scans, key,
                                                     sampled, zsave, scr, log_w)
        log_rev = 0.0
        if status != BUILT:
            restore(state, params, stats, data, zsave, scr.slot_map)
            if status == NAN:
                return FAILED, log_fwd, np.nan, np.nan, n_moves
            return rejected, log_fwd, np.nan, -np.inf, n_moves
        log_after = log_joint(state, prior_params, params, stats)
    else:
        # Lines 3-4: z* joins z_j into z_i; the reverse is the split from z*.
        for h in range(n):
            if labels[h] == kj:
                move_item(state, params, stats, data, h, ki)
        log_after = log_joint(state, prior_params, params, stats)
        log_fwd = 0.0
        status, log_rev, n_moves = split_from_launch(state, prior_params, params, stats, data,
                                                     i, j, za, zb, order, n_scans, key,
                                                     forced, zsave, scr, log_w)
        if status == NAN:
            restore(state, params, stats, data, zsave, scr.slot_map)
            return FAILED, log_fwd, log_rev, np.nan, n_moves
    # z*: the split built, or the merge of z (z_j's items in i's slot).
    for h in range(n):
        if split:
            zstar[h] = labels[h]
        else:
            zstar[h] = ki if zsave[h] == kj else zsave[h]
    if log_rev == -np.inf:
        log_ratio = -np.inf
    else:
        log_ratio = log_after - log_before + log_rev - log_fwd
    if np.log(counter_uniform(key, (n_scans + 2) * n)) < log_ratio:
        restore(state, params, stats, data, zstar, scr.slot_map)
        return (SPLIT_ACCEPTED if split else MERGE_ACCEPTED), log_fwd, log_rev, log_ratio, n_moves
    restore(state, params, stats, data, zsave, scr.slot_map)
    return (FAILED if np.isnan(log_ratio) else rejected), log_fwd, log_rev, log_ratio, n_moves


@entry
def bsm_entry(state, prior_params, params, stats, data, i, j, za, zb, order, n_scans, key,
              scr, log_w):
    """Entry point for one :func:`bsm_update` from Python.

    Raises ``ValueError`` (state restored) instead of returning ``FAILED`` or
    ``INVALID``."""
    outcome, log_fwd, log_rev, log_ratio, n_moves = bsm_update(
        state, prior_params, params, stats, data, i, j, za, zb, order, n_scans, key, scr, log_w
    )
    if outcome == FAILED:
        raise ValueError(NAN_SPLIT_MERGE_MESSAGE)
    if outcome == INVALID:
        raise ValueError(INVALID_MESSAGE)
    return outcome, log_fwd, log_rev, log_ratio, n_moves


@entry
def split_entry(state, prior_params, params, stats, data, i, j, za, zb, order, n_scans, key,
                forced, target, scr, log_w):
    """The split proposal alone, from Python (tests): from a state with i and j in
    one block, the state becomes the split, sampled with ``key`` (``forced`` False) or
    forced toward the partition of ``target``; the launch state is built with ``key``
    either way.

    Returns ``(status, log T)``; unless ``BUILT`` the state is restored. Raises
    ``ValueError`` for invalid (i, j, z^a, z^b) or i, j in different blocks."""
    labels = state.labels
    if i == j or not disagree(za, zb, i, j):
        raise ValueError(INVALID_MESSAGE)
    if labels[i] != labels[j]:
        raise ValueError(MERGE_MESSAGE)
    for h in range(labels.shape[0]):
        scr.zsave[h] = labels[h]
    status, log_t, _ = split_from_launch(state, prior_params, params, stats, data, i, j, za,
                                         zb, order, n_scans, key, forced, target, scr, log_w)
    if status != BUILT:
        restore(state, params, stats, data, scr.zsave, scr.slot_map)
    return status, log_t


@entry
def bsm_iteration(stream, state, prior_params, params, stats, data, za, zb, n_scans, relabel,
                  order, scr, log_w, counts):
    """One bSM update given the background partitions z^a, z^b, drawing from
    ``stream`` as :func:`.arm.arm_iteration` does: the pair (i, j) uniformly among
    those on which z^a and z^b disagree, the item order, the update's key.

    counts : (5,) int64, incremented at the update's outcome and, at
    ``arm.BLOCK_MOVES`` (4), by its launch block moves. Returns the outcome
    (``FAILED``, ``INVALID`` as for ARM).
    """
    i, j = draw_pair(stream, za, zb, False)
    if i < 0:
        return INVALID
    if relabel:
        shuffle(stream, order, order.shape[0])
    outcome, _, _, _, n_moves = bsm_update(state, prior_params, params, stats, data, i, j, za,
                                           zb, order, n_scans, random_key(stream), scr, log_w)
    if outcome < FAILED:
        counts[outcome] += 1
        counts[BLOCK_MOVES] += n_moves
    return outcome
