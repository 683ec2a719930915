"""Every change the plugin makes to PyMC or PyTensor: one module per hook.

Installed once, by the package ``__init__`` when the PyMC-facing API loads (the first
public name, ``pmp.CRP``, or the first partition variable of a model); nothing else
in the package imports this package (an import-linter contract in ``pyproject.toml``),
so the layers work the same without any hook.

==================================  =========================================  =========
module                              what changes                               public?
==================================  =========================================  =========
:mod:`.numba_block_statistics`      native numba code for the statistics ops   yes
                                    (PyTensor's documented numba dispatcher)
:mod:`.step_registry`               our steps appended to                      yes
                                    ``pymc.step_methods.STEP_METHODS``
:mod:`.convergence_checks`          R-hat/ESS on label-invariant summaries,    no
                                    not raw partition labels
:mod:`.initval_checks`              partition ``initvals`` checked before      no
                                    PyMC builds starting points
:mod:`.object_mode_warnings`        PyTensor's object-mode notice silenced     no
                                    for our ops
:mod:`.step_assignment_checks`      a partition refused to a non-partition     no
                                    step; the model visible to ``competence``
:mod:`.log_likelihood`              pointwise leave-one-out terms for          no
                                    collapsed likelihoods
:mod:`.sample_checks`               ``pm.sample`` argument checks before the   no
                                    first draw
:mod:`.gradient_logp`               unevaluable terms left out of a gradient   no
                                    step's log density
:mod:`.population_worker_errors`    population workers' exceptions raised in   no
                                    the main process
==================================  =========================================  =========

Each module's docstring says what it wraps, why no public extension point does it,
and what it relies on; its :class:`~._hook.Hook` record (``HOOK``) holds the
fingerprints of those functions per reviewed version. :func:`install` checks them
first: on an unrecorded version or a changed function the hook is not installed and a
:class:`~._hook.HookNotInstalledWarning` names the version, the hook and what the user
loses without it.

**Adding a hook** is one module with a ``HOOK = Hook(...)`` (see
:class:`~._hook.Hook`), listed in :data:`HOOKS`. A wrapper gives ``wrap=`` (``original
-> replacement``) and ``targets=`` (every "module:attribute" name PyMC calls it by, the
first giving the original); another change gives ``install=``. Then run
``python -m pymc_partitions.hooks`` on each supported stack and paste what it prints
into the module's ``fingerprints``; ``tests/test_compat.py`` picks the hook up by
itself. A wrapper gets ``__wrapped__`` (PyMC's function) and ``__pmp_patch__`` (the
hook's name); installing twice wraps once.
"""

from pymc_partitions.hooks import (
    convergence_checks,
    gradient_logp,
    initval_checks,
    log_likelihood,
    numba_block_statistics,
    object_mode_warnings,
    population_worker_errors,
    sample_checks,
    step_assignment_checks,
    step_registry,
)
from pymc_partitions.hooks._hook import (
    Hook,
    HookNotInstalledWarning,
    fingerprint_lines,
)
from pymc_partitions.hooks._hook import install as _install_one

#: Every hook, in installation order.
HOOKS = [
    numba_block_statistics.HOOK,
    step_registry.HOOK,
    convergence_checks.HOOK,
    initval_checks.HOOK,
    object_mode_warnings.HOOK,
    step_assignment_checks.HOOK,
    log_likelihood.HOOK,
    sample_checks.HOOK,
    gradient_logp.HOOK,
    population_worker_errors.HOOK,
]

#: ``{hook name: installed?}`` after :func:`install` (a name not there was not tried).
STATUS = {}

__all__ = ["HOOKS", "STATUS", "Hook", "HookNotInstalledWarning", "install",
           "installed", "print_fingerprints"]


def install(names=None):
    """Install the hooks (all, or those named) whose fingerprints match the running
    versions; warn for the others (:class:`HookNotInstalledWarning`). Idempotent.
    Returns :data:`STATUS`."""
    unknown = set(names or ()) - {hook.name for hook in HOOKS}
    if unknown:
        raise ValueError(f"names: no hook called {sorted(unknown)}; the hooks are "
                         f"{[hook.name for hook in HOOKS]}")
    for hook in HOOKS:
        if names is None or hook.name in names:
            STATUS[hook.name] = _install_one(hook)
    return STATUS


def installed():
    """The names of the hooks that are installed."""
    return [name for name, ok in STATUS.items() if ok]


def print_fingerprints():
    """Print each fingerprinted hook's fingerprints for the running versions, ready to
    paste into its module's ``HOOK``: ``(signature, source hash)`` for the patched
    function (the first of ``relies_on``), the source hash for the others."""
    for hook in HOOKS:
        if not hook.public:
            print("\n".join(fingerprint_lines(hook)))
