"""What importing the package costs: the kernels without PyMC, the PyMC-facing API
(and PyMC's step registry and patches) on first use (``pymc_partitions/__init__.py``)."""

import subprocess
import sys

import pytest


def _run(code):
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


HEAVY = ("pymc", "pytensor", "arviz", "xarray")


@pytest.mark.parametrize("statement", ["import pymc_partitions.kernels",
                                       "import pymc_partitions"])
def test_kernels_import_without_pymc(statement):
    loaded = _run(f"import sys; {statement}; "
                  f"print(*[m for m in {HEAVY!r} if m in sys.modules] or ['none'])")
    assert loaded == ["none"]


def test_first_public_name_loads_the_api_and_registers_the_steps():
    out = _run(
        "import sys, pymc_partitions as pmp\n"
        "before = 'pymc' in sys.modules\n"
        "crp = pmp.CRP\n"
        "import pymc\n"
        "print(before, pmp.Gibbs in pymc.step_methods.STEP_METHODS, "
        "'CRP' in dir(pmp), pmp.datasets.__name__)"
    )
    assert out == ["False", "True", "True", "pymc_partitions.datasets"]


def test_a_model_built_from_submodules_registers_the_steps():
    """``from pymc_partitions.distributions import CRP`` never touches ``pmp.<name>``: the
    partition variable itself loads the API, so ``pm.sample`` finds our steps."""
    out = _run(
        "import pymc as pm\n"
        "from pymc_partitions.distributions import CRP\n"
        "from pymc_partitions.step_methods import Gibbs\n"
        "registered = Gibbs in pm.step_methods.STEP_METHODS\n"
        "with pm.Model():\n"
        "    CRP('z', alpha=1.0, n=3)\n"
        "print(registered, Gibbs in pm.step_methods.STEP_METHODS)"
    )
    assert out == ["False", "True"]


@pytest.mark.parametrize("module", ["pymc_partitions.step_methods.pbc",
                                    "pymc_partitions.step_methods",
                                    "pymc_partitions.unbiased.runner",
                                    "pymc_partitions.analysis"])
def test_a_submodule_imports_first(module):
    """Regression: ``from pymc_partitions import compat`` inside a submodule imported
    first (``examples/benchmark_pbc.py`` imports the PBC step module directly) went to
    the package's ``__getattr__``, which loaded the whole API from the middle of that
    import: a circular ImportError."""
    assert _run(f"import {module}; print('ok')") == ["ok"]


def test_a_subpackage_is_an_attribute():
    """``pmp.distributions`` without any import of it first (tests and users do it)."""
    assert _run("import pymc_partitions as pmp; print(pmp.distributions.__name__)") == [
        "pymc_partitions.distributions"]


def test_unknown_name_is_an_attribute_error():
    import pymc_partitions as pmp

    with pytest.raises(AttributeError, match="no attribute 'NoSuchThing'"):
        pmp.NoSuchThing  # noqa: B018
