"""Hook ``convergence_checks``: label-invariant R-hat / ESS in ``pm.sample``'s checks.

Wraps ``pymc.sampling.mcmc.run_convergence_checks`` (PyMC's
``pymc.stats.convergence.run_convergence_checks``, bound by name in
``pymc.sampling.mcmc``).

Why: PyMC computes R-hat and ESS on every free variable in the posterior. For a
partition, the labels of one item are not a meaningful scalar across draws (label
switching; canonical labels jump when a block splits), so those checks raise false
alarms. The wrapper runs PyMC's own checks with each partition variable replaced by
its label-invariant summaries (``{z}_n_clusters``, ``{z}_largest_cluster_frac``,
``{z}_entropy``), handing PyMC a view of the model (a ``SimpleNamespace`` with
``free_RVs`` and ``deterministics``); before them, our steps' own checks of the
finished run (ARM chains that never had background information,
:func:`pymc_partitions.step_methods.arm.warn_chains_without_background`), in the main
process whatever ``cores``. PyMC has no hook to choose the checked variables, nor one
that runs after sampling.

Relies on: the wrapped function reading only ``model.free_RVs`` and
``model.deterministics``; ``_sample_return`` calling it by the module-level name.
"""

from types import SimpleNamespace

from pymc_partitions.distributions.model_terms import partition_rvs
from pymc_partitions.hooks._hook import Hook
from pymc_partitions.step_methods.arm import warn_chains_without_background


def _wrapper(original):
    def run_convergence_checks(idata, model):
        """PyMC's convergence checks with each partition variable replaced by its
        label-invariant summaries; models without partitions go through PyMC's function
        unchanged (:mod:`pymc_partitions.hooks.convergence_checks`)."""
        partitions = partition_rvs(model)
        if not partitions:
            return original(idata, model)
        warn_chains_without_background(idata, model)
        names = {rv.name for rv in partitions}
        summaries = [
            det
            for det in model.deterministics
            if any(det.name.startswith(f"{p}_") for p in names)
        ]
        kept = [rv for rv in model.free_RVs if rv.name not in names] + summaries
        view = SimpleNamespace(free_RVs=kept, deterministics=model.deterministics)
        return original(idata, view)

    return run_convergence_checks


HOOK = Hook(
    name="convergence_checks",
    why=(
        "R-hat/ESS on raw partition labels are false alarms (label switching); the "
        "wrapper hands PyMC's checks a model view whose free_RVs are the other free "
        "variables plus the label-invariant summaries; before them our steps' own "
        "checks of the finished run (ARM chains without background information). "
        "Re-check that the wrapped function reads only model.free_RVs and "
        "model.deterministics, and that _sample_return calls it by the module-level "
        "name after sampling."
    ),
    without=(
        "pm.sample's R-hat/ESS checks read the raw partition labels (false alarms from "
        "label switching: check the {z}_n_clusters / {z}_entropy summaries with "
        "az.summary instead), and ARM chains that never had background information are "
        "not reported."
    ),
    wrap=_wrapper,
    targets=("pymc.sampling.mcmc:run_convergence_checks",),
    relies_on=(
        "pymc.stats.convergence:run_convergence_checks",
        "pymc.sampling.mcmc:_sample_return",
    ),
    fingerprints={
        "5.28": {
            "pymc.stats.convergence:run_convergence_checks": (
                "(idata, model)", "33f326d08dfabeb3"),
            "pymc.sampling.mcmc:_sample_return": "44573f06c6a755aa",
        },
        "6.4": {
            "pymc.stats.convergence:run_convergence_checks": (
                "(idata, model)", "ebdbb7d4c93ab61b"),
            "pymc.sampling.mcmc:_sample_return": "636bbc93162fee48",
        },
    },
)
