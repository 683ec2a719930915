r"""A lag-1 coupled pair of partition chains: the state behind ``pmp.CoupledGibbs`` and
the runners of many pairs.

Jacob, O'Leary & Atchadé (2020) with lag 1, for partitions as Nguyen, Trippe &
Broderick (2022) do it: X_0 and Y_0 are drawn from the initial distribution, X_1 =
P(X_0) by the single-chain move alone, then for t >= 2 the pair
(X_{t-1}, Y_{t-2}) is advanced to (X_t, Y_{t-1}) by the coupled move: Algorithm 2
(coupled Gibbs sweep, :mod:`pymc_partitions.kernels.coupled_gibbs`) or Algorithm 3
(split-merge updates with the same (i, j) and random numbers in both chains, then a
coupled Gibbs sweep, :mod:`pymc_partitions.kernels.coupled_split_merge`). The
meeting time is tau = min{t >= 1 : X_t = Y_{t-1}}, detected in O(1) from the
maintained distance d(X_t, Y_{t-1}) of eq. 5.

Faithfulness: from tau on, the pair is advanced by the single-chain move on X alone
and Y_{t-1} is X_t by definition (the diagonal coupling of eq. 6); Y's own state is
no longer updated.

Hyperparameters are those of the target at the start (the estimator needs a fixed
target); nothing here knows PyMC beyond the :class:`PartitionTarget` that read the
model.
"""

import numpy as np

from pymc_partitions.kernels import canonical_labels, gibbs, split_merge, summarise
from pymc_partitions.kernels import coupled_gibbs as cg
from pymc_partitions.kernels import coupled_split_merge as csm
from pymc_partitions.kernels.couplings import COMMON_RNG, HAMMING, MAXIMAL, OT, VI
from pymc_partitions.kernels.errors import check_item
from pymc_partitions.kernels.transport import new_workspace
from pymc_partitions.step_methods.info import CoupledInfo

COUPLINGS = {"ot": OT, "maximal": MAXIMAL, "common_rng": COMMON_RNG}
SCANS = ("random", "systematic")
METRICS = {"hamming": HAMMING, "vi": VI}
INITIAL_CAPACITY = 64


class CoupledPair:
    """Two chains of one partition target, X one move ahead of Y.

    Parameters
    ----------
    target : PartitionTarget
        The model's partition target (its hyperparameters must be constants).
    values, prior_params, per_lik : the target's ``params(point)`` at the start.
    coupling : {"ot", "maximal", "common_rng"}
    metric : {"hamming", "vi"}
        The partition metric of the OT coupling (eq. 5, or App. I).
    eta : float
        The nugget of eq. 6.
    scan : {"random", "systematic"}
        The Gibbs sweeps' visiting order: a fresh random permutation per sweep (shared
        by both chains), or items 0..n-1 at every sweep, as the reference
        implementation of Nguyen et al. sweeps (Gibbs only). The single-chain move
        is the same scan, so X and Y always have the same kernel.
    split_merge : None or dict
        None: coupled Gibbs sweeps (Alg. 2). A dict with ``n_proposals``,
        ``n_restricted_scans`` and ``proposal`` (a ``kernels.split_merge`` code):
        Algorithm 3.
    stream : (4,) uint64 kernel stream of the pair (advanced in place).

    Attributes after :meth:`start`: ``t`` (X's move count), ``tau`` (the meeting
    time, -1 before), ``distance`` (d(X_t, Y_{t-1}) of eq. 5).
    """

    def __init__(self, target, values, prior_params, per_lik, *, coupling="ot",
                 metric="hamming", eta=1e-5, scan="random", split_merge=None, stream):
        self.target = target
        self.values, self.prior_params, self.per_lik = values, prior_params, per_lik
        self.coupling = COUPLINGS[coupling]
        self.metric = METRICS[metric]
        self.eta = float(eta)
        if scan not in SCANS:
            raise ValueError(f"'scan' must be one of {SCANS}, got {scan!r}.")
        if scan == "systematic" and split_merge is not None:
            raise ValueError("scan='systematic' is for coupled Gibbs sweeps; split-merge "
                             "iterations sweep in random order.")
        self.shuffled = scan == "random"
        self.split_merge = split_merge
        self.stream = stream
        n = target.n
        capacity = min(n + 1, INITIAL_CAPACITY)
        self.scratch = cg.new_scratch(n, capacity)
        # OT problems are at most (K + 1) x (K' + 1), with at most n cells of positive
        # reward (non-empty intersections): sized with the overlap table.
        self.workspace = new_workspace(capacity, capacity, max_edges=n)
        self._members = np.empty(n, dtype=np.int64)
        self._origin = np.empty(n, dtype=np.int64)
        self._outcomes = np.zeros(4, dtype=np.int64)
        self._x = self._y = None

    # ------------------------------------------------------------------ state
    def start(self, x_labels, y_labels):
        """Load X_0 and Y_0 (slot labels in [0, n)) and make the first move, X_1."""
        self.load(x_labels, y_labels)
        self.advance()

    def load(self, x_labels, y_labels):
        """Load X_0 and Y_0 (slot labels in [0, n)); t = 0, the first :meth:`advance`
        makes X_1."""
        target = self.target
        self._x = target.new_chain_state(x_labels, self.values, self.per_lik)
        self._y = target.new_chain_state(y_labels, self.values, self.per_lik)
        self.params, _, self.data = target.kernel_args(self._x, self.values, self.per_lik)
        self.t = 0
        self.tau = -1

    @property
    def x(self):
        """X's :class:`~.chain_state.ChainState` (X_t)."""
        return self._x

    @property
    def distance(self):
        """d(X_t, Y_{t-1}) of eq. 5 (0 once met)."""
        return 0 if self.tau >= 0 else int(self.scratch.info[cg.DISTANCE])

    @property
    def met(self):
        return self.tau >= 0

    def info(self):
        """:class:`~.info.CoupledInfo` of the pair now: Y_{t-1}'s canonical labels (X_t's
        once met; a new (n,) int64 array), t, tau and d(X_t, Y_{t-1})."""
        chain = self._x if self.met else self._y
        labels = np.empty(self.target.n, dtype=np.int64)
        canonical_labels(chain.state.labels, labels, chain.scratch)
        return CoupledInfo(coupled_labels=labels, sweep=int(self.t), meeting_sweep=int(self.tau),
                           coupling_distance=float(self.distance))

    def summaries(self):
        """``(x_canon, y_canon, (n_blocks, largest, log_joint) of X)``: canonical labels
        of X_t and of Y_{t-1} (X_t's once met)."""
        x = self._x
        stats_x = summarise(x.state, self.prior_params, self.params, x.stats, x.labels, x.scratch)
        if self.met:
            return x.labels.copy(), x.labels.copy(), stats_x
        y = self._y
        summarise(y.state, self.prior_params, self.params, y.stats, y.labels, y.scratch)
        return x.labels.copy(), y.labels.copy(), stats_x

    # ------------------------------------------------------------------ moves
    def advance(self):
        """One move: (X_{t-1}, Y_{t-2}) -> (X_t, Y_{t-1}); after meeting, X alone; from
        t = 0 (after :meth:`load`), X_1 = P(X_0) by the single-chain move."""
        if self.t == 0:
            self._single_move()
            self.t = 1
            self._ensure_capacity(0)
            while cg.load_pair(self._x.state, self._y.state, self.scratch) == cg.NEEDS_CAPACITY:
                self._grow()
            self._check_met()
            return
        if self.met:
            self._single_move()
        else:
            self._coupled_move()
        self.t += 1
        self._check_met()

    def _check_met(self):
        if self.tau < 0 and self.scratch.info[cg.DISTANCE] == 0:
            self.tau = self.t

    def _single_move(self):
        """The single-chain kernel P on X (the marginal of the coupled move)."""
        x, sm = self._x, self.split_merge
        if sm is None:
            sweeps = gibbs.run_sweeps if self.shuffled else gibbs.run_sweeps_in_order
            failed = sweeps(self.stream, 1, x.state, self.prior_params, self.params, x.stats,
                            self.data, x.log_w, x.order)
        else:
            failed = split_merge.run_split_merge(
                self.stream, sm["n_proposals"], sm["n_restricted_scans"], sm["proposal"],
                x.state, self.prior_params, self.params, x.stats, self.data, self._members,
                self._origin, self._outcomes,
            )
            if failed < 0:  # then one Gibbs sweep, on the same stream
                failed = gibbs.run_sweeps(self.stream, 1, x.state, self.prior_params,
                                          self.params, x.stats, self.data, x.log_w, x.order)
        self._raise_if_failed(failed)

    def _coupled_move(self):
        x, y, sm = self._x, self._y, self.split_merge
        if sm is not None:
            # Algorithm 3, lines 2-4: each update may open one block in each chain.
            self._ensure_capacity(sm["n_proposals"] + 1)
            failed = csm.coupled_split_merge_updates(
                self.stream, sm["n_proposals"], sm["n_restricted_scans"], sm["proposal"],
                x.state, y.state, self.prior_params, self.params, x.stats, y.stats, self.data,
                self._members, self._origin, self._outcomes, self.scratch,
            )
            self._raise_if_failed(failed)
        # Algorithm 2 (Algorithm 3, lines 5-8).
        while True:
            status = cg.coupled_gibbs_sweep(
                self.stream, x.state, y.state, self.prior_params, self.params, x.stats,
                y.stats, self.data, self.coupling, self.metric, self.eta, self.shuffled,
                self.scratch, self.workspace,
            )
            if status != cg.NEEDS_CAPACITY:
                break
            self._grow()
        self._raise_if_failed(status)

    def _ensure_capacity(self, extra):
        need = min(max(self._x.state.counts[0], self._y.state.counts[0]) + 1 + extra,
                   self.target.n + 1)
        while self.scratch.overlap.shape[0] < need:
            self._grow()

    def _grow(self):
        capacity = min(2 * self.scratch.overlap.shape[0], self.target.n + 1)
        if capacity <= self.scratch.overlap.shape[0]:
            raise RuntimeError("coupled pair: the overlap table cannot grow further")
        self.scratch = cg.grown(self.scratch, capacity)
        self.workspace = new_workspace(capacity, capacity, max_edges=self.target.n)

    def _raise_if_failed(self, failed):
        if failed == cg.COUPLING_FAILED:
            raise RuntimeError(
                "coupled pair: the coupling of two conditionals could not be drawn (the "
                "transport workspace is smaller than the problem, or the solver failed); "
                "please report this with the model."
            )
        if failed >= 0:
            check_item(failed, "a coupled move")
