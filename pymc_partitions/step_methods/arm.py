"""``pmp.ARM``: Adaptive Reconfiguration Moves, a population step across PyMC's chains."""

import time
import warnings
from typing import NamedTuple

import numpy as np

from pymc_partitions.versions import group_dataset
from pymc_partitions.distributions.partition import PartitionPriorRV
from pymc_partitions.distributions.validation import integer_arg
from pymc_partitions.kernels import arm, arm_bsm, gibbs
from pymc_partitions.step_methods.arm_history import History, HistoryChain
from pymc_partitions.step_methods.info import counters, record
from pymc_partitions.step_methods.population import PopulationStep

VARIANTS = {"arm": arm.ARM, "extended": arm.EXTENDED, "srm": arm.SRM, "sarm": arm.SARM,
            "bsm": arm.BSM}


class ARMBackgroundWarning(UserWarning):
    """ARM's chains have, or had, no background information (two different earlier
    partitions), so no ARM update runs: all chains started from one partition (the
    default start) and nothing else moved them. Start them apart with ``initvals``
    or ``initval="prior"``."""


def _start_advice(name):
    return (f"start the chains from different partitions, pm.sample(initvals=[{{'{name}': "
            f"labels_0}}, {{'{name}': labels_1}}, ...]) or initval=\"prior\" on the "
            f"partition variable (pmp.CRP('{name}', ..., initval=\"prior\"))")


def warn_chains_without_background(idata, model):
    """After ``pm.sample``: an :class:`ARMBackgroundWarning` naming the chains whose
    ARM step had no background information in any recorded iteration
    (``no_background`` true in every draw of ``sample_stats``, and of
    ``warmup_sample_stats`` when the tuning draws were kept): no ARM update ran in
    them. Nothing when the result has no ``no_background`` statistic (no ARM step) or
    a single recorded iteration (the first iteration of a run never has a past).

    Run by ``pm.sample``'s convergence checks (the hook
    :mod:`pymc_partitions.hooks.convergence_checks`), in the main process whatever ``cores``, so only
    with ``compute_convergence_checks=True`` (PyMC's default).
    """
    parts, chain_ids = [], None
    for group in ("warmup_sample_stats", "sample_stats"):
        try:
            if group not in idata:
                continue
            stats = group_dataset(idata, group)
        except (KeyError, AttributeError, TypeError):
            continue
        if "no_background" in stats.data_vars and stats["no_background"].sizes.get("draw"):
            da = stats["no_background"]
            order = ("chain", "draw") + tuple(d for d in da.dims if d not in ("chain", "draw"))
            parts.append(np.asarray(da.transpose(*order).values, dtype=bool))
            chain_ids = np.asarray(da["chain"].values)
    if not parts:
        return
    flags = np.concatenate(parts, axis=1)  # (chain, iteration, one per ARM step)
    if flags.shape[1] < 2:  # a first iteration never has a past: too short to judge
        return
    never = flags.reshape(flags.shape[0], flags.shape[1], -1).all(axis=1).any(axis=1)
    if not never.any():
        return
    chains = [int(c) for c in chain_ids[never]]
    names = [rv.name for rv in model.free_RVs
             if rv.owner is not None and isinstance(rv.owner.op, PartitionPriorRV)]
    name = names[0] if len(names) == 1 else "z"
    what = f"partition '{names[0]}'" if len(names) == 1 else "the partition"
    warnings.warn(
        f"ARM: chain(s) {chains} of {what} never had background information (two different "
        f"earlier partitions; no_background in every recorded draw): no ARM update ran in "
        f"them, they moved by their Gibbs sweeps (n_gibbs_sweeps) alone, or not at all. All "
        f"chains probably started from the same partition (the default start); "
        f"{_start_advice(name)}.",
        ARMBackgroundWarning,
        stacklevel=2,
    )


class ARMInfo(NamedTuple):
    """What one :class:`ARM` iteration did (one update, then the Gibbs sweeps).

    Attributes
    ----------
    split_proposed, split_accepted
        Whether the update proposed a split, and whether it was accepted (0 or 1).
    merge_proposed, merge_accepted
        The same for a merge.
    block_moves
        Blocks of c of two or more items moved as wholes by the update (lines 5-8).
    outside_moves_proposed, outside_moves_accepted
        ``"extended"``: blocks of c outside S moved into i's or j's block, and the
        same count when the update was accepted.
    no_background
        No two different partitions could be drawn: no update this iteration.
    arm_seconds
        Wall time of the update, the history's draw of z^a, z^b included.
    gibbs_seconds
        Wall time of the Gibbs sweeps.
    """

    split_proposed: np.int64
    split_accepted: np.int64
    merge_proposed: np.int64
    merge_accepted: np.int64
    block_moves: np.int64
    outside_moves_proposed: np.int64
    outside_moves_accepted: np.int64
    no_background: bool
    arm_seconds: np.float64
    gibbs_seconds: np.float64


class ARM(PopulationStep):
    r"""Adaptive Reconfiguration Moves across PyMC's chains.

    Herlau, Mørup, Schmidt & Teh, *Adaptive Reconfiguration Moves for MCMC inference
    in Dirichlet Process Mixtures*, Algorithm 3 (kernel:
    :mod:`pymc_partitions.kernels.arm`). Each iteration of each chain:

    1. **Background information** (§2.4, :mod:`.arm_history`): two different earlier
       partitions z^a, z^b, one from this chain's states at iterations ⌊t/2⌋ … t − 1,
       one from any chain's states at ⌊t/2⌋ … t (the S chains of ``pm.sample`` are
       the paper's S parallel chains: every chain sees the others' previous-iteration
       points); then (i, j) uniformly among the pairs on which z^a and z^b disagree.
    2. **One ARM update** (Algorithm 3; the other variants under ``variant``): the
       blocks of the coarsest common refinement c = z^a ∨ z^b ∨ z inside z_i ∪ z_j
       are moved as wholes (earmarked by their first element), the other items join
       or stay under the uniqueness constraint (eq. 17), every choice a restricted
       Gibbs move (eqs. 5–6), so the path to z* is unique and T(z*|z) is the
       product of its moves; accepted with probability
       min{1, q(z*) T(z|z*) / (q(z) T(z*|z))} (eq. 8), q the collapsed joint. Candidate
       lists by block size descending, then first element ascending, in a fresh
       random relabelling of the items (``relabel=True``, §2.4).
    3. **Gibbs sweeps** (§3): ``n_gibbs_sweeps`` full sweeps (Neal 2000, Alg. 3).

    The move is exact for every collapsed likelihood and partition prior of the
    library, and hyperparameters may be updated by other steps in the same
    ``pm.sample`` call (EscobarWest / HyperSlice by default, NUTS by ``step=``).

    **Adaptation** (§2.3). ARM is adaptive MCMC: given its background information each
    update is an exact Metropolis–Hastings move; the background is drawn from a window
    of S (t − ⌊t/2⌋) past states that grows with t, so the distribution it is drawn
    from, and the transition kernel with it, changes by O(1/t) per iteration. That is
    the diminishing-adaptation condition of Roberts & Rosenthal (2009, eq. 1.1); with
    the state space finite, containment holds, and the chain converges to the
    posterior. The current state of a chain is never its own background (the move
    would not be reversible with the same background). ``max_window=M`` bounds the
    history's memory (S M n label bytes) but stops the window growing: past
    t = 2M the kernel changes by O(1/M) per iteration and the argument no longer
    applies (each update is still an exact MH move given its background).

    Parameters
    ----------
    vars : list
        The partition variable (one per step).
    variant : {"arm", "extended", "srm", "sarm", "bsm"}, default "arm"
        ``"arm"``: Algorithm 3, as above.
        ``"extended"``: **a departure from the paper**, its §5 future work
        ("allowing movement of blocks of variables from outside the initial states
        i, j"): Algorithm 3 plus, after the block moves of lines 5–8, one more
        kind of block move. c = z^a ∨ z^b ∨ z is formed on every item, and each of
        its blocks B of two or more items outside S = z_i ∪ z_j (by size
        descending, then first element) stays in its block of z or joins i's or
        j's block (a merge: the merged block) as a whole, by a restricted block
        Gibbs move (eqs. 5–6); B(1) is its earmark and never moves again. B must
        stay when it is all that is left of its z-block's original members and
        newcomers are there (the block analogue of eq. 17). B's other members
        then move in line 16 between i's and j's blocks (a split) or stay (a
        merge). Paths stay unique, so T(z*|z) and the forced reverse T(z|z*) are
        products of the moves' probabilities as for ``"arm"`` (argument:
        :mod:`~pymc_partitions.kernels.arm`; tested against an enumeration of all
        paths). Why: late in a run Algorithm 3's merges leave items of S outside
        S*, and its reverse must bring them back one at a time; here they can
        come back as a block. Not in the paper: its Tables 3 and 5 are not
        evidence for this variant.
        ``"srm"``: Algorithm 2 (§2.1, simplified reconfiguration moves): no blocks,
        no history; (i, j) uniform over all pairs, z* starts from {i}, {j} (split)
        or {i, j} (merge) and every other item is visited one at a time.
        ``"sarm"``: §3.6.2's ablation without block moves: (i, j, z^a, z^b) from
        the history as for ARM and ARM's informed initialisation (z* starts from
        c_i, c_j, or c_i ∪ c_j), then Algorithm 2's item-by-item loop: no block
        moves (lines 5–8 of Algorithm 3). Kernel: :mod:`~pymc_partitions.kernels.arm`.
        ``"bsm"``: the ablation of §3.6.2 on split-merge: Jain & Neal's
        restricted-Gibbs split-merge (Algorithm 1) with ARM's (i, j, z^a, z^b) and a
        launch state started from c_i and c_j (c computed on the merged partition,
        the other blocks of c placed as wholes by restricted block Gibbs moves), then
        ``n_restricted_scans`` intermediate restricted scans; a split or merge of
        z_i, z_j only. Kernel: :mod:`~pymc_partitions.kernels.arm_bsm` (its module
        docstring lists where the paper is silent).
    n_gibbs_sweeps : int, default 1
        Full Gibbs sweeps after each update (0: none; ARM updates alone are not
        irreducible in general).
    n_restricted_scans : int, default 5
        ``"bsm"`` only: t, the intermediate restricted Gibbs scans from the launch
        state's initialisation (as :class:`~.SplitMerge`'s).
    relabel : bool, default True
        A fresh random item order for each update's candidate lists (§2.4); False:
        item order 0..n-1.
    max_window : int or None, default None
        Cap on the iterations of history kept (see Adaptation).
    model, rng, initial_point, compile_kwargs, blocked
        As for PyMC's own steps.

    Chains: ``"arm"``, ``"extended"``, ``"sarm"`` and ``"bsm"`` need at least 2
    (``pm.sample(chains=S)``; the paper uses S = 8); ``"srm"`` runs with any number.
    In the first iteration no chain has a past state: there is no ARM update (the
    Gibbs sweeps run), and none while a chain's window holds a single partition
    (``no_background``). So with every chain at the default start (one block) and
    ``n_gibbs_sweeps=0`` nothing ever moves: start the chains apart
    (``pm.sample(initvals=[...])`` or ``initval="prior"``). An
    :class:`ARMBackgroundWarning` says so when sampling starts (identical starts, no
    Gibbs sweeps), and after sampling for each chain that never had background
    information (with PyMC's convergence checks, ``compute_convergence_checks=True``).

    Sampler statistics
    ------------------
    n_clusters, largest_cluster_frac, log_joint : as for :class:`~.Gibbs`
    split_proposed, split_accepted, merge_proposed, merge_accepted : int
        This iteration's update, by kind (0 or 1 each).
    block_moves : int
        Blocks of c of two or more items moved as wholes by the update (lines 5–8);
        for ``"bsm"``, placed as wholes in the launch state; always 0 for ``"srm"``
        and ``"sarm"``.
    outside_moves_proposed, outside_moves_accepted : int
        ``"extended"``: blocks of c outside S that the proposal moved into i's or
        j's block, and the same count when the update was accepted (else 0);
        always 0 for the other variants.
    no_background : bool
        No two different partitions could be drawn: no update this iteration.
    arm_seconds, gibbs_seconds : float
        Wall time of the update (the history's draw of z^a, z^b included) and of the
        Gibbs sweeps: "standardized iterations" (§3.4, iterations in units of a Gibbs
        sweep's time) are
        ``(arm_seconds + gibbs_seconds).sum() / (gibbs_seconds.sum() / n_gibbs_sweeps)``.
        The first update of a process also loads (or compiles) the update kernel, in
        the second iteration (the first has no history): leave the first iterations
        out when pricing, as ``examples/benchmark_arm.py`` does.
    """

    name = "partition_arm"
    move_description = "an ARM update or its Gibbs sweeps"
    Info = ARMInfo

    def __init__(self, vars, variant="arm", n_gibbs_sweeps=1, relabel=True, max_window=None,
                 n_restricted_scans=5, **kwargs):
        if not isinstance(variant, str) or variant not in VARIANTS:
            raise ValueError(f"ARM: 'variant' must be one of {tuple(VARIANTS)}, got {variant!r}.")
        self.variant = variant
        self.n_gibbs_sweeps = integer_arg("n_gibbs_sweeps", n_gibbs_sweeps, "ARM", minimum=0)
        self.n_restricted_scans = integer_arg("n_restricted_scans", n_restricted_scans, "ARM",
                                              minimum=0)
        if not isinstance(relabel, bool | np.bool_):
            raise TypeError(f"ARM: 'relabel' must be True or False, got {relabel!r}.")
        self.relabel = bool(relabel)
        self.max_window = (None if max_window is None
                           else integer_arg("max_window", max_window, "ARM", minimum=2))
        self.min_chains = 1 if variant == "srm" else 2
        super().__init__(vars, **kwargs)
        if self.target.n < 2:
            raise ValueError(f"ARM: partition '{self.target.name}' has n = {self.target.n} "
                             f"item; an ARM update needs at least two items (use pmp.Gibbs).")

    def link_population(self, population, chain_index):
        """PyMC's population link (see :class:`PopulationStep`), then, once per run
        (chain 0): an :class:`ARMBackgroundWarning` when every chain starts from the
        same partition and there are no Gibbs sweeps (``n_gibbs_sweeps=0``, any variant
        but ``"srm"``): no chain could ever draw two different earlier partitions, so
        none would move unless another step moves the partition."""
        super().link_population(population, chain_index)
        if chain_index != 0 or self.variant == "srm" or self.n_gibbs_sweeps > 0:
            return
        starts = self.population_labels()
        if (starts == starts[0]).all():
            name = self.target.name
            warnings.warn(
                f"ARM: all {len(starts)} chains start from the same partition of '{name}' "
                f"and n_gibbs_sweeps=0: an ARM update needs two different earlier "
                f"partitions (background information), so no chain will move (every draw "
                f"the start, no_background in every iteration) unless another step moves "
                f"'{name}'. Either {_start_advice(name)}, or keep n_gibbs_sweeps >= 1.",
                ARMBackgroundWarning,
                stacklevel=2,
            )

    def start_chain(self, rng):
        super().start_chain(rng)
        n = self.target.n
        self._scratch = arm.new_scratch(n)
        self._order = np.arange(n, dtype=np.int64)
        self._counts = np.zeros(len(arm.Counts._fields), dtype=np.int64)

    # The container: the chain and its history (made at the first update, when this
    # chain's index in the population is known).
    def new_container(self, labels, args):
        return HistoryChain(self.new_chain(labels, args))

    def load_container(self, container, labels, args):
        return HistoryChain(self.new_chain(labels, args), container.history)

    def chain_of(self, container):
        return container.chain

    def move(self, container, args):
        chain = container.chain
        stream, prior_params, params, data = args.stream, args.prior_params, args.params, args.data
        counts = self._counts
        counts[:] = 0
        background = None
        start = time.perf_counter()
        if self.variant == "srm":
            background = (chain.labels, chain.labels)  # unused by Algorithm 2
        else:
            if container.history is None:
                container.history = History(self.target.n, self.this_chain, self.max_window)
            container.history.record(self.population_labels(), canonical=True)
            background = container.history.draw(stream)
        if background is not None and self.variant == "bsm":
            outcome = arm_bsm.bsm_iteration(
                stream, chain.state, prior_params, params, chain.stats, data, background[0],
                background[1], self.n_restricted_scans, self.relabel, self._order,
                self._scratch, chain.log_w, counts,
            )
        elif background is not None:
            outcome = arm.arm_iteration(
                stream, chain.state, prior_params, params, chain.stats, data, background[0],
                background[1], VARIANTS[self.variant], self.relabel, self._order,
                self._scratch, chain.log_w, counts,
            )
        if background is not None and outcome == arm.FAILED:
            raise FloatingPointError(
                f"ARM: an update of partition '{self.target.name}' met a NaN probability "
                f"or log joint (hyperparameter values {chain.hyper_values}); the "
                f"likelihood's hyperparameters are probably outside their support."
            )
        arm_seconds = time.perf_counter() - start
        start = time.perf_counter()
        failed = gibbs.run_sweeps(stream, self.n_gibbs_sweeps, chain.state, prior_params,
                                  params, chain.stats, data, chain.log_w, chain.order)
        gibbs_seconds = time.perf_counter() - start
        self.fail_if(failed, args)
        return record(ARMInfo, counters(arm.Counts, counts), no_background=background is None,
                      arm_seconds=arm_seconds, gibbs_seconds=gibbs_seconds)
