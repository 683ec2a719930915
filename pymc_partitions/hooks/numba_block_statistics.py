"""Hook ``numba_block_statistics``: native numba code for the collapsed likelihoods'
statistics ops in PyTensor's numba backend.

What it changes: registers, through the backend's documented dispatcher
(``pytensor.link.numba.dispatch.basic.register_funcify_default_op_cache_key``), an
implementation of every :class:`~pymc_partitions.distributions.statistics.BlockStatistics`
op: the functions ``kernels.statistics.<op>_op``.

Why: without it the backend runs the op's Python ``perform`` in object mode, and a
graph holding an object-mode op gets no cache key: every model's logp and gradient
were compiled anew by numba, about 1-3.6 s per model on PyMC 6. The salt added to the
op's default cache key is a hash of the kernels' source, so an edit there is never
served a stale compiled graph. Public (a documented registration): no fingerprints.
"""

import hashlib
import inspect

from pymc_partitions.hooks._hook import Hook


def _register_numba_block_statistics():
    from pytensor.link.numba.dispatch.basic import register_funcify_default_op_cache_key

    from pymc_partitions.distributions.statistics import BlockStatistics
    from pymc_partitions.kernels import statistics as kernels

    salt = int(hashlib.sha256(inspect.getsource(kernels).encode()).hexdigest()[:12], 16)

    @register_funcify_default_op_cache_key(BlockStatistics)
    def numba_funcify_block_statistics(op, node=None, **kwargs):
        return getattr(kernels, op.native), salt


HOOK = Hook(
    name="numba_block_statistics",
    why=(
        "The collapsed likelihoods' statistics ops get native numba implementations "
        "(PyTensor's numba backend, PyMC 6's default, would otherwise run their Python "
        "perform in object mode and recompile every model's graph)."
    ),
    without=(
        "with PyTensor's numba backend the collapsed likelihoods' statistics run in object "
        "mode and every model's log density is compiled anew (slower; same results)."
    ),
    install=_register_numba_block_statistics,
    package="pytensor",
    public=True,
)
