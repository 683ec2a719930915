"""Hook ``gradient_logp``: a gradient step's log density leaves out an observed term
whose log density cannot be evaluated and that does not depend on the step's variables.

Wraps ``Model.logp_dlogp_function`` (defined on ``pymc.model.core.BaseModel`` in PyMC 6,
``Model`` in PyMC 5; replaced on that class). When
:func:`pymc_partitions.distributions.model_terms.unavailable_logp_terms` finds such terms
(an op's ``logp_unavailable``: a GeneralizedMallows over more than 7 items, a sum over
n! permutations), PyMC's function is called with ``self.logp`` shadowed, for that call
only, by one that sums every other basic random variable *and every* ``pm.Potential``
(``Model.logp`` adds the potentials only when ``vars is None``), with a warning.
Leaving the term out changes no acceptance: it is constant along the step's
trajectories.

Why: NUTS on the CRP concentration of such a model failed, PyMC compiling the whole
model's log density; its gradient steps have no hook to leave a term out.

Relies on: ``logp_dlogp_function`` building its cost from ``self.logp()`` (untempered;
in PyMC 6 inside ``_logp_dlogp_function``, which it calls); gradient steps obtaining
their function through it (``GradientSharedStep.__init__``).
"""

import warnings

from pymc_partitions.distributions.model_terms import unavailable_logp_terms
from pymc_partitions.hooks._hook import Hook


def _model_class():
    """The class defining ``logp_dlogp_function``: ``BaseModel`` (PyMC 6), ``Model`` (PyMC 5)."""
    from pymc.model import core

    return getattr(core, "BaseModel", core.Model)


def _wrapper(original):
    def logp_dlogp_function(self, grad_vars=None, tempered=False, *args, **kwargs):
        """PyMC's function; terms whose log density cannot be evaluated and that do not
        depend on ``grad_vars`` are left out (:mod:`pymc_partitions.hooks.gradient_logp`)."""
        dropped = [] if tempered else unavailable_logp_terms(self, grad_vars)
        if not dropped:
            return original(self, grad_vars, tempered, *args, **kwargs)
        # Model.logp adds the potentials only when vars is None: name them, or every
        # pm.Potential would be dropped with the unavailable terms.
        keep = [rv for rv in self.basic_RVs if not any(rv is d for d, _ in dropped)]
        keep += list(self.potentials)
        moved = [self.values_to_rvs.get(v, v).name
                 for v in (grad_vars or self.continuous_value_vars)]
        warnings.warn(
            f"pymc_partitions: the gradient step on {moved} uses the model's log density "
            f"without {[d.name for d, _ in dropped]} ({'; '.join(r for _, r in dropped)}). "
            f"Those terms do not depend on the variables it moves, so its draws are those of "
            f"the full model; its 'lp' and 'energy' statistics leave them out.",
            UserWarning,
            stacklevel=3,
        )
        full_logp = self.logp

        def logp(vars=None, jacobian=True, sum=True):
            return full_logp(vars=keep if vars is None else vars, jacobian=jacobian, sum=sum)

        self.__dict__["logp"] = logp  # shadows the method for this call only
        try:
            return original(self, grad_vars, tempered, *args, **kwargs)
        finally:
            del self.__dict__["logp"]

    return logp_dlogp_function


def _install():
    cls = _model_class()
    current = cls.logp_dlogp_function
    if getattr(current, "__pmp_patch__", None) == "gradient_logp":
        return
    replacement = _wrapper(current)
    replacement.__wrapped__ = current
    replacement.__pmp_patch__ = "gradient_logp"
    cls.logp_dlogp_function = replacement


HOOK = Hook(
    name="gradient_logp",
    why=(
        "NUTS on the CRP concentration of a GeneralizedMallows model with n > 7 items "
        "failed: PyMC compiles the whole model's log density, whose GM term (a sum over "
        "n! permutations) cannot be evaluated, though it does not depend on the "
        "concentration. The wrapper leaves such terms out of a gradient step's log "
        "density (keeping every pm.Potential). Re-check that logp_dlogp_function builds "
        "its cost from self.logp() (untempered; in PyMC 6 inside _logp_dlogp_function, "
        "which it calls) and that gradient steps obtain their function through it."
    ),
    without=(
        "NUTS (any gradient step) cannot sample the continuous variables of a model with a "
        "GeneralizedMallows likelihood over more than 7 items: give them pmp.HyperSlice "
        "(or pmp.EscobarWest for a CRP concentration)."
    ),
    install=_install,
    relies_on=(
        "pymc.model.core:Model.logp_dlogp_function",
        "pymc.step_methods.arraystep:GradientSharedStep.__init__",
    ),
    fingerprints={
        "5.28": {
            "pymc.model.core:Model.logp_dlogp_function": (
                ("(self, grad_vars=None, tempered=False, initial_point=None, "
                 "ravel_inputs=None, **kwargs)"), "1462489ac7a23b99"),
            "pymc.step_methods.arraystep:GradientSharedStep.__init__": "0654e4c3e103b133",
        },
        "6.4": {
            "pymc.model.core:Model.logp_dlogp_function": (
                ("(self, grad_vars=None, tempered=False, initial_point=None, "
                 "ravel_inputs=None, **kwargs)"), "a2ff79e2dc4e112f"),
            "pymc.step_methods.arraystep:GradientSharedStep.__init__": "0654e4c3e103b133",
        },
    },
)
