"""``pmp.Gibbs``: collapsed Gibbs sampling of a partition (Neal 2000, Algorithm 3)."""

from pymc.step_methods.compound import Competence

from pymc_partitions.step_methods.assignment import assigning_model
from pymc_partitions.distributions.partition import PartitionPriorRV
from pymc_partitions.distributions.validation import integer_arg
from pymc_partitions.kernels import gibbs
from pymc_partitions.step_methods.base import PartitionStep
from pymc_partitions.step_methods.info import NoInfo
from pymc_partitions.step_methods.target import explicit_likelihoods

#: Item updates per draw of ``Gibbs(n_sweeps="auto")`` (see :class:`Gibbs`).
ITEMS_PER_DRAW = 2000
#: At most this many sweeps per draw with ``"auto"`` (small n: see :class:`Gibbs`).
MAX_AUTO_SWEEPS = 20


class Gibbs(PartitionStep):
    r"""Collapsed Gibbs sampler for a partition variable.

    Neal (2000), *Markov chain sampling methods for Dirichlet process mixture
    models*, Algorithm 3: every item in turn is removed from its block and
    reassigned to an existing block k with probability proportional to
    :math:`n_{-i,k}\, p(x_i \mid x_{-i,k})` or to a new block with probability
    proportional to :math:`\alpha\, p(x_i)` (eq. 3.7), the block parameters being
    integrated out by the collapsed likelihoods. One sweep visits all items in a
    fresh uniformly random order. ``pm.sample()`` assigns this step to every
    partition variable automatically; the continuous hyperparameters go to
    :class:`~pymc_partitions.EscobarWest` / :class:`~pymc_partitions.HyperSlice`
    when only partition priors and collapsed likelihoods read them, else to NUTS,
    and are read afresh at every iteration.

    Parameters
    ----------
    vars : list
        The partition variable (one per step).
    n_sweeps : int or "auto", default "auto"
        Gibbs sweeps per draw. ``"auto"``: ``max(1, round(ITEMS_PER_DRAW / n))``
        sweeps (:data:`ITEMS_PER_DRAW` = 2000 item updates), at most
        :data:`MAX_AUTO_SWEEPS` = 20 (below n = 100 the iteration's fixed costs
        are the same while 2000 updates would cost more than all of them), fixed
        when the step is built. Why: once the hyperparameters are updated by
        :class:`~pymc_partitions.EscobarWest` / :class:`~pymc_partitions.HyperSlice`
        (~50 and ~300 µs per iteration) instead of NUTS (~1.5 ms), the rest of an
        iteration (those steps, this step's fixed cost of reading the
        hyperparameters and summarising, ~200 µs, and PyMC's loop, ~100 µs) costs
        about as much as 2000 item updates at N = 200-300 (a sweep of the README
        quickstart, N = 300, D = 2: ~70 µs; of the seeds data, N = 210, D = 7,
        K ~ 15: ~140 µs), and more sweeps per draw buy label-invariant ESS cheaply.
        Measured min ESS/s over (K, entropy, alpha, sigma), 4 x 1500 iterations
        (``examples/benchmark_hyperparameters.py``): quickstart 1/3/6/12/24 sweeps
        69/85/118/140/126; seeds 19/35/33/22/33 (one run each, noisy). The number
        depends only on n, never on timings, so the same seed gives the same draws
        on any machine, with ``cores=1`` or ``cores=2``.
    model : pm.Model, optional
    rng : seed or numpy Generator, optional
        PyMC replaces it with each chain's generator.
    initial_point, compile_kwargs, blocked
        As for PyMC's own steps.

    Sampler statistics
    ------------------
    n_clusters : int, number of blocks after the draw
    largest_cluster_frac : float, size of the largest block / n
    log_joint : float, collapsed log p(y, z | hyperparameters), at the hyperparameter
        values this step read (NUTS may move them later in the same iteration)

    Cost: O(n K D) per sweep for the diagonal Normal, O(n K) times the number of
    ones per item for Beta-Bernoulli; statistics are updated incrementally.
    """

    name = "partition_gibbs"
    move_description = "a Gibbs sweep"

    def __init__(self, vars, n_sweeps="auto", **kwargs):
        auto = isinstance(n_sweeps, str) and n_sweeps == "auto"
        if not auto:
            try:
                self.n_sweeps = integer_arg("n_sweeps", n_sweeps, "Gibbs", minimum=1)
            except (TypeError, ValueError) as err:
                raise type(err)(f"{err} Or \"auto\" (the default).") from None
        super().__init__(vars, **kwargs)
        if auto:
            self.n_sweeps = min(MAX_AUTO_SWEEPS, max(1, round(ITEMS_PER_DRAW / self.target.n)))

    @staticmethod
    def competence(var, has_grad=None):
        if var.owner is not None and isinstance(var.owner.op, PartitionPriorRV):
            model = assigning_model()
            if model is not None and explicit_likelihoods(model, var):
                return Competence.INCOMPATIBLE  # explicit block parameters: op.explicit_step
            return Competence.IDEAL
        return Competence.INCOMPATIBLE

    def move(self, chain, args):
        failed = gibbs.run_sweeps(
            args.stream, self.n_sweeps, chain.state, args.prior_params, args.params,
            chain.stats, args.data, chain.log_w, chain.order,
        )
        self.fail_if(failed, args)
        return NoInfo()
