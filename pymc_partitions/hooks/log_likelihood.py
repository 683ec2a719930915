"""Hook ``log_likelihood``: pointwise leave-one-out terms for collapsed likelihoods in
``pm.compute_log_likelihood`` (and so ``pm.sample(idata_kwargs={"log_likelihood": True})``).

Wraps ``pymc.stats.log_density.compute_log_likelihood``, also bound as
``pymc.stats.compute_log_likelihood`` and ``pymc.compute_log_likelihood``. The
replacement hands the collapsed likelihoods to
:func:`pymc_partitions.analysis.loo.pymc_compute_log_likelihood` and every other
observed variable to PyMC's function.

Why: PyMC evaluates each observed variable's elementwise log density; a collapsed
likelihood's is one joint term per draw, with which ``az.loo`` / ``az.compare`` run
without a warning and mean nothing. PyMC has no hook to give a variable's pointwise
terms.

Relies on: the keywords (``var_names``, ``extend_inferencedata``, ``model``,
``sample_dims``, ``progressbar``; PyMC 6 adds ``backend``, passed through);
``_sample_return`` importing it from ``pymc.stats.log_density`` at call time.
"""

from pymc_partitions.analysis.loo import pymc_compute_log_likelihood
from pymc_partitions.hooks._hook import Hook


def _wrapper(original):
    def compute_log_likelihood(idata, **kwargs):
        return pymc_compute_log_likelihood(original, idata, **kwargs)

    compute_log_likelihood.__doc__ = original.__doc__
    return compute_log_likelihood


HOOK = Hook(
    name="log_likelihood",
    why=(
        "pm.compute_log_likelihood stores one joint term per draw for a collapsed "
        "likelihood, with which az.loo runs and means nothing; the wrapper gives the "
        "pointwise leave-one-out terms (pmp.compute_log_likelihood) for collapsed "
        "likelihoods and PyMC's own values for other observed variables. Re-check the "
        "keywords (var_names, extend_inferencedata, model, sample_dims, progressbar, "
        "backend) and that the callers import it from pymc.stats.log_density at call time."
    ),
    without=(
        "pm.compute_log_likelihood and idata_kwargs={'log_likelihood': True} store one "
        "joint term per draw for a collapsed likelihood (az.loo on it means nothing): call "
        "pmp.compute_log_likelihood(idata) instead."
    ),
    wrap=_wrapper,
    targets=(
        "pymc.stats.log_density:compute_log_likelihood",
        "pymc.stats:compute_log_likelihood",
        "pymc:compute_log_likelihood",
    ),
    relies_on=(
        "pymc.stats.log_density:compute_log_likelihood",
        "pymc.sampling.mcmc:_sample_return",
    ),
    fingerprints={
        "5.28": {
            "pymc.stats.log_density:compute_log_likelihood": (
                ("(idata, *, var_names=None, extend_inferencedata=True, model=None, "
                 "sample_dims=('chain', 'draw'), progressbar=True, compile_kwargs=None)"),
                "f2dad7bdedccfa0a"),
            "pymc.sampling.mcmc:_sample_return": "44573f06c6a755aa",
        },
        "6.4": {
            "pymc.stats.log_density:compute_log_likelihood": (
                ("(idata, *, var_names=None, extend_inferencedata=True, model=None, "
                 "sample_dims=('chain', 'draw'), progressbar=True, backend=None, "
                 "compile_kwargs=None)"),
                "e9bae995f3bcab21"),
            "pymc.sampling.mcmc:_sample_return": "636bbc93162fee48",
        },
    },
)
