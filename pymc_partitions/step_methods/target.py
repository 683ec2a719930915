"""The conditional target of one partition variable, read once from the model graph.

A partition step samples ``z`` from p(z | everything else). For that to be exact,
``z`` may enter the model only through its prior and through collapsed likelihoods
(DESIGN §4); :class:`PartitionTarget` checks this, finds those nodes, and compiles
one PyTensor function from the model's value variables to every hyperparameter
the kernels need (the prior's, e.g. alpha, and each likelihood's). Each iteration
then costs one call of that function with positional inputs and ``trust_input``.
Observed data held in ``pm.Data`` are read again at each chain start
(:meth:`PartitionTarget.refresh_data`), so ``pm.set_data`` takes effect.
A prior whose support is restricted beyond block sizes (proper graph colourings)
supplies a constraint component, placed first among the kernel components; with
it the partition may be sampled without any likelihood (the prior is the target).

A likelihood whose block parameters cannot be integrated out declares it on its op
(``explicit_block_parameters = True``, with ``explicit_step`` naming the step whose
kernels hold those parameters per slot, and ``kernel_data(rv)`` its constant inputs):
:class:`PartitionTarget` lists it in ``explicit`` for the steps that accept such
terms (that step; the hyperparameter steps when its hyperparameters are constants)
and refuses it, naming that step, for every other step. Nothing here knows which
likelihoods these are (:func:`explicit_likelihoods`).

:class:`~pymc_partitions.step_methods.chain_state.ChainState` (its own module)
holds one chain's kernel state: the partition with its sufficient statistics and
the scratch arrays the kernels use.
"""

import numpy as np
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant

from pymc_partitions.versions import ancestors, small_function_mode
from pymc_partitions.distributions.collapsed import CollapsedLikelihoodRV, observed_data
from pymc_partitions.distributions.partition import (
    PartitionPriorRV,
    partition_size,
    validate_labels,
)
from pymc_partitions.kernels import assign_labels, new_state, refresh_all
from pymc_partitions.kernels.components import combine
from pymc_partitions.kernels.errors import CHECK_HINT, ImpossibleConditionalError
from pymc_partitions.step_methods.chain_state import ChainState, chain_state


class PartitionModelError(ValueError):
    """The model uses a partition in a way the step cannot sample exactly."""


class PartitionTarget:
    """Binding between a model's partition variable and the numba kernels.

    Parameters
    ----------
    model : pm.Model
    value_var : TensorVariable
        The value variable of the partition.
    step_name : str
        Used in error messages.
    compile_kwargs : dict, optional
        Passed to the compilation of the hyperparameter function.
    accept_explicit : bool, default False
        List the likelihoods with explicit block parameters in :attr:`explicit`
        instead of refusing them: for the step whose kernels hold those parameters,
        and for hyperparameter steps (their terms are then not read: the op's
        ``hyper_params`` are none of the model's variables).
    """

    def __init__(self, model, value_var, step_name, compile_kwargs=None, accept_explicit=False):
        self.model = model
        self.accept_explicit = accept_explicit
        #: Observed likelihoods with explicit block parameters (accept_explicit only).
        self.explicit = []
        self.value_var = value_var
        self.name = value_var.name
        rv = model.values_to_rvs[value_var]
        self.rv = rv
        if rv.owner is None or not isinstance(rv.owner.op, PartitionPriorRV):
            raise PartitionModelError(
                f"{step_name}: 'vars' must hold a partition variable (pmp.CRP or another "
                f"partition prior); '{rv.name}' is not one. Leave it to PyMC's own steps."
            )
        self.step_name = step_name
        self.prior_op = rv.owner.op
        prior_inputs = self.prior_op.dist_params(rv.owner)
        self.n = partition_size(rv)
        if self.n is None:
            raise PartitionModelError(f"'{rv.name}': the number of items n must be a constant.")
        self.likelihoods = self._find_likelihoods(model, rv)
        # A prior that restricts its support (graph colourings) brings a component.
        self.constraint = self.prior_op.constraint_component(rv.owner)
        if not self.likelihoods and self.constraint is None and not self.explicit:
            raise PartitionModelError(
                f"{step_name}: no collapsed likelihood (e.g. pmp.CollapsedNormal) is observed on "
                f"partition '{rv.name}'; add one with partition={rv.name}."
            )
        hyper_exprs = list(prior_inputs[:-1])
        self.n_prior_hypers = len(hyper_exprs)
        self.hyper_counts = []
        for lik in self.likelihoods:
            exprs = lik.owner.op.hyper_params(lik.owner)
            self.hyper_counts.append(len(exprs))
            hyper_exprs.extend(exprs)
        self._compile_hypers(model, hyper_exprs, compile_kwargs)
        self._prior_valid = fast_validity(self.prior_op, PartitionPriorRV,
                                          [True] * self.n_prior_hypers)
        self._lik_valid = [
            fast_validity(lik.owner.op, CollapsedLikelihoodRV,
                          [h in lik.owner.op.positive for h in lik.owner.op.hyper_names])
            for lik in self.likelihoods
        ]
        self._observed = [model.rvs_to_values[lik] for lik in self.likelihoods]
        self._sources = [None] * len(self.likelihoods)
        self.data = [None] * len(self.likelihoods)
        if self.constraint is not None:
            self.data = [self.constraint.data, *self.data]
        self._last_values = None
        self._params = None
        self.refresh_data()

    def refresh_data(self):
        """Read the observed data of every likelihood into the kernels' records.

        Constants are read once. A ``pm.Data`` container is read again when its value
        object changed since the last read (``pm.set_data`` stores a new array):
        validated as at construction, its shape checked against the model's (see
        :func:`~pymc_partitions.distributions.collapsed.observed_data`), and the
        cached hyperparameter values dropped (they may depend on the data). Steps call
        this at the start of each chain, so per-iteration cost is unchanged.
        """
        first = 0 if self.constraint is None else 1
        changed = False
        for i, (lik, value_var) in enumerate(zip(self.likelihoods, self._observed)):
            source = _data_source(value_var)
            if self._sources[i] is not None and source is self._sources[i]:
                continue
            data = observed_data(lik, value_var, self.step_name)
            self.data[first + i] = lik.owner.op.kernel_data(data)
            self._sources[i] = source
            changed = True
        if changed:
            self._last_values = None
            self._params = None
        return changed

    # ----------------------------------------------------------------- model reading
    def _find_likelihoods(self, model, rv):
        likelihoods = []
        for other in model.basic_RVs:
            if other is rv:
                continue
            op = other.owner.op
            if _explicit_on(op, other, rv):
                if self.accept_explicit:
                    if other not in model.observed_RVs:
                        raise PartitionModelError(
                            f"'{other.name}' is a likelihood of partition '{rv.name}' but not "
                            f"observed; pass observed=.")
                    if rv in ancestors(op.hyper_params(other.owner)):
                        raise PartitionModelError(
                            f"The hyperparameters of '{other.name}' depend on partition "
                            f"'{rv.name}': {self.step_name} cannot sample such a model exactly.")
                    if not any(other is e for e in self.explicit):
                        self.explicit.append(other)
                    continue
                raise PartitionModelError(
                    f"'{other.name}' (pmp.{_display_name(op)}) observes partition '{rv.name}' "
                    f"with explicit block parameters, which have no collapsed kernel: "
                    f"{self.step_name} cannot sample it. Use pmp.{op.explicit_step}([{rv.name}]) "
                    f"(what pm.sample assigns by itself)."
                )
            if isinstance(op, CollapsedLikelihoodRV) and op.dist_params(other.owner)[0] is rv:
                if any(other is lik for lik in likelihoods):
                    continue  # PyMC 5's sample_posterior_predictive can list it twice
                if other not in model.observed_RVs:
                    raise PartitionModelError(
                        f"'{other.name}' is a collapsed likelihood but not observed; pass observed=."
                    )
                hypers = op.hyper_params(other.owner)
                if rv in ancestors(hypers):
                    raise PartitionModelError(
                        f"The hyperparameters of '{other.name}' depend on partition '{rv.name}': "
                        f"{self.step_name} cannot sample such a model exactly."
                    )
                likelihoods.append(other)
            elif rv in ancestors(other.owner.inputs):
                raise PartitionModelError(
                    f"'{other.name}' depends on partition '{rv.name}' other than as a collapsed "
                    f"likelihood's partition=; {self.step_name} would ignore that term and sample a "
                    f"wrong posterior. Integrate the block parameters out (pmp.Collapsed*) or "
                    f"remove the dependence."
                )
        for pot in model.potentials:
            if rv in ancestors([pot]):
                raise PartitionModelError(
                    f"Potential '{pot.name}' depends on partition '{rv.name}'; {self.step_name} "
                    f"cannot include it exactly. Remove it or write it as a collapsed likelihood."
                )
        return likelihoods

    def _compile_hypers(self, model, exprs, compile_kwargs):
        outs = model.replace_rvs_by_values(exprs)
        needed = set(ancestors(outs))
        self.input_vars = [v for v in model.value_vars if v in needed]
        if self.value_var in self.input_vars:
            raise PartitionModelError(
                f"The hyperparameters depend on partition '{self.rv.name}' itself."
            )
        self.input_names = [v.name for v in self.input_vars]
        # The random variables' own names ('a', not its value variable 'a_log__'),
        # for messages.
        self.input_rv_names = [model.values_to_rvs[v].name for v in self.input_vars]
        self._constant = not self.input_vars
        kwargs = dict(compile_kwargs or {})
        kwargs.setdefault("on_unused_input", "ignore")
        if self._constant:
            # Read once per chain (data may change between chains): PyTensor's Python
            # VM links it at once, where the C VM spends ~0.5 s per new C module on
            # a cold compile directory for a function it would call a handful of times.
            kwargs.setdefault("mode", "FAST_COMPILE")
        elif small_function_mode() is not None:
            kwargs.setdefault("mode", small_function_mode())
        fn = model.compile_fn(outs, inputs=self.input_vars, point_fn=False, **kwargs)
        fn.trust_input = True
        self._hyper_fn = fn

    # ----------------------------------------------------------------- per iteration
    def hyper_values(self, point):
        """Hyperparameter values (list of arrays) at ``point``."""
        if self._constant and self._last_values is not None:
            return self._last_values
        return [
            np.asarray(v, dtype=np.float64)
            for v in self._hyper_fn(*[point[name] for name in self.input_names])
        ]

    def params(self, point):
        """``(hyper values, prior_params, per-likelihood params)`` at ``point``.

        Params are rebuilt only when the values change (the Normal component
        tabulates by block size, O(n D)).
        """
        values = self.hyper_values(point)
        if self._last_values is not None and _same(values, self._last_values):
            return values, self._params[0], self._params[1]
        prior_values = values[: self.n_prior_hypers]
        if not self._prior_valid(prior_values):  # the op's check raises, with its message
            self.prior_op.check_hyper_values(prior_values, f"partition '{self.rv.name}'")
        per_lik, pos = [], self.n_prior_hypers
        for lik, count, valid in zip(self.likelihoods, self.hyper_counts, self._lik_valid):
            vals = values[pos : pos + count]
            pos += count
            if not valid(vals):
                lik.owner.op.check_hyper_values(vals, f"'{lik.name}'")
            per_lik.append(lik.owner.op.kernel_params(vals, self.n))
        if self.constraint is not None:
            per_lik = [self.constraint.params, *per_lik]
        prior_params = self.prior_op.kernel_prior_params(prior_values, self.n)
        self._last_values = values
        self._params = (prior_params, per_lik)
        return values, prior_params, per_lik

    def impossible_conditional(self, item, values, move):
        """The :class:`ImpossibleConditionalError` for a kernel that found no block of
        positive probability for ``item`` at hyperparameter ``values`` during ``move``
        (a phrase, e.g. "a Gibbs sweep")."""
        prior = _display_name(self.prior_op)
        hypers = ", ".join(
            f"{name} = {_short(value)}"
            for name, value in zip(self.prior_op.hyper_names, values[: self.n_prior_hypers])
        )
        liks, pos = [], self.n_prior_hypers
        for lik, count in zip(self.likelihoods, self.hyper_counts):
            vals = values[pos : pos + count]
            pos += count
            named = ", ".join(
                f"{name} = {_short(v)}" for name, v in zip(lik.owner.op.hyper_names, vals)
            )
            liks.append(f"'{lik.name}' (pmp.{_display_name(lik.owner.op)}: {named})")
        observed = "; ".join(liks) if liks else "none (the prior is the target)"
        if self.constraint is not None:
            observed += f"; the support constraint of pmp.{prior}"
        return ImpossibleConditionalError(
            f"{self.step_name}: partition '{self.rv.name}' (prior pmp.{prior}: {hypers}), "
            f"item {item}: during {move}, every block had probability zero (all log weights "
            f"-inf, or a NaN), so the item's conditional cannot be sampled. Likelihoods "
            f"observed on '{self.rv.name}': {observed}. {CHECK_HINT}",
            item,
        )

    def validate_labels(self, labels):
        """Check labels coming from the point (e.g. ``initvals``); return them as int64."""
        where = f"Partition '{self.rv.name}' (from the starting point: check initvals)"
        labels = validate_labels(labels, self.n, where)
        self.prior_op.check_support(labels, self.rv.owner, where)
        return labels

    def new_chain_state(self, labels, values, per_lik_params):
        """Load the partition ``labels`` into a fresh kernel state."""
        first = 0 if self.constraint is None else 1
        stats = [
            lik.owner.op.alloc_stats(self.n, d, p)
            for lik, d, p in zip(self.likelihoods, self.data[first:], per_lik_params[first:])
        ]
        if self.constraint is not None:
            stats = [self.constraint.alloc(self.n), *stats]
        params, stats_c, data_c = combine(per_lik_params, stats, self.data)
        state = new_state(self.n)
        assign_labels(state, params, stats_c, data_c, labels)
        return chain_state(state, stats_c, self.n, values, shared=tuple(self.data))

    def kernel_args(self, chain, values, per_lik_params):
        """``(params, stats, data)`` for the kernels; refreshes the chain's caches
        if its hyperparameters changed since its last iteration."""
        params, _, data = combine(per_lik_params, [None] * len(per_lik_params), self.data)
        if not _same(values, chain.hyper_values):
            refresh_all(chain.state, params, chain.stats)
            chain.hyper_values = values
        return params, chain.stats, data


def _explicit_on(op, rv, partition):
    """True when ``rv`` (node of ``op``) is a likelihood of ``partition`` whose op
    declares explicit block parameters."""
    return (getattr(op, "explicit_block_parameters", False)
            and op.partition_of(rv.owner) is partition)


def explicit_likelihoods(model, partition):
    """The observed variables of ``model`` whose likelihood of ``partition`` holds
    explicit block parameters (their op declares ``explicit_block_parameters``), in
    model order, each once: what a step's ``competence`` asks to decide whether its
    kernels can move ``partition``."""
    found = []
    for other in model.observed_RVs:
        op = getattr(other.owner, "op", None)
        if op is not None and _explicit_on(op, other, partition) \
                and not any(other is f for f in found):
            found.append(other)
    return found


def fast_validity(op, base, positive):
    """``values -> bool``, True when ``op.check_hyper_values`` would accept the values.

    For an op whose check is its base class's rule (finite, and positive where
    ``positive[i]``), a check on each value's min and max, ~1 µs each (NumPy's
    ``all``/``any`` with the error-message machinery cost ~40 µs per iteration at
    D = 2, as much as a Gibbs sweep of a few hundred items). For any other op,
    always False: the caller then runs the op's own check, which raises with its
    message if the values are invalid."""
    if type(op).check_hyper_values is not base.check_hyper_values:
        return lambda values: False

    def valid(values):
        for value, pos in zip(values, positive):
            low, high = float(value.min()), float(value.max())
            if not (low > (0.0 if pos else -np.inf) and high < np.inf):
                return False
        return True

    return valid


def _data_source(value_var):
    """The object holding the current observed value: the constant itself, or the
    value array of the ``pm.Data`` container (replaced by ``pm.set_data``)."""
    if isinstance(value_var, Constant):
        return value_var
    for var in ancestors([value_var]):
        if isinstance(var, SharedVariable):
            return var.get_value(borrow=True)
    return None


def _display_name(op):
    name = getattr(op, "_print_name", None)
    return name[0] if name else type(op).__name__


def _short(value):
    value = np.asarray(value)
    if value.size > 6:
        return f"array of shape {value.shape}"
    return np.array2string(value, precision=4) if value.ndim else f"{float(value):.4g}"


def _same(values, other):
    # Hot path (twice per iteration): identity first, then one bytes comparison.
    if values is other:
        return True
    if other is None or len(values) != len(other):
        return False
    return all(a.shape == b.shape and a.tobytes() == b.tobytes() for a, b in zip(values, other))


__all__ = ["ChainState", "PartitionModelError", "PartitionTarget", "explicit_likelihoods"]
