"""Checks of the starting partitions given to ``pm.sample`` (``initvals=``) and of a
model's own initial values of partitions (``initval=`` / ``model.set_initval``).

PyMC has no hook that sees the per-chain ``initvals`` before it builds the starting
points; :mod:`pymc_partitions.hooks.initval_checks` calls :func:`check_partition_initvals`
from there. Without that hook a wrong length or label reaches the user as PyTensor's
type error (or a chain starting outside the prior's support).
"""

from pymc_partitions.distributions.model_terms import partition_rvs
from pymc_partitions.distributions.partition import partition_size, validate_labels


def check_partition_initvals(model, overrides):
    """Validate the starting partitions of ``pm.sample``: the ``initvals`` overrides
    (a dict, or a list/tuple of dicts or None, one per chain; keys the variable,
    its value variable or its name) and the model's own initial values
    (``initval=`` / ``model.set_initval``) of partitions no override replaces.
    Length, integer labels, range and the prior's support are checked; other forms
    of ``initvals`` (e.g. a list of label arrays) get a TypeError saying which
    form PyMC accepts."""
    partitions = partition_rvs(model)
    if not partitions:
        return
    if overrides is None or isinstance(overrides, dict):
        per_chain = [overrides]
    elif isinstance(overrides, list | tuple) and all(
        o is None or isinstance(o, dict) for o in overrides
    ):
        per_chain = list(overrides)
    else:
        name = partitions[0].name
        raise TypeError(
            f"initvals must be a dict {{variable name: value}} for all chains, or a list of "
            f"such dicts (one per chain); got {type(overrides).__name__} "
            f"{_short_repr(overrides)}. For partition '{name}': "
            f"initvals=[{{'{name}': labels_0}}, {{'{name}': labels_1}}, ...]."
        )

    def check(rv, value, where):
        labels = validate_labels(value, partition_size(rv), where)
        rv.owner.op.check_support(labels, rv.owner, where)

    for rv in partitions:
        keys = (rv, model.rvs_to_values[rv], rv.name)
        for chain, override in enumerate(per_chain):
            found = [value for key, value in (override or {}).items() if _is_key(key, keys)]
            chain_txt = f" for chain {chain}" if len(per_chain) > 1 else ""
            for value in found:
                if value is not None and not isinstance(value, str):
                    check(rv, value, f"initvals['{rv.name}']{chain_txt}")
            if not found:
                value = model.rvs_to_initial_values.get(rv)
                if value is not None and not isinstance(value, str) and hasattr(value, "shape") \
                        and not hasattr(value, "owner"):
                    check(rv, value, f"The initial value of '{rv.name}' (initval= or "
                                     f"model.set_initval)")


def _is_key(key, keys):
    return any(key is k for k in keys[:2]) or (isinstance(key, str) and key == keys[2])


def _short_repr(value, limit=60):
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
