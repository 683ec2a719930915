"""What every partition step method shares: construction, per-chain containers, the
one ``step()`` template, statistics from Info records."""

from typing import NamedTuple

import numpy as np
from pymc.model import Model, modelcontext
from pymc.step_methods.compound import BlockedStep, Competence
from pymc.util import get_random_generator, get_value_vars_from_user_vars
from pytensor.graph.basic import Variable

from pymc_partitions.versions import ChainSetup
from pymc_partitions.distributions.partition import PartitionPriorRV
from pymc_partitions.kernels import summarise
from pymc_partitions.kernels.random import new_stream
from pymc_partitions.step_methods.info import NoInfo, Summary, stats_dtypes_shapes
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


class MoveArgs(NamedTuple):
    """What a move reads in one iteration, made by :meth:`PartitionStep.step` from the
    point (the same objects for every chain of the container).

    Attributes
    ----------
    stream
        (4,) uint64, the chain's kernel stream (:mod:`pymc_partitions.kernels.random`),
        advanced in place by every draw.
    values
        The target's hyperparameter values at the point (list of float64 arrays).
    prior_params
        The partition prior's kernel record.
    per_lik
        Per-likelihood kernel params (the target's ``params(point)``).
    params, data
        The combined likelihood records the kernels take (``target.kernel_args``);
        None while :meth:`PartitionStep.new_container` runs (the container's chains
        do not exist yet).
    """

    stream: np.ndarray
    values: list
    prior_params: tuple
    per_lik: list
    params: tuple = None
    data: tuple = None


class PartitionStep(ChainSetup, BlockedStep):
    """Base class of the partition samplers (a ``BlockedStep`` over one partition):
    the only ``step()``.

    One iteration (:meth:`step`): point -> target -> container -> move -> Info ->
    statistics.

    1. **Target.** The hyperparameter values and kernel records at the point
       (:class:`PartitionTarget`, read afresh every iteration, so NUTS or a
       hyperparameter step may move them).
    2. **Container.** What the step keeps across iterations for this chain: one
       :class:`~.chain_state.ChainState` (the default), a ladder (PBC's
       :class:`~.pbc.TemperedPopulation`), a pair (:class:`~.coupled_pair.CoupledPair`),
       a chain with its history (ARM's :class:`~.arm_history.HistoryChain`). It is
       made from the point's labels at the chain's first iteration, and loaded from
       them again whenever they are not the labels the step wrote last (``initvals``,
       another step moved the partition): the chain starts from the point PyMC
       gives it, the prior's ``support_point`` unless ``initvals`` or
       ``initval="prior"`` say otherwise. Every :class:`ChainState` of the container
       has its caches refreshed when the hyperparameters changed.
    3. **Move.** :meth:`move` runs the kernel(s) on the container and returns an
       ``Info`` record (:mod:`.info`). An exception drops the container (a part-done
       move is never continued: it is reloaded from the point should sampling go on).
    4. **Statistics.** The draw (:meth:`chain_of`) is summarised (:class:`~.info.Summary`:
       ``n_clusters``, ``largest_cluster_frac``, ``log_joint``), its canonical labels
       go to the point, and the summary's and the Info's fields are the sampler
       statistics, as they are.

    How a step subclasses it
    ------------------------
    A step module is settings plus which kernel to call::

        class MyInfo(NamedTuple):
            \"\"\"What one iteration did.

            Attributes
            ----------
            accepted
                Whether the proposal was accepted.
            \"\"\"

            accepted: bool

        class MyMove(PartitionStep):
            name = "partition_my_move"            # PyMC's step name
            move_description = "a my-move update"  # for error messages
            Info = MyInfo                          # stats_dtypes_shapes follows

            def __init__(self, vars, my_option=1, **kwargs):
                self.my_option = ...               # check options first
                super().__init__(vars, **kwargs)   # reads the model: self.target

            def move(self, chain, args):           # chain: the container
                failed, accepted = my_kernel.run(args.stream, chain.state,
                                                 args.prior_params, args.params,
                                                 chain.stats, args.data, ...)
                self.fail_if(failed, args)         # item >= 0: ImpossibleConditionalError
                return MyInfo(accepted=bool(accepted))

    - ``Info`` (class attribute): a ``typing.NamedTuple`` class, its fields annotated
      with their dtypes and described in its docstring (:mod:`.info`).
      ``stats_dtypes_shapes`` is derived from :class:`~.info.Summary` and ``Info``
      when the subclass sets ``Info`` (a subclass that writes its own
      ``stats_dtypes_shapes`` keeps it).
    - :meth:`move` ``(container, args) -> Info``: ``args`` a :class:`MoveArgs`.
    - Another container: override :meth:`new_container` ``(labels, args)`` (make it
      from the point's validated labels; :meth:`new_chain` makes a ChainState),
      :meth:`chain_of` (its ChainState whose partition is the draw), and where
      needed :meth:`chains_of` (every ChainState in it, default the draw's) and
      :meth:`load_container` (load new labels into an existing container; default:
      a new one).
    - :meth:`summary` ``(chain, args)``: the draw's :class:`~.info.Summary` when
      the kernels' collapsed ``summarise`` does not apply (MallowsGibbs); with
      :meth:`chains_of` returning ``()`` no ChainState's caches are refreshed and
      ``args.params``, ``args.data`` are None.
    - :meth:`finish_info` ``(info, summary)``: statistics that depend on the draw's
      summary (PBC's ``log_target``); default the info as it is.
    - :meth:`new_target`: how the model is read (default :class:`PartitionTarget`).
    - :meth:`start_chain` ``(rng)``: per-chain scratch (call ``super()`` first: it
      makes the chain's kernel stream from ``rng``, then the container is None).
    - ``competence`` (default: COMPATIBLE for partition variables), ``vars`` first,
      PyMC's keywords (``model``, ``rng``, ``initial_point``, ``compile_kwargs``,
      ``blocked``) passed through ``**kwargs``.

    What the base class keeps per chain: ``self._container``, ``self._stream`` and
    ``self.iteration`` (completed iterations, tuning included).

    Randomness: when a chain starts, the step makes the chain's kernel stream (the
    256-bit state of a 64-bit generator, :mod:`pymc_partitions.kernels.random`) from
    a ``numpy.random.SeedSequence`` fed with 256 bits drawn from the generator PyMC
    gives that chain; every iteration continues that stream, nothing is reseeded,
    and numba's global generator is never touched. Chains' streams cannot collide
    (short of a 2^-256-scale accident), and the same ``random_seed`` gives the same
    draws with ``cores=1`` and ``cores>1``.
    """

    default_blocked = False  # one step instance per partition variable
    #: The move's record (:mod:`.info`); its fields follow :class:`~.info.Summary`'s
    #: in ``stats_dtypes_shapes``.
    Info = NoInfo
    stats_dtypes_shapes = stats_dtypes_shapes(Summary, NoInfo)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "Info" in cls.__dict__ and "stats_dtypes_shapes" not in cls.__dict__:
            cls.stats_dtypes_shapes = stats_dtypes_shapes(Summary, cls.Info)

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
        self.target = self.new_target(model, value_vars[0], compile_kwargs)
        self.set_rng(rng)  # also creates the (empty) per-chain state

    def new_target(self, model, value_var, compile_kwargs):
        """The :class:`PartitionTarget` of ``value_var`` (the model read once); a step
        that reads the model otherwise overrides this."""
        return PartitionTarget(model, value_var, type(self).__name__, compile_kwargs)

    def start_chain(self, rng):
        # pm.set_data between runs: read pm.Data observations again (cheap if unchanged).
        self.target.refresh_data()
        self._container = None  # made from the first point this chain sees
        self._stream = new_stream(rng)  # advanced by every move of this chain
        self.iteration = 0

    @staticmethod
    def competence(var, has_grad=None):
        if var.owner is not None and isinstance(var.owner.op, PartitionPriorRV):
            return Competence.COMPATIBLE
        return Competence.INCOMPATIBLE

    #: What :meth:`move` does, for error messages ("during a Gibbs sweep").
    move_description = "the move"

    # ------------------------------------------------------------ what a subclass says
    def move(self, container, args):  # pragma: no cover - every step defines it
        """Run the move on ``container`` with ``args`` (:class:`MoveArgs`); return an
        ``Info`` record. Call :meth:`fail_if` with a kernel's failed item."""
        raise NotImplementedError

    def new_chain(self, labels, args):
        """A new :class:`~.chain_state.ChainState` holding ``labels`` (validated)."""
        return self.target.new_chain_state(labels, args.values, args.per_lik)

    def new_container(self, labels, args):
        """The container of a chain starting from ``labels`` (validated (n,) int64);
        default one :class:`~.chain_state.ChainState`."""
        return self.new_chain(labels, args)

    def load_container(self, container, labels, args):
        """``container`` with ``labels`` loaded (the point's labels are not the ones
        the step wrote last); default a new container."""
        return self.new_container(labels, args)

    def chain_of(self, container):
        """The :class:`~.chain_state.ChainState` of ``container`` whose partition is
        the draw; default the container itself."""
        return container

    def chains_of(self, container):
        """Every :class:`~.chain_state.ChainState` of ``container`` whose caches follow
        the hyperparameters; default the draw's."""
        return (self.chain_of(container),)

    def summary(self, chain, args):
        """The :class:`~.info.Summary` of the draw ``chain`` (its canonical labels
        written to ``chain.labels``); default the kernels' ``summarise`` (collapsed
        log joint). A step whose state is not a collapsed one (explicit block
        parameters) computes its own."""
        n_blocks, largest, log_joint = summarise(
            chain.state, args.prior_params, args.params, chain.stats, chain.labels, chain.scratch
        )
        return Summary(int(n_blocks), largest / self.target.n, float(log_joint))

    def finish_info(self, info, summary):
        """The Info record given the draw's :class:`~.info.Summary`; default ``info``."""
        return info

    # ------------------------------------------------------------------- the template
    def fail_if(self, failed, args):
        """Raise the :class:`ImpossibleConditionalError` for a kernel's ``failed``
        item (>= 0; -1: nothing failed), with the model's context."""
        if failed >= 0:
            raise self.target.impossible_conditional(int(failed), args.values,
                                                     self.move_description)

    def step(self, point):
        target = self.target
        stream = self._stream
        values, prior_params, per_lik = target.params(point)
        labels = point[target.name]
        container = self._container
        if container is None:
            container = self.new_container(target.validate_labels(labels),
                                           MoveArgs(stream, values, prior_params, per_lik))
        elif not np.array_equal(labels, self.chain_of(container).labels):
            container = self.load_container(container, target.validate_labels(labels),
                                            MoveArgs(stream, values, prior_params, per_lik))
        self._container = container
        params = data = None  # no ChainState follows the hyperparameters: none needed
        for chain in self.chains_of(container):
            params, _, data = target.kernel_args(chain, values, per_lik)
        args = MoveArgs(stream, values, prior_params, per_lik, params, data)
        try:
            info = self.move(container, args)
        except Exception:
            # The kernel states are valid partitions but a part-done move: reload the
            # point's labels should sampling go on.
            self._container = None
            raise
        chain = self.chain_of(container)
        summary = self.summary(chain, args)
        info = self.finish_info(info, summary)
        new_point = dict(point)
        new_point[target.name] = chain.labels.copy()
        self.iteration += 1
        stats = dict(zip(Summary._fields, summary))
        stats.update(zip(info._fields, info))
        return new_point, [stats]
