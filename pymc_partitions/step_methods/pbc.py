r"""Population Based Clustering (Goswami, Liu & Wong 2005): a tempered population of
partitions inside one chain.

:class:`TemperedPopulation` holds N kernel states (one
:class:`~pymc_partitions.step_methods.chain_state.ChainState` per member, made
with :func:`~pymc_partitions.step_methods.chain_state.clone` and reloaded with
:func:`~pymc_partitions.step_methods.chain_state.copy_into`: one state type) on a
temperature ladder :math:`t_1 > \dots > t_N`; rung r samples
:math:`\pi(z)^{1/t_r}` through the tempering wrapper
(:mod:`pymc_partitions.kernels.tempering`). The members never move between
states: ``member_of_rung[r]`` names the state at rung r, and an accepted exchange
swaps two entries (the statistics do not depend on the temperature). The coldest
member (rung N, :math:`t_N = \tau_{min}`) is the sample, from :math:`\pi^{1/t_N}`:
the posterior only when :math:`t_N = 1`, so :class:`PBC`'s ``mode`` says which
(:data:`MODES`, :func:`check_mode`): "sample" (t_N = 1), "optimise" (t_N < 1,
§7.3) or "tempered" (any t_N, by name).

Moves (Algorithm 4.1): the mutation of §3.1 (:mod:`pymc_partitions.kernels.mutation`)
of every member or N crossovers of one kind (§3.3-3.5,
:mod:`pymc_partitions.kernels.crossover`), then N random exchanges of §3.6
(:mod:`pymc_partitions.kernels.exchange`). :class:`PBC` is the step method running
them inside ``pm.sample`` (exported as ``pmp.PBC``; chosen with ``step=``, never
assigned automatically); :func:`pbc_ladder` builds a ladder by the paper's §4 recipe.
"""

import itertools
import warnings
from typing import NamedTuple

import numpy as np
from pymc.model import modelcontext

from pymc_partitions.distributions.partition import PartitionPriorRV
from pymc_partitions.distributions.validation import integer_arg, number_arg
from pymc_partitions.kernels import canonical_labels, crossover, mutation
from pymc_partitions.kernels.bookkeeping import log_joint_entry
from pymc_partitions.kernels.exchange import run_exchanges
from pymc_partitions.kernels.random import new_stream
from pymc_partitions.kernels.tempering import temper
from pymc_partitions.step_methods.base import PartitionStep, step_arguments
from pymc_partitions.step_methods.chain_state import clone, copy_into
from pymc_partitions.step_methods.info import counters, record
from pymc_partitions.step_methods.target import PartitionModelError, PartitionTarget


def check_ladder(temperatures, owner="PBC"):
    """The ladder as a (N,) float64 array; a ValueError unless it is a non-empty,
    finite, positive, strictly decreasing sequence (t_1 > ... > t_N: the last rung
    is the coldest, the one sampled). Entries must be numbers: strings ("4") and
    booleans are refused, not converted."""
    try:
        temps = np.asarray(temperatures)
    except (TypeError, ValueError):
        temps = None
    entries = temperatures if isinstance(temperatures, list | tuple) else ()
    strings = any(isinstance(t, str | bytes) for t in entries) or (
        temps is not None and temps.dtype.kind in "US")
    booleans = any(isinstance(t, bool | np.bool_) for t in entries) or (
        temps is not None and temps.dtype.kind == "b")
    if strings or booleans:
        what = "strings" if strings else "booleans"
        raise ValueError(
            f"{owner}: 'temperatures' must be numbers t_1 > ... > t_N (e.g. [4.0, 2.0, "
            f"1.0]), got {what}: {temperatures!r}."
        )
    try:
        temps = None if temps is None else np.asarray(temps, dtype=np.float64)
    except (TypeError, ValueError):
        temps = None
    if temps is None or temps.ndim != 1 or temps.size == 0:
        raise ValueError(
            f"{owner}: 'temperatures' must be a non-empty 1-d sequence of numbers "
            f"t_1 > ... > t_N, got {temperatures!r}."
        )
    if not (np.all(np.isfinite(temps)) and np.all(temps > 0)):
        raise ValueError(f"{owner}: every entry of 'temperatures' must be finite and > 0, "
                         f"got {temps}.")
    if np.any(np.diff(temps) >= 0):
        raise ValueError(
            f"{owner}: 'temperatures' must be strictly decreasing (t_1 > ... > t_N, the "
            f"last rung the coldest, whose member is the sample), got {temps}."
        )
    return temps


MODES = ("sample", "optimise", "tempered")


class LadderWarning(UserWarning):
    """:func:`pbc_ladder` could not place every pair of neighbouring rungs in its
    acceptance band (the message names the pairs and their estimated Â): exchanges
    between them will be rarer than asked, so the hot rungs help the cold ones less.
    Sampling is still exact (any ladder ending at 1 is), only slower to mix."""


def check_mode(mode, coldest, owner, what):
    """``mode`` checked against the coldest temperature ``coldest`` (t_N of a ladder or
    ``tau_min``, named ``what`` in the messages): "sample" needs t_N = 1 (the
    posterior), "optimise" t_N < 1 (a sharpened target whose best visited partition
    is kept), "tempered" any t_N > 0 (the trace samples pi^(1/t_N), asked for by
    name). A ValueError names ``what`` and ``mode`` and says what to pass."""
    mode = _choice_arg("mode", mode, MODES, owner)
    if mode == "sample" and coldest != 1.0:
        raise ValueError(
            f"{owner}: 'mode' = 'sample' (the default) draws from the posterior, which "
            f"needs the coldest temperature t_N = 1, but {what} gives t_N = {coldest:g}: "
            f"the draws would come from the posterior raised to the power 1/{coldest:g}. "
            f"End the ladder at 1.0 (pmp.pbc_ladder(mode='sample') does); or ask by name "
            f"for what t_N = {coldest:g} gives: mode='optimise' (t_N < 1, stochastic "
            f"search keeping the best partition seen) or mode='tempered' (draws from "
            f"pi^(1/t_N)).")
    if mode == "optimise" and not coldest < 1.0:
        raise ValueError(
            f"{owner}: 'mode' = 'optimise' needs the coldest temperature t_N < 1 (the "
            f"sharpened target pi^(1/t_N) concentrates on the modes), but {what} gives t_N = "
            f"{coldest:g}. Lower the coldest temperature ({what}) below 1 (the paper's "
            f"§7.3 uses 0.5), or use mode='sample' with t_N = 1 to sample the posterior.")
    return mode


class TemperedPopulation:
    """N kernel states on a temperature ladder (see the module docstring).

    Parameters
    ----------
    chain : ChainState
        The starting state; every member starts as a copy of it (:func:`clone`).
    temperatures : sequence of float
        t_1 > ... > t_N > 0.

    Attributes
    ----------
    members : list of ChainState; ``member_of_rung`` (N,) int64; ``log_targets``
    (N,) float64, each member's untempered log target (valid after
    :meth:`update_log_targets`); ``mutation_outcomes`` (4,) int64 (split rejected,
    split accepted, merge rejected, merge accepted, summed over members);
    ``exchange_proposed``, ``exchange_accepted`` (N - 1,) int64 per adjacent pair
    (r, r + 1); ``crossover_outcomes`` (3,) int64 (no move possible, rejected,
    accepted) and ``crossover_changed``, the accepted crossovers that changed a
    member's partition. The counters accumulate; :meth:`reset_counts` zeroes them.
    """

    def __init__(self, chain, temperatures):
        self.temperatures = check_ladder(temperatures)
        self.inv_temps = 1.0 / self.temperatures
        n_rungs = self.temperatures.size
        self.members = [clone(chain) for _ in range(n_rungs)]
        self.member_of_rung = np.arange(n_rungs, dtype=np.int64)
        self.log_targets = np.full(n_rungs, np.nan)
        self.mutation_outcomes = np.zeros(len(mutation.Outcomes._fields), dtype=np.int64)
        self.exchange_proposed = np.zeros(max(n_rungs - 1, 0), dtype=np.int64)
        self.exchange_accepted = np.zeros(max(n_rungs - 1, 0), dtype=np.int64)
        self.crossover_outcomes = np.zeros(len(crossover.Outcomes._fields), dtype=np.int64)
        self.crossover_changed = 0
        self._tempered = None
        self._tempered_of = None
        n = chain.state.labels.shape[0]
        self._table = np.zeros((n, n), dtype=np.int64)
        self._rnz = np.zeros(n, dtype=np.int64)
        self._cnz = np.zeros(n, dtype=np.int64)
        self._buf = np.zeros(n, dtype=np.int64)
        self._old = np.zeros(n, dtype=np.int64)
        self._before = np.zeros((2, n), dtype=np.int64)
        self._maps = np.zeros((2, n), dtype=np.int64)
        self._lw = np.zeros(n_rungs)
        self._lw_scratch = np.zeros(n_rungs)

    @property
    def n_rungs(self):
        return self.temperatures.size

    def reset_counts(self):
        self.mutation_outcomes[:] = 0
        self.crossover_outcomes[:] = 0
        self.crossover_changed = 0
        self.exchange_proposed[:] = 0
        self.exchange_accepted[:] = 0

    def load(self, chain):
        """Every member becomes a copy of ``chain`` (:func:`copy_into`), the rungs in
        their initial order."""
        for member in self.members:
            copy_into(member, chain)
        self.member_of_rung[:] = np.arange(self.n_rungs)
        self.log_targets[:] = np.nan

    def coldest(self):
        """The member at the coldest rung (t_N): the sample."""
        return self.members[self.member_of_rung[-1]]

    def at_rung(self, r):
        return self.members[self.member_of_rung[r]]

    def tempered(self, prior_params, params):
        """Per rung, the ``(prior, params)`` of pi^(1/t_r) (rebuilt when the params
        objects change)."""
        key = (prior_params, params)
        if self._tempered_of is None or any(a is not b for a, b in zip(key, self._tempered_of)):
            self._tempered = [temper(prior_params, params, b) for b in self.inv_temps]
            self._tempered_of = key
        return self._tempered

    def mutate(self, stream, prior_params, params, data, n_updates, q_s):
        """``n_updates`` §3.1 mutations of every member at its rung's temperature, the
        rungs in order. Returns -1, or the item of a NaN ratio (the run stops)."""
        tempered = self.tempered(prior_params, params)
        for r in range(self.n_rungs):
            member = self.at_rung(r)
            prior_t, params_t = tempered[r]
            failed = mutation.run_mutations(stream, n_updates, member.state, prior_t, params_t,
                                            member.stats, data, q_s, self.mutation_outcomes)
            if failed >= 0:
                return int(failed)
        return -1

    def update_log_targets(self, prior_params, params):
        """Recompute every member's untempered log target (O(K) each)."""
        for m, member in enumerate(self.members):
            self.log_targets[m] = log_joint_entry(member.state, prior_params, params,
                                                  member.stats)

    def crossover(self, stream, prior_params, params, data, n_updates, kind, boltzmann,
                  selection_temperature=1.0):
        """``n_updates`` crossovers of one ``kind`` (:mod:`pymc_partitions.kernels.crossover`:
        ``TWO_NEW``, ``ONE_NEW``, ``SCRC_SAME``, ``SCRC_RANDOM``), parents chosen with
        Boltzmann weights at ``selection_temperature`` or uniformly. ``prior_params``,
        ``params``: the untempered target. Needs current :attr:`log_targets` (kept
        current). Counts go to ``crossover_outcomes`` (no move possible, rejected,
        accepted). A NaN ratio raises ValueError (the state as before that update)."""
        if self.n_rungs < 2:
            return
        inv_s = 1.0 / float(selection_temperature)
        for _ in range(n_updates):
            outcome, _ = self.crossover_once(stream, prior_params, params, data, kind,
                                             boltzmann, inv_s)
            if outcome == crossover.FAILED:
                raise ValueError(
                    "PBC: a crossover met a NaN log target ratio (a NaN in the partition's "
                    "log density); the population is as before that move.")
            if outcome >= 0:
                self.crossover_outcomes[outcome] += 1

    def crossover_once(self, stream, prior_params, params, data, kind, boltzmann, inv_s):
        """One crossover (see :meth:`crossover`; ``inv_s`` = 1/s): ``(outcome, log
        ratio)``, outcome -1 when fewer than two rungs."""
        boltzmann = bool(boltzmann)
        table, rnz, cnz, buf, lw = self._table, self._rnz, self._cnz, self._buf, self._lw
        a, b = crossover.choose_members(stream, kind, boltzmann, inv_s, self.log_targets,
                                        self.member_of_rung, lw, self._lw_scratch)
        if a < 0:
            return -1, 0.0
        # The labels before, to count accepted crossovers that change a partition.
        moved = [self.at_rung(a), self.at_rung(b)] if kind == crossover.TWO_NEW else [
            self.at_rung(b)]
        for row, member in enumerate(moved):
            self._before[row] = member.state.labels
        if kind == crossover.TWO_NEW:
            mi, mj = moved
            outcome, log_ratio = crossover.two_new_update(
                stream, a, b, mi.state, mi.stats, mj.state, mj.stats, prior_params, params,
                data, self.inv_temps, self.log_targets, self.member_of_rung, inv_s, boltzmann,
                lw, table, rnz, cnz, buf)
        else:
            other = 2 * b - a  # the child's other neighbour, if any
            if not 0 <= other < self.n_rungs:
                other = -1
            parent, child = self.at_rung(a), self.at_rung(b)
            other_state = self.at_rung(other).state if other >= 0 else parent.state
            outcome, log_ratio = crossover.guided_update(
                stream, kind, a, b, other, parent.state, other_state, child.state,
                child.stats, prior_params, params, data, self.inv_temps, self.log_targets,
                self.member_of_rung, inv_s, boltzmann, lw, table, rnz, cnz, buf, self._old)
        if outcome == crossover.ACCEPTED and not all(
                crossover.same_partition(self._before[row], member.state.labels, *self._maps)
                for row, member in enumerate(moved)):
            self.crossover_changed += 1
        return outcome, log_ratio

    def exchange(self, stream, n_updates):
        """``n_updates`` §3.6 random exchanges (needs current :attr:`log_targets`)."""
        run_exchanges(stream, n_updates, self.inv_temps, self.log_targets, self.member_of_rung,
                      self.exchange_proposed, self.exchange_accepted)


CROSSOVERS = {
    "two_new": crossover.TWO_NEW,
    "one_new": crossover.ONE_NEW,
    "scrc_same": crossover.SCRC_SAME,
    "scrc_random": crossover.SCRC_RANDOM,
}
SELECTIONS = ("boltzmann", "random")


def _choice_arg(name, value, options, owner="PBC"):
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{owner}: '{name}' must be one of {list(options)}, got {value!r}.")
    return value


class PBCInfo(NamedTuple):
    """What one :class:`PBC` iteration did (mutation or crossovers, then exchanges).

    Attributes
    ----------
    log_target
        The coldest member's tempered log target, log_joint / t_N.
    mutated
        Whether this iteration mutated (else it crossed over).
    split_proposed, split_accepted, merge_proposed, merge_accepted
        This iteration's mutation counts, over all members.
    crossover_proposed, crossover_accepted
        Crossovers that could be proposed, and those accepted.
    crossover_changed
        Accepted crossovers that changed a member's partition.
    exchange_proposed, exchange_accepted
        (N - 1,) int64 exchanges per adjacent pair of rungs (an object per draw).
    best_log_joint
        The largest untempered log target any member has had so far.
    best_partition
        (n,) int64 canonical labels of that partition (``mode="optimise"``; else empty).
    """

    log_target: np.float64
    mutated: bool
    split_proposed: np.int64
    split_accepted: np.int64
    merge_proposed: np.int64
    merge_accepted: np.int64
    crossover_proposed: np.int64
    crossover_accepted: np.int64
    crossover_changed: np.int64
    # (N - 1,) arrays per draw: PyMC's trace stores stats as scalars, so they travel
    # as objects (as pmp.CoupledGibbs' coupled_labels).
    exchange_proposed: object
    exchange_accepted: object
    best_log_joint: np.float64
    best_partition: object


class PBC(PartitionStep):
    r"""Population Based Clustering: a tempered population of partitions in one chain.

    Goswami, Liu & Wong (2005), *Evolutionary Monte Carlo methods for clustering*
    (JCGS 16(4), 2007), Algorithm 4.1. The chain holds a population of N partitions
    ("chromosomes") on a temperature ladder :math:`t_1 > \dots > t_N =
    \tau_{min}`; member r samples :math:`f_r \propto \pi(z)^{1/t_r}`, the partition's
    collapsed target raised to 1/t_r (:mod:`pymc_partitions.kernels.tempering`), and
    the population the product :math:`\prod_r f_r` (eq. 2). One iteration:

    1. with probability :math:`p_m` (``mutation_rate``) the **mutation** of every
       member (§3.1, the split/merge-one-item Metropolis-Hastings move with split
       probability :math:`q_s`, eq. 3); otherwise N **crossovers** of one kind
       (``crossover``; the paper never mixes kinds in a run):

       - ``"two_new"``, SCSC:TWO-NEW (§3.3, eqs. 4-5): two members swap the items of
         two cells :math:`A_{k_1} \cap B_{l_1}`, :math:`A_{k_2} \cap B_{l_2}` of their
         intersection table; both change;
       - ``"one_new"``, SCSC:ONE-NEW (§3.4, eqs. 6-8): a parent and a neighbouring
         child; the child's two cells in one parent block swap; the parent stays;
       - ``"scrc_same"`` / ``"scrc_random"``, SCRC:SAME-SIZE / RANDOM-SIZE (§3.5,
         eqs. 9-10): the child's two cells are reallocated at random, keeping the
         cell sizes or with a uniform size;

    2. N **random exchanges** between neighbouring rungs (§3.6, eq. 11).

    Parents are chosen uniformly ("-r-r", ``selection="random"``) or with Boltzmann
    weights :math:`\exp\{-H(x_r)/s\}` ("-b-b", ``selection="boltzmann"``), H = -log
    pi the untempered energy and s the ``selection_temperature``. Every acceptance
    ratio is the exact Metropolis-Hastings ratio of the move as implemented: where
    the paper drops proposal terms as cancelling, they are computed unless they
    provably cancel (the selection probabilities of the pair before and after, the
    role-dependent (k, l) choice probability of TWO-NEW with Boltzmann selection, and
    in eq. 8 each possible parent's own (k, l) and reallocation probability; see
    :mod:`pymc_partitions.kernels.crossover`).

    The trace holds the coldest member (rung N), whose target is
    :math:`\pi^{1/t_N}`, so what the draws are depends on :math:`t_N = \tau_{min}`,
    and that must be asked for by name (``mode``; a ladder that does not fit the
    mode is refused, since e.g. ``temperatures=[8, 4, 2]`` would silently sample
    the posterior raised to 1/2):

    - ``mode="sample"`` (default): :math:`t_N = 1`, the draws are from the posterior
      (the population's product target has :math:`f_N = \pi`, eq. 2);
    - ``mode="optimise"``: :math:`t_N < 1`, the sharpened :math:`\pi^{1/t_N}`, a
      stochastic optimiser (the paper's §7.3 k-means problem:
      :class:`~pymc_partitions.FixedBlocks` with :class:`~pymc_partitions.KMeansEnergy`),
      and the step reports the best partition any member visited (stats
      ``best_log_joint``, ``best_partition``);
    - ``mode="tempered"``: any :math:`t_N > 0`, the draws are from the tempered
      target :math:`\pi^{1/t_N}` (e.g. a power posterior with :math:`t_N > 1`); it is
      allowed because it is an exact sampler of a well-defined target, but only by
      name.

    PyMC's chains are independent populations; ``cores > 1`` gives the same draws as
    ``cores = 1`` for the same seed. Build a ladder with :func:`pbc_ladder` (§4's
    recipe).

    Parameters
    ----------
    vars : list
        The partition variable (one per step).
    temperatures : sequence of float
        The ladder :math:`t_1 > \dots > t_N > 0`; the last is :math:`\tau_{min}` (1 to
        sample, < 1 to optimise: see ``mode``). With one rung there is no pair to
        cross, every iteration mutates: the paper's Metropolized Gibbs ("MH")
        baseline.
    mode : {"sample", "optimise", "tempered"}, default "sample"
        What the coldest rung is for (above): "sample" requires :math:`t_N = 1`,
        "optimise" :math:`t_N < 1`, "tempered" accepts any :math:`t_N`.
    crossover : {"one_new", "two_new", "scrc_same", "scrc_random"}, default "one_new"
        The crossover kind.
    selection : {"boltzmann", "random"}, default "boltzmann"
        Parent selection, "-b-b" or "-r-r" (§4; the paper uses "-b-b" for SCRC).
    selection_temperature : float > 0, default 1.0
        s of the Boltzmann selection (the paper takes s = 1, "close to" τ_min).
    mutation_rate : float in (0, 1], default 0.3
        :math:`p_m` (the paper suggests 0.25-0.4; 1 gives parallel tempering with
        the mutation move).
    split_probability : float in (0, 1), default 0.5
        :math:`q_s` of §3.1 (the paper's experiments take 1/2).
    n_mutations : int or None, default None
        Mutations of each member in a mutation iteration, each of a uniform item;
        None: n, one sweep's worth (n items, each chosen uniformly). Algorithm 4.1
        updates every chromosome "once" per mutation iteration and §3.1 picks the
        coordinate "systematically or randomly"; we read that update as a pass over
        the n coordinates (as ``examples/goswami_table7.py`` did). One mutation per
        member moves about 0.3 items per member per iteration at p_m = 0.3: on 60
        points in three groups (the README's model, 27 rungs) R-hat was 1.41 on the
        number of blocks after 2,000 iterations (mean 6.5, Gibbs 3.6), where n
        mutations gave 1.01 (mean 3.63) at less cost per iteration (0.5 against 1.7
        ms: crossovers of the over-split partitions it left are dearer); in
        optimisation mode (k-means, n = 160, 300 iterations) the best partition went
        from about 40 times the best of 20 k-means runs to equal to it.
    model, rng, initial_point, compile_kwargs, blocked
        As for PyMC's own steps.

    The partition's target must be fixed: the tempered targets are only valid while
    the conditional target of the partition does not change between iterations. A
    model in which a free random variable (a hyperparameter that NUTS or another
    step samples) enters the partition's prior or likelihoods is refused, with the
    variable's name.

    Sampler statistics
    ------------------
    n_clusters, largest_cluster_frac, log_joint : of the coldest member, as for
        :class:`Gibbs` (log_joint untempered)
    log_target : float
        The coldest member's tempered log target, log_joint / t_N.
    mutated : bool
        Whether this iteration mutated (else it crossed over).
    split_proposed, split_accepted, merge_proposed, merge_accepted : int
        This iteration's mutation counts, over all members.
    crossover_proposed, crossover_accepted : int
        This iteration's crossovers that could be proposed (a pair without two
        usable blocks cannot, §3.3) and those accepted (a reallocation equal to the
        current state counts as accepted).
    crossover_changed : int
        Those accepted that changed a member's partition (an accepted SCRC
        reallocation may restore H as it was; a ONE-NEW swap of two whole child
        blocks inside one parent block relabels them): the acceptance rate to set
        beside the paper's Tables 3 and 5.
    exchange_proposed, exchange_accepted : (N - 1,) int64
        This iteration's exchanges per adjacent pair of rungs (index r: rungs r and
        r + 1, hottest first); they come out of ``pm.sample`` as (chain, draw, N - 1)
        arrays. Rates: sum over draws, then divide.
    best_log_joint : float
        The largest untempered log target any member of this chain's population has
        had at the end of an iteration so far (for KMeansEnergy: minus the k-means
        energy over its temperature, plus the prior's constant).
    best_partition : (n,) int64
        With ``mode="optimise"``, the canonical labels of that partition; an empty
        array otherwise.

    Cost per iteration: a mutation iteration N n_mutations mutations (two predictive
    terms each); a crossover iteration N crossovers, each O(n + K L) for the
    intersection table plus component add/remove for the moved items and one or two
    log joints (O(K)); then N log joints and N exchanges (O(1)).
    """

    name = "partition_pbc"
    move_description = "a PBC mutation"
    Info = PBCInfo

    def __init__(self, vars, temperatures=None, crossover="one_new", selection="boltzmann",
                 selection_temperature=1.0, mutation_rate=0.3, split_probability=0.5,
                 n_mutations=None, mode="sample", **kwargs):
        if temperatures is None:
            raise ValueError("PBC: give the temperature ladder, 'temperatures' = "
                             "(t_1, ..., t_N) with t_1 > ... > t_N > 0 (t_N = 1 to sample "
                             "the posterior; see pmp.pbc_ladder).")
        self.temperatures = check_ladder(temperatures)
        self.mode = check_mode(mode, float(self.temperatures[-1]), "PBC",
                               "'temperatures'")
        self.crossover = _choice_arg("crossover", crossover, CROSSOVERS)
        self.selection = _choice_arg("selection", selection, SELECTIONS)
        self.selection_temperature = number_arg("selection_temperature", selection_temperature,
                                                "PBC", low=0.0, low_open=True)
        self.mutation_rate = number_arg("mutation_rate", mutation_rate, "PBC", low=0.0,
                                        high=1.0, low_open=True)
        self.split_probability = number_arg("split_probability", split_probability, "PBC",
                                            low=0.0, high=1.0, low_open=True, high_open=True)
        if n_mutations is not None:
            n_mutations = integer_arg("n_mutations", n_mutations, "PBC", minimum=1)
        self._kind = CROSSOVERS[self.crossover]
        super().__init__(vars, **kwargs)
        _refuse_free_inputs(self.target, "PBC")
        # None: one sweep's worth, n mutations of a uniform item per member.
        self.n_mutations = self.target.n if n_mutations is None else n_mutations

    @property
    def optimising(self):
        """Optimisation mode (``mode="optimise"``, τ_min = t_N < 1)."""
        return self.mode == "optimise"

    def start_chain(self, rng):
        super().start_chain(rng)
        self._best_log_joint = -np.inf
        self._best_partition = np.zeros(0, dtype=np.int64)

    # The container: the ladder, every member a copy of the point's partition.
    def new_container(self, labels, args):
        return TemperedPopulation(self.new_chain(labels, args), self.temperatures)

    def load_container(self, population, labels, args):
        population.load(self.new_chain(labels, args))
        return population

    def chain_of(self, population):
        return population.coldest()

    def chains_of(self, population):
        return population.members

    def move(self, population, args):
        stream, prior_params, params, data = args.stream, args.prior_params, args.params, args.data
        population.reset_counts()
        n_rungs = population.n_rungs
        mutate = n_rungs < 2 or crossover.draw_uniform(stream) < self.mutation_rate
        if mutate:
            failed = population.mutate(stream, prior_params, params, data, self.n_mutations,
                                       self.split_probability)
            self.fail_if(failed, args)
            population.update_log_targets(prior_params, params)
        else:
            population.update_log_targets(prior_params, params)
            population.crossover(stream, prior_params, params, data, n_rungs, self._kind,
                                 self.selection == "boltzmann", self.selection_temperature)
        population.exchange(stream, n_rungs)
        best = int(np.argmax(population.log_targets))
        if population.log_targets[best] > self._best_log_joint:
            self._best_log_joint = float(population.log_targets[best])
            if self.optimising:
                self._best_partition = _canonical(population.members[best])
        return record(
            PBCInfo,
            counters(mutation.Outcomes, population.mutation_outcomes),
            counters(crossover.Outcomes, population.crossover_outcomes),
            log_target=np.nan,  # finish_info: the draw's log_joint / t_N
            mutated=bool(mutate),
            crossover_changed=int(population.crossover_changed),
            exchange_proposed=population.exchange_proposed.copy(),
            exchange_accepted=population.exchange_accepted.copy(),
            best_log_joint=self._best_log_joint,
            best_partition=self._best_partition.copy(),
        )

    def finish_info(self, info, summary):
        return info._replace(log_target=summary.log_joint / float(self.temperatures[-1]))


def _canonical(member):
    """The canonical labels of a member's partition (a new (n,) int64 array)."""
    out = np.empty(member.state.labels.shape[0], dtype=np.int64)
    canonical_labels(member.state.labels, out, member.scratch)
    return out


def _refuse_free_inputs(target, owner):
    if target.input_names:
        raise PartitionModelError(
            f"{owner}: the target of partition '{target.name}' depends on the free random "
            f"variable(s) {target.input_rv_names}. PBC's tempered targets "
            f"p(z | ...)^(1/t) are valid only while the partition's conditional target "
            f"is fixed: a variable that NUTS or another step samples between iterations "
            f"would change every rung's target, and the population would no longer "
            f"have the product of tempered targets as its stationary distribution (the "
            f"draws of '{target.name}' would come from a wrong posterior). Make them "
            f"constants (e.g. fix them at a value, or at their posterior mean from a "
            f"pilot run)."
        )


def _mutation_runs(target, temperatures, draws, n_sweeps, split_probability, seed,
                   exchange=False):
    """Metropolized Gibbs ("MH") chains, one per temperature (a TemperedPopulation
    with mutation only; with ``exchange``, T random exchanges of §3.6 after each
    iteration, i.e. parallel tempering on the grid): ``(log targets (draws, T),
    mutation acceptance rate (T,))``, untempered log targets per temperature after
    each of ``draws`` iterations of ``n_sweeps`` mutations per item."""
    point = target.model.initial_point()
    values, prior_params, per_lik = target.params(point)
    labels = target.validate_labels(point[target.name])
    chain = target.new_chain_state(labels, values, per_lik)
    population = TemperedPopulation(chain, temperatures)
    for member in population.members:
        params, _, data = target.kernel_args(member, values, per_lik)
    stream = new_stream(seed)
    n_rungs = population.n_rungs
    log_targets = np.empty((draws, n_rungs))
    accepted = np.zeros(n_rungs)
    proposed = np.zeros(n_rungs)
    tempered = population.tempered(prior_params, params)
    for t in range(draws):
        for r in range(n_rungs):
            member = population.at_rung(r)
            counts = np.zeros(len(mutation.Outcomes._fields), dtype=np.int64)
            prior_t, params_t = tempered[r]
            failed = mutation.run_mutations(stream, n_sweeps * target.n, member.state, prior_t,
                                            params_t, member.stats, data, split_probability,
                                            counts)
            if failed >= 0:
                raise target.impossible_conditional(int(failed), values, "a PBC mutation")
            c = counters(mutation.Outcomes, counts)
            accepted[r] += c["split_accepted"] + c["merge_accepted"]
            proposed[r] += c["split_proposed"] + c["merge_proposed"]
        population.update_log_targets(prior_params, params)
        if exchange:
            population.exchange(stream, n_rungs)
        log_targets[t] = population.log_targets[population.member_of_rung]
    return log_targets, accepted / np.maximum(proposed, 1)


def exchange_acceptance(log_targets_i, log_targets_j, t_i, t_j):
    r"""Estimate of eq. (12): the mean over all pairs of draws :math:`x_i \sim f_i`,
    :math:`x_j \sim f_j` of :math:`\min\{1, \exp[(1/t_i - 1/t_j)(\log\pi(x_j) -
    \log\pi(x_i))]\}` (untempered log targets)."""
    diff = np.subtract.outer(np.asarray(log_targets_j), np.asarray(log_targets_i))
    log_r = (1.0 / t_i - 1.0 / t_j) * diff
    return float(np.mean(np.exp(np.minimum(log_r, 0.0))))


def pbc_ladder(vars=None, model=None, *, mode="sample", tau_min=None, tau_max=None,
               acceptance=(0.6, 0.7), max_temperature=1000.0, hot_fraction=0.9, grid_size=40,
               draws=200, burn=None, n_sweeps=1, split_probability=0.5, max_refinements=3,
               seed=None):
    r"""A temperature ladder for :class:`PBC` by the recipe of Goswami, Liu & Wong
    (2005), §4: two preliminary runs; τ_max from the first, then the rungs placed so
    that the estimated exchange acceptance between neighbours (eq. 12) is in
    ``acceptance`` (60-70 %).

    The paper defers the details to Goswami & Liu; this reading of them:

    1. **τ_max** (unless given): Metropolized Gibbs chains (the §3.1 mutation,
       ``n_sweeps`` sweeps' worth per draw) at τ_min 2^k up to ``max_temperature``;
       τ_max is the first whose mutation acceptance rate reaches ``hot_fraction`` of
       the rate at ``max_temperature`` (where the target is nearly the prior's
       support: local moves are then almost free; a constrained prior such as
       FixedBlocks refuses its splits at every temperature, hence a relative rule).
    2. **Rungs**: a grid of ``grid_size`` geometric temperatures between τ_min and
       τ_max, run as one tempered population (mutation, then random exchanges of
       §3.6 between neighbouring grid temperatures: parallel tempering, so a cold
       grid chain is not left in the local mode it started in, which would make its
       log targets, and every Â with it, wrong); from the untempered log targets,
       eq. (12)'s acceptance Â between any two grid temperatures
       (:func:`exchange_acceptance`, all pairs of draws).
    3. **Refinement**: where two neighbouring grid temperatures have Â below
       ``acceptance[1]`` (the grid is too coarse there for a rung to land in the band:
       below ``acceptance[0]`` none can, and between the two a fresh estimate falls
       below the band about half the time), their geometric mean is added to the
       grid and the grid run again (fresh seed), at most ``max_refinements`` times.
       (Without it, on 60 points in three groups with τ_max = 20, 5 of 25 pairs were
       below 0.6, down to 0.31, all between t = 1.08 and 1.59, where the number of
       blocks changes fastest with t.)
    4. From τ_min upwards, the next rung is the hottest grid temperature whose Â
       with the current rung is at least ``acceptance[0]`` (so, on a fine grid, in
       the band), until τ_max, which is always the last (hottest) rung.

    A pair of neighbouring rungs still below ``acceptance[0]`` after that is not
    passed silently: a :class:`LadderWarning` names the pairs and their Â.

    Parameters
    ----------
    vars : partition variable or list of one, optional
        Default: the model's only partition variable.
    model : pm.Model, optional
        Default: the model on the context stack. Its partition target must be fixed
        (no free random variable in it), as for :class:`PBC`.
    mode : {"sample", "optimise", "tempered"}, default "sample"
        As :class:`PBC`'s ``mode``, checked against ``tau_min``: "sample" has τ_min =
        1 (its default; another value is refused), "optimise" needs τ_min < 1 and
        "tempered" any τ_min, both given.
    tau_min : float > 0
        The coldest temperature.
    tau_max : float > tau_min, optional
        Skip the first run.
    acceptance : (low, high)
        The target band for Â between neighbours: every pair at least ``low`` (else a
        :class:`LadderWarning`); ``high`` is not enforced (a pair above it only costs
        rungs), it is the Â the refined grid's neighbours reach, so that each rung
        lands close above ``low``.
    draws, burn : int
        Draws per preliminary chain, of which the first ``burn`` (default draws // 4)
        are discarded.
    max_refinements : int >= 0, default 3
        Rounds of step 3.
    seed : int or None
        Seed of the preliminary runs.

    Returns
    -------
    temperatures : (N,) float64
        :math:`t_1 = \tau_{max} > \dots > t_N = \tau_{min}` (the :class:`PBC` order).
    acceptances : (N - 1,) float64
        Â between rungs r and r + 1 (eq. 12, estimated from the last grid run).
    """
    mode = _choice_arg("mode", mode, MODES, "pbc_ladder")
    if tau_min is None:
        if mode != "sample":
            raise ValueError(f"pbc_ladder: 'mode' = {mode!r} needs 'tau_min', the coldest "
                             f"temperature ({'< 1, e.g. 0.5' if mode == 'optimise' else '> 0'}).")
        tau_min = 1.0
    tau_min = number_arg("tau_min", tau_min, "pbc_ladder", low=0.0, low_open=True)
    check_mode(mode, tau_min, "pbc_ladder", "'tau_min'")
    if vars is None:
        model = modelcontext(model)
        vars = [rv for rv in model.free_RVs if isinstance(rv.owner.op, PartitionPriorRV)]
        if len(vars) != 1:
            raise ValueError(f"pbc_ladder: the model has {len(vars)} partition variables; "
                             f"name one with 'vars'.")
    model, value_vars = step_arguments("pbc_ladder", vars, model, None, "[z]")
    if len(value_vars) != 1:
        raise ValueError(f"pbc_ladder: one partition variable, got "
                         f"{[v.name for v in value_vars]}.")
    target = PartitionTarget(model, value_vars[0], "pbc_ladder")
    _refuse_free_inputs(target, "pbc_ladder")
    max_temperature = number_arg("max_temperature", max_temperature, "pbc_ladder",
                                 low=tau_min, low_open=True)
    if tau_max is not None:
        tau_max = number_arg("tau_max", tau_max, "pbc_ladder", low=tau_min, low_open=True)
    try:
        low, high = (float(a) for a in acceptance)
    except (TypeError, ValueError):
        low = high = np.nan
    if not (0.0 < low < high <= 1.0):
        raise ValueError(f"pbc_ladder: 'acceptance' must be a pair 0 < low < high <= 1, got "
                         f"{acceptance!r}.")
    hot_fraction = number_arg("hot_fraction", hot_fraction, "pbc_ladder", low=0.0, high=1.0,
                              low_open=True)
    grid_size = integer_arg("grid_size", grid_size, "pbc_ladder", minimum=2)
    draws = integer_arg("draws", draws, "pbc_ladder", minimum=2)
    burn = draws // 4 if burn is None else integer_arg("burn", burn, "pbc_ladder", minimum=0)
    if burn >= draws:
        raise ValueError(f"pbc_ladder: 'burn' ({burn}) must be smaller than 'draws' ({draws}).")
    n_sweeps = integer_arg("n_sweeps", n_sweeps, "pbc_ladder", minimum=1)
    split_probability = number_arg("split_probability", split_probability, "pbc_ladder",
                                   low=0.0, high=1.0, low_open=True, high_open=True)
    max_refinements = integer_arg("max_refinements", max_refinements, "pbc_ladder", minimum=0)
    seeds = np.random.SeedSequence(seed).spawn(2 + max_refinements)
    if tau_max is None:
        k = int(np.ceil(np.log2(max_temperature / tau_min)))
        grid = np.unique(np.append(tau_min * 2.0 ** np.arange(k, -1, -1), max_temperature))[::-1]
        grid = grid[grid <= max_temperature]
        _, rates = _mutation_runs(target, grid, draws, n_sweeps, split_probability, seeds[0])
        hot = np.flatnonzero(rates >= hot_fraction * rates[0])  # grid[0] = max_temperature
        tau_max = float(grid[hot.max()]) if hot.size else float(max_temperature)
        if tau_max <= tau_min:
            tau_max = float(grid[-2])
    grid = np.geomspace(tau_max, tau_min, grid_size)  # hottest first
    grid[0], grid[-1] = tau_max, tau_min
    for round_ in range(max_refinements + 1):
        log_targets, _ = _mutation_runs(target, grid, draws, n_sweeps, split_probability,
                                        seeds[1 + round_], exchange=True)
        kept = log_targets[burn:]

        def a_hat(a, b, kept=kept, grid=grid):
            return exchange_acceptance(kept[:, a], kept[:, b], grid[a], grid[b])

        coarse = [i for i in range(grid.size - 1) if a_hat(i, i + 1) < high]
        if not coarse or round_ == max_refinements:
            break
        grid = np.sort(np.append(grid, np.sqrt(grid[coarse] * grid[np.add(coarse, 1)])))[::-1]

    rungs = [grid.size - 1]  # indices into grid, from the coldest
    while rungs[-1] > 0:
        current = rungs[-1]
        nxt = current - 1
        for candidate in range(current - 1, -1, -1):  # hotter and hotter
            if a_hat(candidate, current) >= low:
                nxt = candidate
        rungs.append(nxt)
    rungs = rungs[::-1]  # hottest first
    temperatures = grid[rungs]
    acceptances = np.array([a_hat(a, b) for a, b in itertools.pairwise(rungs)])
    below = np.flatnonzero(acceptances < low)
    if below.size:
        pairs = ", ".join(f"({temperatures[r]:.4g}, {temperatures[r + 1]:.4g}): "
                          f"{acceptances[r]:.3f}" for r in below)
        warnings.warn(
            f"pbc_ladder: {below.size} of {acceptances.size} pairs of neighbouring rungs "
            f"have an estimated exchange acceptance Â below the band's {low:g} after "
            f"{max_refinements} refinement(s) of the grid: {pairs}. Raise 'draws' (noisy "
            f"estimates), 'max_refinements' or 'grid_size', or accept slower mixing "
            f"between those rungs.", LadderWarning, stacklevel=2)
    return temperatures, acceptances


__all__ = [
    "MODES",
    "PBC",
    "LadderWarning",
    "TemperedPopulation",
    "check_ladder",
    "check_mode",
    "exchange_acceptance",
    "pbc_ladder",
]
