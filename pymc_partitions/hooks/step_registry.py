"""Hook ``step_registry``: our step classes appended to ``pymc.step_methods.STEP_METHODS``.

What it changes: PyMC's list of step classes that ``pm.sample`` asks for their
``competence`` when it assigns steps to the free variables, so a partition variable
gets :class:`pmp.Gibbs <pymc_partitions.step_methods.gibbs.Gibbs>` (or
``pmp.MallowsGibbs``) and a CRP concentration ``pmp.EscobarWest`` / ``pmp.HyperSlice``.

Why here: it is PyMC's documented registration (public: no fingerprints, tested by
behaviour), but like every other change to PyMC's state it is made once, when the
package's API loads, by the package ``__init__`` (:mod:`pymc_partitions.hooks`), so
that every such change is found in one place. The list is appended to, never rebound:
PyMC holds references to the list object.
"""

from pymc_partitions.hooks._hook import Hook


def register_step_methods(classes):
    """Append step classes to PyMC's registry (append, never rebind)."""
    import pymc

    registry = pymc.step_methods.STEP_METHODS
    for cls in classes:
        if cls not in registry:
            registry.append(cls)


def _register_our_steps():
    from pymc_partitions.step_methods import EscobarWest, Gibbs, HyperSlice, MallowsGibbs

    # EscobarWest before HyperSlice: both are IDEAL for a CRP concentration with a
    # Gamma prior, and PyMC keeps the first of equally competent steps. MallowsGibbs
    # is IDEAL exactly for a partition observed by a GeneralizedMallows, where Gibbs
    # declares itself INCOMPATIBLE.
    register_step_methods([Gibbs, MallowsGibbs, EscobarWest, HyperSlice])


HOOK = Hook(
    name="step_registry",
    why="pm.sample assigns partition variables to pmp.Gibbs (DESIGN §4).",
    without=(
        "pm.sample does not assign pmp.Gibbs / pmp.MallowsGibbs / pmp.EscobarWest / "
        "pmp.HyperSlice by itself: pass step=[pmp.Gibbs([z]), ...]."
    ),
    install=_register_our_steps,
    public=True,
)
