"""``pmp.SubClusters``: the sub-cluster split-merge sampler of Chang & Fisher (2013)."""

import collections
import hashlib
import math
import warnings
from typing import NamedTuple

import numpy as np
from scipy.cluster.vq import kmeans2
from scipy.optimize import minimize_scalar

from pymc_partitions.distributions.partition import PartitionPriorRV

from pymc_partitions.distributions.validation import integer_arg
from pymc_partitions.kernels import gibbs, subclusters
from pymc_partitions.kernels.components.explicit import explicit_width, supports
from pymc_partitions.kernels.priors.crp import CRPParams
from pymc_partitions.kernels.priors.pitman_yor import PitmanYorParams
from pymc_partitions.kernels.components import combine
from pymc_partitions.partitions import canonicalize
from pymc_partitions.step_methods.base import MoveArgs, PartitionStep, step_arguments
from pymc_partitions.step_methods.hyperparameters import HyperSlice, prior_log_density
from pymc_partitions.step_methods.info import Summary, counters, record
from pymc_partitions.step_methods.target import PartitionModelError

#: Explicit-parameter likelihoods (pmp names) and priors the step samples today.
SUPPORTED_LIKELIHOODS = ("CollapsedNormal", "CollapsedMvNormal", "CollapsedNIW",
                         "CollapsedNormalInverseGamma", "CollapsedBetaBernoulli",
                         "CollapsedPoissonGamma", "CollapsedDirichletMultinomial")
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
    joint_split_proposed, joint_split_accepted, joint_merge_proposed, joint_merge_accepted
        The same for the joint moves of the partition and the likelihood
        hyperparameter (0 when the step samples the partition alone).
    multiway_split_proposed, multiway_split_accepted, multiway_merge_proposed,
    multiway_merge_accepted
        The same for the k-way joint moves (``ways`` blocks made from one, or merged
        into one); a proposal whose seeds neither share one block nor lie in ``ways``
        different blocks is no move and counts as neither.
    slice_evals
        Log-density evaluations of the hyperparameter's slice update (0 without one).
    """

    labels_accepted: np.int64
    split_proposed: np.int64
    split_accepted: np.int64
    merge_proposed: np.int64
    merge_accepted: np.int64
    joint_split_proposed: np.int64
    joint_split_accepted: np.int64
    joint_merge_proposed: np.int64
    joint_merge_accepted: np.int64
    multiway_split_proposed: np.int64
    multiway_split_accepted: np.int64
    multiway_merge_proposed: np.int64
    multiway_merge_accepted: np.int64
    slice_evals: np.int64


class SubClusters(PartitionStep):
    r"""Parallel sub-cluster split-merge sampler for a partition variable.

    Chang & Fisher (2013), *Parallel Sampling of DP Mixture Models using Sub-Cluster
    Splits* (NeurIPS 26), in an exact form (the kernel module
    :mod:`pymc_partitions.kernels.subclusters` states each step, the paper's
    formulas and where this differs from the paper, and why). Each iteration:

    1. draws the blocks' weights (Dirichlet given the block sizes) and
       parameters (conjugate posteriors), as the paper's restricted Gibbs sampler;
    2. updates every label given them, in parallel across cores (restricted
       to the existing blocks; one anchor item per block and a Metropolis-Hastings
       correction keep it exact);
    3. makes ``n_proposals`` split or merge proposals: a split proposes the two
       sub-clusters of a block, launched from the block's items by
       ``n_launch`` rounds of the paper's sub-cluster updates; a merge proposes the
       union of two blocks; both accepted with the collapsed target's ratio (the
       paper's H_split and H_merge) times the exact Hastings term of the proposal.

    4. with ``vars=[z, sigma]`` (a likelihood hyperparameter beside the partition;
       beyond the paper): ``n_joint`` split or merge proposals that move the
       partition and the hyperparameter together, then a slice update of the
       hyperparameter (:class:`JointHyperparameter`). Without them, a model whose
       likelihood scale is free stays where it starts at large n: from one block,
       sigma sits near the data's scale, where the CRP's cost of any split (about
       n H(p) nats) exceeds the likelihood's gain, and sigma cannot shrink while z is
       one block (at N = 10^5, ten separated clusters in 2-D: 1 block after 100
       iterations with ``[z]`` alone; 12 blocks of >= 1 %, ARI 0.95, with
       ``[z, sigma]``; ``examples/benchmark_large_n.py``).
    5. with ``vars=[z, sigma]`` and ``ways >= 3`` (beyond the paper):
       ``n_multiway`` joint proposals that split one block into ``ways`` blocks at
       once, or merge ``ways`` blocks into one, with the hyperparameter (step 5 of
       :class:`JointHyperparameter`). Two-way splits are not always enough: on ten
       clusters on a line (N = 10^6, 1-D, ``examples/benchmark_large_n.py
       --million``), with sigma refitted, each of the nine two-way cuts of the one
       block at the true gaps, and its splits into three or four even runs of
       clusters, lose 5,102 to 200,442 nats of posterior mass (the CRP's penalty,
       about n H(p), exceeds the gain: halving an even 1-D spread gains only n log
       2), while five even runs gain 226,638 and the truth 1,228,985
       (``examples/benchmark_large_n.py --landscape``).
       So the one-block state is a local mode for every two-way move, and the chain
       stayed there.

    New blocks appear only through splits. Weights, parameters and sub-clusters are
    drawn afresh each iteration, so hyperparameters may be sampled in the same
    ``pm.sample`` by :class:`~pymc_partitions.EscobarWest`,
    :class:`~pymc_partitions.HyperSlice` or NUTS: the step reads them at every
    iteration. ``pm.sample()`` keeps assigning :class:`Gibbs`; pass this step
    explicitly: ``pm.sample(step=[pmp.SubClusters([z, sigma])])`` (alpha then goes
    to EscobarWest or HyperSlice as usual).

    Supported: the CRP and Pitman-Yor priors, with one collapsed likelihood that
    has conjugate block-parameter draws (``SUPPORTED_LIKELIHOODS``: CollapsedNormal,
    CollapsedMvNormal, CollapsedNIW, CollapsedNormalInverseGamma,
    CollapsedBetaBernoulli, CollapsedPoissonGamma, CollapsedDirichletMultinomial);
    anything else (IRM, KMeansEnergy, a ProperColoring prior) is refused with the
    exact alternative (:class:`Gibbs`, :class:`SplitMerge`).

    Parameters
    ----------
    vars : list
        The partition variable (one per step), optionally followed by one continuous
        hyperparameter read only by its collapsed likelihood (e.g. ``[z, sigma]``):
        the step then also samples it (step 4). A hyperparameter of the prior
        (alpha), or a second one, is refused with what to do instead.
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
        paper's sub-cluster updates; ``"hard"``: it takes their modes (2-means
        in the likelihood's own metric), so a proposed split does not scatter the
        items near the boundary at random. Both are exact (the proposal need only be
        a deterministic function of auxiliaries drawn independently of the state);
        "hard" is what lets splits be accepted on poorly separated blocks (e.g. one
        block holding ten clusters while sigma is still large).
    n_joint : int, default 2
        Joint proposals of the partition and the hyperparameter per iteration (step
        4; only with a hyperparameter in ``vars``). Each costs a few O(n D) reads of
        block statistics and two short 1-D optimisations (the Laplace proposals).
    ways : int, default 5
        k of the k-way joint moves (step 5; only with a hyperparameter in
        ``vars``): a split makes ``ways`` blocks of one, launched by Lloyd's
        k-means from ``ways`` seed items; 0 turns them off. The default is the
        smallest k for which a split of the one block on the line of ten clusters
        above gains posterior mass (even runs of clusters: 3 and 4 blocks lose, 5
        gain); a larger k makes more spurious blocks, which merges at large n almost
        never remove.
    n_multiway : int, default 1
        k-way joint proposals per iteration. Once the partition has several
        blocks, most are no move (the ``ways`` seeds must share one block, or lie in
        ``ways`` different blocks) and cost O(ways).
    n_gibbs_sweeps : int, default 1
        Collapsed Gibbs sweeps (:class:`Gibbs`'s kernel) after each iteration; beyond
        the paper. Steps 1-3 never empty a block and their merges need the launch to
        rebuild both blocks exactly, which almost never happens at large n, so a
        spurious block made by an early split would otherwise stay (at N = 3,000,
        three groups: 7 blocks after 30 iterations without sweeps); a sweep drains
        it item by item. 0: the sub-cluster moves alone (as the exactness tests).
    model, rng, initial_point, compile_kwargs, blocked
        As for PyMC's own steps.

    Sampler statistics
    ------------------
    n_clusters, largest_cluster_frac, log_joint : as for :class:`Gibbs`
    labels_accepted : int, 1 if step 2's parallel label update was accepted
    split_proposed, split_accepted, merge_proposed, merge_accepted : int
    joint_split_proposed, joint_split_accepted, joint_merge_proposed,
    joint_merge_accepted, slice_evals : int, step 4's counts (0 without it)
    multiway_split_proposed, multiway_split_accepted, multiway_merge_proposed,
    multiway_merge_accepted : int, step 5's counts (0 without it)

    Randomness: block-level draws come from the chain's stream in a fixed order;
    every per-item draw is ``counter_uniform(key, item)``, so the draws do not
    depend on the number of numba threads.

    Cost per iteration: O(n K) explicit densities (parallel) for step 2, and
    O((n_launch + 1) |S|) for a proposal on the items S of the blocks involved.
    """

    name = "partition_subclusters"
    move_description = "a sub-cluster iteration"
    Info = SubClustersInfo
    #: [z, sigma] is one step (the joint moves), not one step per variable.
    default_blocked = True

    def __init__(self, vars, n_proposals="auto", n_launch=5, launch="hard", n_joint=2,
                 ways=5, n_multiway=1, n_gibbs_sweeps=1, **kwargs):
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
        self.n_joint = integer_arg("n_joint", n_joint, "SubClusters", minimum=0)
        self.ways = integer_arg("ways", ways, "SubClusters", minimum=0)
        if self.ways in (1, 2):
            raise ValueError(
                f"SubClusters: 'ways' must be 0 (no k-way moves) or at least 3 (the "
                f"two-way joint moves are n_joint's), got {ways}.")
        self.n_multiway = integer_arg("n_multiway", n_multiway, "SubClusters", minimum=0)
        self.n_gibbs_sweeps = integer_arg("n_gibbs_sweeps", n_gibbs_sweeps, "SubClusters",
                                          minimum=0)
        model, value_vars = step_arguments("SubClusters", vars, kwargs.get("model"),
                                           kwargs.get("rng"), "[z] or [z, sigma]")
        kwargs["model"] = model
        partition = [v for v in value_vars
                     if isinstance(model.values_to_rvs[v].owner.op, PartitionPriorRV)]
        hypers = [v for v in value_vars if not any(v is p for p in partition)]
        super().__init__(partition, **kwargs)
        self._check_supported()
        if self.n_proposals is None:
            self.n_proposals = min(MAX_AUTO_PROPOSALS, max(2, self.target.n // 3))
        self._joint = None
        if hypers:
            self._joint = JointHyperparameter(self, hypers, model, kwargs.get("compile_kwargs"))
            self.vars = [*self.vars, *hypers]
            self.set_rng(kwargs.get("rng"))

    def start_chain(self, rng):
        super().start_chain(rng)
        self._work = None
        self._outcomes = np.zeros(subclusters.N_OUTCOMES, dtype=np.int64)
        joint = getattr(self, "_joint", None)
        if joint is not None:
            # after the kernel stream (drawn first from rng): the joint moves' draws
            joint.start_chain(np.random.default_rng(rng.integers(2**63)))

    def stop_tuning(self):
        super().stop_tuning()
        if self._joint is not None:
            self._joint.slice.stop_tuning()

    def step(self, point):
        new_point, stats = super().step(point)
        if self._joint is None:
            return new_point, stats
        counts = {f"{move}_{kind}_{what}": 0 for move in ("joint", "multiway")
                  for kind in ("split", "merge") for what in ("proposed", "accepted")}
        for _ in range(self.n_joint):
            new_point, split, accepted = self._joint.propose(new_point)
            kind = "split" if split else "merge"
            counts[f"joint_{kind}_proposed"] += 1
            counts[f"joint_{kind}_accepted"] += int(accepted)
        for _ in range(self.n_multiway if self.ways else 0):
            new_point, kind, accepted = self._joint.propose_multiway(new_point, self.ways)
            if kind is not None:
                counts[f"multiway_{kind}_proposed"] += 1
                counts[f"multiway_{kind}_accepted"] += int(accepted)
        new_point, slice_stats = self._joint.slice.step(new_point)
        stats[0].update(counts, slice_evals=slice_stats[0]["slice_evals"])
        # The draw's summary at the new (z, hyperparameter); the container follows
        # the point, so the next iteration does not reload it.
        target = self.target
        values, prior_params, per_lik = target.params(new_point)
        args = MoveArgs(self._stream, values, prior_params, per_lik)
        container = self._container
        if not np.array_equal(new_point[target.name], self.chain_of(container).labels):
            container = self.load_container(container, new_point[target.name], args)
            self._container = container
        chain = self.chain_of(container)
        params, _, data = target.kernel_args(chain, values, per_lik)
        summary = self.summary(chain, args._replace(params=params, data=data))
        stats[0].update(zip(Summary._fields, summary))
        new_point[target.name] = chain.labels.copy()
        return new_point, stats

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

    def move(self, chain, args):
        self._ensure_work(args.params)
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
        if self.n_gibbs_sweeps:
            self.fail_if(gibbs.run_sweeps(args.stream, self.n_gibbs_sweeps, chain.state,
                                          args.prior_params, args.params, chain.stats,
                                          args.data, chain.log_w, chain.order), args)
        return record(SubClustersInfo, counters(subclusters.Outcomes, outcomes),
                      joint_split_proposed=0, joint_split_accepted=0, joint_merge_proposed=0,
                      joint_merge_accepted=0, multiway_split_proposed=0,
                      multiway_split_accepted=0, multiway_merge_proposed=0,
                      multiway_merge_accepted=0, slice_evals=0)

    def _ensure_work(self, params):
        if self._work is None:
            self._work = subclusters.work_arrays(self.target.n, self._width,
                                                 self._alloc_sub(params))
        return self._work


#: Laplace proposals remembered per chain (by partition and the other inputs).
LAPLACE_CACHE = 256
#: Scale of the joint moves' Laplace proposal: its standard deviation is this many
#: times the conditional's (curvature at the mode); above 1 for heavier tails.
LAPLACE_SCALE = 1.5


class JointHyperparameter:
    r"""Split and merge proposals that move the partition and one likelihood
    hyperparameter together (``pmp.SubClusters([z, sigma])``); beyond the paper.

    Why: with a hyperparameter free, the state (one block, sigma near the data's
    scale) is a local mode of p(z, sigma | y): a split at that sigma loses (the
    CRP's penalty for splitting n items, about n H(p) nats, exceeds the likelihood's
    gain while sigma is large), and sigma cannot shrink while z is one block. A
    proposal that moves both crosses it.

    The move, for value x of the hyperparameter (PyMC's unconstrained scale) and the
    conditional :math:`C(x; z) = \log p(x) + \log p(y \mid z, x)` (its prior with the
    Jacobian plus the collapsed likelihood from the blocks' statistics, as
    :class:`~.HyperSlice` evaluates it):

    1. draw two distinct items i, j, a key and log u;
    2. z' is the split D(S; x) of i's block launched at the current x (as step 3 of
       :mod:`~pymc_partitions.kernels.subclusters`) if i and j share a block, else the
       merge of their blocks;
    3. x' ~ q(. | z'): the Laplace approximation of C(.; z'), a Normal per element at
       its mode with ``LAPLACE_SCALE`` times its curvature's standard deviation (the
       mode found from a fixed start, so q is a function of z' alone);
    4. a merge needs the reverse split to exist: D(S; x') launched with (key, i, j)
       on the union at the proposed x' must give back the two blocks (else it is
       rejected: a Hastings term of -inf);
    5. accept if log u < log p(z') + C(x'; z') - log p(z) - C(x; z)
       + log q(x | z) - log q(x' | z').

    With the proposal a deterministic involution given (i, j, key) and the Normal
    noise of step 3, this is Metropolis-Hastings on (z, x); the selection of (i, j)
    is symmetric.

    The k-way move (:meth:`propose_multiway`, k = ``ways``) is the same with k seeds:

    1. draw k distinct items s_1, ..., s_k (a uniform ordered draw) and log u;
    2. if they share one block, z' splits it into the k sub-clusters L(S) that
       Lloyd's k-means (``scipy.cluster.vq.kmeans2``, ``n_launch`` rounds, Euclidean
       on the items' data rows) launches on its items S from the centres at the
       seeds, seed c keeping sub-cluster c; if they lie in k different blocks, z'
       merges those blocks, and the reverse split must exist: L(S) on the union must
       give back the k blocks (else rejected); otherwise there is no move;
    3. - 5. as above: x' ~ q(. | z'), accept with the same ratio.

    L(S) is a deterministic function of S and the ordered seeds (not of x, nor of
    anything else in the state), so the split and the merge with the same seeds are
    each other's reverse and the Hastings term of the partition's proposal is 0 or
    -inf, as for two ways. Why a launch that ignores x: at the one block's x (sigma
    near the data's scale) the sub-clusters' weights swamp the distances, and the
    paper's update launched at x collapsed into one or two sub-clusters
    in a prototype (10^6 points in 1-D, k = 3 to 20); k-means ignores both.

    The hyperparameter's own update each iteration is
    :class:`~.HyperSlice` (built inside the step). Supported: one continuous free
    variable read only by this partition's collapsed likelihood (sigma, tau, mu0,
    ...), not by its prior (use EscobarWest or HyperSlice for alpha).
    """

    def __init__(self, step, value_vars, model, compile_kwargs):
        where = f"SubClusters: partition '{step.target.name}'"
        if len(value_vars) != 1:
            raise ValueError(
                f"{where}: 'vars' may hold the partition and one likelihood hyperparameter "
                f"(e.g. [z, sigma]); got {[v.name for v in value_vars]}. Leave the others to "
                f"pmp.HyperSlice or NUTS (pm.sample assigns them)."
            )
        rv = model.values_to_rvs[value_vars[0]]
        self.slice = HyperSlice([rv], model=model, compile_kwargs=compile_kwargs)
        terms = self.slice._terms
        if len(terms) != 1 or terms[0].name != step.target.name or terms[0].prior_reads:
            raise PartitionModelError(
                f"{where}: '{rv.name}' must be read by this partition's collapsed likelihood "
                f"only (not by its prior, nor by another partition) for a joint move. Sample "
                f"it with pmp.HyperSlice or pmp.EscobarWest instead."
            )
        self.step = step
        self.terms = terms[0]
        self.name = value_vars[0].name
        self.z = step.target.name

    def start_chain(self, rng):
        self.rng = rng
        self.slice.set_rng(rng)
        self._laplace_cache = collections.OrderedDict()
        # the k-way launch's points: each item's data as one float64 row (read per
        # chain: pm.set_data may have replaced them)
        rows = self.step.target.data[0][0]
        self.points = np.asarray(rows, dtype=np.float64).reshape(rows.shape[0], -1)

    def log_conditional(self, point, labels, x):
        """C(x; z) at partition ``labels``."""
        values = dict(point)
        values[self.z] = labels
        values[self.name] = x
        self.terms.load(values, self.terms.inputs(values))
        return self.slice.log_conditional(values, self.name)

    def log_prior(self, point, labels):
        target = self.step.target
        values = target.hyper_values(point)[: target.n_prior_hypers]
        sizes = np.bincount(labels).astype(np.float64)
        return prior_log_density(target.prior_op, values, sizes[sizes > 0], target.n)

    def laplace(self, point, labels, shape):
        """(mode, sd) of q(. | z), flat arrays; a deterministic function of ``labels``
        and the conditional's other inputs (elements optimised in turn from 0, twice;
        Brent's method). Remembered for the last ``LAPLACE_CACHE`` such keys (a
        BLAKE2b digest of the labels and inputs): the current state's q is then not
        searched again at every proposal, and small models revisit few partitions."""
        _, names, _ = self.slice._conditionals[self.name]
        digest = hashlib.blake2b(np.ascontiguousarray(labels).tobytes(), digest_size=16)
        for name in names:
            if name != self.name:
                digest.update(np.ascontiguousarray(point[name]).tobytes())
        key = digest.digest()
        found = self._laplace_cache.get(key)
        if found is not None:
            self._laplace_cache.move_to_end(key)
            return found
        found = self._laplace_search(point, labels, shape)
        self._laplace_cache[key] = found
        if len(self._laplace_cache) > LAPLACE_CACHE:
            self._laplace_cache.popitem(last=False)
        return found

    def _laplace_search(self, point, labels, shape):
        x = np.zeros(int(np.prod(shape)))

        def f(t, e):
            trial = x.copy()
            trial[e] = t
            value = self.log_conditional(point, labels, trial.reshape(shape))
            return -value if np.isfinite(value) else 1e300

        for _ in range(2 if x.size > 1 else 1):
            for e in range(x.size):
                x[e] = minimize_scalar(f, bracket=(-1.0, 1.0), args=(e,), method="brent").x
        sd = np.empty_like(x)
        for e in range(x.size):
            h = 1e-3 * max(1.0, abs(x[e]))
            curv = (f(x[e] + h, e) - 2.0 * f(x[e], e) + f(x[e] - h, e)) / (h * h)
            sd[e] = LAPLACE_SCALE / math.sqrt(curv) if curv > 0 else LAPLACE_SCALE
        return x, sd

    def propose(self, point):
        """One joint proposal from ``point``: ``(new point, split?, accepted?)``."""
        step, rng = self.step, self.rng
        labels = canonicalize(point[self.z])
        x = np.asarray(point[self.name], dtype=np.float64)
        shape = x.shape
        n = labels.shape[0]
        # 1. selection and auxiliaries
        i, j = (int(v) for v in rng.choice(n, size=2, replace=False))
        key = int(rng.integers(0, 2**62))
        log_u = math.log(1.0 - rng.random())
        split = labels[i] == labels[j]
        params, data = self._kernel_args(point)
        work = step._ensure_work(params)
        # 2. the proposed partition
        if split:
            m = subclusters.launch_entry(key, i, j, step.n_launch, step.hard, labels, params,
                                         data, work)
            new = labels.copy()
            new[work[6][:m][work[8][:m] == 1]] = labels.max() + 1
        else:
            new = labels.copy()
            new[new == labels[j]] = labels[i]
        new = canonicalize(new)
        # 3. the hyperparameter from q(. | z')
        mode_new, sd_new = self.laplace(point, new, shape)
        noise = rng.standard_normal(mode_new.shape)
        x_new = (mode_new + sd_new * noise).reshape(shape).astype(x.dtype)
        proposed = dict(point)
        proposed[self.name] = x_new
        # 4. a merge's reverse split, launched at x'
        if not split:
            params, data = self._kernel_args(proposed)
            m = subclusters.launch_entry(key, i, j, step.n_launch, step.hard, new, params,
                                         data, work)
            if not self.reverse_split_exists(labels, j, work[6][:m], work[8][:m]):
                return point, split, False
        # 5. the Metropolis-Hastings ratio
        new_point, accepted = self._accept(point, labels, x, new, x_new, mode_new, sd_new,
                                           log_u)
        return new_point, split, accepted

    def _accept(self, point, labels, x, new, x_new, mode_new, sd_new, log_u):
        """Step 5: ``(point after the test, accepted?)`` for the proposal (new, x_new),
        x_new drawn from q(. | new) = Normal(mode_new, sd_new)."""
        mode, sd = self.laplace(point, labels, x.shape)
        log_q_back = _log_normal(x.reshape(-1), mode, sd)
        log_q_forth = _log_normal(x_new.reshape(-1), mode_new, sd_new)
        log_ratio = (self.log_prior(point, new) + self.log_conditional(point, new, x_new)
                     - self.log_prior(point, labels) - self.log_conditional(point, labels, x)
                     + log_q_back - log_q_forth)
        if not log_u < log_ratio:
            return point, False
        proposed = dict(point)
        proposed[self.name] = x_new
        proposed[self.z] = new
        return proposed, True

    def propose_multiway(self, point, k):
        """One k-way joint proposal from ``point`` (see the class docstring):
        ``(new point, "split" | "merge" | None, accepted?)``; None: no move."""
        rng = self.rng
        n = point[self.z].shape[0]
        if n < k:
            return point, None, False
        # 1. selection (an ordered uniform draw of k distinct items) and log u; whether
        # it is a move is read from the seeds' labels alone, so a no-move costs O(k)
        seeds = rng.choice(n, size=k, replace=False)
        log_u = math.log(1.0 - rng.random())
        seed_labels = point[self.z][seeds]
        split = bool(np.all(seed_labels == seed_labels[0]))
        if not split and np.unique(seed_labels).size != k:
            return point, None, False
        kind = "split" if split else "merge"
        labels = canonicalize(point[self.z])
        blocks = labels[seeds]
        x = np.asarray(point[self.name], dtype=np.float64)
        # 2. S in item order, its launch, and the proposed partition
        members = np.flatnonzero(np.isin(labels, blocks))
        sub = kmeans_launch(self.points[members], np.searchsorted(members, seeds),
                            self.step.n_launch)
        new = labels.copy()
        if split:
            new[members] = labels.max() + 1 + sub
        else:
            if not self.multiway_reverse_exists(blocks, sub, labels[members]):
                return point, kind, False
            new[members] = blocks[0]
        new = canonicalize(new)
        # 3. the hyperparameter from q(. | z'); 5. the test
        mode_new, sd_new = self.laplace(point, new, x.shape)
        noise = rng.standard_normal(mode_new.shape)
        x_new = (mode_new + sd_new * noise).reshape(x.shape).astype(x.dtype)
        new_point, accepted = self._accept(point, labels, x, new, x_new, mode_new, sd_new,
                                           log_u)
        return new_point, kind, accepted

    @staticmethod
    def reverse_split_exists(labels, j, items, sub):
        """Step 4: whether the launch's sub-labels ``sub`` of ``items`` (the union)
        are the two blocks of ``labels`` (j's block: sub-label 1)."""
        return np.array_equal(sub, (labels[items] == labels[j]).astype(sub.dtype))

    @staticmethod
    def multiway_reverse_exists(blocks, sub, member_labels):
        """Step 2 of the k-way merge: whether the launch's sub-labels ``sub`` of the
        union are its k blocks (sub-label c: the block ``blocks[c]`` of seed c), given
        the union's labels ``member_labels``."""
        return np.array_equal(blocks[sub], member_labels)

    def _kernel_args(self, point):
        """The kernels' ``(params, data)`` at ``point``'s hyperparameters."""
        _, _, per_lik = self.step.target.params(point)
        params, _, data = combine(per_lik, [None] * len(per_lik), self.step.target.data)
        return params, data


def kmeans_launch(points, seed_positions, rounds):
    """The k-way launch L(S): sub-labels (m,) int64 in 0..k-1 of the m rows ``points``
    ((m, D) float64), from ``rounds`` (at least 1) rounds of Lloyd's k-means
    (``scipy.cluster.vq.kmeans2``, ``minit="matrix"``) from the centres
    ``points[seed_positions]`` ((k,) int); the seed at ``seed_positions[c]`` keeps
    sub-label c. Deterministic: no random draw (a centre left without points stays
    where it was, scipy's ``missing="warn"``, its warning silenced; ties go to the
    lower sub-label)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, sub = kmeans2(points, points[seed_positions], iter=max(int(rounds), 1),
                         minit="matrix", missing="warn", check_finite=False)
    sub = np.asarray(sub, dtype=np.int64)
    sub[seed_positions] = np.arange(len(seed_positions))
    return sub


def _log_normal(x, mean, sd):
    z = (x - mean) / sd
    return float(np.sum(-0.5 * z * z - np.log(sd)))
