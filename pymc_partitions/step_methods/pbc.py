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
of §3.6 (:mod:`pymc_partitions.kernels.exchange`).
"""

import numpy as np

from pymc_partitions.kernels import mutation
from pymc_partitions.kernels.bookkeeping import log_joint_entry
from pymc_partitions.kernels.exchange import run_exchanges
from pymc_partitions.kernels.tempering import temper
from pymc_partitions.step_methods.chain_state import clone, copy_into


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
        self._tempered = None
        self._tempered_of = None

    @property
    def n_rungs(self):
        return self.temperatures.size

    def reset_counts(self):
        self.mutation_outcomes[:] = 0
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

    def exchange(self, stream, n_updates):
        """``n_updates`` §3.6 random exchanges (needs current :attr:`log_targets`)."""
        run_exchanges(stream, n_updates, self.inv_temps, self.log_targets, self.member_of_rung,
                      self.exchange_proposed, self.exchange_accepted)


__all__ = ["TemperedPopulation", "check_ladder"]
