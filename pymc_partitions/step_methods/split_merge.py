"""``pmp.SplitMerge``: Jain & Neal's restricted-Gibbs split-merge sampler, SM(t, m, n)."""

import time
from typing import NamedTuple

import numpy as np

from pymc_partitions.distributions.validation import integer_arg
from pymc_partitions.kernels import gibbs, split_merge
from pymc_partitions.step_methods.base import PartitionStep
from pymc_partitions.step_methods.info import counters, record

PROPOSALS = {
    "restricted_gibbs": split_merge.RESTRICTED_GIBBS,
    "random": split_merge.RANDOM,
    "sequential": split_merge.SEQUENTIAL,
}


class SplitMergeInfo(NamedTuple):
    """What one :class:`SplitMerge` iteration did.

    Attributes
    ----------
    split_proposed, split_accepted
        Split proposals among this iteration's m updates, and those accepted.
    merge_proposed, merge_accepted
        The same for merges.
    accept_rate
        Accepted / proposed updates in this iteration.
    split_merge_seconds
        Wall time of the m updates.
    gibbs_seconds
        Wall time of the n Gibbs sweeps.
    """

    split_proposed: np.int64
    split_accepted: np.int64
    merge_proposed: np.int64
    merge_accepted: np.int64
    accept_rate: np.float64
    split_merge_seconds: np.float64
    gibbs_seconds: np.float64


class SplitMerge(PartitionStep):
    r"""Split-merge Metropolis-Hastings updates with restricted Gibbs proposals.

    Jain & Neal (2004), *A split-merge Markov chain Monte Carlo procedure for the
    Dirichlet process mixture model* (JCGS 13(1)), §3.3; written out as Algorithm 1
    of Herlau et al. (2016). In the paper's notation this is SM(t, m, n): each
    iteration makes m Metropolis-Hastings split/merge updates, each preceded by t
    intermediate restricted Gibbs scans that take a random split of the two blocks
    to the *launch state*, then n full Gibbs sweeps (Neal 2000, Alg. 3). A split
    proposal is one more restricted scan from the launch state; a merge's reverse
    split probability is that of a restricted scan from the launch state forced to
    the current configuration, as the paper states. The targets are the collapsed
    log joints, so the move is exact for every collapsed likelihood and partition
    prior of the library, and hyperparameters may be sampled by NUTS in the same
    ``pm.sample`` call. The kernel is :mod:`pymc_partitions.kernels.split_merge`.

    ``pm.sample()`` keeps assigning :class:`Gibbs` to partitions by default; pass
    this step explicitly: ``pm.sample(step=[pmp.SplitMerge([z])])``.

    Parameters
    ----------
    vars : list
        The partition variable (one per step).
    n_restricted_scans : int, default 5
        t, the intermediate restricted Gibbs scans that build the launch state
        (0: the launch state is the random split).
    n_proposals : int, default 1
        m, split/merge updates per iteration.
    n_gibbs_sweeps : int, default 1
        n, full Gibbs sweeps per iteration after the updates (0: none; the
        split-merge updates alone are then not irreducible in general, e.g. they
        never move one item between two blocks).
    proposal : {"restricted_gibbs", "random", "sequential"}, default "restricted_gibbs"
        ``"random"``: the simple random split of Jain & Neal §3.2 (S assigned
        uniformly at random, proposal probability :math:`2^{-|S|}`), for the paper's
        comparison. ``"sequential"``: the sequentially-allocated split of Dahl (2003,
        "An improved merge-split sampler for conjugate Dirichlet process mixture
        models"): S's items are allocated in random order, each by its restricted
        conditional given those allocated before it (no launch state). For both,
        ``n_restricted_scans`` is unused.
    model, rng, initial_point, compile_kwargs, blocked
        As for PyMC's own steps.

    Sampler statistics
    ------------------
    n_clusters, largest_cluster_frac, log_joint : as for :class:`Gibbs`
    split_proposed, split_accepted, merge_proposed, merge_accepted : int
        Counts of this iteration's m updates.
    accept_rate : float
        Accepted / proposed updates in this iteration (sum the counts over draws
        for the run's rates: ``idata.sample_stats.split_accepted.sum() /
        idata.sample_stats.split_proposed.sum()``).
    split_merge_seconds, gibbs_seconds : float
        Wall time of the m updates and of the Gibbs sweeps, as :class:`~.ARM`
        records them: an iteration costs
        ``(split_merge_seconds + gibbs_seconds).sum() / (gibbs_seconds.sum() /
        n_gibbs_sweeps)`` Gibbs sweeps (Herlau et al.'s "standardized iterations",
        §3.4).

    Randomness: each update draws the pair (i, j) uniformly among distinct items
    and one key; every later decision uses counter-based uniforms indexed by item
    (see the kernel module), so two chains given the same (i, j, key) share their
    random numbers, as the coupled split-merge sweep of Nguyen et al. (2022,
    Algorithm 3) requires.

    Cost per update: O(n) to find the two blocks' items S, then
    O((t + 1) |S|) restricted updates (2 predictive terms each).
    """

    name = "partition_split_merge"
    move_description = "a split-merge update or its Gibbs sweeps"
    Info = SplitMergeInfo

    def __init__(self, vars, n_restricted_scans=5, n_proposals=1, n_gibbs_sweeps=1,
                 proposal="restricted_gibbs", **kwargs):
        self.n_restricted_scans = _count("n_restricted_scans", n_restricted_scans, minimum=0)
        self.n_proposals = _count("n_proposals", n_proposals, minimum=1)
        self.n_gibbs_sweeps = _count("n_gibbs_sweeps", n_gibbs_sweeps, minimum=0)
        if not isinstance(proposal, str) or proposal not in PROPOSALS:
            raise ValueError(
                f"SplitMerge: 'proposal' must be one of {tuple(PROPOSALS)}, got {proposal!r}."
            )
        self.proposal = proposal
        super().__init__(vars, **kwargs)
        if self.target.n < 2:
            raise ValueError(
                f"SplitMerge: partition '{self.target.name}' has n = {self.target.n} item; "
                f"split-merge needs at least two items (use pmp.Gibbs)."
            )

    def start_chain(self, rng):
        super().start_chain(rng)
        n = self.target.n
        self._members = np.empty(n, dtype=np.int64)
        self._origin = np.empty(n, dtype=np.int64)
        self._outcomes = np.zeros(len(split_merge.Outcomes._fields), dtype=np.int64)

    def move(self, chain, args):
        outcomes = self._outcomes
        outcomes[:] = 0
        stream, prior_params, params, data = args.stream, args.prior_params, args.params, args.data
        # The updates, then the sweeps on the same stream, timed apart.
        start = time.perf_counter()
        failed = split_merge.run_split_merge(
            stream, self.n_proposals, self.n_restricted_scans, PROPOSALS[self.proposal],
            chain.state, prior_params, params, chain.stats, data, self._members, self._origin,
            outcomes,
        )
        split_merge_seconds = time.perf_counter() - start
        start = time.perf_counter()
        if failed < 0:
            failed = gibbs.run_sweeps(stream, self.n_gibbs_sweeps, chain.state, prior_params,
                                      params, chain.stats, data, chain.log_w, chain.order)
        gibbs_seconds = time.perf_counter() - start
        self.fail_if(failed, args)
        counts = counters(split_merge.Outcomes, outcomes)
        return record(
            SplitMergeInfo, counts,
            accept_rate=(counts["split_accepted"] + counts["merge_accepted"]) / self.n_proposals,
            split_merge_seconds=split_merge_seconds, gibbs_seconds=gibbs_seconds,
        )


def _count(name, value, minimum):
    return integer_arg(name, value, "SplitMerge", minimum=minimum)
