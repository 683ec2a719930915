"""Hook ``object_mode_warnings``: PyTensor's "Numba will use object mode" notice
silenced for this package's random-variable ops only.

What it changes: a Python warnings filter (``warnings.filterwarnings``) matching the
notice that ``pytensor.link.numba.dispatch.basic.generate_fallback_impl`` emits, for
the ops named by :func:`pymc_partitions.distributions.model_terms.random_variable_names`.

Why: our ops' ``rng_fn`` methods are Python by design (a partition draw is a sequential
loop), so the notice says nothing a user can act on; PyTensor has no per-op switch.

Relies on: the text of the notice (``Numba will use object mode to run {op}{``),
emitted by ``generate_fallback_impl`` (fingerprinted).
"""

import re
import warnings

from pymc_partitions.distributions.model_terms import random_variable_names
from pymc_partitions.hooks._hook import Hook


def quiet_object_mode_warnings(op_names):
    """Silence PyTensor's object-mode notice for the named random-variable ops."""
    pattern = "|".join(re.escape(name) for name in op_names)
    warnings.filterwarnings(
        "ignore",
        message=rf"Numba will use object mode to run ({pattern})\{{",
        category=UserWarning,
    )


def _install():
    quiet_object_mode_warnings(random_variable_names())


HOOK = Hook(
    name="object_mode_warnings",
    why=(
        "PyTensor's numba backend warns that it runs Python rng_fn methods in object "
        "mode; ours are Python by design (a partition draw is a sequential loop), so "
        "the notice is silenced for our ops only. Re-check the message text."
    ),
    without=(
        "PyTensor's numba backend prints 'Numba will use object mode to run ..._rv' for "
        "this package's random-variable ops (harmless: their draws are Python by design)."
    ),
    install=_install,
    relies_on=("pytensor.link.numba.dispatch.basic:generate_fallback_impl",),
    package="pytensor",
    fingerprints={
        "2.38": {
            "pytensor.link.numba.dispatch.basic:generate_fallback_impl": (
                "(op, node, storage_map=None, **kwargs)", "0d3aa085823d4c33"),
        },
        "3.3": {
            "pytensor.link.numba.dispatch.basic:generate_fallback_impl": (
                "(op, node, storage_map=None, **kwargs)", "0d3aa085823d4c33"),
        },
    },
)
