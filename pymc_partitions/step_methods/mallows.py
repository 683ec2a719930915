r"""``pmp.MallowsGibbs``: Slice-Gibbs and Beta-Gibbs for Dirichlet-process mixtures of
Generalized Mallows models (Meilă & Chen 2010)."""

import math
import warnings
from typing import Annotated, NamedTuple

import numpy as np
from pymc.step_methods.compound import Competence
from scipy.special import betaln

from pymc_partitions.distributions.mallows import lemma1_log_marginal, log_beta_tilde
from pymc_partitions.distributions.partition import CRPRV, PartitionPriorRV
from pymc_partitions.distributions.validation import integer_arg
from pymc_partitions.kernels import mallows_beta as mb
from pymc_partitions.kernels import mallows_gibbs as mg
from pymc_partitions.kernels import mallows_split_merge as msm
from pymc_partitions.kernels.random import new_stream
from pymc_partitions.kernels.split_merge import Outcomes as SplitMergeOutcomes
from pymc_partitions.partitions import canonicalize
from pymc_partitions.step_methods.assignment import assigning_model
from pymc_partitions.step_methods.base import ApproximateStepWarning, PartitionStep
from pymc_partitions.step_methods.chain_state import chain_state
from pymc_partitions.step_methods.info import Summary, counters, record, stats_dtypes_shapes
from pymc_partitions.step_methods.target import (
    PartitionModelError,
    PartitionTarget,
    explicit_likelihoods,
)

#: Blocks reported per draw by default (``max_reported_clusters``).
DEFAULT_REPORTED = 64
METHODS = ("slice", "exact_beta", "beta")
#: Methods that integrate theta out in the reassignment (Beta-Gibbs, Figure 5).
BETA_METHODS = ("exact_beta", "beta")
#: Split-merge updates per iteration (``n_split_merge``) by default.
DEFAULT_SPLIT_MERGE = 20


def mallows_likelihoods(model, rv):
    """The likelihoods of partition ``rv`` that this step samples (their op names
    ``MallowsGibbs`` as its ``explicit_step``)."""
    return [lik for lik in explicit_likelihoods(model, rv)
            if getattr(lik.owner.op, "explicit_step", None) == "MallowsGibbs"]


class MallowsInfo(NamedTuple):
    """What one MallowsGibbs iteration did (beside :class:`~.info.Summary`).

    Attributes
    ----------
    sigma_accept
        Fraction of sigma proposals accepted this iteration (NaN when none was made:
        Beta-Gibbs with one-ranking clusters only).
    mallows_sigma
        (K_max, n) int16, central permutation (items best first) of canonical block
        k of the draw, -1 beyond its blocks.
    mallows_theta
        (K_max, T) float32, its dispersions theta_1..theta_T, NaN beyond its blocks.
    """

    sigma_accept: np.float64
    mallows_sigma: Annotated[np.int16, (None, None)]
    mallows_theta: Annotated[np.float32, (None, None)]


class MallowsSplitMergeInfo(NamedTuple):
    """:class:`MallowsInfo` and the split-merge counts (``split_merge=True``).

    Attributes
    ----------
    sigma_accept, mallows_sigma, mallows_theta
        As in :class:`MallowsInfo`.
    split_proposed, split_accepted, merge_proposed, merge_accepted
        This iteration's split-merge counts.
    """

    sigma_accept: np.float64
    mallows_sigma: Annotated[np.int16, (None, None)]
    mallows_theta: Annotated[np.float32, (None, None)]
    split_proposed: np.int64
    split_accepted: np.int64
    merge_proposed: np.int64
    merge_accepted: np.int64


class MallowsGibbs(PartitionStep):
    r"""Slice-Gibbs and Beta-Gibbs samplers of a Dirichlet-process mixture of Generalized
    Mallows models.

    Meilă & Chen (2010), *Dirichlet Process Mixtures of Generalized Mallows Models*
    (UAI), for a partition ``z`` (``pmp.CRP``) observed by one
    :class:`~pymc_partitions.GeneralizedMallows`. The cluster parameters (sigma_c,
    theta_c) are explicit state of the step (per chain, per slot) and are reported
    per draw whatever the method.

    ======================  =========  ==============================================
    ``method``              exact?     paper
    ======================  =========  ==============================================
    ``"slice"`` (default)   exact      Section 4, Figure 1 (with an MH correction)
    ``"exact_beta"``        exact      Section 5, Figure 5 with the finite-n B~ of
                                       eqs. 14-15 and Lemma 6 (reordered, below)
    ``"beta"``              **approx.  Figure 5 as the paper runs it: the infinite-n
                            imate**    Beta functions of Lemma 4 (eqs. 12-13)
    ======================  =========  ==============================================

    **Slice-Gibbs** (``"slice"``). One iteration (one draw) is:

    1. **Reassignment** (Neal 2000, Algorithm 2): each ranking pi_i in turn (a fresh
       random order) leaves its cluster (a cluster left empty is deleted with its
       parameters) and joins cluster c with probability proportional to
       n_{-i,c} GM(pi_i | sigma_c, theta_c), or a new cluster with probability
       proportional to alpha (n - t_i)!/n! (Lemma 1: the marginal of pi_i under
       P0). When a new cluster is opened its (sigma, theta) are drawn *exactly* from
       P0(. | pi_i), the posterior given pi_i alone
       (:func:`~pymc_partitions.kernels.mallows_gibbs.new_cluster_draw`: codes V_j
       with probabilities proportional to B~(nu r_j + v, nu + 2, n - j) of eq. 14,
       sigma built from them, theta_j by an exact rejection draw).
    2. **Cluster parameters**, for every cluster, ``n_gibbs`` (T_Gibbs) times:
       sigma_c given theta_c by one Metropolis-Hastings step whose proposal is
       Sample-sigma-Stagewise (Figure 2) with its exact proposal probability (the
       stagewise draw alone is not an exact draw of sigma | theta when the theta_j
       differ; see :mod:`pymc_partitions.kernels.mallows`) followed by a sweep of
       insertion Gibbs moves (each item taken out of sigma_c and put back at a
       position drawn from its conditional), then each theta_{c,j}
       by ``n_slices`` (T_Slices) univariate slice-sampling updates (Figure 3; Neal
       2003, stepping out and shrinkage) of p(theta_j | sigma_c, R, nu, r), which
       is proportional to exp(-theta (nu r_j + S_j(sigma_c))) psi_{n-j}(theta)^{-(nu + N_j)}.

    *Exactness.* The state is (z, {sigma_c, theta_c} of the occupied clusters) and
    the target p(z | alpha) prod_c P0(sigma_c, theta_c) prod_{i in c} GM(pi_i |
    sigma_c, theta_c), whose z-marginal is the posterior of the partition (the
    model's log density, :func:`~pymc_partitions.distributions.mallows.exact_log_marginal`).
    Step 1 is Neal's Algorithm 2, a Gibbs update of (z_i, the new cluster's
    parameters) from their joint conditional: existing clusters with their
    parameters held, a new one with its parameters integrated (the exact marginal
    (n - t_i)!/n!) and then drawn exactly from their posterior given pi_i. Step 2's
    moves each leave the conditional of the cluster's parameters invariant (exact
    MH; slice sampling). So the sampler is **exact** (tested against enumeration).
    The paper's Figure 1 draws sigma by the stagewise procedure alone (an
    approximation when the theta_j differ); the MH correction makes it exact, and
    the insertion sweep makes it mix: an independence step alone sticks, at N = 5000
    and n = 20, at centres it rarely proposes (measured on Figure 6's data; module
    docstring of :mod:`pymc_partitions.kernels.mallows`).

    **Exact Beta-Gibbs** (``"exact_beta"``; Section 5, Figure 5, finite n). theta
    is integrated out of the reassignment, so the chain runs on (z, sigma) with
    target p(z) prod_c n!^{-1} prod_j B~(nu r_j + S_j(sigma_c), nu + N_{c,j} + 1,
    n - j) / B~(nu r_j, nu + 1, n - j) (eq. 15); theta is drawn given (z, sigma)
    only to move sigma and to be reported. One iteration:

    1. **Reassignment**, theta integrated out: ranking i joins cluster c with
       probability proportional to n_{-i,c} prod_{j <= t_i} B~(V_j(pi_i | sigma_c) +
       nu r_j + S_j, nu + N_{c,j} + 2, n - j) / B~(nu r_j + S_j, nu + N_{c,j} + 1,
       n - j) (Lemma 6, eq. 17; S_j, N_{c,j} of the cluster's other rankings), or a
       new cluster with probability proportional to alpha (n - t_i)!/n! (Lemma 1),
       whose sigma is drawn exactly from p(sigma | pi_i)
       (:func:`~pymc_partitions.kernels.mallows_gibbs.new_cluster_draw`, not the
       paper's approximate Sample-sigma-N1). The ratios are rows of a per-cluster
       table of V_j's predictive law (a probability vector by Lemma 5), updated
       when a ranking moves; the weight of (ranking, cluster) costs the codes in
       O(t log n) and t look-ups (:mod:`pymc_partitions.kernels.mallows_beta`).
    2. **Cluster parameters.** A cluster with one ranking: sigma_c drawn exactly
       from p(sigma | pi) (theta integrated out), as Figure 5 does with
       Sample-sigma-N1. A larger cluster, ``n_gibbs`` times: **theta_c | sigma_c
       first**, then sigma_c | theta_c by the exact MH step of Slice-Gibbs; and
       finally theta_c | sigma_c once more. Every theta_j draw is exact: its
       density exp(-theta (nu r_j + S_j)) psi_{n-j}(theta)^{-(nu + N_j)} is
       log-concave, drawn by rejection from a tangent-line envelope (not a grid,
       not slice sampling).

    *The order is a correction of Figure 5.* Figure 5 samples sigma_c | theta_c
    (step 2a) before redrawing theta_c (2b). But step 1 integrated theta out while
    it moved z: the theta_c held afterwards was drawn given the *old* members, so
    it is not a draw of theta_c | z, sigma_c, and conditioning sigma_c on it
    breaks the invariance of the target. In a partially collapsed Gibbs sampler
    (van Dyk & Park 2008) a variable integrated out of one step must be redrawn
    from its full conditional before a later step conditions on it; here theta_c
    | sigma_c, z is drawn first (exactly, so no stale value survives), which makes
    step 2 a Gibbs sampler of (sigma_c, theta_c) given z, invariant for p(sigma_c
    | z) marginally, and the final theta draw makes the reported (sigma_c,
    theta_c) a draw of the joint. So ``"exact_beta"`` is **exact** (tested against
    enumeration; the B~ ratios come from a Gauss-Legendre quadrature that agrees
    with QUADPACK to ~1e-12). On the small test problem the bias of Figure 5's own
    order is below the test's resolution; it is still not a valid order.

    **Beta-Gibbs as in the paper** (``"beta"``): the skeleton of ``"exact_beta"``
    with the paper's infinite-n approximation (Section 5, "the infinite generalized
    Mallows model can be used to approximate some of the sampling distributions"):
    the Beta function B(a, b) of Lemma 4 / eq. 13 in place of B~(a, b, n - j) in the
    reassignment weights, theta_j | sigma from eq. 12 (e^{-theta_j} ~
    Beta(nu r_j + S_j, nu + N_j + 1), drawn exactly), and Sample-sigma-N1 (Figure 4,
    Beta(nu r_j + k, nu + 2) weights) for new and one-ranking clusters. **It is
    approximate**: B~(a, b, m) -> B(a, b) only as m = n - j -> infinity, so for
    finite n the weights are not the conditionals of the model (they do not even
    sum to one over the codes a stage can take), theta and sigma are drawn from
    the infinite model's laws, and the chain's stationary law is not the posterior.
    The error is largest for small n and late stages; on the n = 4 test problem
    its total-variation distance to the exact posterior was measured at 0.081
    (an exact sampler's bound there: 0.042). Beyond the paper's approximation the
    same corrections as ``"exact_beta"`` are kept (the MH step for sigma | theta,
    the partially collapsed order), so the measured error is the approximation's.
    Prefer ``"exact_beta"`` unless n is large; constructing the step with
    ``"beta"`` warns (:class:`~pymc_partitions.step_methods.base.ApproximateStepWarning`,
    once per step instance).

    *Through the generic path.* The model is read by
    :class:`~pymc_partitions.step_methods.target.PartitionTarget` (the likelihood
    declares explicit block parameters on its op; :meth:`new_target` accepts them),
    the chain is a :class:`~pymc_partitions.step_methods.chain_state.ChainState` whose
    ``state`` is the slot-form partition and whose ``stats`` are the per-slot
    statistics with sigma_c, theta_c beside them (:mod:`pymc_partitions.kernels.mallows_gibbs`'s
    records), and the iteration is the template's ``step()``: :meth:`move` returns a
    :class:`MallowsInfo` (:class:`MallowsSplitMergeInfo`), :meth:`summary` the
    label-invariant statistics of the explicit state.

    When the partition reaching the step is not the one it wrote (a new chain,
    ``initvals``, another step moved z), each cluster's parameters are drawn from
    the prior and updated by step 2 before the iteration.

    Parameters
    ----------
    vars : list
        The partition variable (one per step).
    method : {"slice", "exact_beta", "beta"}
        Slice-Gibbs (Figure 1), exact Beta-Gibbs (Figure 5, finite n) or the paper's
        approximate Beta-Gibbs (above).
    n_gibbs : int, default 10
        T_Gibbs: sweeps of step 2 per iteration (the paper's default), for every
        cluster (Beta-Gibbs: every cluster with more than one ranking).
    n_slices : int, default 3
        T_Slices: slice updates of each theta_j per sweep of step 2 (the paper's);
        ``"slice"`` only (Beta-Gibbs draws theta exactly).
    max_reported_clusters : int, optional
        Blocks whose parameters are reported per draw (default: min(N, 64)).
    slice_width : float, default 1.0
        Slice sampling's initial interval width w on theta (at most 50 steps out;
        ``"slice"`` only).
    split_merge : bool, default False
        Add ``n_split_merge`` split-merge Metropolis-Hastings updates per iteration,
        between step 1 and step 2 (:mod:`pymc_partitions.kernels.mallows_split_merge`:
        Jain & Neal 2004's restricted-Gibbs launch, here with each cluster's (sigma,
        theta) held fixed through the launch and a split's new cluster parameters
        drawn exactly from P0(. | pi_j); the ratio carries m(pi_j) / GM(pi_j | phi_j)
        with m of Lemma 1). Exact (tested against enumeration). The paper has no such
        move: Slice-Gibbs and Beta-Gibbs move one ranking at a time and cannot pull a
        fitted cluster apart (two merged true clusters stay merged; README).
        ``method="slice"`` only: Beta-Gibbs integrates theta out of the partition
        moves, where a ranking's weight in a cluster depends on the cluster's other
        rankings (Lemma 6), which the move's fixed-parameter scans do not implement.
    n_split_merge : int, default 20
        Split-merge updates per iteration (``split_merge=True``).
    n_restricted_scans : int, default 5
        Intermediate restricted Gibbs scans of the launch (Jain & Neal's t; 0: the
        launch is the uniformly random split).
    model, rng, initial_point, compile_kwargs, blocked
        As for PyMC's own steps.

    Sampler statistics
    ------------------
    n_clusters, largest_cluster_frac : label-invariant summaries of the draw
    log_joint : log p(z | alpha) + sum_c [log P0(sigma_c, theta_c) + sum_i log GM]
        of the explicit state
    sigma_accept : fraction of sigma proposals accepted this iteration (NaN when
        none was made: Beta-Gibbs with one-ranking clusters only)
    split_proposed, split_accepted, merge_proposed, merge_accepted : int, this
        iteration's split-merge counts (declared only with ``split_merge=True``; the
        run's rates: ``idata.sample_stats.split_accepted.sum() /
        idata.sample_stats.split_proposed.sum()``)
    mallows_sigma : (K_max, n) int16, central permutation (items best first) of
        canonical block k of the draw, -1 beyond its blocks
    mallows_theta : (K_max, T) float32, its dispersions theta_1..theta_T, NaN beyond
        its blocks. K_max = ``max_reported_clusters``; blocks k >= K_max are not
        reported (``n_clusters`` says how many there are). Memory: 2 n + 4 T bytes
        per reported block per draw (n = 20, K_max = 64: 7 KB per draw).

    ``pmp.sample_block_parameters(idata, model)`` puts ``mallows_sigma`` and
    ``mallows_theta`` into the ``block_parameters`` group as ``y_sigma`` (chain, draw,
    z_block, y_rank) and ``y_theta`` (chain, draw, z_block, y_stage) beside
    ``z_block_size``, the dims ArviZ selects and summarises by
    (``az.summary(idata, group="block_parameters")``), without copying them.

    Cost per iteration: O(N K t log n) for step 1, O(K T_Gibbs (n^3 + T n^2 +
    T T_Slices)) for step 2; statistics R_j updated in O(t n) per move.
    Beta-Gibbs adds to step 1 the rebuilding of t rows of two clusters' predictive
    tables per ranking, O(t n Q) with Q ~ 200-400 quadrature nodes for
    ``"exact_beta"`` (O(t n) lgamma calls for ``"beta"``), and draws theta
    exactly in step 2 (a few microseconds per theta_j).
    """

    name = "mallows_gibbs"
    #: Negative control only: the paper's Figure 5 order in step 2 of the Beta-Gibbs
    #: methods (sigma | stale theta first). Invalid; see the class docstring.
    _figure5_order = False
    #: Tests only: False leaves step 1 (the reassignment) out, to check the
    #: split-merge move with the parameter step alone.
    _reassign_sweeps = True
    #: Negative controls only: a wrong split-merge ratio (kernels.mallows_split_merge).
    _split_merge_control = msm.EXACT
    move_description = "a Slice-Gibbs sweep"
    Info = MallowsInfo  # MallowsSplitMergeInfo per instance with split_merge=True

    def __init__(self, vars, method="slice", n_gibbs=10, n_slices=3,
                 max_reported_clusters=None, slice_width=1.0, split_merge=False,
                 n_split_merge=DEFAULT_SPLIT_MERGE, n_restricted_scans=5, *, model=None,
                 blocked=False, rng=None, initial_point=None, compile_kwargs=None):
        owner = "MallowsGibbs"
        if not isinstance(method, str) or method not in METHODS:
            raise ValueError(f"{owner}: 'method' must be one of {METHODS}, got {method!r}.")
        self.method = method
        if not isinstance(split_merge, bool | np.bool_):
            raise TypeError(f"{owner}: 'split_merge' must be True or False, got {split_merge!r}.")
        self.split_merge = bool(split_merge)
        self.n_split_merge = integer_arg("n_split_merge", n_split_merge, owner, minimum=1)
        self.n_restricted_scans = integer_arg("n_restricted_scans", n_restricted_scans, owner,
                                              minimum=0)
        if self.split_merge and method != "slice":
            raise ValueError(
                f"{owner}: 'split_merge' is available with method='slice' only, got "
                f"method={method!r}. The split-merge move holds each cluster's (sigma, theta) "
                f"explicit and fixed through its restricted scans; Beta-Gibbs integrates theta "
                f"out of the partition moves, where a ranking's weight in a cluster depends on "
                f"the cluster's other rankings (Lemma 6), which this move does not implement. "
                f"Use method='slice' with split_merge=True.")
        self.n_gibbs = integer_arg("n_gibbs", n_gibbs, owner, minimum=1)
        self.n_slices = integer_arg("n_slices", n_slices, owner, minimum=1)
        width = float(slice_width)
        if not (np.isfinite(width) and width > 0):
            raise ValueError(f"{owner}: 'slice_width' must be positive, got {slice_width!r}.")
        self.width = width
        # The template's construction: vars checked, the model read once
        # (new_target: PartitionTarget with accept_explicit), the per-chain state made.
        super().__init__(vars, model=model, blocked=blocked, rng=rng,
                         initial_point=initial_point, compile_kwargs=compile_kwargs)
        self._read_model(self.target.model)
        if self.split_merge:
            self.Info = MallowsSplitMergeInfo
        k_max = self.N if max_reported_clusters is None and self.N <= DEFAULT_REPORTED else (
            DEFAULT_REPORTED if max_reported_clusters is None else
            integer_arg("max_reported_clusters", max_reported_clusters, owner, minimum=1))
        self.k_max = min(k_max, self.N)
        # The records' fields, with the shapes of this model: PyMC reads these instance
        # attributes. PyMC 5's NDArray backend allocates each stat as
        # np.zeros(draws, dtype): a subarray dtype (dtype, shape) makes that a
        # (draws, *shape) array.
        shapes = {"mallows_sigma": [self.k_max, self.n_items],
                  "mallows_theta": [self.k_max, self.T]}
        self.stats_dtypes_shapes = {
            k: (d, shapes.get(k, sh))
            for k, (d, sh) in stats_dtypes_shapes(Summary, self.Info).items()}
        self.stats_dtypes = [{k: (np.dtype((d, tuple(sh))) if sh else d)
                              for k, (d, sh) in self.stats_dtypes_shapes.items()}]
        if method == "beta":
            warnings.warn(
                f"{owner}: method='beta' is the paper's infinite-n approximation (B(a, b) in "
                f"place of the finite-n B~(a, b, n - j)): the chain's stationary law is not "
                f"the posterior, and the error grows as n shrinks. Use method='exact_beta' "
                f"for the exact Beta-Gibbs sampler (or 'slice').",
                ApproximateStepWarning,
                stacklevel=2,
            )

    # ------------------------------------------------------------------ model reading
    def new_target(self, model, value_var, compile_kwargs):
        """The :class:`PartitionTarget` listing the likelihoods with explicit block
        parameters (the GeneralizedMallows term) instead of refusing them."""
        return PartitionTarget(model, value_var, type(self).__name__, compile_kwargs,
                               accept_explicit=True)

    def _read_model(self, model):
        # One reading of the model, as for every step (PartitionTarget): the prior's
        # hyperparameter function (alpha), the refusal of other terms on z and of
        # Potentials on z; the likelihood is found by its op's protocol
        # (explicit_block_parameters), its constants read by the op (kernel_data).
        target = self.target
        rv = target.rv
        if not isinstance(target.prior_op, CRPRV):
            raise PartitionModelError(
                f"MallowsGibbs: partition '{rv.name}' must have a pmp.CRP prior (the Dirichlet "
                f"process of Meilă & Chen 2010); got {type(target.prior_op).__name__}.")
        ours = mallows_likelihoods(model, rv)
        liks = [lik for lik in target.explicit if any(lik is m for m in ours)]
        if len(liks) != 1 or target.likelihoods or len(target.explicit) != 1 \
                or target.constraint is not None:
            raise PartitionModelError(
                f"MallowsGibbs: partition '{rv.name}' must be observed by exactly one "
                f"pmp.GeneralizedMallows and nothing else; found {len(liks)} "
                f"GeneralizedMallows and "
                f"{len(target.likelihoods) + len(target.explicit) - len(liks)} other "
                f"likelihood(s).")
        lik = liks[0]
        self.name_z = target.name
        self.N = target.n
        self.lik_name = lik.name
        self.data = data = lik.owner.op.kernel_data(lik)
        orderings, lengths, n, nu, r = data
        self.orderings, self.lengths, self.n_items, self.nu, self.r = (
            orderings, lengths, n, nu, r)
        self.T = r.shape[0]
        self.log_new = np.array([lemma1_log_marginal(int(t), n) for t in lengths])
        log_bt1 = np.full((self.T, n), -np.inf)
        for j in range(self.T):
            for v in range(n - j):
                log_bt1[j, v] = log_beta_tilde(nu * r[j] + v, nu + 2.0, n - 1 - j)
        self.log_bt1 = log_bt1
        self.log_prior_norm = np.array([log_beta_tilde(nu * r[j], nu + 1.0, n - 1 - j)
                                        for j in range(self.T)])
        # Beta-Gibbs: the code table of a new cluster's sigma and the prior's row of
        # the predictive table (stages no ranking of a cluster reaches), finite
        # (B~ of eq. 14) or the paper's infinite-n Beta functions (Lemma 4).
        self.finite = self.method != "beta"
        if self.finite:
            self.log_bt1_sigma = log_bt1
            log_prior_pred = log_bt1 - self.log_prior_norm[:, None]
        else:
            v = np.arange(n, dtype=np.float64)
            a = nu * r[:, None] + v[None, :]
            self.log_bt1_sigma = np.where(v[None, :] <= n - 1 - np.arange(self.T)[:, None],
                                          betaln(a, nu + 2.0), -np.inf)
            log_prior_pred = self.log_bt1_sigma - betaln(nu * r, nu + 1.0)[:, None]
        self.log_prior_pred = np.ascontiguousarray(log_prior_pred)
        gl_x, gl_w = np.polynomial.legendre.leggauss(mb.GL_NODES)
        self.gl_x, self.gl_w = gl_x.astype(np.float64), gl_w.astype(np.float64)

    @staticmethod
    def competence(var, has_grad=None):
        model = assigning_model()
        if model is None or var.owner is None or not isinstance(var.owner.op, PartitionPriorRV):
            return Competence.INCOMPATIBLE
        if mallows_likelihoods(model, var):
            return Competence.IDEAL
        return Competence.INCOMPATIBLE

    # ------------------------------------------------------------------ the container
    def start_chain(self, rng):
        super().start_chain(rng)
        self._work = None

    def new_container(self, labels, args):
        """A :class:`ChainState` over the point's ``labels``: state the slot-form
        partition (:class:`~pymc_partitions.kernels.mallows_gibbs.MallowsSlots`),
        stats the per-slot statistics with (sigma_c, theta_c) beside them
        (:class:`~pymc_partitions.kernels.mallows_gibbs.MallowsStats`), drawn from the
        prior and updated by step 2."""
        N, n, T = self.N, self.n_items, self.T
        labels = canonicalize(np.asarray(labels))
        K = int(labels.max()) + 1
        cap = min(N + 1, max(2 * K, 8))
        slots = mg.alloc_slots(labels, cap)
        stats = mg.alloc_stats(cap, n, T, self.method in BETA_METHODS)
        for i in range(N):
            mg.add_ranking(stats.counts, stats.n_at_least, self.orderings[i],
                           self.lengths[i], labels[i])
        chain = chain_state(slots, stats, N, args.values, shared=tuple(self.data))
        w = self.orderings.shape[1]
        # Scratch the kernels overwrite (not state; the sweep order is chain.order).
        self._work = {
            "log_w": np.empty(N + 2), "cand": np.empty(N + 2, dtype=np.int64),
            "tree": np.zeros(n + 1, dtype=np.int64),
            "codes": np.empty(max(w, n), dtype=np.int64),
            "taken": np.empty(n, dtype=np.bool_), "placed": np.empty(n, dtype=np.bool_),
            "rest": np.empty(n, dtype=np.int64), "weights": np.empty((n, n)),
            "proposal": np.empty(n, dtype=np.int64),
            "proposal_pos": np.empty(n, dtype=np.int64),
            "alive": np.empty(n, dtype=np.bool_), "colsum": np.empty(n),
            "sums": np.empty(T, dtype=np.int64),
            "status": np.zeros(1, dtype=np.int64),
            "node_theta": np.empty(mb.MAX_NODES), "node_logw": np.empty(mb.MAX_NODES),
            "saved_rows": np.empty((T, n)),
            "members": np.empty(N, dtype=np.int64), "side": np.empty(N, dtype=np.int64),
            "log_a": np.empty(N), "log_b": np.empty(N),
            "outcomes": np.zeros(4, dtype=np.int64),
        }
        if not mg.prior_parameters(slots.sizes, stats.sigma, stats.pos, stats.theta, self.nu,
                                   self.r, self._stream):
            raise RuntimeError("MallowsGibbs: a theta draw from the prior failed.")
        self._update_parameters(chain)
        return chain

    def chains_of(self, container):
        # No collapsed component: no cache follows the hyperparameters (alpha is read
        # by the move itself).
        return ()

    def _grow(self, ch):
        """Double the slot capacity of chain ``ch`` (at most N + 1), in place: its
        state and stats become larger records with the old slots in their first rows;
        its order, labels and scratch arrays stay."""
        cap = min(self.N + 1, 2 * ch.state.sizes.shape[0])
        slots, stats = mg.grow(ch.state, ch.stats, cap)
        fresh = chain_state(slots, stats, self.N, ch.hyper_values, shared=tuple(self.data))
        keep = {id(fresh.labels): ch.labels, id(fresh.log_w): ch.log_w,
                id(fresh.order): ch.order, id(fresh.scratch): ch.scratch}
        ch.state, ch.stats = slots, stats
        ch.owned = tuple(keep.get(id(a), a) for a in fresh.owned)

    def _update_parameters(self, ch):
        """Step 2 (cluster parameters); returns (accepted, proposed) sigma proposals."""
        s, p, st = self._work, ch.state, ch.stats
        if self.method in BETA_METHODS:
            accepted = mb.update_parameters_beta(
                self.orderings, self.lengths, p.labels, p.sizes, st.counts,
                st.n_at_least, st.sigma, st.pos, st.theta, self.nu, self.r,
                self.log_bt1_sigma, self.finite, self._figure5_order, self.n_gibbs,
                self._stream, s["weights"], s["proposal"], s["proposal_pos"], s["alive"],
                s["colsum"], s["sums"], st.member, s["taken"], s["placed"], s["rest"],
                s["status"])
            self._check_status(s)
            return accepted, self.n_gibbs * int(np.count_nonzero(p.sizes > 1))
        accepted = mg.update_parameters(
            p.sizes, st.counts, st.n_at_least, st.sigma, st.pos, st.theta,
            self.nu, self.r, self.n_gibbs, self.n_slices, self.width, 50, self._stream,
            s["weights"], s["proposal"], s["proposal_pos"], s["alive"], s["colsum"], s["sums"])
        return accepted, self.n_gibbs * int(np.count_nonzero(p.sizes))

    def _check_status(self, s):
        if s["status"][0]:
            s["status"][0] = 0
            raise RuntimeError("MallowsGibbs: an exact theta draw (rejection sampling) "
                               f"rejected every proposal (nu = {self.nu}).")

    def _reassign(self, ch, alpha):
        s = self._work
        start = 0
        while True:
            p, st, order = ch.state, ch.stats, ch.order  # new records after a growth
            if self.method in BETA_METHODS:
                stop = mb.reassign_items_beta(
                    self.orderings, self.lengths, p.labels, p.sizes, st.counts,
                    st.n_at_least, st.sums, st.log_pred, st.sigma, st.pos,
                    st.theta, p.free, p.n_free, order, start, math.log(alpha),
                    self.log_new, self.nu, self.r, self.log_bt1_sigma, self.log_prior_pred,
                    self.finite, self.gl_x, self.gl_w, self._stream, s["log_w"], s["cand"],
                    s["tree"], s["codes"], s["taken"], s["placed"], s["rest"],
                    s["node_theta"], s["node_logw"], s["saved_rows"], s["status"])
                if stop < 0:
                    break
                self._grow(ch)
                start = stop
                continue
            log_psi_cum = np.empty((p.sizes.shape[0], self.orderings.shape[1] + 1))
            stop = mg.reassign_items(
                self.orderings, self.lengths, p.labels, p.sizes, st.counts,
                st.n_at_least, st.sigma, st.pos, st.theta, p.free, p.n_free,
                order, start, math.log(alpha), self.log_new, self.nu, self.r, self.log_bt1,
                self._stream, s["log_w"], s["cand"], s["tree"], s["codes"], s["taken"],
                s["placed"], s["rest"], log_psi_cum, s["status"])
            if stop < 0:
                break
            self._grow(ch)
            start = stop
        self._check_status(s)

    def _split_merge(self, ch, alpha):
        """``n_split_merge`` split-merge updates (:mod:`~pymc_partitions.kernels.
        mallows_split_merge`); returns the outcome counts (4,)."""
        s = self._work
        outcomes = s["outcomes"]
        outcomes[:] = 0
        if self.N < 2:
            return outcomes
        start = 0
        while True:
            p, st = ch.state, ch.stats  # new records after a growth
            stop = msm.split_merge_updates(
                self.orderings, self.lengths, p.labels, p.sizes, st.counts,
                st.n_at_least, st.sigma, st.pos, st.theta, p.free, p.n_free,
                self.n_split_merge, start, self.n_restricted_scans, math.log(alpha),
                self.log_new, self.nu, self.r, self.log_bt1, self._split_merge_control,
                self._stream, s["members"], s["side"], s["log_a"], s["log_b"], s["tree"],
                s["codes"], s["taken"], s["placed"], s["rest"], outcomes, s["status"])
            if stop < 0:
                break
            self._grow(ch)
            start = stop
        self._check_status(s)
        return outcomes

    # ------------------------------------------------------------------ one iteration
    def move(self, ch, args):
        """Steps 1 (reassignment), the optional split-merge updates, and 2 (cluster
        parameters) on chain ``ch``; the draw's canonical labels to ``ch.labels``;
        the Info record with the reported blocks' (sigma_c, theta_c)."""
        alpha = float(args.values[0])
        if self._reassign_sweeps:
            self._reassign(ch, alpha)
        if self.split_merge:
            outcomes = self._split_merge(ch, alpha)
        accepted, proposed = self._update_parameters(ch)
        canon = canonicalize(ch.state.labels)
        np.copyto(ch.labels, canon)
        K = int(canon.max()) + 1
        # slot of canonical block k: the slot of the first item with canonical label k
        first = np.zeros(K, dtype=np.int64)
        first[canon[::-1]] = np.arange(self.N - 1, -1, -1)
        slots = ch.state.labels[first]
        k_rep = min(K, self.k_max)
        sigma_out = np.full((self.k_max, self.n_items), -1, dtype=np.int16)
        theta_out = np.full((self.k_max, self.T), np.nan, dtype=np.float32)
        sigma_out[:k_rep] = ch.stats.sigma[slots[:k_rep]]
        theta_out[:k_rep] = ch.stats.theta[slots[:k_rep]]
        readings = [counters(SplitMergeOutcomes, outcomes)] if self.split_merge else []
        return record(self.Info, *readings,
                      sigma_accept=float(accepted) / proposed if proposed else np.nan,
                      mallows_sigma=sigma_out, mallows_theta=theta_out)

    def summary(self, ch, args):
        """n_clusters, largest_cluster_frac and log_joint = log p(z | alpha) +
        sum_c [log P0(sigma_c, theta_c) + sum_i log GM] of the explicit state."""
        sizes = ch.state.sizes
        block_sizes = sizes[np.flatnonzero(sizes)]
        log_prior = self.target.prior_op.log_prior_from_sizes(args.values, block_sizes, self.N)
        log_lik = mg.explicit_log_likelihood(sizes, ch.stats.counts, ch.stats.n_at_least,
                                             ch.stats.pos, ch.stats.theta, self.nu, self.r,
                                             self.log_prior_norm, self._work["sums"])
        return Summary(int(block_sizes.size), float(block_sizes.max()) / self.N,
                       float(log_prior + log_lik))
