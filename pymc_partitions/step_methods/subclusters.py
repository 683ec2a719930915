"""``pmp.SubClusters``: the sub-cluster split-merge sampler of Chang & Fisher (2013)."""

from typing import NamedTuple

import numpy as np

from pymc_partitions.distributions.validation import integer_arg
from pymc_partitions.kernels import subclusters
from pymc_partitions.kernels.components.explicit import explicit_width, supports
from pymc_partitions.kernels.priors.crp import CRPParams
from pymc_partitions.kernels.priors.pitman_yor import PitmanYorParams
from pymc_partitions.step_methods.base import PartitionStep
from pymc_partitions.step_methods.info import counters, record
from pymc_partitions.step_methods.target import PartitionModelError

#: Explicit-parameter likelihoods (pmp names) and priors the step samples today.
SUPPORTED_LIKELIHOODS = ("CollapsedNormal", "CollapsedBetaBernoulli")
SUPPORTED_PRIORS = ("CRP", "PitmanYor")
#: Upper bound of ``n_proposals="auto"``.
MAX_AUTO_PROPOSALS = 20


class SubClustersInfo(NamedTuple):
    """What one :class:`SubClusters` iteration did.

    Attributes
    ----------
    labels_accepted
        1 if step 2's parallel label update was accepted, else 0.
    split_proposed, split_accepted
        Split proposals among this iteration's ``n_proposals``, and those accepted.
    merge_proposed, merge_accepted
        The same for merges.
    """

    labels_accepted: np.int64
    split_proposed: np.int64
    split_accepted: np.int64
    merge_proposed: np.int64
    merge_accepted: np.int64


class SubClusters(PartitionStep):
    r"""Parallel sub-cluster split-merge sampler for a partition variable.

    Chang & Fisher (2013), *Parallel Sampling of DP Mixture Models using Sub-Cluster
    Splits* (NeurIPS 26), in an exact form (the kernel module
    :mod:`pymc_partitions.kernels.subclusters` states each step, the paper's
    equations and where this differs from the paper, and why). Each iteration:

    1. draws the blocks' weights (Dirichlet given the block sizes, §4 eq. 7) and
       parameters (conjugate posteriors, eq. 8);
    2. updates every label given them, in parallel across cores (eq. 9; restricted
       to the existing blocks; one anchor item per block and a Metropolis-Hastings
       correction keep it exact);
    3. makes ``n_proposals`` split or merge proposals: a split proposes the two
       sub-clusters of a block (§5), launched from the block's items by
       ``n_launch`` rounds of the paper's sub-cluster updates; a merge proposes the
       union of two blocks; both accepted with the collapsed target's ratio (the
       paper's H, §5.1) times the exact Hastings term of the proposal.

    New blocks appear only through splits. Weights, parameters and sub-clusters are
    drawn afresh each iteration, so hyperparameters may be sampled in the same
    ``pm.sample`` by :class:`~pymc_partitions.EscobarWest`,
    :class:`~pymc_partitions.HyperSlice` or NUTS: the step reads them at every
    iteration. ``pm.sample()`` keeps assigning :class:`Gibbs`; pass this step
    explicitly: ``pm.sample(step=[pmp.SubClusters([z])])``.

    Supported: the CRP and Pitman-Yor priors, with one CollapsedNormal or
    CollapsedBetaBernoulli likelihood; anything else is refused with the exact
    alternative (:class:`Gibbs`, :class:`SplitMerge`).

    Parameters
    ----------
    vars : list
        The partition variable (one per step).
    n_proposals : int or "auto", default "auto"
        Split/merge proposals per iteration; ``"auto"``: ``min(MAX_AUTO_PROPOSALS,
        max(2, n // 3))``, fixed when the step is built. The number must not depend
        on the state: repeating a reversible kernel a number of times read from the
        current partition (e.g. its number of blocks) does not leave the posterior
        invariant (the exactness test caught exactly that).
    n_launch : int, default 5
        Rounds of sub-cluster updates that launch each proposal's sub-clusters.
    launch : {"hard", "sampled"}, default "hard"
        ``"sampled"``: the launch draws the sub-labels from their conditionals, as the
        paper's sub-cluster updates (§5); ``"hard"``: it takes their modes (2-means
        in the likelihood's own metric), so a proposed split does not scatter the
        items near the boundary at random. Both are exact (the proposal need only be
        a deterministic function of auxiliaries drawn independently of the state);
        "hard" is what lets splits be accepted on poorly separated blocks (e.g. one
        block holding ten clusters while sigma is still large).
    model, rng, initial_point, compile_kwargs, blocked
        As for PyMC's own steps.

    Sampler statistics
    ------------------
    n_clusters, largest_cluster_frac, log_joint : as for :class:`Gibbs`
    labels_accepted : int, 1 if step 2's parallel label update was accepted
    split_proposed, split_accepted, merge_proposed, merge_accepted : int

    Randomness: block-level draws come from the chain's stream in a fixed order;
    every per-item draw is ``counter_uniform(key, item)``, so the draws do not
    depend on the number of numba threads.

    Cost per iteration: O(n K) explicit densities (parallel) for step 2, and
    O((n_launch + 1) |S|) for a proposal on the items S of the blocks involved.
    """

    name = "partition_subclusters"
    move_description = "a sub-cluster iteration"
    Info = SubClustersInfo

    def __init__(self, vars, n_proposals="auto", n_launch=5, launch="hard", **kwargs):
        if not isinstance(launch, str) or launch not in ("hard", "sampled"):
            raise ValueError(
                f"SubClusters: 'launch' must be \"hard\" or \"sampled\", got {launch!r}.")
        self.hard = launch == "hard"
        if isinstance(n_proposals, str) and n_proposals == "auto":
            self.n_proposals = None
        else:
            try:
                self.n_proposals = integer_arg("n_proposals", n_proposals, "SubClusters",
                                               minimum=0)
            except (TypeError, ValueError) as err:
                raise type(err)(f"{err} Or \"auto\" (the default).") from None
        self.n_launch = integer_arg("n_launch", n_launch, "SubClusters", minimum=0)
        super().__init__(vars, **kwargs)
        self._check_supported()
        if self.n_proposals is None:
            self.n_proposals = min(MAX_AUTO_PROPOSALS, max(2, self.target.n // 3))

    def _check_supported(self):
        target = self.target
        prior = type(target.prior_op).__name__
        where = f"SubClusters: partition '{target.name}'"
        if target.constraint is not None or len(target.likelihoods) != 1:
            raise PartitionModelError(
                f"{where}: the sampler needs exactly one collapsed likelihood among "
                f"{SUPPORTED_LIKELIHOODS} and no support constraint; this model has "
                f"{len(target.likelihoods)}. Use pmp.Gibbs or pmp.SplitMerge (exact for "
                f"every collapsed likelihood and prior)."
            )
        _, prior_params, per_lik = target.params(target.model.initial_point())
        if not isinstance(prior_params, CRPParams | PitmanYorParams):
            raise PartitionModelError(
                f"{where}: prior {prior} is not supported (only {SUPPORTED_PRIORS}, whose "
                f"block weights have a Dirichlet conditional). Use pmp.Gibbs or "
                f"pmp.SplitMerge."
            )
        if not supports(per_lik[0]):
            lik = target.likelihoods[0]
            raise PartitionModelError(
                f"{where}: likelihood '{lik.name}' ({type(lik.owner.op).__name__}) has no "
                f"explicit-parameter draws yet (supported: {SUPPORTED_LIKELIHOODS}). Use "
                f"pmp.Gibbs or pmp.SplitMerge."
            )
        self._width = explicit_width(per_lik[0])
        self._alloc_sub = lambda params: target.likelihoods[0].owner.op.alloc_stats(
            2, target.data[0], params)

    def start_chain(self, rng):
        super().start_chain(rng)
        self._work = None
        self._outcomes = np.zeros(subclusters.N_OUTCOMES, dtype=np.int64)

    def move(self, chain, args):
        if self._work is None:
            self._work = subclusters.work_arrays(self.target.n, self._width,
                                                 self._alloc_sub(args.params))
        outcomes = self._outcomes
        status = subclusters.subclusters_iteration(
            args.stream, self.n_proposals, self.n_launch, self.hard, chain.state,
            args.prior_params, args.params, chain.stats, args.data, self._work, outcomes)
        if status < 0:
            raise FloatingPointError(
                f"SubClusters: partition '{self.target.name}': a weight or acceptance ratio "
                f"was NaN during {self.move_description}; check the data and "
                f"hyperparameters for non-finite values."
            )
        return record(SubClustersInfo, counters(subclusters.Outcomes, outcomes))
