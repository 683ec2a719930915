"""SALSO search for the partition minimising a posterior expected loss (numba).

Dahl, Johnson & Müller (2022), "Search algorithms and loss functions for
Bayesian clustering", JCGS 31(4), §4: one run is

1. an initial allocation: with probability ``p_seq`` *sequential allocation*
   (items in a random order, each put in the block, existing or new, that
   minimises the expected loss of the partial clustering of the items placed so
   far), otherwise labels drawn uniformly from ``max_blocks`` blocks;
2. *sweetening*: scans over the items in random order, each item removed and
   put back where the expected loss is smallest, until a scan changes nothing
   (or ``max_scans``);
3. *zealous updates*: up to ``max_zealous`` times, a random block is destroyed,
   its items are sequentially reallocated in random order and the result is
   sweetened; kept only if the expected loss went down. A run can also be continued
   one update at a time, so that Python can stop it on a time budget (as salso's
   ``seconds``).

The runs are independent: :func:`salso_runs` does them without the GIL, so Python
threads run them in parallel (the R package salso also runs them in parallel,
``nCores``), run r on its own stream, so a result depends on the seed and not on the
number of threads.

Three savings of ours, none changing the moves made (the same partitions, losses and
random numbers as without them, except that (1) skips the one shuffle of a sweetening
it proves useless):

1. a zealous update whose re-allocation puts the destroyed block's items back
   together in a block of their own has restored the partition before it; when that
   was a local optimum of the item moves, the sweetening would change nothing and the
   update is rejected at once (``_zealous``);
2. a rejected update moves back only the items whose block changed;
3. the sweetening skips items whose move it can prove would keep them in place,
   from bounds on how much the moves made since their last evaluation changed their
   deltas (``_sweeten``, ``_move_bound``): later scans evaluate only the items near
   the moves.

Both losses have the form L(c) = sum_k f(|C_k|) - 2 E[sum_kl f(|C_k ∩ Z_l|)] +
const over the posterior draws Z (equal-cost Binder: f(x) = x^2/2; VI:
f(x) = x log x / n). The kernel works with M times the loss, up to constants:

- ``kind = 0`` Binder, from the integer co-clustering counts N_ij (N = M * PSM):
  L = sum_{i<j, c_i = c_j} (M - 2 N_ij); putting item i in block k changes it
  by sum_{j in k} (M - 2 N_ij), O(n) for all blocks at once.
- ``kind = 1`` from the draws (VI, or Binder with f(x) = x (x - 1) / 2, the
  pairs in a block, so g(x) = x and no n x n matrix; the deltas equal kind 0's) through per-draw contingency counts
  cnt[m, l, k] = |C_k ∩ Z_l^(m)| kept incrementally:
  L = M sum_k f(|C_k|) - 2 sum_m sum_kl f(cnt[m, l, k]) with f(x) = x log x, and
  putting item i in block k changes it by
  M g(|C_k|) - 2 sum_m g(cnt[m, z_i^(m), k]), g(x) = f(x + 1) - f(x)
  (tabulated). Each distinct draw is kept once, weighted by its multiplicity
  (a concentrated posterior repeats draws). The counts are stored draw-major
  with the block last, so one pass over the draws reads all blocks' counts for
  item i from one cache line per draw: O(M K) per item. This is the expected VI
  itself, computed from the draws, not the Wade–Ghahramani lower bound.

Items with the same label in every draw may be searched as one weighted item
(``item_w``; kind 1): any partition with such items in different blocks is
improved by moving one of them to the other's block (for i, j alike, in blocks A
and B, the two moves change L by amounts summing to M (D(a) + D(b)) -
2 sum_m w_m (D(n_A^m) + D(n_B^m)) < 0, D(x) = f(x + 2) - 2 f(x + 1) + f(x) > 0
decreasing, n^m <= the block sizes a, b), so every local optimum of the item moves
keeps them together; a group of w items joining block k changes L by
M (f(|C_k| + w) - f(|C_k|)) - 2 sum_m (f(cnt + w) - f(cnt)) and opening a block by
-M f(w). This grouping is ours, not the paper's: it shortens every scan by the
factor n / (number of distinct item rows).

Empty candidate blocks change L by 0 for a single item (g(0) = 0).

Compile units: the allocation, the sweetening, the zealous update and a whole run are
routines (compiled once and linked), so the entry holds one copy of each (inlined, the
zealous update's second call site tripled the entry's compile time); the entry is the
loop over the runs. A move is taken only when it
lowers L by more than a tolerance, so scans terminate and ties keep the current
block.
"""

import numpy as np

from pymc_partitions.kernels._jit import entry, entry_nogil, primitive, routine
from pymc_partitions.kernels.random import bounded, shuffle, uniform


@primitive
def _add(i, k, c, size, labels_t, item_w, cnt, kind):
    """Put item i (``item_w[i]`` items with the same labels in every draw) in block k."""
    w = item_w[i]
    c[i] = k
    size[k] += w
    if kind == 1:
        for m in range(labels_t.shape[1]):
            cnt[m, labels_t[i, m], k] += w


@primitive
def _remove(i, c, size, labels_t, item_w, cnt, kind):
    w = item_w[i]
    k = c[i]
    c[i] = -1
    size[k] -= w
    if kind == 1:
        for m in range(labels_t.shape[1]):
            cnt[m, labels_t[i, m], k] -= w
    return k


@primitive
def _empty_delta(i, kind, n_draws, item_w, ftab):
    """Change of M * loss when unallocated item i opens a block: M f(w) - 2 M f(w) for
    a group of w items, 0 for one item (f(1) = 0)."""
    w = item_w[i]
    if kind == 0 or w == 1:
        return 0.0
    return -n_draws * ftab[w]


@primitive
def _delta(i, k, kind, n_draws, c, size, cocounts, labels_t, item_w, weights, cnt, gtab, ftab):
    """Change of M * loss when unallocated item i joins block k."""
    if size[k] == 0:
        return _empty_delta(i, kind, n_draws, item_w, ftab)
    if kind == 0:
        total = 0.0
        for j in range(c.shape[0]):
            if c[j] == k:
                total += n_draws - 2 * cocounts[i, j]
        return total
    total = 0.0
    w = item_w[i]
    if w == 1:
        for m in range(labels_t.shape[1]):
            total += weights[m] * gtab[cnt[m, labels_t[i, m], k]]
        return n_draws * gtab[size[k]] - 2.0 * total
    for m in range(labels_t.shape[1]):
        x = cnt[m, labels_t[i, m], k]
        total += weights[m] * (ftab[x + w] - ftab[x])
    return n_draws * (ftab[size[k] + w] - ftab[size[k]]) - 2.0 * total


@primitive
def _choose(
    i, prefer, kind, n_draws, c, size, cocounts, labels_t, item_w, weights, cnt, gtab, ftab, acc,
    max_blocks,
):  # fmt: skip
    """Best block for unallocated item i: returns (block, its delta, delta of ``prefer``,
    smallest delta of the other non-empty blocks and of an empty one, whether or not one
    may be opened: a lower bound of every other candidate's delta).

    Candidates: every non-empty block, and one empty block while fewer than
    ``max_blocks`` are used. ``prefer`` (>= 0) wins ties; another block must be
    better by more than a relative 1e-12.
    """
    kcap = size.shape[0]
    for k in range(kcap):
        acc[k] = 0.0
    if kind == 0:
        for j in range(c.shape[0]):
            if c[j] >= 0:
                acc[c[j]] += n_draws - 2 * cocounts[i, j]
    else:
        # slots above the highest used one are empty: skip them
        top = 0
        for k in range(kcap):
            if size[k] > 0:
                top = k + 1
        w = item_w[i]
        if w == 1:
            for m in range(labels_t.shape[1]):
                row = labels_t[i, m]
                wm = weights[m]
                for k in range(top):
                    acc[k] += wm * gtab[cnt[m, row, k]]
            for k in range(top):
                acc[k] = n_draws * gtab[size[k]] - 2.0 * acc[k]
        else:  # a group of w items: f(x + w) - f(x) in place of g(x)
            for m in range(labels_t.shape[1]):
                row = labels_t[i, m]
                wm = weights[m]
                for k in range(top):
                    x = cnt[m, row, k]
                    acc[k] += wm * (ftab[x + w] - ftab[x])
            for k in range(top):
                acc[k] = n_draws * (ftab[size[k] + w] - ftab[size[k]]) - 2.0 * acc[k]
    used = 0
    for k in range(kcap):
        if size[k] > 0:
            used += 1
    empty = _empty_delta(i, kind, n_draws, item_w, ftab)
    best_k = prefer
    best = np.inf
    pref_val = 0.0
    if prefer >= 0:
        pref_val = acc[prefer] if size[prefer] > 0 else empty
        best = pref_val
    empty_seen = False
    other = empty
    for k in range(kcap):
        if k == prefer:
            continue
        if size[k] > 0:
            v = acc[k]
            other = min(other, v)
        elif not empty_seen and used < max_blocks and not (prefer >= 0 and size[prefer] == 0):
            empty_seen = True
            v = empty
        else:
            continue
        if best_k < 0 or v < best - 1e-12 * (abs(best) + n_draws):
            best = v
            best_k = k
    return best_k, best, pref_val, other


@routine
def _allocate(
    items, count, kind, n_draws, c, size, cocounts, labels_t, item_w, weights, cnt, gtab, ftab, acc,
    max_blocks, loss,
):
    """Sequential allocation: add ``items[:count]`` (int64, unallocated) one at a time,
    each to its best block given those added before; returns ``loss`` plus their
    deltas. Used for the initial partition and for the zealous updates' re-allocation."""
    for t in range(count):
        i = items[t]
        k, v, _, _ = _choose(
            i, -1, kind, n_draws, c, size, cocounts, labels_t, item_w, weights, cnt, gtab, ftab, acc,
            max_blocks,
        )  # fmt: skip
        _add(i, k, c, size, labels_t, item_w, cnt, kind)
        loss += v
    return loss


@primitive
def _move_bound(i, k, joined, kind, n_draws, size, labels_t, item_w, weights, cnt, gtab):
    """Bound on how much item i (w items) joining (``joined``) or leaving block k, just
    done, changed another single item's delta for block k, whether that item is in k or
    not, and, per unit of weight, a group's not in k: M (g(s + w) - g(s)) +
    2 sum_m w_m (g(c_m + w) - g(c_m)), s and c_m = cnt[m, z_i^m, k] the size and i's
    cells without i, less 1 (the other item's own weight, when it is in k). Another
    item's cell changes only where it shares i's label, and f(x + w') - f(x) changes by
    at most w' times what g does, g being increasing and concave for both losses. Kind 0:
    M |1 - 2 N_ij / M| <= M."""
    if kind == 0:
        return n_draws
    w = item_w[i]
    lo = size[k] - w if joined else size[k]
    lo = max(lo - 1, 0)
    total = n_draws * (gtab[lo + w] - gtab[lo])
    for m in range(labels_t.shape[1]):
        x = cnt[m, labels_t[i, m], k]
        lo = max((x - w if joined else x) - 1, 0)
        total += 2.0 * weights[m] * (gtab[lo + w] - gtab[lo])
    return total


@routine
def _sweeten(
    stream, kind, n_draws, c, size, cocounts, labels_t, item_w, weights, cnt, gtab, ftab, acc, order,
    margin, gap, drift, max_blocks, max_scans, loss,
):  # fmt: skip
    """Step 2: scans over the items in random order until one changes nothing (or
    ``max_scans``); returns (loss, 1.0 if the last scan changed nothing else 0.0).

    Items that cannot move are skipped, exactly (ours, not the paper's: the same moves,
    loss and random stream as evaluating them). ``drift[k]`` sums :func:`_move_bound`
    of the moves into and out of block k made so far in this call: it bounds how much
    any single item's delta for block k has changed since. When a single item i (in
    block k0) stays, ``gap[i, k]`` keeps, for every other block k (slot; an empty one's
    delta is the empty block's), its delta minus i's own, less a tolerance, plus
    drift[k] + drift[k0] at that time (``margin[i]`` = 1 marks it valid); while
    gap[i, k] - drift[k] - drift[k0] > 0 for every k, no block can beat k0, so i
    would stay again and is not evaluated: O(K) in place of O(U K). Groups of items
    (``item_w`` > 1) are always evaluated (the bound does not cover their own block).
    The first scan evaluates every item; later ones only those whose gaps the moves
    may have closed.
    """
    n = c.shape[0]
    kcap = size.shape[0]
    skip = gap.shape[0] == n and gap.shape[1] == kcap  # else ``gap`` (1, 1): no skipping
    for t in range(n):
        margin[t] = -1.0
    for k in range(kcap):
        drift[k] = 0.0
    for _ in range(max_scans):
        for t in range(n):
            order[t] = t
        shuffle(stream, order, n)
        changed = False
        for t in range(n):
            i = order[t]
            if margin[i] > 0.0:
                base = drift[c[i]]
                stays = True
                for k in range(kcap):
                    if gap[i, k] - drift[k] - base <= 0.0:
                        stays = False
                        break
                if stays:
                    continue
            k0 = _remove(i, c, size, labels_t, item_w, cnt, kind)
            k, v, v0, _ = _choose(
                i, k0, kind, n_draws, c, size, cocounts, labels_t, item_w, weights, cnt, gtab, ftab, acc,
                max_blocks,
            )  # fmt: skip
            _add(i, k, c, size, labels_t, item_w, cnt, kind)
            loss += v - v0
            if k != k0:
                changed = True
                margin[i] = -1.0
                for side in range(2):  # left k0, joined k (one call site: inlined once)
                    kk = k if side else k0
                    drift[kk] += _move_bound(
                        i, kk, side == 1, kind, n_draws, size, labels_t, item_w, weights, cnt, gtab,
                    )  # fmt: skip
            elif item_w[i] == 1 and skip:  # (not groups: see above)
                empty = _empty_delta(i, kind, n_draws, item_w, ftab)
                base = drift[k0]
                for j in range(kcap):
                    vj = acc[j] if size[j] > 0 else empty
                    gap[i, j] = vj - v0 - 1e-7 * (abs(vj) + abs(v0) + n_draws) + drift[j] + base
                gap[i, k0] = np.inf
                margin[i] = 1.0
        if not changed:
            return loss, 1.0
    return loss, 0.0


@routine
def _run(
    kind, n_draws, cocounts, labels_t, item_w, weights, cnt, gtab, ftab, c, size, order, acc, saved, members,
    margin, gap, drift, max_blocks, p_seq, max_scans, max_zealous, stream, state,
):  # fmt: skip
    """One SALSO run (steps 1-3), or one more zealous update (``max_zealous`` = -1) of the
    run left in ``c``, ``size``, ``cnt``, ``state`` by the previous call; see
    :func:`salso_runs` (one slot's buffers here). ``state`` (2,) float64: M * loss up
    to a constant, and 1.0 if the partition is a local optimum of the item moves (the
    last sweetening scan changed nothing)."""
    n = c.shape[0]
    if max_zealous < 0:
        state[0], state[1] = _zealous(
            stream, kind, n_draws, c, size, cocounts, labels_t, item_w, weights, cnt, gtab, ftab, acc, order,
            saved, members, margin, gap, drift, max_blocks, max_scans, state[0], state[1],
        )  # fmt: skip
        return
    for i in range(n):
        c[i] = -1
    for k in range(size.shape[0]):
        size[k] = 0
    if kind == 1:
        for k in range(cnt.shape[0]):
            for m in range(cnt.shape[1]):
                for l in range(cnt.shape[2]):
                    cnt[k, m, l] = 0
    loss = 0.0
    # 1. initial allocation
    if uniform(stream) < p_seq:
        for t in range(n):
            order[t] = t
        shuffle(stream, order, n)
        loss = _allocate(
            order, n, kind, n_draws, c, size, cocounts, labels_t, item_w, weights, cnt, gtab, ftab, acc,
            max_blocks, loss,
        )  # fmt: skip
    else:
        for i in range(n):
            k = bounded(stream, max_blocks)
            v = _delta(i, k, kind, n_draws, c, size, cocounts, labels_t, item_w, weights, cnt, gtab, ftab)
            _add(i, k, c, size, labels_t, item_w, cnt, kind)
            loss += v
    # 2. sweetening
    loss, optimum = _sweeten(
        stream, kind, n_draws, c, size, cocounts, labels_t, item_w, weights, cnt, gtab, ftab, acc, order,
        margin, gap, drift, max_blocks, max_scans, loss,
    )  # fmt: skip
    # 3. zealous updates
    for _ in range(max_zealous):
        loss, optimum = _zealous(
            stream, kind, n_draws, c, size, cocounts, labels_t, item_w, weights, cnt, gtab, ftab, acc, order,
            saved, members, margin, gap, drift, max_blocks, max_scans, loss, optimum,
        )  # fmt: skip
    state[0] = loss
    state[1] = optimum


@routine
def _zealous(
    stream, kind, n_draws, c, size, cocounts, labels_t, item_w, weights, cnt, gtab, ftab, acc, order, saved,
    members, margin, gap, drift, max_blocks, max_scans, loss, optimum,
):  # fmt: skip
    """One zealous update: destroy a random block, re-allocate its items sequentially in
    random order, sweeten; keep it only if the loss went down. Returns (loss, optimum)
    as ``state`` of :func:`_run`.

    Two savings, neither changing which partition the update ends at:
    (a) when the re-allocation puts the destroyed block's items back together in a
    block of their own, the partition is the one before the update; if that was a local
    optimum (``optimum`` = 1), the sweetening would change nothing (each item's move
    is evaluated in the same partition as in the scan that found no move; ties keep
    the current block), so the update is rejected without it: O(n_k U K) in place of
    a scan over all items, O(n U K). (b) a rejected update restores only the items
    whose block changed (the counts are sums over items, so the order is free)."""
    n = c.shape[0]
    used = 0
    for k in range(size.shape[0]):
        if size[k] > 0:
            used += 1
    pick = bounded(stream, used)
    target = -1
    for k in range(size.shape[0]):
        if size[k] > 0:
            if pick == 0:
                target = k
                break
            pick -= 1
    for i in range(n):
        saved[i] = c[i]
    before = loss
    count = 0
    weight = 0
    for i in range(n):
        if c[i] == target:
            members[count] = i
            count += 1
            weight += item_w[i]
    for t in range(count):
        i = members[t]
        _remove(i, c, size, labels_t, item_w, cnt, kind)
        loss -= _delta(i, target, kind, n_draws, c, size, cocounts, labels_t, item_w, weights, cnt, gtab, ftab)
    shuffle(stream, members, count)
    loss = _allocate(
        members, count, kind, n_draws, c, size, cocounts, labels_t, item_w, weights, cnt, gtab, ftab,
        acc, max_blocks, loss,
    )  # fmt: skip
    # (a) the same partition again (its items alone in one block): nothing to sweeten
    again = size[c[members[0]]] == weight
    for t in range(1, count):
        if not again:
            break
        again = c[members[t]] == c[members[0]]
    if again and optimum == 1.0:
        return before, optimum
    after, optimum_after = _sweeten(
        stream, kind, n_draws, c, size, cocounts, labels_t, item_w, weights, cnt, gtab, ftab, acc, order,
        margin, gap, drift, max_blocks, max_scans, loss,
    )  # fmt: skip
    if after < before - 1e-9 * (abs(before) + n_draws):
        return after, optimum_after
    # (b) undo: move back the items whose block changed
    for i in range(n):
        if c[i] != saved[i]:
            _remove(i, c, size, labels_t, item_w, cnt, kind)
            _add(i, saved[i], c, size, labels_t, item_w, cnt, kind)
    return before, optimum


@entry_nogil
def salso_runs(
    kind, n_draws, cocounts, labels_t, item_w, weights, gtab, ftab, max_blocks, p_seq, max_scans,
    max_zealous, first, stop, streams, labels_out, loss_out, cnt, c, size, order, acc, saved, members, margin, gap,
    drift, state,
):  # fmt: skip
    """SALSO runs, run r on its own stream ``streams[r]``, spread over T slots of
    buffers (slot t does runs t, t + T, ...): this call does slots ``first`` to
    ``stop - 1``, without the GIL, so that T Python threads can do one slot each at
    once. A run depends only on its stream, so the results are the same for any T and
    any number of threads. Or (``max_zealous`` = -1, R = T = 1) one more zealous
    update of the run left in slot 0 by the previous call (so Python can stop a run
    between updates; the same stream as the whole run).

    kind : 0 Binder (uses ``cocounts``), 1 from the draws (uses ``labels_t``, ``cnt``,
        ``gtab``: VI, or Binder with g(x) = x)
    n_draws : M, float
    cocounts : (n, n) int64 co-clustering counts N_ij (kind 0; else any (1, 1))
    labels_t : (n, U) int64 labels of the U distinct draws in [0, L), item-major
        (kind 1; else (n, 1)); with ``item_w``, n "items" may be groups of items
        with the same labels in every draw
    item_w : (n,) int64 number of items each row stands for (all 1 for kind 0)
    weights : (U,) float64 multiplicity of each distinct draw (sums to M)
    gtab : (N + 2,) float64, g(x) = f(x + 1) - f(x): VI (x + 1) log(x + 1) - x log x,
        Binder x (N items in all, the sum of ``item_w``)
    ftab : (N + 2,) float64, f(x): VI x log x, Binder x (x - 1) / 2 (groups: the change
        f(x + w) - f(x))
    max_blocks : int >= 1; p_seq : probability of sequential allocation;
    max_scans : int
    max_zealous : >= 0, whole runs: steps 1-2 then up to ``max_zealous`` zealous
        updates (step 3); -1: one zealous update, as above
    streams : (R, 4) uint64, :mod:`~pymc_partitions.kernels.random` streams, advanced
        in place
    labels_out : (R, n) int64, written: run r's block slots (not canonical)
    loss_out : (R,) float64, written: M * loss up to a constant of the draws
    Slot buffers (T = their first dimension, 1 <= T <= R), kept between the calls of
    one run: cnt (T, U, L, max_blocks) uint16 (N < 65536) or int32 (kind 1; else
    (T, 1, 1, max_blocks)); c, order, saved, members (T, n) int64; size (T,
    max_blocks) int64; acc (T, max_blocks) float64; margin (T, n) float64; gap (T, n,
    max_blocks) float64, or (T, 1, 1) to evaluate every item in every scan; drift (T,
    max_blocks) float64; state (T, 2) float64.
    """
    n_runs = streams.shape[0]
    slots = c.shape[0]
    for t in range(first, stop):
        for r in range(t, n_runs, slots):
            _run(
                kind, n_draws, cocounts, labels_t, item_w, weights, cnt[t], gtab, ftab, c[t], size[t],
                order[t], acc[t], saved[t], members[t], margin[t], gap[t], drift[t],
                max_blocks, p_seq, max_scans, max_zealous, streams[r], state[t],
            )  # fmt: skip
            for i in range(c.shape[1]):
                labels_out[r, i] = c[t, i]
            loss_out[r] = state[t, 0]


@entry
def draw_pair_counts(draws, item_w, table, out):
    """Pairs of items together in both of two draws, for every pair of draws.

    draws : (U, G) int64 labels in [0, L) of G items, or of G groups of items with the
    same labels in every draw; item_w : (G,) int64 items in each group (ones for
    items); table : (L, L) int64 scratch, all zero on entry and on exit; out : (U, U)
    int64, written: out[d, m] = sum_kl C(n_kl, 2), n_kl = the number of items with
    z^(d) = k and z^(m) = l (so out[d, d] counts the pairs of draw d).
    Dahl's (2006) criterion from the draws, without the n x n matrix: with weights w
    (multiplicities, sum M), M out[d, d] - 2 sum_m w_m out[d, m] equals
    :func:`pair_weight_scores` of draw d. Each table is filled group by group and each
    cell read and cleared the first time a group revisits it (as
    :func:`~pymc_partitions.kernels.contingency.pair_sums`). Cost O(U^2 G / 2).
    """
    n_unique, n = draws.shape
    for d in range(n_unique):
        x = draws[d]
        for m in range(d, n_unique):
            y = draws[m]
            for i in range(n):
                table[x[i], y[i]] += item_w[i]
            total = 0
            for i in range(n):
                cell = table[x[i], y[i]]
                if cell > 0:
                    total += cell * (cell - 1) // 2
                    table[x[i], y[i]] = 0
            out[d, m] = total
            out[m, d] = total


@entry
def pair_weight_scores(labels_t, cocounts, n_draws, out):
    """Dahl (2006) least-squares criterion of draws, up to a constant.

    labels_t : (n, U) unsigned/int labels of the draws to score, item-major
    cocounts : (n, n) int64 N_ij, co-clustering counts over all M = n_draws draws
    out : (U,) int64, written: out[m] = sum_{i<j, z_i = z_j in draw m} (M - 2 N_ij),
        which is M^2 * (sum_{i<j} (delta_ij^(m) - psm_ij)^2 - sum_{i<j} psm_ij^2) / M,
        so its argmin is Dahl's least-squares draw. Cost O(n^2 M / 2).
    """
    n, m = labels_t.shape
    for d in range(m):
        out[d] = 0
    for i in range(n):
        x = labels_t[i]
        for j in range(i + 1, n):
            y = labels_t[j]
            w = n_draws - 2 * cocounts[i, j]
            for d in range(m):
                if x[d] == y[d]:
                    out[d] += w
