"""What the rest of the library asks about a model's terms: its partition variables,
its observed terms whose log density cannot be evaluated, and the names PyTensor
prints for this package's random-variable ops.

Plain functions of a ``pm.Model`` (or of the loaded modules); used by the step layer,
:mod:`pymc_partitions.trace_size` and the hooks (:mod:`pymc_partitions.hooks`), which
are the reason they live here and not inside one of them.
"""

import sys

from pymc_partitions.distributions.partition import PartitionPriorRV
from pymc_partitions.versions import ancestors


def partition_rvs(model):
    """The free random variables of ``model`` whose op is a partition prior
    (:class:`~pymc_partitions.distributions.partition.PartitionPriorRV`), in the
    model's order."""
    return [
        rv
        for rv in model.free_RVs
        if rv.owner is not None and isinstance(rv.owner.op, PartitionPriorRV)
    ]


def unavailable_logp_terms(model, grad_vars=None):
    """``[(observed variable, reason)]``: the observed variables whose op says its log
    density cannot be evaluated (``op.logp_unavailable(node)`` returns a reason, e.g.
    a GeneralizedMallows over more than 7 items) and whose inputs do not depend on
    ``grad_vars`` (value variables or their random variables; None: every continuous
    free variable). Such a term is constant along any move of ``grad_vars``."""
    if grad_vars is None:
        moved = [v for v in model.free_RVs if v.dtype.startswith("float")]
    else:
        moved = [model.values_to_rvs.get(v, v) for v in grad_vars]
    found = []
    for rv in model.observed_RVs:
        op = getattr(rv.owner, "op", None)
        reason = op.logp_unavailable(rv.owner) if hasattr(op, "logp_unavailable") else None
        if reason is None or any(rv is f for f, _ in found):
            continue
        # a random variable among the inputs stands for its value: stop there
        depends = set(ancestors(rv.owner.inputs, blockers=list(model.basic_RVs)))
        if not any(m in depends for m in moved):
            found.append((rv, reason))
    return found


def random_variable_names():
    """``{op.name}_rv`` of every random-variable op defined in
    :mod:`pymc_partitions.distributions` (how PyTensor prints them), found from the
    loaded modules so that a new distribution needs no list."""
    from pytensor.tensor.random.op import RandomVariable

    names = set()
    for module_name, module in list(sys.modules.items()):
        if module_name.startswith("pymc_partitions.distributions") and module is not None:
            for value in vars(module).values():
                if isinstance(value, RandomVariable):
                    names.add(f"{value.name}_rv")
    return sorted(names)
