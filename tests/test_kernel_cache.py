"""The kernels' numba cache is dropped when anything the kernels depend on changes:
a kernel source, a module of the package they import (followed transitively), or
the versions of numba and NumPy; and an edit outside ``kernels/`` reaches the
compiled code of a fresh process."""

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pymc_partitions
from pymc_partitions.kernels import _jit
from pymc_partitions.kernels._jit import drop_stale_cache, kernel_fingerprint, kernel_sources

TAG = _jit._TAG  # numba's interpreter tag in cache file names, e.g. "py312"


def test_cache_dropped_only_when_a_source_changes(tmp_path):
    (tmp_path / "components").mkdir()
    source = tmp_path / "components" / "normal.py"
    source.write_text("x = 1\n")
    (tmp_path / "gibbs.py").write_text("y = 2\n")
    cache = tmp_path / "__pycache__"
    cache.mkdir()
    (cache / f"gibbs.run_sweeps-1.{TAG}.nbi").write_text("index")

    assert drop_stale_cache(tmp_path)  # no fingerprint yet: cache dropped
    assert not (cache / f"gibbs.run_sweeps-1.{TAG}.nbi").exists()

    (cache / f"gibbs.run_sweeps-1.{TAG}.nbi").write_text("index")
    (cache / f"gibbs.run_sweeps-1.{TAG}.1.nbc").write_text("code")
    (cache / "gibbs.run_sweeps-1.py39.nbi").write_text("another Python's index")
    assert not drop_stale_cache(tmp_path)  # unchanged sources: cache kept
    assert (cache / f"gibbs.run_sweeps-1.{TAG}.1.nbc").exists()

    source.write_text("x = 3\n")  # a component edited: the inlined code is stale
    assert drop_stale_cache(tmp_path)
    assert not list(cache.glob(f"*.{TAG}.*nb?"))
    # Another interpreter's files are its own fingerprint's business.
    assert (cache / "gibbs.run_sweeps-1.py39.nbi").exists()


def _package(tmp_path):
    """A package ``pymc_partitions`` with kernels/ whose move imports a module
    outside kernels/ (relative import), which imports another (absolute)."""
    pkg = tmp_path / "pymc_partitions"
    (pkg / "kernels").mkdir(parents=True)
    (pkg / "support").mkdir()
    (pkg / "__init__.py").write_text("from pymc_partitions import unrelated\n")
    (pkg / "unrelated.py").write_text("z = 0\n")
    (pkg / "kernels" / "__init__.py").write_text("")
    (pkg / "kernels" / "move.py").write_text(
        '"""A move."""\n\nfrom ..support import (\n    constants as c,  # inlined\n)\n'
    )
    (pkg / "support" / "__init__.py").write_text("")
    (pkg / "support" / "constants.py").write_text("import pymc_partitions.deep\n\nK = 1\n")
    (pkg / "deep.py").write_text("D = 1\n")
    return pkg


def test_sources_follow_the_kernels_imports_out_of_kernels(tmp_path):
    pkg = _package(tmp_path)
    sources = {p.relative_to(pkg).as_posix() for p in kernel_sources(pkg / "kernels")}
    assert sources == {
        "kernels/__init__.py", "kernels/move.py", "support/__init__.py",
        "support/constants.py", "deep.py",
    }
    # The real kernels: every file under kernels/ and what they import. Today
    # nothing outside kernels/ is imported.
    real = Path(pymc_partitions.__file__).parent / "kernels"
    assert set(kernel_sources(real)) == set(real.rglob("*.py"))


def test_cache_dropped_when_an_imported_module_outside_kernels_changes(tmp_path):
    """Regression: the fingerprint covered kernels/ only, so an edit to a module
    the kernels import from elsewhere in the package kept stale machine code."""
    pkg = _package(tmp_path)
    kernels = pkg / "kernels"
    assert drop_stale_cache(kernels)
    cache = kernels / "__pycache__"
    outside_cache = pkg / "support" / "__pycache__"
    outside_cache.mkdir()

    def fill():
        (cache / f"move.run-5.{TAG}.nbi").write_text("index")
        (outside_cache / f"constants.f-3.{TAG}.nbi").write_text("index")

    fill()
    (pkg / "unrelated.py").write_text("z = 1\n")  # not imported by any kernel
    assert not drop_stale_cache(kernels)
    assert (cache / f"move.run-5.{TAG}.nbi").exists()
    for edited in ("support/constants.py", "deep.py"):
        fill()
        path = pkg / edited
        path.write_text(path.read_text() + "# edited\n")
        assert drop_stale_cache(kernels), edited
        assert not list(cache.glob("*.nbi")) and not list(outside_cache.glob("*.nbi")), edited


def test_fingerprint_includes_numba_and_numpy_versions(tmp_path, monkeypatch):
    """numba keys its cache on its own version but not on NumPy's."""
    pkg = _package(tmp_path)
    before = kernel_fingerprint(pkg / "kernels")
    monkeypatch.setattr(np, "__version__", np.__version__ + ".post1")
    assert kernel_fingerprint(pkg / "kernels") != before


PROBE_KERNEL = '''"""A tiny kernel (test of the cache) inlining a primitive from outside kernels/."""

from pymc_partitions._probe_value import probe_value
from pymc_partitions.kernels._jit import entry


@entry
def probe():
    return probe_value()
'''

PROBE_VALUE = '''from pymc_partitions.kernels._jit import primitive


@primitive
def probe_value():
    return {}
'''


@pytest.mark.parametrize("cache_dir", ["in-tree", "NUMBA_CACHE_DIR"])
def test_edit_outside_kernels_reaches_a_fresh_process(tmp_path, cache_dir):
    """End to end in a copy of the package: a cached kernel inlines a primitive
    from a module outside kernels/; after that module is edited, a new process
    runs the new code (before the fix: the old machine code, from the cache).
    The copy's top-level __init__ is emptied so the subprocesses skip importing
    PyMC; the kernels do not depend on it. Both places numba caches in: beside the
    sources, and under ``NUMBA_CACHE_DIR`` (CI sets it)."""
    src = Path(pymc_partitions.__file__).parent
    pkg = tmp_path / "pymc_partitions"
    shutil.copytree(src, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    (pkg / "__init__.py").write_text("")
    (pkg / "kernels" / "_probe.py").write_text(PROBE_KERNEL)
    (pkg / "_probe_value.py").write_text(PROBE_VALUE.format(1))
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    env.pop("NUMBA_CACHE_DIR", None)
    if cache_dir == "NUMBA_CACHE_DIR":
        env["NUMBA_CACHE_DIR"] = str(tmp_path / "numba-cache")

    def run():
        out = subprocess.run(
            [sys.executable, "-c",
             "from pymc_partitions.kernels._probe import probe; print(probe())"],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
        )
        assert out.returncode == 0, out.stderr
        return int(out.stdout.split()[-1])

    assert run() == 1
    kernels = pkg / "kernels"
    cached_in = (kernels / "__pycache__" if cache_dir == "in-tree" else
                 tmp_path / "numba-cache" / f"kernels_{hashlib.sha1(str(kernels).encode()).hexdigest()}")
    assert list(cached_in.glob(f"_probe.probe-*.{TAG}.nbi"))
    assert run() == 1  # unchanged: served from the cache
    (pkg / "_probe_value.py").write_text(PROBE_VALUE.format(2))
    assert run() == 2
