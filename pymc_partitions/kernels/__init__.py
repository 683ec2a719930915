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

Compile units (what every move follows; compile time is part of speed, measured by
``examples/benchmark_compile.py`` and numba's compile events, ``_jit.CompileAnnouncer``):

1. **Specialise on types only where run time needs it.** numba compiles a kernel once
   per combination of argument types, so a difference that costs a branch or a
   multiply at run time is a field, not a type: tempering is the ``inv_t`` field of
   the records (:mod:`.tempering`), not a wrapper type. Measured and not taken: one
   record type for every prior (tables of a Gibbs-type prior, so a move would compile
   once per likelihood) made ARM's and bSM's updates 1.2x and 1.8x slower; a second
   level of overloads sharing each component's compiled primitive saved ARM x IRM a
   third of its compile but made its update 12 % slower.
2. **Three kinds of functions** (:mod:`._jit`): ``primitive`` (inlined at numba IR
   level: what runs per item, where a call would cost run time), ``routine`` (compiled
   once per signature and linked: a whole update or sweep, called O(1) times per
   entry call, where passing records by value costs nothing measurable; no CPython
   wrapper), ``entry`` (called from Python; ``entry_nogil`` when Python threads call it
   at once on independent tasks, as SALSO's runs: not numba's ``parallel=True``, which
   added 1.5-2 s to compile the SALSO entry).
3. **One call site per inlined piece.** numba types and lowers an inlined primitive
   once per call site, so a routine calls each large primitive once (split and merge
   share their launch, restricted scan and log joint: :func:`.split_merge.split_merge_update`).
4. **Shallow linking.** numba re-optimises, in LLVM, every routine an entry links, and
   again at every level of nesting: an array-only helper is compiled once as a
   routine only where its code is large; a routine does not call routines of routines
   where one level does.
   Not at any price: a loop over a coupled pair's two chains (one call site, X's or
   Y's records selected per iteration) made the coupled sweep 2x slower, and one
   shared loop for split-merge's moves back made its Gaussian update 3x slower; both
   were measured and reverted (``benchmark_coupled.py``, ``benchmark_split_merge.py``).
5. **Few entries per move.** Each entry compiles and re-optimises what it links once
   more; tests reach a move through the entry the step uses where they can, and a
   large piece that several entries need (the coupling draw, the OT plan) is a routine
   they all link, not inlined into each.
6. **No literal arguments to routines.** numba types a call while it is still inferring
   the caller: a variable set to a constant and changed later (``n = 0`` ...
   ``n += 1``), or a constant passed directly (``sample_pair(OT, ...)``), is first
   ``Literal[int]`` and the routine compiles twice (``transport._solve_edges``: 2 x 5 s).
   Start such a variable as ``np.int64(0)``; pass a variable, not a constant.
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
