"""What every partition step method shares: construction, per-chain state, stats."""

import numpy as np
from pymc.model import Model, modelcontext
from pymc.step_methods.compound import BlockedStep, Competence
from pymc.util import get_random_generator, get_value_vars_from_user_vars
from pytensor.graph.basic import Variable

from pymc_partitions.versions import ChainSetup
from pymc_partitions.distributions.partition import PartitionPriorRV
from pymc_partitions.kernels import summarise
from pymc_partitions.kernels.random import new_stream
from pymc_partitions.step_methods.target import PartitionTarget


class ApproximateStepWarning(UserWarning):
    """A step method was asked for an approximation: its chain's stationary law is not
    the posterior (the message names the exact alternative)."""


def step_arguments(owner, vars, model, rng, example):
    """``(model, value_vars)`` from a step's ``vars``, ``model`` and ``rng`` arguments,
    checked as every step of this package checks them: a pm.Model (or one in
    context), a list of model variables (``example`` names one, e.g. "[z]"), an rng
    PyMC accepts. Raises TypeError/ValueError naming the argument."""
    model = modelcontext(model)
    if not isinstance(model, Model):
        raise TypeError(f"{owner}: 'model' must be a pm.Model (or None inside a model "
                        f"context), got {model!r}.")
    vars = vars if isinstance(vars, list | tuple) else [vars]
    if not vars:
        raise ValueError(f"{owner}: 'vars' is empty; pass e.g. {example}.")
    for var in vars:
        if not isinstance(var, Variable):
            hint = f" (the variable itself: model[{var!r}])" if isinstance(var, str) else ""
            raise TypeError(f"{owner}: 'vars' must be a list of model variables, e.g. "
                            f"{example}{hint}; got {var!r}.")
    try:
        value_vars = get_value_vars_from_user_vars(vars, model)
    except ValueError as err:
        raise ValueError(f"{owner}: 'vars': {err}") from None
    try:
        get_random_generator(rng)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{owner}: 'rng' must be None, a seed (int) or a numpy Generator, "
                        f"got {rng!r} ({err}).") from None
    return model, value_vars


class PartitionStep(ChainSetup, BlockedStep):
    """Base class of the partition samplers (a ``BlockedStep`` over one partition).

    Subclasses implement :meth:`move` (run the move on a chain's kernel state).
    The base class reads the model (:class:`PartitionTarget`), keeps one kernel
    state per chain, loads the point's labels when they are not the ones it wrote
    last (a new chain, ``initvals``, another step: the chain starts from the point
    PyMC gives it, the prior's ``support_point`` unless ``initvals`` or
    ``initval="prior"`` say otherwise), and reports the label-invariant
    stats ``n_clusters``, ``largest_cluster_frac`` and ``log_joint`` (the collapsed
    log p(y, z | hyperparameters)).

    Randomness: when a chain starts, the step makes the chain's kernel stream (the
    256-bit state of a 64-bit generator, :mod:`pymc_partitions.kernels.random`) from
    a ``numpy.random.SeedSequence`` fed with 256 bits drawn from the generator PyMC
    gives that chain; every iteration continues that stream, nothing is reseeded,
    and numba's global generator is never touched. Chains' streams cannot collide
    (short of a 2^-256-scale accident), and the same ``random_seed`` gives the same
    draws with ``cores=1`` and ``cores>1``.
    """

    default_blocked = False  # one step instance per partition variable
    stats_dtypes_shapes = {
        "n_clusters": (np.int64, []),
        "largest_cluster_frac": (np.float64, []),
        "log_joint": (np.float64, []),
    }

    def __new__(cls, *args, **kwargs):
        vars = kwargs["vars"] if "vars" in kwargs else (args[0] if args else None)
        if isinstance(vars, list | tuple) and not vars:
            raise ValueError(
                f"{cls.__name__}: 'vars' is empty; pass the partition variable, e.g. [z]."
            )
        return super().__new__(cls, *args, **kwargs)

    def __init__(self, vars, *, model=None, blocked=False, rng=None, initial_point=None,
                 compile_kwargs=None):
        model, value_vars = step_arguments(type(self).__name__, vars, model, rng, "[z]")
        if len(value_vars) != 1:
            raise ValueError(
                f"{type(self).__name__} samples one partition variable per step; got "
                f"{[v.name for v in value_vars]}. Create one step per partition."
            )
        self.vars = value_vars
        self.target = PartitionTarget(model, value_vars[0], type(self).__name__, compile_kwargs)
        self.set_rng(rng)  # also creates the (empty) per-chain state

    def start_chain(self, rng):
        # pm.set_data between runs: read pm.Data observations again (cheap if unchanged).
        self.target.refresh_data()
        self._chain = None  # built from the first point this chain sees
        self._stream = new_stream(rng)  # advanced by every move of this chain

    @staticmethod
    def competence(var, has_grad=None):
        if var.owner is not None and isinstance(var.owner.op, PartitionPriorRV):
            return Competence.COMPATIBLE
        return Competence.INCOMPATIBLE

    #: What :meth:`move` does, for error messages ("during a Gibbs sweep").
    move_description = "the move"

    def move(self, stream, chain, prior_params, params, stats, data):  # pragma: no cover
        """Run the move on ``chain`` (a :class:`ChainState`), drawing from ``stream``
        (the chain's (4,) uint64 kernel stream, advanced in place).

        Returns ``(failed, extra)``: ``failed`` the item the kernel reported as having
        no block of positive probability (-1: none; see
        :mod:`pymc_partitions.kernels.errors`), ``extra`` a dict of extra sampler stats
        (declared in ``stats_dtypes_shapes``) or None.
        """
        raise NotImplementedError

    def step(self, point):
        target = self.target
        values, prior_params, per_lik = target.params(point)
        labels = point[target.name]
        chain = self._chain
        if chain is None or not np.array_equal(labels, chain.labels):
            chain = self._chain = target.new_chain_state(
                target.validate_labels(labels), values, per_lik
            )
        params, stats, data = target.kernel_args(chain, values, per_lik)
        failed, move_stats = self.move(self._stream, chain, prior_params, params, stats, data)
        if failed >= 0:
            # The kernel state is a valid partition but a part-done move: reload the
            # point's labels should sampling go on.
            self._chain = None
            raise target.impossible_conditional(int(failed), values, self.move_description)
        n_blocks, largest, log_joint = summarise(
            chain.state, prior_params, params, stats, chain.labels, chain.scratch
        )
        new_point = dict(point)
        new_point[target.name] = chain.labels.copy()
        stats_out = {
            "n_clusters": int(n_blocks),
            "largest_cluster_frac": largest / target.n,
            "log_joint": float(log_joint),
        }
        stats_out.update(move_stats or {})
        return new_point, [stats_out]
