"""``pmp.Gibbs``: collapsed Gibbs sampling of a partition (Neal 2000, Algorithm 3)."""

from pymc.step_methods.compound import Competence

from pymc_partitions.distributions.partition import PartitionPriorRV
from pymc_partitions.distributions.validation import integer_arg
from pymc_partitions.kernels import gibbs
from pymc_partitions.step_methods.base import PartitionStep

#: Item updates per draw of ``Gibbs(n_sweeps="auto")`` (see :class:`Gibbs`).
ITEMS_PER_DRAW = 1000


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
        (:data:`ITEMS_PER_DRAW` = 1000 item updates), fixed when the step is built.
        Why: with the hyperparameters updated by :class:`~pymc_partitions.EscobarWest`
        and :class:`~pymc_partitions.HyperSlice` (a few hundred µs per iteration) and
        PyMC's own loop (~100-200 µs per iteration: the point dictionaries, the
        Deterministics, the trace), one sweep of a few hundred items (~0.3-1 µs per
        item at K ~ 5, D <= 7) would leave the partition, the slowest-mixing part,
        a minority of the iteration's time; 1000 item updates take about as long as
        the rest of the iteration on the README quickstart and the seeds data
        (``examples/benchmark_hyperparameters.py``). The number depends only on n,
        never on timings, so the same seed gives the same draws on any machine and
        with ``cores=1`` or ``cores=2``.
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
            self.n_sweeps = max(1, round(ITEMS_PER_DRAW / self.target.n))

    @staticmethod
    def competence(var, has_grad=None):
        if var.owner is not None and isinstance(var.owner.op, PartitionPriorRV):
            return Competence.IDEAL
        return Competence.INCOMPATIBLE

    def move(self, stream, chain, prior_params, params, stats, data):
        failed = gibbs.run_sweeps(
            stream, self.n_sweeps, chain.state, prior_params, params, stats, data,
            chain.log_w, chain.order,
        )
        return failed, None
