"""What importing the package costs: the kernels without PyMC, the PyMC-facing API
(and the hooks: PyMC's step registry and the other changes) on first use
(``pymc_partitions/__init__.py``); the worker side of the unbiased runners without PyMC
(``unbiased/worker.py``, the lazy ``step_methods`` and ``unbiased`` packages); and the
import contracts of ``pyproject.toml`` (layers, no cycles, kernels without PyMC, hooks
imported by the package ``__init__`` only), checked by import-linter's ``lint-imports``."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]  # the repository: pyproject.toml, pymc_partitions/


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


@pytest.mark.parametrize("module", ["pymc_partitions.unbiased.worker",
                                    "pymc_partitions.unbiased",
                                    "pymc_partitions.unbiased.executors",
                                    "pymc_partitions.step_methods.coupled_pair",
                                    "pymc_partitions.step_methods.chain_state",
                                    "pymc_partitions.arguments"])
def test_worker_side_imports_without_pymc(module):
    """What a worker process of ``coupled_estimates`` / ``naive_estimates`` imports to
    unpickle its task (tests/test_coupled_estimates.py runs one)."""
    loaded = _run(f"import sys, {module}; "
                  f"print(*[m for m in {HEAVY!r} if m in sys.modules] or ['none'])")
    assert loaded == ["none"]


def test_lazy_packages_keep_their_names():
    """``step_methods`` and ``unbiased`` import their PyMC-facing modules on first use;
    every public name is reachable as before (attribute, ``from ... import``, ``*``),
    and ``pmp.unbiased.aggregate`` is still the function, not its module."""
    out = _run(
        "import sys, pymc_partitions as pmp\n"
        "from pymc_partitions import step_methods, unbiased\n"
        "from pymc_partitions.step_methods import Gibbs, PartitionTarget\n"
        "from pymc_partitions.unbiased import coupled_estimates, executors\n"
        "from pymc_partitions.unbiased.runner import FrozenTarget, run_pair\n"
        "from pymc_partitions.distributions.validation import integer_arg\n"
        "import pymc_partitions.arguments as arguments\n"
        "ns = {}\n"
        "exec('from pymc_partitions.step_methods import *', ns)\n"
        "exec('from pymc_partitions.unbiased import *', ns)\n"
        "print(all(n in ns for n in step_methods.__all__ + unbiased.__all__),\n"
        "      all(n in dir(step_methods) for n in step_methods.__all__),\n"
        "      pmp.step_methods.Gibbs is Gibbs is pmp.Gibbs,\n"
        "      pmp.unbiased.coupled_estimates is coupled_estimates is pmp.coupled_estimates,\n"
        "      callable(pmp.unbiased.aggregate), executors.__name__,\n"
        "      pmp.step_methods.gibbs.__name__, FrozenTarget.__module__, run_pair.__module__,\n"
        "      integer_arg is arguments.integer_arg,\n"
        "      step_methods.ImpossibleConditionalError.__module__)"
    )
    assert out == ["True", "True", "True", "True", "True", "pymc_partitions.unbiased.executors",
                   "pymc_partitions.step_methods.gibbs", "pymc_partitions.unbiased.worker",
                   "pymc_partitions.unbiased.worker", "True", "pymc_partitions.kernels.errors"]


@pytest.mark.parametrize("module", ["pymc_partitions.step_methods", "pymc_partitions.unbiased"])
def test_lazy_package_unknown_name_is_an_attribute_error(module):
    import importlib

    with pytest.raises(AttributeError, match="no attribute 'NoSuchThing'"):
        importlib.import_module(module).NoSuchThing  # noqa: B018


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
    """Regression: ``from pymc_partitions import compat`` (now ``versions``) inside a
    submodule imported first (``examples/benchmark_pbc.py`` imports the PBC step module
    directly) went to
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


def _lint_imports(cwd, pythonpath):
    """Run ``lint-imports`` (import-linter, in the ``test`` extra) from ``cwd`` on its
    ``pyproject.toml``, analysing the package found on ``pythonpath``."""
    exe = Path(sys.executable).with_name("lint-imports")
    if not exe.exists():
        exe = shutil.which("lint-imports")
    assert exe is not None, (
        "lint-imports not found beside this Python: pip install import-linter "
        "(it is in the package's test extra: pip install '.[test]')")
    env = {k: v for k, v in __import__("os").environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run([str(exe), "--no-cache", "--no-logo"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_import_contracts_are_kept():
    """``lint-imports`` on the repository's contracts (``[tool.importlinter]`` in
    ``pyproject.toml``): exit 0, every contract KEPT."""
    out = _lint_imports(ROOT, ROOT)
    assert out.returncode == 0, f"lint-imports failed:\n{out.stdout}\n{out.stderr}"
    assert "0 broken" in out.stdout, out.stdout


def test_import_contracts_fail_when_violated(tmp_path):
    """Negative control: the same contracts on a copy of the package into which one
    import per contract is written break every contract, each naming the import."""
    shutil.copytree(ROOT / "pymc_partitions", tmp_path / "pymc_partitions",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    pkg = tmp_path / "pymc_partitions"
    injected = {
        # a layer importing one above it (and so a cycle between the two packages)
        "distributions/model_terms.py": "import pymc_partitions.step_methods.base\n",
        # a kernel importing PyTensor
        "kernels/errors.py": "import pytensor\n",
        # a layer importing a hook
        "analysis/distances.py": "import pymc_partitions.hooks.step_registry\n",
        # a cycle inside step_methods (gibbs imports base)
        "step_methods/base.py": "import pymc_partitions.step_methods.gibbs\n",
    }
    for path, line in injected.items():
        text = (pkg / path).read_text()
        (pkg / path).write_text(text + "\n" + line)
    out = _lint_imports(tmp_path, tmp_path)
    assert out.returncode != 0, out.stdout
    text = " ".join(out.stdout.split())
    for name in ("Layers: each imports only those below it (so no cycle between them)",
                 "The kernels import neither PyMC nor PyTensor (numba and NumPy only)",
                 "Nothing imports the hooks but the package __init__",
                 "No import cycle between the modules of any package"):
        assert f"{name} BROKEN" in text, text
    for culprit in ("pymc_partitions.distributions.model_terms -> "
                    "pymc_partitions.step_methods.base",
                    "pymc_partitions.kernels.errors -> pytensor",
                    "pymc_partitions.analysis.distances -> pymc_partitions.hooks.step_registry",
                    "No cycles are allowed in pymc_partitions.step_methods"):
        assert culprit in text, (culprit, text)
