"""Numba kernels: arrays in, arrays out; no PyMC or PyTensor imports (DESIGN §1, §3).

- :mod:`.state`: the partition state (labels, sizes, slot bookkeeping);
- :mod:`.components`: collapsed likelihoods as ``add``/``remove``/``log_pred`` primitives;
- :mod:`.priors`: partition priors in the same delta form;
- moves, one per module: :mod:`.gibbs` (Neal 2000, Alg. 3),
  :mod:`.split_merge` (Jain & Neal 2004, restricted Gibbs split-merge) and
  :mod:`.sweep_block` (Herlau et al. 2016, eqs. 5-6), the block primitive later
  moves are built from, :mod:`.arm` (Herlau et al. 2016, Algorithms 2-3:
  adaptive reconfiguration moves, their simplified form sRM and the ablation sARM,
  §3.6.2) and :mod:`.arm_bsm` (§3.6.2's bSM: split-merge launched from ARM's
  background information);
- :mod:`.tempering`: any (component, prior) pair raised to 1/t, a run-time
  field ``inv_t`` of the params records (the targets of population samplers on a
  temperature ladder);
- Population Based Clustering (Goswami, Liu & Wong 2005): :mod:`.mutation` (§3.1),
  :mod:`.crossover` (SCSC:TWO-NEW, SCSC:ONE-NEW, SCRC; §3.3-3.5) and
  :mod:`.exchange` (§3.6);
- :mod:`.random`: explicit 64-bit random streams (one per chain, from a
  ``numpy.random.SeedSequence``) and counter-based uniforms, so two chains can
  share random numbers;
- :mod:`.bookkeeping`: loading labels, refreshing caches, the log joint.

Moves are module-level functions over generic primitives; numba specialises them
to a component and a prior from the types of their params records and caches the
result on disk.
"""

from pymc_partitions.kernels import arm, arm_bsm, gibbs, split_merge, sweep_block, tempering
from pymc_partitions.kernels.bookkeeping import (
    assign_labels,
    log_joint,
    refresh_all,
    refresh_blocks,
    summarise,
)
from pymc_partitions.kernels.state import PartitionState, canonical_labels, new_state

__all__ = [
    "PartitionState",
    "arm",
    "arm_bsm",
    "assign_labels",
    "canonical_labels",
    "gibbs",
    "log_joint",
    "new_state",
    "refresh_all",
    "refresh_blocks",
    "split_merge",
    "summarise",
    "sweep_block",
    "tempering",
]
