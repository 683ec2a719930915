"""How kernels report a full conditional with no admissible choice.

A conditional whose log weights are all -inf (or contain a NaN) cannot be sampled.
Drawing anyway would pick index -1, i.e. silently the last candidate. Kernels
instead leave the state as it was before that update and report it:

- entries that run many updates (``gibbs.run_sweeps``, ``split_merge.run_split_merge``)
  return the item whose update failed, -1 if none, so the caller can name it; the
  step methods raise :class:`ImpossibleConditionalError` with the model's context,
  other callers use :func:`check_item`;
- single-update entries (``sweep_block_entry``, ``split_merge_entry``,
  ``restricted_update_entry``) raise ``ValueError`` with a fixed message (numba
  cannot format messages without its reference-counting runtime); the caller knows
  the items it passed.
"""

NO_CANDIDATE_MESSAGE = (
    "pymc_partitions kernel: no candidate block has positive probability (every log "
    "weight is -inf, or one is NaN); the state is unchanged. Check the hyperparameters "
    "(e.g. a concentration of 0, non-finite values), the data (non-finite or overflowing "
    "values) and any constraint of the prior (colouring, fixed number of blocks)."
)

NAN_SPLIT_MERGE_MESSAGE = (
    "pymc_partitions kernel: a split-merge update met a NaN restricted weight or log "
    "joint; the state is restored. Check the hyperparameters (non-finite values) and the "
    "data (non-finite or overflowing values)."
)

CHECK_HINT = (
    "Check the hyperparameter values (e.g. a concentration alpha = 0, or non-finite "
    "values), the data (non-finite values, or values so large that the sufficient "
    "statistics overflow), and whether a constrained prior (a proper colouring, a fixed "
    "number of blocks) leaves this item no admissible block."
)


class ImpossibleConditionalError(ValueError):
    """A full conditional in a partition move gave every choice zero probability (or
    NaN). The kernel state is left as it was before the failing item's update."""

    def __init__(self, message, item=-1):
        super().__init__(message)
        self.item = int(item)


def check_item(failed, where="kernel"):
    """Raise :class:`ImpossibleConditionalError` if ``failed`` (an entry's return
    value) names an item, i.e. is >= 0."""
    failed = int(failed)
    if failed >= 0:
        raise ImpossibleConditionalError(
            f"{where}: item {failed} has no block of positive probability (every log "
            f"weight is -inf, or one is NaN), so its conditional cannot be sampled; the "
            f"state is as before its update. {CHECK_HINT}",
            failed,
        )
