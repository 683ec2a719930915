r"""Adaptive Reconfiguration Moves: Herlau, Mørup, Schmidt & Teh (2016), "Adaptive
Reconfiguration Moves for MCMC inference in Dirichlet Process Mixtures", Algorithm 3
(ARM), Algorithm 2 (sRM), the ablation sARM (§3.6.2) and an extension of Algorithm 3
by outside-block moves (§5's future work, below), the kernel of one
Metropolis-Hastings update (the other ablation, bSM, is :mod:`.arm_bsm`).

Given the current partition z, two items i != j and two earlier partitions z^a, z^b
(canonical label arrays) that disagree on whether i and j share a block, the
proposal z* is built by a sequence of restricted Gibbs moves (``sweep_{C,I}``,
eqs. 5-6, :mod:`.sweep_block`) whose path to z* is unique (§2.1.1, §2.3), so
T(z*|z) is the product of the moves' probabilities:

- line 1: c = z^a v z^b v z, the coarsest common refinement, restricted to
  S = z_i u z_j (the blocks of c outside S are never used);
- lines 2-4: split if z_i = z_j, else merge; z* = z \ S, plus c_i and c_j as two
  blocks (split) or c_i u c_j as one (merge);
- lines 5-8: each other block A of c inside S (the list g') is placed as a whole by
  an unrestricted block Gibbs move (every block of z* and a new one); its first
  element A(1) is its earmark and never moves again;
- lines 9-20: every other item h != i, j in turn: an item of S (c_i's and c_j's
  other members, A(2), A(3), ...) by an unrestricted Gibbs move; an item outside S
  may stay or join the block(s) of i, j, I = (z*_i, z*_j, z*_h) for a split,
  (z*_j, z*_h) for a merge, unless the uniqueness constraint of eq. 17 holds
  (h is the last of its block's original members there and newcomers have
  joined it: :math:`z_h \cap z^*_h = \{h\}`, :math:`|z^*_h| \ge 2`); then it stays.

The reverse probability T(z|z*) is that of the same construction from z* with the
same (i, j, z^a, z^b) and the same item order, forced at every move toward z
(eq. 6; a merge's reverse is a split and vice versa; its c is z^a v z^b v z*).
The update is accepted with probability (eq. 8)

.. math:: \min\{1, \; q(z^*)\, T(z \mid z^*) / (q(z)\, T(z^* \mid z))\},

q the collapsed log joint (``bookkeeping.log_joint``, the target of
:mod:`.split_merge`), so the move is exact for every component and prior the
shared primitives serve. The choice of (i, j, z^a, z^b) and of the item order must
not depend on z (the caller's business; §2.4 draws them from the chains' history).

sRM (Algorithm 2) is the same kernel without c: i and j start as {i}, {j} (split)
or {i, j} (merge), the other items of S are unplaced, and the loop of lines 5-16
visits every h != i, j in turn (an item of S by an unrestricted Gibbs move, an item
outside S as above). z^a and z^b are ignored.

sARM (§3.6.2, the ablation without block moves) is Algorithm 2 with ARM's background
information and its informed initialisation: (i, j, z^a, z^b) are chosen as for
ARM, lines 1-4 of Algorithm 3 start z* from c_i and c_j (split) or c_i u c_j
(merge), and then Algorithm 2's loop visits every h != i, j in item order: the
other items of S one at a time by unrestricted Gibbs moves (the members of c_i, c_j
from where line 4 put them, the others from unplaced), the items outside S as
above. There are no block moves (lines 5-8).

**Extended ARM** (``EXTENDED``; not in the paper: its §5 names "allowing movement
of blocks of variables from outside the initial states i, j" as future work).
Algorithm 3 leaves the items outside S to line 16, one at a time, so a merge whose
block moves carried items of S out of z*_i can only be reversed by bringing them
back one by one, at a probability exponentially small in their number (the reason
Algorithm 3 accepts 1-5 % of its updates on the paper's networks). The extension:

- line 1': c = z^a v z^b v z is formed on every item, not only on S;
- line 8a (after lines 5-8): each block B of c outside S with two or more items (by
  size descending, then first element ascending in ``order``), all still in its
  block k_B of z, stays or joins the block(s) of i, j as a whole: a restricted block
  Gibbs move over I = (z*_i, z*_j, k_B) for a split, (z*_i, k_B) for a merge, unless
  B is all that is left of k_B's original members and newcomers are there
  (:math:`k_B \cap z = B`, :math:`|k_B| > |B|`: the block analogue of eq. 17);
  then it stays. B(1) is its earmark and never moves again;
- line 16': the other members of a B that moved may move between z*_i and z*_j (a
  split; I = (z*_i, z*_j)) or stay (a merge, where the two are one block); the
  members of a B that stayed are items outside S as in Algorithm 3 (eq. 17 counts
  the original members still in k_B).

*Paths stay unique* (so T is a product of moves, as for Algorithm 3): every move
puts its unit (A(1), B(1) or h) where it stays, so the candidate it takes must be
the block its target block w_x ends in. (a) If w_x holds an anchor (i, j, an
earmark or an item already updated), that anchor's block. (b) Else, if w_x holds an
item o outside S: o ends in k_o (its own block) or in i's or j's block, and w_x
holds neither i nor j, so it ends in k_o, which o is in now (a B moved into i's/j's
block never leaves them). (c) Else w_x holds items of S only: a new block, since any
existing block either holds an anchor of another target block or is a block of z
outside S whose last original member can never leave once x is there (eq. 17 for
single items, its block analogue for blocks of c; x is permanent). So every
step's candidate is a function of (state, target) and at most one path reaches each
z*; the forced reverse follows it in O(moves), as for Algorithm 3
(:func:`forced_index` is unchanged: its cases are (a)-(c)). Without the block
analogue of eq. 17 paths would not be unique: B leaving k_B after a block A of g'
joined it, and A going to a new block, end alike. ``tests/test_arm.py`` checks the
uniqueness and the forced T against a transcription that sums over all paths.

Cost: line 8a's block moves (O(|B| |I|) each) and the n - |S| items outside S
grouped into blocks of c (O(n) with the per-slot lists of :func:`refine`).

Choices where the paper is silent or ambiguous (all are part of the background
information, so any fixed choice keeps the move exact):

1. **Order** (§2.4). g' is visited by block size descending, then first element
   ascending; the items of line 9 (singletons {h}, all of size 1) and of sRM's loop
   by first element ascending, i.e. in item order. "Ascending" is with respect to
   ``order`` (a permutation of the items): ``order`` = 0..n-1 is the paper's
   labelling, a uniformly random ``order`` drawn afresh for each update is its
   "random relabelling of the indices between each iteration". A(1) is likewise the
   member of A first in ``order``. The order of the candidates inside one Gibbs
   move changes no probability; it is the slot order of the state.
2. **Line 9's "not currently updated"** excludes i, j and the earmarks A(1) of g'
   only: the other members of c_i and c_j, placed in line 4 without a Gibbs move,
   get their unrestricted move in line 11 (§2.2: "variables which have been moved
   as part of a block [may] be moved independently later").
3. **Eq. 17's "original observations"** of z*_h are the members of h's block in z
   still there (items outside S only ever stay or join i's/j's blocks, so this is
   the block's remaining original members).
4. **Partial partitions.** Each Gibbs move's probabilities (eq. 5) are computed
   from q of the items placed so far (``sweep_block``: the prior's
   ``log_prior_block`` with the current number of blocks, and the components'
   predictive terms); items not yet placed are left out.
5. **z^a, z^b** enter only through c, so which of the two merges i and j does not
   matter and no relabelling is needed. They must disagree on (i, j) (else c_i = c_j
   and line 4 is undefined): the update returns ``INVALID`` with the state
   unchanged.
6. **sARM's informed initialisation** (§3.6.2 says only "z*_i = c_i and
   z*_j = c_j"): the items of S in the other blocks of c are left unplaced until
   the loop reaches them, as in sRM. Placing them beforehand (e.g. as the blocks
   of c) would make paths non-unique: two members x, y of one such block end
   together both when x stays and y stays and when x leaves for a new block and
   y follows it.
7. **No admissible candidate** (every weight -inf, e.g. a colouring constraint, or
   a NaN weight) abandons the proposal: it is rejected. Its forced reverse would
   have probability 0 or be undefined the same way, and abandoned branches do not
   change the probabilities of the paths that complete. A NaN log joint or forced
   probability is ``FAILED``.

The forced construction (eq. 6 at every move) needs, at each move of an item x
(A(1), or h), the one candidate from which the target w is still reachable. An
*anchor* is an item that never moves again (i, j, earmarks placed, items already
updated); blocks are never merged or split as wholes, so an anchor's block keeps
its identity. The candidate is: the block holding an anchor of w_x; else, when
w_x contains an item o outside S (which can only stay or join i's/j's blocks, and
w_x holds neither i nor j), o's block; else a new block (w_x then holds items of S
only, and any other candidate would leave an anchor or an item outside S with x:
with x as a newcomer, eq. 17 keeps one original member of the block). At the end
the construction is compared with w; any mismatch (an unreachable w) gives
T = 0. ``tests/test_arm.py`` enumerates every path at small n to check that paths
are unique and that the forced probabilities equal the sampled ones.

Randomness: every decision of one construction is ``counter_uniform(key, x)``, x
the item moved (A(1) for a block), and the acceptance ``counter_uniform(key, n)``.

Cost of one update: O(n) bookkeeping, O(|S| |c_S|) to form c on S, and for each
move O(|C| |I|) component ``add``/``remove``/``log_pred`` calls (``sweep_block``),
twice (forward and reverse; a reverse that can no longer be accepted is stopped
early, :func:`arm_update`), plus two log joints (O(K) ``log_marginal`` calls).
"""

from typing import NamedTuple

import numpy as np

from pymc_partitions.kernels._jit import entry, primitive, routine
from pymc_partitions.kernels.bookkeeping import log_joint, move_item, open_new_block
from pymc_partitions.kernels.errors import NAN_SPLIT_MERGE_MESSAGE
from pymc_partitions.kernels.random import bounded, counter_uniform, random_key, shuffle
from pymc_partitions.kernels.reassign import put_in, take_out
from pymc_partitions.kernels.state import NO_CHOICE
from pymc_partitions.kernels.sweep_block import sweep_block

# Variants (BSM's kernel is :mod:`.arm_bsm`; EXTENDED: ARM plus outside-block moves).
ARM, SRM, SARM, BSM, EXTENDED = 0, 1, 2, 3, 4
# Outcomes of one update (the first four as in split_merge).
SPLIT_REJECTED, SPLIT_ACCEPTED, MERGE_REJECTED, MERGE_ACCEPTED = 0, 1, 2, 3
FAILED = 4  # a NaN probability or log joint: the state is restored
INVALID = 5  # z^a and z^b agree on (i, j), or i == j: nothing done
#: Layout of the ``counts`` (7,) int64 array :func:`arm_iteration` fills (bSM's (5,)
#: array, :func:`~.arm_bsm.bsm_iteration`, is its first five): the four outcome
#: counts above, then block moves, outside-block moves proposed and accepted
#: (``EXTENDED``); named by :class:`Counts`, the layout the step reads them by.
BLOCK_MOVES, OUTSIDE_PROPOSED, OUTSIDE_ACCEPTED = 4, 5, 6


class Counts(NamedTuple):
    """Layout of the (7,) int64 ``counts`` :func:`arm_iteration` fills (bSM's first
    five), one entry per index above; named here, read by name in
    :func:`pymc_partitions.step_methods.info.counters`.

    Attributes
    ----------
    split_rejected, split_accepted, merge_rejected, merge_accepted
        The update's outcome, as in :class:`.split_merge.Outcomes` (0 or 1 each).
    block_moves
        Blocks of c of two or more items moved as wholes (lines 5-8).
    outside_moves_proposed
        ``EXTENDED``: blocks of c outside S moved into i's or j's block (line 8a).
    outside_moves_accepted
        The same count when the update was accepted.
    """

    split_rejected: int
    split_accepted: int
    merge_rejected: int
    merge_accepted: int
    block_moves: int
    outside_moves_proposed: int
    outside_moves_accepted: int

# Status of one construction.
BUILT, ABANDONED, UNREACHABLE, NAN, BELOW = 0, 1, 2, 3, 4
#: Margin (relative to the log joints' size) by which a partial reverse log T must
#: fall below the acceptance floor before the reverse is stopped: far above the
#: rounding of the sums, so a stopped reverse is one the full ratio rejects too.
EARLY_REJECTION_MARGIN = 1e-9

INVALID_MESSAGE = (
    "pymc_partitions kernel: an ARM update needs i != j and partitions z^a, z^b that "
    "disagree on whether i and j share a block."
)


class ArmScratch(NamedTuple):
    """Scratch of one ARM update; every field (n,) int64 except ``cand`` (n + 1,)
    and ``log_t_outside`` ((1,) float64).

    cblock : the block of c (restricted to S) of each item of S, -1 outside S
    oblock : ``EXTENDED`` only: the block of c of each item outside S, -1 in S (and
        for the other variants everywhere)
    crep, csize, cstart : first element, size and offset into ``citems`` of each
        block of c
    chead, cnext : per slot, its first block of c; per block, the next one in the
        same slot (the blocks of c are looked up within their block of z)
    citems : the items grouped by block of c, each block in ``order``
    gorder : the blocks of g' in the order they are placed (lines 5-8), then
        (``EXTENDED``) the blocks of c outside S with two or more items (line 8a)
    remaining : per slot, the number of its original members still in it (eq. 17)
    target_slot, o_rep : forced construction: per target label, the slot of its
        anchors, and one of its items outside S
    cand : candidate slots of one Gibbs move
    zsave, zstar : slot labels of z and z*
    slot_map : per goal label, its slot while a partition is restored
    log_t_outside : the log-probability of the last construction's outside-block
        moves (line 8a), a part of its log T (for tests and diagnostics)
    """

    cblock: np.ndarray
    oblock: np.ndarray
    crep: np.ndarray
    csize: np.ndarray
    cstart: np.ndarray
    chead: np.ndarray
    cnext: np.ndarray
    citems: np.ndarray
    gorder: np.ndarray
    remaining: np.ndarray
    target_slot: np.ndarray
    o_rep: np.ndarray
    cand: np.ndarray
    zsave: np.ndarray
    zstar: np.ndarray
    slot_map: np.ndarray
    log_t_outside: np.ndarray


def new_scratch(n):
    """An :class:`ArmScratch` for n items."""
    fields = {name: np.zeros(n, dtype=np.int64) for name in ArmScratch._fields}
    fields["cand"] = np.zeros(n + 1, dtype=np.int64)
    fields["log_t_outside"] = np.zeros(1)
    return ArmScratch(**fields)


@routine
def restore(state, params, stats, data, goal, slot_map):
    """Make the state's partition equal to that of the slot labels ``goal`` (items
    may be unassigned): items whose slot differs from their goal are taken out,
    then put into their goal block's slot (a new block where none remains).
    O(n) plus one ``remove``/``add`` per item moved."""
    labels = state.labels
    n = labels.shape[0]
    for h in range(n):
        if labels[h] >= 0 and labels[h] != goal[h]:
            take_out(state, params, stats, data, h)
    for h in range(n):
        slot_map[goal[h]] = -1
    for h in range(n):
        if labels[h] >= 0:
            slot_map[goal[h]] = goal[h]
    for h in range(n):
        if labels[h] < 0:
            g = goal[h]
            k = slot_map[g]
            if k < 0:
                k = open_new_block(state, params, stats)
                slot_map[g] = k
            put_in(state, params, stats, data, h, k)


@routine
def block_gibbs(state, prior_params, params, stats, data, items, cand, force, u, log_w):
    """``sweep_{C,I}`` (eqs. 5-6) of the items C over the candidate slots ``cand``
    (-1: a new block): :func:`.sweep_block.sweep_block`, compiled once for both of
    the construction's loops."""
    return sweep_block(state, prior_params, params, stats, data, items, cand, force, u, log_w)


@primitive
def forced_index(labels, target, target_slot, o_rep, x, cand, m):
    """The index in ``cand[:m]`` of the only candidate from which the target is
    still reachable when x moves (module docstring), or -1 if it is not a candidate."""
    t = target[x]
    ks = target_slot[t]
    if ks < 0:
        r = o_rep[t]
        ks = labels[r] if r >= 0 else -1
    for a in range(m):
        if cand[a] == ks:
            return a
    return -1


@primitive
def anchor(target, target_slot, x, k):
    """Item x is now fixed in slot k: record it for the forced construction.
    Returns False if another anchor of x's target block is elsewhere."""
    t = target[x]
    if target_slot[t] < 0:
        target_slot[t] = k
        return True
    return target_slot[t] == k


@primitive
def all_candidates(state, cand):
    """Every active slot and a new block (-1): an unrestricted Gibbs move. Returns m."""
    n_active = state.counts[0]
    for a in range(n_active):
        cand[a] = state.active[a]
    cand[n_active] = -1
    return n_active + 1


@primitive
def disagree(za, zb, i, j):
    """Whether z^a and z^b disagree on whether i and j share a block."""
    return (za[i] == za[j]) != (zb[i] == zb[j])


@primitive
def uses_refinement(variant):
    """Whether the variant starts from c = z^a v z^b v z (all but sRM), so z^a and
    z^b must disagree on (i, j)."""
    return variant != SRM


@primitive
def refine(labels, i, j, ki, kj, za, zb, order, srm, outside, scr):
    """Line 1: the blocks of c = z^a v z^b v z on S = z_i u z_j (singletons for sRM),
    and with ``outside`` (``EXTENDED``) on the items outside S too, numbered in order
    of their first elements. Returns their number.

    A block of c lies inside one block of z, so an item is compared only with the
    blocks of c already opened in its slot (``chead``/``cnext``): O(n) times the
    number of blocks of c per block of z."""
    n = labels.shape[0]
    cblock, oblock, crep, csize = scr.cblock, scr.oblock, scr.crep, scr.csize
    chead, cnext = scr.chead, scr.cnext
    for h in range(n):
        chead[labels[h]] = -1
    m = 0
    for p in range(n):
        h = order[p]
        cblock[h] = -1
        oblock[h] = -1
        kh = labels[h]
        in_s = kh == ki or kh == kj
        if not in_s and not outside:
            continue
        b = -1
        if not srm:
            q = chead[kh]
            while q >= 0:
                r = crep[q]
                if za[r] == za[h] and zb[r] == zb[h]:
                    b = q
                    break
                q = cnext[q]
        if b < 0:
            b = m
            crep[m] = h
            csize[m] = 0
            cnext[m] = chead[kh]
            chead[kh] = m
            m += 1
        if in_s:
            cblock[h] = b
        else:
            oblock[h] = b
        csize[b] += 1
    # Members of each block, contiguous, in order.
    total = 0
    for b in range(m):
        scr.cstart[b] = total
        total += csize[b]
    for b in range(m):
        csize[b] = 0
    for p in range(n):
        h = order[p]
        b = cblock[h] if cblock[h] >= 0 else oblock[h]
        if b >= 0:
            scr.citems[scr.cstart[b] + csize[b]] = h
            csize[b] += 1
    return m


@primitive
def order_blocks(scr, m, bi, bj):
    """Lines 5-6: g' (the blocks of c in S other than c_i, c_j), then (``EXTENDED``,
    line 8a) the blocks of c outside S with two or more items, each list by size
    descending, then first element ascending: stable counting sorts of the blocks
    (numbered in order of first elements) by size, into ``gorder``. Returns
    ``(|g'|, number of outside blocks)``. Uses ``cand`` as the size histogram."""
    count = scr.cand
    n_max = count.shape[0] - 1
    start = 0
    n_g = 0
    for part in range(2):  # 0: g', 1: the blocks outside S
        for s in range(n_max + 1):
            count[s] = 0
        for b in range(m):
            r = scr.crep[b]
            if part == 0:
                use = scr.cblock[r] >= 0 and b != bi and b != bj
            else:
                use = scr.oblock[r] >= 0 and scr.csize[b] >= 2
            if use:
                count[scr.csize[b]] += 1
        # Start position of each size, largest size first.
        pos = start
        for s in range(n_max, 0, -1):
            c = count[s]
            count[s] = pos
            pos += c
        for b in range(m):
            r = scr.crep[b]
            if part == 0:
                use = scr.cblock[r] >= 0 and b != bi and b != bj
            else:
                use = scr.oblock[r] >= 0 and scr.csize[b] >= 2
            if use:
                s = scr.csize[b]
                scr.gorder[count[s]] = b
                count[s] += 1
        if part == 0:
            n_g = pos
        start = pos
    return n_g, start - n_g


@routine
def construct(state, prior_params, params, stats, data, i, j, za, zb, order, variant, key,
              forced, target, floor, scr, log_w):
    """Algorithm 3 (``variant`` ``ARM``), Algorithm 3 with outside-block moves
    (``EXTENDED``, module docstring), Algorithm 2 (``SRM``) or sARM (``SARM``:
    Algorithm 2 started from c_i, c_j, §3.6.2) from the current state, which becomes z*.

    forced : False to sample z* (uniforms ``counter_uniform(key, x)``); True to force
        every move toward the partition of the labels ``target`` (eq. 6).
    floor : float; forced only: stop (status ``BELOW``) as soon as the partial log T
        falls below it (every move adds a log-probability <= 0, so the final log T
        would too); -inf never stops.
    Returns ``(status, log T, number of blocks of g' with two or more items, number
    of blocks outside S moved into i's/j's blocks)``: status ``BUILT``; ``ABANDONED``
    (no admissible candidate while sampling); ``UNREACHABLE`` (forced: the target
    cannot be reached, log T = -inf); ``NAN``; ``BELOW`` (log T so far, an upper bound
    of the full one, is below ``floor``). The state is a valid partition only when
    ``BUILT`` (else :func:`restore` it). ``scr.log_t_outside[0]`` receives the part of
    log T from the outside-block moves (line 8a).
    """
    labels, sizes = state.labels, state.sizes
    n = labels.shape[0]
    ki, kj = labels[i], labels[j]
    split = ki == kj
    cblock, crep, csize, cstart = scr.cblock, scr.crep, scr.csize, scr.cstart
    cand, remaining, target_slot, o_rep = scr.cand, scr.remaining, scr.target_slot, scr.o_rep
    srm = variant == SRM
    block_moves = variant == ARM or variant == EXTENDED
    outside = variant == EXTENDED
    scr.log_t_outside[0] = 0.0
    # Line 1: c = z^a v z^b v z on S (EXTENDED: on every item).
    m = refine(labels, i, j, ki, kj, za, zb, order, srm, outside, scr)
    bi, bj = cblock[i], cblock[j]
    # Original members of each block outside S still in it (eq. 17).
    for k in range(n):
        remaining[k] = 0
    for h in range(n):
        if cblock[h] < 0:
            remaining[labels[h]] += 1
    # Lines 2-4: z* = z \ S, plus c_i, c_j (split) or c_i u c_j (merge). Items of S
    # in other blocks of c are taken out (i stays, so slot ki stays open).
    for h in range(n):
        b = cblock[h]
        if b >= 0 and b != bi and b != bj:
            take_out(state, params, stats, data, h)
    if split:
        k_j = open_new_block(state, params, stats)
    else:
        k_j = ki
    for a in range(csize[bj]):
        move_item(state, params, stats, data, scr.citems[cstart[bj] + a], k_j)
    k_i = ki
    if forced:
        for t in range(n):
            target_slot[t] = -1
            o_rep[t] = -1
        for h in range(n):
            if cblock[h] < 0:
                o_rep[target[h]] = h
        anchor(target, target_slot, i, k_i)
        if not anchor(target, target_slot, j, k_j):
            return UNREACHABLE, -np.inf, 0, 0
    log_t = 0.0
    n_block_moves = 0
    n_outside = 0
    # Lines 5-8: place each block of g' by an unrestricted block Gibbs move (ARM
    # only: sARM leaves g' unplaced for the loop below, item by item). Line 8a
    # (EXTENDED): then each block B of c outside S with two or more items, in its
    # block k_B of z, stays or joins the block(s) of i, j as a whole; it stays if it
    # is all that is left of k_B's original members and newcomers are there (the
    # block analogue of eq. 17). B(1) is its earmark and never moves again.
    n_g, n_o = order_blocks(scr, m, bi, bj) if block_moves else (0, 0)
    if not outside:
        n_o = 0
    for g in range(n_g + n_o):
        b = scr.gorder[g]
        x = crep[b]
        items = scr.citems[cstart[b]:cstart[b] + csize[b]]
        is_out = g >= n_g
        kb = labels[x]
        if not is_out:
            n_cand = all_candidates(state, cand)
        elif remaining[kb] == csize[b] and sizes[kb] > csize[b]:
            if forced and not anchor(target, target_slot, x, kb):
                return UNREACHABLE, -np.inf, n_block_moves, n_outside
            continue
        else:
            cand[0] = k_i
            if split:
                cand[1] = k_j
                cand[2] = kb
                n_cand = 3
            else:
                cand[1] = kb
                n_cand = 2
        force = -1
        if forced:
            force = forced_index(labels, target, target_slot, o_rep, x, cand, n_cand)
            if force < 0:
                return UNREACHABLE, -np.inf, n_block_moves, n_outside
        chosen, log_p, k = block_gibbs(state, prior_params, params, stats, data, items,
                                       cand[:n_cand], force, counter_uniform(key, x), log_w)
        if chosen == NO_CHOICE:
            return (UNREACHABLE if forced else ABANDONED), -np.inf, n_block_moves, n_outside
        if np.isnan(log_p):
            return NAN, log_p, n_block_moves, n_outside
        log_t += log_p
        if is_out:
            scr.log_t_outside[0] += log_p
            if k == k_i or k == k_j:
                remaining[kb] -= csize[b]
                n_outside += 1
        elif csize[b] > 1:
            n_block_moves += 1
        if forced and (log_p == -np.inf or not anchor(target, target_slot, x, k)):
            return UNREACHABLE, -np.inf, n_block_moves, n_outside
        if log_t < floor:
            return BELOW, log_t, n_block_moves, n_outside
    # Lines 9-20 (Algorithm 2, lines 5-16): every other item in order.
    for p in range(n):
        h = order[p]
        if h == i or h == j:
            continue
        b = cblock[h]
        kh = labels[h]
        if b >= 0:
            if block_moves and b != bi and b != bj and crep[b] == h:
                continue  # an earmark A(1), placed in lines 5-8
            # Lines 10-11 (Algorithm 2, line 7): an item of S, by an unrestricted
            # Gibbs move, from where it is (c_i, c_j, a block of g') or unplaced.
            n_cand = all_candidates(state, cand)
        elif outside and csize[scr.oblock[h]] >= 2 and crep[scr.oblock[h]] == h:
            continue  # an earmark B(1), placed in line 8a
        elif kh == k_i or kh == k_j:
            # EXTENDED: h came with its block B (line 8a); it may move between the
            # blocks of i and j (split), or stays (merge: one block).
            if not split:
                if forced and not anchor(target, target_slot, h, kh):
                    return UNREACHABLE, -np.inf, n_block_moves, n_outside
                continue
            cand[0] = k_i
            cand[1] = k_j
            n_cand = 2
        elif remaining[kh] == 1 and sizes[kh] >= 2:
            # Lines 13-14: eq. 17, h stays (probability 1).
            if forced and not anchor(target, target_slot, h, kh):
                return UNREACHABLE, -np.inf, n_block_moves, n_outside
            continue
        else:
            # Line 16: stay, or join the block(s) of i, j.
            cand[0] = k_i
            if split:
                cand[1] = k_j
                cand[2] = kh
                n_cand = 3
            else:
                cand[1] = kh
                n_cand = 2
        force = -1
        if forced:
            force = forced_index(labels, target, target_slot, o_rep, h, cand, n_cand)
            if force < 0:
                return UNREACHABLE, -np.inf, n_block_moves, n_outside
        # Line 18 (line 11 for items of S).
        chosen, log_p, k = block_gibbs(state, prior_params, params, stats, data,
                                       order[p:p + 1], cand[:n_cand], force,
                                       counter_uniform(key, h), log_w)
        if chosen == NO_CHOICE:
            return (UNREACHABLE if forced else ABANDONED), -np.inf, n_block_moves, n_outside
        if np.isnan(log_p):
            return NAN, log_p, n_block_moves, n_outside
        log_t += log_p
        if b < 0 and k != kh and kh != k_i and kh != k_j:
            remaining[kh] -= 1
        if forced and (log_p == -np.inf or not anchor(target, target_slot, h, k)):
            return UNREACHABLE, -np.inf, n_block_moves, n_outside
        if log_t < floor:
            return BELOW, log_t, n_block_moves, n_outside
    if forced:
        # The partition reached is the target's: every target block maps to one slot
        # (checked as items became anchors), consistently, and onto distinct slots.
        n_target = 0
        for t in range(n):
            scr.slot_map[t] = 0
        for h in range(n):
            if labels[h] != target_slot[target[h]]:
                return UNREACHABLE, -np.inf, n_block_moves, n_outside
            if scr.slot_map[target[h]] == 0:
                scr.slot_map[target[h]] = 1
                n_target += 1
        if n_target != state.counts[0]:
            return UNREACHABLE, -np.inf, n_block_moves, n_outside
    return BUILT, log_t, n_block_moves, n_outside


@primitive  # inlined: a routine here re-optimised all it links once more (kernels rule 4)
def arm_update(state, prior_params, params, stats, data, i, j, za, zb, order, variant, key,
               scr, log_w):
    """One ARM (``variant`` ``ARM``), extended ARM (``EXTENDED``), sRM (``SRM``) or
    sARM (``SARM``) Metropolis-Hastings update.

    za, zb : (n,) int64 labels of z^a, z^b (ignored by sRM); order : (n,) int64, a
    permutation of the items (the paper's order is 0..n-1); key : int64, the key of
    the update's counter-based uniforms; scr : :func:`new_scratch`; log_w : (n + 1,)
    float64 scratch.

    Returns ``(outcome, log T(z*|z), log T(z|z*), log MH ratio, block moves, outside
    moves)``:
    outcome ``SPLIT_REJECTED``, ``SPLIT_ACCEPTED``, ``MERGE_REJECTED``,
    ``MERGE_ACCEPTED``, ``FAILED`` (a NaN; state restored) or ``INVALID`` (z^a, z^b
    agree on (i, j), i == j, or ``variant`` is ``BSM``; state unchanged); block moves:
    the blocks of g' with two or more items placed in the forward construction;
    outside moves (``EXTENDED``): the blocks outside S it moved into i's/j's blocks.

    **Early rejection.** The uniform u of the acceptance does not depend on the
    construction, and every move of the reverse multiplies T(z|z*) by a probability
    <= 1, so once log T(z|z*) so far is below log u - log q(z*) + log q(z) +
    log T(z*|z) (less :data:`EARLY_REJECTION_MARGIN`, which covers rounding) the
    update is rejected without finishing the reverse: the same outcome as the full
    computation, for a fraction of its cost (most updates are rejected). The log
    T(z|z*) and ratio returned are then those of the partial reverse, upper bounds.
    """
    labels = state.labels
    n = labels.shape[0]
    if variant == BSM or i == j or (uses_refinement(variant) and not disagree(za, zb, i, j)):
        return INVALID, np.nan, np.nan, np.nan, 0, 0  # (bSM is arm_bsm.bsm_update)
    split = labels[i] == labels[j]
    rejected = SPLIT_REJECTED if split else MERGE_REJECTED
    zsave, zstar = scr.zsave, scr.zstar
    for h in range(n):
        zsave[h] = labels[h]
    # The two modes as run-time booleans: literal True/False arguments would compile
    # ``construct`` once for each.
    sampled, forced = i < 0, i >= 0
    log_before = log_joint(state, prior_params, params, stats)
    status, log_fwd, n_moves, n_out = construct(state, prior_params, params, stats, data, i,
                                                j, za, zb, order, variant, key, sampled, zsave,
                                                -np.inf, scr, log_w)
    if status != BUILT:
        restore(state, params, stats, data, zsave, scr.slot_map)
        if status == NAN:
            return FAILED, log_fwd, np.nan, np.nan, n_moves, n_out
        return rejected, log_fwd, np.nan, -np.inf, n_moves, n_out
    log_after = log_joint(state, prior_params, params, stats)
    for h in range(n):
        zstar[h] = labels[h]
    # The reverse: the construction from z*, forced toward z, stopped early once its
    # log T falls below the floor of acceptance (log u < log ratio), less a margin.
    log_u = np.log(counter_uniform(key, n))
    floor = log_u - (log_after - log_before) + log_fwd
    floor -= EARLY_REJECTION_MARGIN * (1.0 + abs(log_after) + abs(log_before) + abs(log_fwd))
    if np.isnan(floor):
        floor = -np.inf
    status, log_rev, _, _ = construct(state, prior_params, params, stats, data, i, j, za, zb,
                                      order, variant, key, forced, zsave, floor, scr, log_w)
    if status == NAN:
        restore(state, params, stats, data, zsave, scr.slot_map)
        return FAILED, log_fwd, log_rev, np.nan, n_moves, n_out
    if log_rev == -np.inf:
        log_ratio = -np.inf
    else:
        log_ratio = log_after - log_before + log_rev - log_fwd
    if status == BELOW:
        restore(state, params, stats, data, zsave, scr.slot_map)
        return rejected, log_fwd, log_rev, log_ratio, n_moves, n_out
    if log_u < log_ratio:
        restore(state, params, stats, data, zstar, scr.slot_map)
        return ((SPLIT_ACCEPTED if split else MERGE_ACCEPTED), log_fwd, log_rev, log_ratio,
                n_moves, n_out)
    restore(state, params, stats, data, zsave, scr.slot_map)
    return ((FAILED if np.isnan(log_ratio) else rejected), log_fwd, log_rev, log_ratio, n_moves,
            n_out)


@entry
def arm_entry(state, prior_params, params, stats, data, i, j, za, zb, order, variant, key,
              scr, log_w):
    """Entry point for one :func:`arm_update` from Python.

    Raises ``ValueError`` (state restored) instead of returning ``FAILED`` or
    ``INVALID``."""
    outcome, log_fwd, log_rev, log_ratio, n_moves, n_out = arm_update(
        state, prior_params, params, stats, data, i, j, za, zb, order, variant, key, scr, log_w
    )
    if outcome == FAILED:
        raise ValueError(NAN_SPLIT_MERGE_MESSAGE)
    if outcome == INVALID:
        raise ValueError(INVALID_MESSAGE)
    return outcome, log_fwd, log_rev, log_ratio, n_moves, n_out


@entry
def proposal_entry(state, prior_params, params, stats, data, i, j, za, zb, order, variant,
                   key, forced, target, scr, log_w):
    """The proposal alone, from Python (tests): the state becomes z*, sampled with
    ``key`` (``forced`` False) or forced toward the partition of ``target``.

    Returns ``(status, log T)`` (see :func:`construct`; the part of log T from the
    outside-block moves is left in ``scr.log_t_outside[0]``); unless ``BUILT`` the
    state is restored to z. Raises ``ValueError`` for invalid (i, j, z^a, z^b)."""
    labels = state.labels
    if i == j or (uses_refinement(variant) and not disagree(za, zb, i, j)):
        raise ValueError(INVALID_MESSAGE)
    for h in range(labels.shape[0]):
        scr.zsave[h] = labels[h]
    status, log_t, _, _ = construct(state, prior_params, params, stats, data, i, j, za, zb,
                                    order, variant, key, forced, target, -np.inf, scr, log_w)
    if status != BUILT:
        restore(state, params, stats, data, scr.zsave, scr.slot_map)
    return status, log_t


@primitive
def draw_pair(stream, za, zb, srm):
    """(i, j): for ARM uniformly among the ordered pairs i != j on which z^a and z^b
    disagree (§2.4), for sRM uniformly among all pairs; (-1, -1) if there is none.

    Rejection from uniform pairs, at most 4n tries (O(n) expected when the
    partitions disagree on a share of about 1/n of the pairs or more), then
    enumeration of the disagreeing pairs, O(n^2). Either stage's result is uniform
    on the disagreeing pairs, so the mixture is."""
    n = za.shape[0]
    for _ in range(4 * n):
        i = bounded(stream, n)
        j = bounded(stream, n - 1)
        if j >= i:
            j += 1
        if srm or disagree(za, zb, i, j):
            return i, j
    count = 0
    for i in range(n):
        for j in range(i + 1, n):
            if disagree(za, zb, i, j):
                count += 1
    if count == 0:
        return -1, -1
    r = bounded(stream, count)
    swap = bounded(stream, 2) == 1
    for i in range(n):
        for j in range(i + 1, n):
            if disagree(za, zb, i, j):
                if r == 0:
                    return (j, i) if swap else (i, j)
                r -= 1
    return -1, -1


@entry
def arm_iteration(stream, state, prior_params, params, stats, data, za, zb, variant, relabel,
                  order, scr, log_w, counts):
    """One ARM (or extended ARM, sRM, sARM) update given the background partitions z^a, z^b, drawing
    from ``stream`` (§2.4): the pair (i, j) (:func:`draw_pair`), the item order (a
    fresh uniformly random permutation of ``order`` when ``relabel``, the paper's
    random relabelling; else ``order`` as it is, e.g. 0..n-1) and the update's key.

    counts : (7,) int64, incremented at the update's outcome (``SPLIT_REJECTED`` ...
    ``MERGE_ACCEPTED``), at ``BLOCK_MOVES`` by its number of block moves, at
    ``OUTSIDE_PROPOSED`` by its outside-block moves (``EXTENDED``, line 8a) and at
    ``OUTSIDE_ACCEPTED`` by the same when the update is accepted.
    Returns the outcome (``FAILED``: a NaN, the state restored; ``INVALID``: z^a and
    z^b do not disagree on any pair, nothing done).
    """
    i, j = draw_pair(stream, za, zb, variant == SRM)
    if i < 0:
        return INVALID
    if relabel:
        shuffle(stream, order, order.shape[0])
    outcome, _, _, _, n_moves, n_out = arm_update(state, prior_params, params, stats, data, i,
                                                  j, za, zb, order, variant,
                                                  random_key(stream), scr, log_w)
    if outcome < FAILED:
        counts[outcome] += 1
        counts[BLOCK_MOVES] += n_moves
        counts[OUTSIDE_PROPOSED] += n_out
        if outcome == SPLIT_ACCEPTED or outcome == MERGE_ACCEPTED:
            counts[OUTSIDE_ACCEPTED] += n_out
    return outcome
