r"""ARM's background information: the chains' past partitions, and the draw of (z^a, z^b, i, j).

Herlau, Mørup, Schmidt & Teh, *Adaptive Reconfiguration Moves for MCMC inference in
Dirichlet Process Mixtures*, §2.4: with S chains, the next state of chain s is
proposed from two earlier partitions z^a, z^b drawn from

.. math::

    \{Z^{s' t'} : s' = 1, \dots, S,\ t' = \lfloor t/2 \rfloor, \dots, t\}

"at random under the constraints: z^a ≠ z^b and one of the chains was selected from
the subset where s' = s", then (i, j) drawn "from the set of all pairs where the two
partitions disagreed", :math:`\delta_{z^a_i z^a_j} \ne \delta_{z^b_i z^b_j}`, and
(z^a, z^b) named so that :math:`z^a_i = z^a_j`.

Choices made here (the paper leaves them open):

1. **Not the current state.** The state a chain is about to leave is never its own
   background draw: an MH move whose proposal is built from the current state itself
   (z^a = z) is not reversible with the same background information. Chain s's own
   candidates are its states at t' = ⌊t/2⌋ … t − 1; the other chains' are their
   states at ⌊t/2⌋ … t (their current states were made from the previous
   population with their own randomness, so given the past they are independent of
   chain s's current state). For a fixed (z^a, z^b, i, j) each ARM move is then an
   exact Metropolis–Hastings move, whatever the history.
2. **Uniform over valid pairs.** One state uniformly from chain s's own window, one
   uniformly from all chains' windows; the pair redrawn while the two partitions are
   equal, at most :data:`MAX_TRIES` times (then no move this iteration: the window
   holds one partition, or nearly). (i, j) is then drawn by the kernel uniformly
   over the pairs on which the two disagree (:func:`~..kernels.arm.draw_pair`).
3. **Diminishing adaptation** (§2.3; Roberts & Rosenthal 2009, eq. 1.1): the window
   holds S (t − ⌊t/2⌋) states, so one more iteration changes the distribution of the
   background information, and hence the transition kernel, by O(1/t) in total
   variation: the adaptation diminishes. With ``max_window=M`` the window is the last
   min(⌊t/2⌋, M) iterations: memory is bounded by S M n label bytes, but once
   t > 2M the kernel changes by O(1/M) per iteration forever, the adaptation no
   longer diminishes and the convergence argument no longer applies (every move is
   still an exact MH move given its background information). Default: no cap
   (S t/2 n bytes with int16 labels: 8 chains x 500 iterations x 998 items = 8 MB).

States are stored as canonical labels in :func:`~.chain_state.label_dtype` (n)
(int16 up to n = 32767).
"""

from dataclasses import dataclass

import numpy as np

from pymc_partitions.kernels import canonical_labels
from pymc_partitions.kernels.random import bounded
from pymc_partitions.step_methods.chain_state import ChainState, label_dtype

#: Redraws of (z^a, z^b) while the two are equal, before giving up for this iteration.
MAX_TRIES = 64


class History:
    """The S chains' past partitions, as seen by chain ``chain`` (one per step instance).

    Parameters
    ----------
    n : int
        Items per partition.
    chain : int
        This chain's index in the population (0 .. S-1).
    max_window : int or None
        Cap on the iterations kept (see the module docstring: bounds memory, ends
        diminishing adaptation); None keeps {⌊t/2⌋ … t}.

    :meth:`record` appends one iteration's population ((S, n) canonical labels, this
    chain's current state included); :meth:`draw` returns the background information.
    """

    def __init__(self, n, chain, max_window=None):
        self.n = int(n)
        self.chain = int(chain)
        self.max_window = None if max_window is None else int(max_window)
        self.dtype = label_dtype(self.n)
        self._records = []  # one (S, n) array per iteration still in the window
        self.t = -1  # iteration of the latest record

    def __len__(self):
        return len(self._records)

    def record(self, population, canonical=False):
        """Append the population ((S, n) integer labels in [0, n), stored canonical) of
        iteration t + 1 and drop the records that left the window. O(S n).

        ``canonical=True`` says the labels are canonical already (as
        ``PopulationStep.population_labels`` returns them): they are copied as they are,
        which saves S relabelling calls per iteration (the history's cost is part of an
        ARM iteration's, §3.4)."""
        population = np.asarray(population)
        if population.ndim != 2 or population.shape[1] != self.n:
            raise ValueError(f"History.record: expected (S, {self.n}) labels, got shape "
                             f"{population.shape}.")
        if canonical:
            stored = population.astype(self.dtype)  # a copy: the caller may reuse its array
        else:
            stored = np.empty(population.shape, dtype=np.int64)
            relabel = np.empty(self.n, dtype=np.int64)
            for c in range(population.shape[0]):
                canonical_labels(np.ascontiguousarray(population[c], dtype=np.int64),
                                 stored[c], relabel)
            stored = stored.astype(self.dtype)
        self._records.append(stored)
        self.t += 1
        keep = self.t - self.t // 2 + 1  # iterations ⌊t/2⌋ .. t
        if self.max_window is not None:
            keep = min(keep, self.max_window)
        if len(self._records) > keep:
            del self._records[: len(self._records) - keep]

    def nbytes(self):
        return sum(r.nbytes for r in self._records)

    def draw(self, stream):
        """``(za, zb)``, two different partitions ((n,) int64 canonical labels), one of
        them this chain's, neither its current state, or None when no two different
        partitions could be drawn.
        Randomness from the chain's kernel ``stream``. The pair (i, j) on which they
        disagree is the kernel's draw (:func:`~pymc_partitions.kernels.arm.draw_pair`)."""
        records = self._records
        n_own = len(records) - 1  # this chain's window less its current state
        if n_own < 1:
            return None
        n_chains = records[0].shape[0]
        # Every chain's window less this chain's current state (choice 1).
        current = (len(records) - 1) * n_chains + self.chain
        n_all = len(records) * n_chains - 1
        for _ in range(MAX_TRIES):
            own = records[bounded(stream, n_own)][self.chain]
            k = bounded(stream, n_all)
            k += k >= current
            other = records[k // n_chains][k % n_chains]
            if not np.array_equal(own, other):
                break
        else:
            return None
        # z^a and z^b enter ARM only through their common refinement with z, so their
        # order does not matter (kernels/arm.py, choice 5).
        return own.astype(np.int64), other.astype(np.int64)


@dataclass
class HistoryChain:
    """ARM's container (:class:`~pymc_partitions.step_methods.base.PartitionStep`):
    one chain's kernel state and the population's past as that chain sees it.

    ``history`` is None until the chain's first update (its index in the population
    is known then) and always for sRM, which needs none. Loading new labels into the
    chain (``initvals``, another step) keeps the history.
    """

    chain: ChainState
    history: History | None = None
