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
member (rung N, :math:`t_N = \tau_{min}`) is the sample.

Moves implemented so far (Algorithm 4.1 without crossover): the mutation of §3.1
(:mod:`pymc_partitions.kernels.mutation`) of every member, then N random exchanges
of §3.6 (:mod:`pymc_partitions.kernels.exchange`). :class:`PBC` is the step method
running them inside ``pm.sample`` (not exported from the package yet: the crossover
moves, the Boltzmann selection, the optimisation mode and the ladder recipe of
issue 15 are still to come).
"""

import numpy as np

from pymc_partitions.distributions.validation import integer_arg, number_arg
from pymc_partitions.kernels import crossover, mutation, summarise
from pymc_partitions.kernels.bookkeeping import log_joint_entry
from pymc_partitions.kernels.exchange import run_exchanges
from pymc_partitions.kernels.tempering import temper
from pymc_partitions.step_methods.base import PartitionStep
from pymc_partitions.step_methods.chain_state import clone, copy_into
from pymc_partitions.step_methods.target import PartitionModelError


def check_ladder(temperatures, owner="PBC"):
    """The ladder as a (N,) float64 array; a ValueError unless it is a non-empty,
    finite, positive, strictly decreasing sequence (t_1 > ... > t_N: the last rung
    is the coldest, the one sampled)."""
    try:
        temps = np.asarray(temperatures, dtype=np.float64)
    except (TypeError, ValueError):
        temps = None
    if temps is None or temps.ndim != 1 or temps.size == 0:
        raise ValueError(
            f"{owner}: 'temperatures' must be a non-empty 1-d sequence of numbers "
            f"t_1 > ... > t_N, got {temperatures!r}."
        )
    if not (np.all(np.isfinite(temps)) and np.all(temps > 0)):
        raise ValueError(f"{owner}: every temperature must be finite and > 0, got {temps}.")
    if np.any(np.diff(temps) >= 0):
        raise ValueError(
            f"{owner}: 'temperatures' must be strictly decreasing (t_1 > ... > t_N, the "
            f"last rung the coldest, whose member is the sample), got {temps}."
        )
    return temps


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
    (r, r + 1). The counters accumulate; :meth:`reset_counts` zeroes them.
    """

    def __init__(self, chain, temperatures):
        self.temperatures = check_ladder(temperatures)
        self.inv_temps = 1.0 / self.temperatures
        n_rungs = self.temperatures.size
        self.members = [clone(chain) for _ in range(n_rungs)]
        self.member_of_rung = np.arange(n_rungs, dtype=np.int64)
        self.log_targets = np.full(n_rungs, np.nan)
        self.mutation_outcomes = np.zeros(4, dtype=np.int64)
        self.exchange_proposed = np.zeros(max(n_rungs - 1, 0), dtype=np.int64)
        self.exchange_accepted = np.zeros(max(n_rungs - 1, 0), dtype=np.int64)
        self.crossover_outcomes = np.zeros(3, dtype=np.int64)
        self._tempered = None
        self._tempered_of = None
        n = chain.state.labels.shape[0]
        self._table = np.zeros((n, n), dtype=np.int64)
        self._rnz = np.zeros(n, dtype=np.int64)
        self._cnz = np.zeros(n, dtype=np.int64)
        self._buf = np.zeros(n, dtype=np.int64)
        self._old = np.zeros(n, dtype=np.int64)
        self._lw = np.zeros(n_rungs)
        self._lw_scratch = np.zeros(n_rungs)

    @property
    def n_rungs(self):
        return self.temperatures.size

    def reset_counts(self):
        self.mutation_outcomes[:] = 0
        self.crossover_outcomes[:] = 0
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
        n_rungs = self.n_rungs
        if n_rungs < 2:
            return
        inv_s = 1.0 / float(selection_temperature)
        boltzmann = bool(boltzmann)
        table, rnz, cnz, buf, lw = self._table, self._rnz, self._cnz, self._buf, self._lw
        for _ in range(n_updates):
            a, b = crossover.choose_members(stream, kind, boltzmann, inv_s, self.log_targets,
                                            self.member_of_rung, lw, self._lw_scratch)
            if a < 0:
                continue
            if kind == crossover.TWO_NEW:
                mi, mj = self.at_rung(a), self.at_rung(b)
                outcome, _ = crossover.two_new_update(
                    stream, a, b, mi.state, mi.stats, mj.state, mj.stats, prior_params, params,
                    data, self.inv_temps, self.log_targets, self.member_of_rung, inv_s,
                    boltzmann, lw, table, rnz, cnz, buf)
            else:
                other = 2 * b - a  # the child's other neighbour, if any
                if not 0 <= other < n_rungs:
                    other = -1
                parent, child = self.at_rung(a), self.at_rung(b)
                other_state = self.at_rung(other).state if other >= 0 else parent.state
                outcome, _ = crossover.guided_update(
                    stream, kind, a, b, other, parent.state, other_state, child.state,
                    child.stats, prior_params, params, data, self.inv_temps, self.log_targets,
                    self.member_of_rung, inv_s, boltzmann, lw, table, rnz, cnz, buf,
                    self._old)
            if outcome == crossover.FAILED:
                raise ValueError(
                    "PBC: a crossover met a NaN log target ratio (a NaN in the partition's "
                    "log density); the population is as before that move.")
            self.crossover_outcomes[outcome] += 1

    def exchange(self, stream, n_updates):
        """``n_updates`` §3.6 random exchanges (needs current :attr:`log_targets`)."""
        run_exchanges(stream, n_updates, self.inv_temps, self.log_targets, self.member_of_rung,
                      self.exchange_proposed, self.exchange_accepted)


class PBC(PartitionStep):
    r"""Population Based Clustering: a tempered population of partitions in one chain.

    Goswami, Liu & Wong (2005), *Evolutionary Monte Carlo methods for clustering*
    (JCGS 16(4), 2007), Algorithm 4.1, **so far without its crossover moves**
    (SCSC:TWO-NEW, SCSC:ONE-NEW, SCRC; issue 15): each iteration mutates every
    member of the population (§3.1, the split/merge-one-item Metropolis-Hastings
    move with split probability :math:`q_s`, acceptance eq. 3) at its rung's
    temperature, then makes N random exchanges between neighbouring rungs (§3.6,
    eq. 11). Member r samples :math:`\pi(z)^{1/t_r}`, the partition's collapsed
    target raised to 1/t_r (:mod:`pymc_partitions.kernels.tempering`); the trace
    holds the coldest member (rung N, :math:`t_N = \tau_{min}`), so with
    :math:`\tau_{min} = 1` the draws are from the posterior, and with
    :math:`\tau_{min} < 1` from a sharpened target (stochastic optimisation).
    PyMC's chains are independent populations.

    Parameters
    ----------
    vars : list
        The partition variable (one per step).
    temperatures : sequence of float
        The ladder :math:`t_1 > \dots > t_N > 0`; the last is :math:`\tau_{min}`
        (1 for sampling). One rung gives the paper's Metropolized Gibbs ("MH")
        baseline.
    split_probability : float in (0, 1), default 0.5
        :math:`q_s` of §3.1 (the paper's experiments take 1/2).
    n_mutations : int, default 1
        Mutations of each member per iteration, each of an item drawn uniformly
        (Algorithm 4.1 updates every member once; n gives a Metropolized Gibbs
        sweep's worth).
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
    split_proposed, split_accepted, merge_proposed, merge_accepted : int
        This iteration's mutation counts, over all members.
    exchange_proposed, exchange_accepted : (N - 1,) int64
        This iteration's exchanges per adjacent pair of rungs (index r: rungs r and
        r + 1, hottest first); they come out of ``pm.sample`` as (chain, draw, N - 1)
        arrays. Rates: sum over draws, then divide.

    Cost per iteration: N n_mutations mutations (each two predictive terms, O(D) for
    diagonal components), N log joints (O(K) each) and N exchanges (O(1)).
    """

    name = "partition_pbc"
    move_description = "a PBC mutation"
    stats_dtypes_shapes = {
        **PartitionStep.stats_dtypes_shapes,
        "log_target": (np.float64, []),
        "split_proposed": (np.int64, []),
        "split_accepted": (np.int64, []),
        "merge_proposed": (np.int64, []),
        "merge_accepted": (np.int64, []),
        # (N - 1,) arrays per draw: PyMC's trace stores stats as scalars, so they
        # travel as objects (as pmp.CoupledGibbs' coupled_labels).
        "exchange_proposed": (object, []),
        "exchange_accepted": (object, []),
    }

    def __init__(self, vars, temperatures=None, split_probability=0.5, n_mutations=1,
                 **kwargs):
        if temperatures is None:
            raise ValueError("PBC: give the temperature ladder, 'temperatures' = "
                             "(t_1, ..., t_N) with t_1 > ... > t_N > 0 (t_N = 1 to sample "
                             "the posterior).")
        self.temperatures = check_ladder(temperatures)
        self.split_probability = number_arg("split_probability", split_probability, "PBC",
                                            low=0.0, high=1.0, low_open=True, high_open=True)
        self.n_mutations = integer_arg("n_mutations", n_mutations, "PBC", minimum=1)
        super().__init__(vars, **kwargs)
        target = self.target
        if target.input_names:
            raise PartitionModelError(
                f"PBC: the target of partition '{target.name}' depends on the free random "
                f"variable(s) {target.input_names}. PBC's tempered targets "
                f"p(z | ...)^(1/t) are valid only while the partition's conditional target "
                f"is fixed: a variable that NUTS or another step samples between iterations "
                f"would change every rung's target, and the population would no longer "
                f"have the product of tempered targets as its stationary distribution (the "
                f"draws of '{target.name}' would come from a wrong posterior). Make them "
                f"constants (e.g. fix them at a value, or at their posterior mean from a "
                f"pilot run)."
            )

    def start_chain(self, rng):
        super().start_chain(rng)
        self._population = None

    def step(self, point):
        target = self.target
        values, prior_params, per_lik = target.params(point)
        labels = point[target.name]
        population = self._population
        if population is None or not np.array_equal(labels, population.coldest().labels):
            chain = target.new_chain_state(target.validate_labels(labels), values, per_lik)
            if population is None:
                population = self._population = TemperedPopulation(chain, self.temperatures)
            else:
                population.load(chain)
        for member in population.members:
            params, _, data = target.kernel_args(member, values, per_lik)
        population.reset_counts()
        failed = population.mutate(self._stream, prior_params, params, data, self.n_mutations,
                                   self.split_probability)
        if failed >= 0:
            self._population = None  # reload from the point should sampling go on
            raise target.impossible_conditional(failed, values, self.move_description)
        population.update_log_targets(prior_params, params)
        population.exchange(self._stream, population.n_rungs)
        coldest = population.coldest()
        n_blocks, largest, log_joint = summarise(coldest.state, prior_params, params,
                                                 coldest.stats, coldest.labels, coldest.scratch)
        outcomes = population.mutation_outcomes
        new_point = dict(point)
        new_point[target.name] = coldest.labels.copy()
        return new_point, [{
            "n_clusters": int(n_blocks),
            "largest_cluster_frac": largest / target.n,
            "log_joint": float(log_joint),
            "log_target": float(log_joint) / float(self.temperatures[-1]),
            "split_proposed": int(outcomes[0] + outcomes[1]),
            "split_accepted": int(outcomes[1]),
            "merge_proposed": int(outcomes[2] + outcomes[3]),
            "merge_accepted": int(outcomes[3]),
            "exchange_proposed": population.exchange_proposed.copy(),
            "exchange_accepted": population.exchange_accepted.copy(),
        }]


__all__ = ["PBC", "TemperedPopulation", "check_ladder"]
