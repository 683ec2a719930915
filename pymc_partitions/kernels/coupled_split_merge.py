r"""Coupled split-merge updates: Nguyen, Trippe & Broderick (2022), Algorithm 3, lines 2-4.

Each update draws one pair of distinct items (i, j) uniformly (line 2) and one key
for the counter-based uniforms of :mod:`.random`, and runs Jain & Neal's
split-merge update (:func:`~.split_merge.split_merge_update`, the single-chain
kernel itself) on X (line 3) and on Y (line 4) with the same (i, j) and key: the
two chains use the same uniform for the same decision (item h's launch block, its
restricted scans, the acceptance), so chains that agree on the two blocks make the
same proposal and the same decision. The coupled Gibbs sweep of lines 5-8 is
:func:`~.coupled_gibbs.coupled_gibbs_sweep`, which the driver calls next.

A split or merge moves whole blocks, so afterwards the intersection table and the
distance are rebuilt from the labels (O(n + K K'), once per iteration, less than
the sweep that follows; within the sweep they are maintained per item).

Each chain alone is the single-chain kernel ``split_merge.run_split_merge`` with
one Gibbs sweep: its (i, j) and key come from the same stream draws in the same
order, so X's marginal is exact whatever happens in Y.
"""

from pymc_partitions.kernels._jit import entry, primitive
from pymc_partitions.kernels.coupled_gibbs import DONE, fill_overlap, recount_created
from pymc_partitions.kernels.split_merge import FAILED, draw_update, split_merge_update


@primitive
def _zero_active_region(x, y, overlap):
    for a in range(x.counts[0]):
        for b in range(y.counts[0]):
            overlap[a, b] = 0


@entry
def coupled_split_merge_updates(stream, n_proposals, n_scans, proposal, x, y, prior_params,
                                params, stats_x, stats_y, data, members, origin, outcomes,
                                sc):
    """``n_proposals`` coupled split-merge updates of (X, Y) (Algorithm 3, lines 2-4).

    stream : (4,) uint64, the pair's stream: each update draws i, j (distinct,
        uniform) and a key, in the order ``run_split_merge`` draws them.
    n_scans, proposal : as for ``split_merge.run_split_merge``.
    members, origin : (n,) int64 scratch; outcomes : (4,) int64, X's outcome counts.
    sc : ``coupled_gibbs.CoupledScratch``; its overlap table must have room for
        K + n_proposals + 1 blocks of either chain (the driver grows it first).

    Returns -1, or the item i of an update that met a NaN (the pair must be
    reloaded).
    """
    n = x.labels.shape[0]
    _zero_active_region(x, y, sc.overlap)
    for _ in range(n_proposals):
        i, j, key = draw_update(stream, n)
        outcome, _, _ = split_merge_update(x, prior_params, params, stats_x, data, i, j, key,
                                           n_scans, proposal, members, origin)
        if outcome == FAILED:
            return i
        outcomes[outcome] += 1
        outcome, _, _ = split_merge_update(y, prior_params, params, stats_y, data, i, j, key,
                                           n_scans, proposal, members, origin)
        if outcome == FAILED:
            return i
    fill_overlap(x, y, sc)
    recount_created(x, sc.x_created)
    recount_created(y, sc.y_created)
    return DONE
