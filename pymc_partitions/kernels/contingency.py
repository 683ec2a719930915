"""Contingency-table sums of two partitions and co-clustering counts (numba).

Every pair-counting and information distance between partitions a and b of n
items is a function of the contingency table n_kl = |A_k ∩ B_l| and its margins
a_k = |A_k|, b_l = |B_l|, through sums of the form sum f(n_kl) with f(x) = x^2
(pair counts) or f(x) = x log x (entropies). :func:`pair_sums` returns these six
sums for many draws against one reference in O(n) per draw: the table is filled
item by item, and each occupied cell is read and cleared the first time an item
revisits it, so neither a K x K' scan nor a zeroing pass is needed (the scratch
table is left all zero for the next draw). This is the incremental
intersection-count idea of Nguyen et al. (2022, Prop. 1).

:func:`coclustering_counts` counts, for a rectangle of item pairs, in how many
draws the two items share a block: labels transposed to (n, draws) in the
narrowest integer type so that one pair is one contiguous vector comparison.
"""

import math

from pymc_partitions.kernels._jit import entry, primitive


@primitive
def xlogx(x):
    """x log x with 0 log 0 = 0 (natural logarithm)."""
    return x * math.log(x) if x > 0 else 0.0


@entry
def pair_sums(draws, reference, table, row_sums, col_sums, out):
    """Contingency sums of each draw against one reference partition.

    draws : (m, n) int64, labels of each draw in [0, table.shape[0])
    reference : (n,) int64, labels in [0, table.shape[1])
    table : (Ka, Kb) int64 scratch, all zero on entry and on exit
    row_sums : (Ka,) int64 scratch, zero on entry and exit
    col_sums : (Kb,) int64 scratch, zero on entry and exit
    out : (m, 6) float64, per draw
        [sum a_k^2, sum b_l^2, sum n_kl^2, sum a_k log a_k, sum b_l log b_l,
         sum n_kl log n_kl]

    Cost O(n) per draw.
    """
    m, n = draws.shape
    for d in range(m):
        for i in range(n):
            a = draws[d, i]
            b = reference[i]
            table[a, b] += 1
            row_sums[a] += 1
            col_sums[b] += 1
        sa2 = 0.0
        sb2 = 0.0
        s2 = 0.0
        sal = 0.0
        sbl = 0.0
        sl = 0.0
        for i in range(n):
            a = draws[d, i]
            b = reference[i]
            c = table[a, b]
            if c > 0:
                s2 += c * c
                sl += xlogx(c)
                table[a, b] = 0
            c = row_sums[a]
            if c > 0:
                sa2 += c * c
                sal += xlogx(c)
                row_sums[a] = 0
            c = col_sums[b]
            if c > 0:
                sb2 += c * c
                sbl += xlogx(c)
                col_sums[b] = 0
        out[d, 0] = sa2
        out[d, 1] = sb2
        out[d, 2] = s2
        out[d, 3] = sal
        out[d, 4] = sbl
        out[d, 5] = sl


@entry
def coclustering_counts(labels_t, rows, cols, symmetric, out):
    """Number of draws in which items share a block, for a rectangle of pairs.

    labels_t : (n, m) unsigned integers, draw labels transposed (item-major)
    rows : (r,) int64 item indices; cols : (c,) int64 item indices
    symmetric : if True, ``rows`` equals ``cols`` and only the upper triangle
        (j >= i) is computed and mirrored
    out : (r, c) float32/float64 or int32, written (not accumulated)

    Cost O(r c m) byte comparisons, vectorised along the draws.
    """
    m = labels_t.shape[1]
    for p in range(rows.shape[0]):
        x = labels_t[rows[p]]
        start = p if symmetric else 0
        for q in range(start, cols.shape[0]):
            y = labels_t[cols[q]]
            same = 0
            for d in range(m):
                same += x[d] == y[d]
            out[p, q] = same
            if symmetric:
                out[q, p] = same
