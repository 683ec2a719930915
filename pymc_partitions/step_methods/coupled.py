"""``pmp.CoupledGibbs``: one PyMC chain = one lag-1 coupled pair of partition chains."""

import numpy as np
import pymc as pm

from pymc_partitions.distributions.validation import integer_arg, number_arg
from pymc_partitions.step_methods.base import PartitionStep
from pymc_partitions.step_methods.split_merge import PROPOSALS
from pymc_partitions.step_methods.target import PartitionModelError
from pymc_partitions.step_methods.coupled_pair import COUPLINGS, METRICS, SCANS, CoupledPair
from pymc_partitions.step_methods.info import CoupledInfo

STARTS = ("point", "prior")


class CoupledGibbs(PartitionStep):
    r"""Optimal-transport coupled Gibbs (or split-merge) chains for unbiased estimates.

    Nguyen, Trippe & Broderick (2022), *Many processors, little time: MCMC for
    partitions via optimal transport couplings* (AISTATS), with the lag-1 estimator
    of Jacob, O'Leary & Atchadé (2020). Each PyMC chain runs one pair of chains X
    and Y of the partition's conditional target, X one move ahead: X_1 = P(X_0) by
    the single-chain move, then (X_{t-1}, Y_{t-2}) -> (X_t, Y_{t-1}) by the coupled
    move, Algorithm 2 (a coupled Gibbs sweep: both chains visit the items in one
    random order and each item's two Gibbs conditionals are coupled) or, with
    ``split_merge=True``, Algorithm 3 (Jain–Neal split-merge updates with the same
    pair (i, j) and random numbers in both chains, then a coupled Gibbs sweep). The
    chains meet at tau = min{t : X_t = Y_{t-1}} and stay equal afterwards (eq. 6).
    Each of X and Y alone is an exact :class:`Gibbs` (or :class:`SplitMerge` with one
    Gibbs sweep) chain. :func:`pymc_partitions.unbiased_estimate` turns the result
    into the unbiased estimator :math:`H_{\ell:m}` (eq. 2) per pair and aggregates.

    Sample with ``tune=0`` (the estimator needs the sweeps from its burn-in ℓ on, and
    tuning draws are discarded) and enough draws for the pairs to meet and reach m;
    many chains make many pairs: ``pm.sample(tune=0, draws=300, chains=100,
    step=[pmp.CoupledGibbs([z])])``. ``pmp.coupled_estimates`` runs thousands of
    pairs more cheaply than ``pm.sample`` does.

    Parameters
    ----------
    vars : list
        The partition variable.
    coupling : {"ot", "maximal", "common_rng"}, default "ot"
        ``"ot"``: the optimal-transport coupling :math:`\psi^{OT}_\eta` (eqs. 4, 6) of
        the two conditionals in the space of partitions. ``"maximal"`` and
        ``"common_rng"``: the label-based couplings of the paper's §5.3 comparison,
        on labels numbered as the reference implementation numbers them (order of
        block creation, renumbered when a block empties).
    metric : {"hamming", "vi"}, default "hamming"
        The partition distance the OT coupling minimises: eq. 5 (Mirkin–Chernyi /
        Rand; half the Hamming distance of the co-clustering matrices) or the
        variation of information (App. I).
    eta : float, default 1e-5
        The nugget: before meeting, the coupling is (1 - eta) OT + eta independent
        (eq. 6). For the baselines, mixed the same way, as the reference does.
    scan : {"random", "systematic"}, default "random"
        The Gibbs sweeps' order: a fresh random permutation of the items per sweep,
        shared by the two chains; or items 0..n-1 at every sweep, as the reference
        implementation sweeps (its meeting times are shorter in the tail on the
        paper's synthetic data; ``examples/nguyen_meeting_times.py``). Both chains'
        kernel is always the same scan. Gibbs only.
    split_merge : bool, default False
        Algorithm 3 instead of Algorithm 2.
    n_restricted_scans, n_proposals, proposal
        The split-merge updates' options, as for :class:`SplitMerge` (used with
        ``split_merge=True``).
    start : {"point", "prior"}, default "point"
        ``"point"``: X_0 = Y_0 = the chain's starting point (PyMC's initial point:
        one block unless ``initvals`` say otherwise; the paper's one-block start).
        ``"prior"``: X_0 and Y_0 independent draws from the partition's prior, from
        the chain's random generator.
    model, rng, initial_point, compile_kwargs, blocked
        As for PyMC's own steps.

    The partition's target must be fixed: its prior's and likelihoods' hyperparameters
    must be constants (the estimator is unbiased for one target). A model in which a
    free variable enters the target is refused with the variable's name.

    Sampler statistics
    ------------------
    n_clusters, largest_cluster_frac, log_joint : of X_t, as for :class:`Gibbs`
    coupled_labels : (n,) int64
        Canonical labels of Y_{t-1} (X_t's once met).
    sweep : int
        t, the number of moves X has made.
    meeting_sweep : int
        tau once the pair has met, -1 before.
    coupling_distance : float
        d(X_t, Y_{t-1}) of eq. 5 (0 once met).

    Cost per move before meeting: two conditionals per item plus the coupling (for
    OT, an exact transport problem on the blocks where the chains disagree); after
    meeting, one single-chain move.
    """

    name = "partition_coupled_gibbs"
    move_description = "a coupled move"
    # coupled_labels is an (n,) array per draw: PyMC's trace stores stats as scalars,
    # so it travels as an object and comes out of pm.sample as a (chain, draw, n)
    # int64 array.
    Info = CoupledInfo

    def __init__(self, vars, coupling="ot", metric="hamming", eta=1e-5, scan="random",
                 split_merge=False,
                 n_restricted_scans=5, n_proposals=1, proposal="restricted_gibbs",
                 start="point", **kwargs):
        self.coupling = _choice("coupling", coupling, tuple(COUPLINGS))
        self.metric = _choice("metric", metric, tuple(METRICS))
        self.eta = number_arg("eta", eta, "CoupledGibbs", low=0.0, high=1.0, high_open=True)
        if not isinstance(split_merge, bool | np.bool_):
            raise TypeError(f"CoupledGibbs: 'split_merge' must be True or False, got "
                            f"{split_merge!r}.")
        self.split_merge = bool(split_merge)
        self.scan = _choice("scan", scan, SCANS)
        if self.scan == "systematic" and self.split_merge:
            raise ValueError("CoupledGibbs: 'scan'='systematic' is for coupled Gibbs sweeps; "
                             "with split_merge=True the sweeps are in random order.")
        self.n_restricted_scans = integer_arg("n_restricted_scans", n_restricted_scans,
                                              "CoupledGibbs", minimum=0)
        self.n_proposals = integer_arg("n_proposals", n_proposals, "CoupledGibbs", minimum=1)
        self.proposal = _choice("proposal", proposal, tuple(PROPOSALS))
        self.start = _choice("start", start, STARTS)
        super().__init__(vars, **kwargs)
        target = self.target
        if target.input_names:
            raise PartitionModelError(
                f"CoupledGibbs: the target of partition '{target.name}' depends on the free "
                f"variable(s) {target.input_rv_names}; the coupled estimator needs a fixed "
                f"target (its unbiasedness is for one posterior of '{target.name}'). Make "
                f"them constants (e.g. fix them at a value, or at their posterior mean from "
                f"a pilot run)."
            )
        if self.split_merge and target.n < 2:
            raise ValueError(f"CoupledGibbs: split_merge=True needs at least two items; "
                             f"partition '{target.name}' has n = {target.n}.")

    def start_chain(self, rng):
        super().start_chain(rng)
        self._rng = np.random.default_rng(rng.integers(2**63)) if rng is not None else None

    # The container: the pair. Made at the chain's first iteration (X_0 = Y_0 = the
    # point's labels, or two draws from the prior); X_1 is its first move.
    def new_container(self, labels, args):
        target = self.target
        sm = None
        if self.split_merge:
            sm = {"n_proposals": self.n_proposals,
                  "n_restricted_scans": self.n_restricted_scans,
                  "proposal": PROPOSALS[self.proposal]}
        pair = CoupledPair(target, args.values, args.prior_params, args.per_lik,
                           coupling=self.coupling, metric=self.metric, eta=self.eta,
                           scan=self.scan, split_merge=sm, stream=args.stream)
        if self.start == "point":
            x0 = y0 = labels
        else:
            x0, y0 = (target.validate_labels(pm.draw(target.rv, random_seed=self._rng))
                      for _ in range(2))
        pair.load(x0, y0)
        return pair

    def load_container(self, container, labels, args):
        """The pair goes on: X is the chain the estimator needs, and a partition moved
        by another step in the same ``pm.sample`` call is not one of its states."""
        return container

    def chain_of(self, container):
        return container.x

    def move(self, pair, args):
        pair.advance()  # X_1 at the first iteration
        return pair.info()


def _choice(name, value, allowed):
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"CoupledGibbs: '{name}' must be one of {allowed}, got {value!r}.")
    return value


__all__ = ["CoupledGibbs"]
