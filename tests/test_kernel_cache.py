"""The kernels' numba cache is dropped per module: a module's cache files go when
anything its compiled code can contain changes (a module it imports, followed
transitively, an implementation registered for the generic primitives it calls) or
the versions of numba and NumPy; an edit elsewhere keeps them. An edit outside
``kernels/`` reaches the compiled code of a fresh process, and a Gibbs sweep stays
cached across an edit of a module it does not use."""

import hashlib
import importlib
import inspect
import json
import os
import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pymc_partitions
from pymc_partitions.kernels import _jit
from pymc_partitions.kernels._jit import (
    drop_stale_cache,
    kernel_sources,
    module_dependencies,
    module_fingerprints,
)

TAG = _jit._TAG  # numba's interpreter tag in cache file names, e.g. "py312"


def test_cache_dropped_only_when_a_source_changes(tmp_path):
    """Per module: an edit drops the cache files of the modules importing the edited
    one (and its own), not those of a module that does not."""
    (tmp_path / "components").mkdir()
    source = tmp_path / "components" / "normal.py"
    source.write_text("x = 1\n")
    (tmp_path / "gibbs.py").write_text("from .components import normal\n\ny = 2\n")
    (tmp_path / "mallows.py").write_text("w = 3\n")
    cache = tmp_path / "__pycache__"
    cache.mkdir()
    (cache / f"gibbs.run_sweeps-1.{TAG}.nbi").write_text("index")
    modules = {f"{tmp_path.name}/{m}" for m in ("gibbs.py", "mallows.py", "components/normal.py")}

    assert set(drop_stale_cache(tmp_path)) == modules  # no fingerprints yet: all dropped
    assert not (cache / f"gibbs.run_sweeps-1.{TAG}.nbi").exists()

    def fill():
        for stem in ("gibbs.run_sweeps", "mallows.run"):
            (cache / f"{stem}-1.{TAG}.nbi").write_text("index")
            (cache / f"{stem}-1.{TAG}.1.nbc").write_text("code")

    fill()
    (cache / "gibbs.run_sweeps-1.py39.nbi").write_text("another Python's index")
    assert drop_stale_cache(tmp_path) == []  # unchanged sources: cache kept
    assert (cache / f"gibbs.run_sweeps-1.{TAG}.1.nbc").exists()

    (tmp_path / "mallows.py").write_text("w = 4\n")  # gibbs does not import it
    assert drop_stale_cache(tmp_path) == [f"{tmp_path.name}/mallows.py"]
    assert not list(cache.glob(f"mallows.*.{TAG}.*nb?"))
    assert (cache / f"gibbs.run_sweeps-1.{TAG}.nbi").exists()
    assert (cache / f"gibbs.run_sweeps-1.{TAG}.1.nbc").exists()

    fill()
    source.write_text("x = 3\n")  # a component edited: gibbs' inlined code is stale
    assert set(drop_stale_cache(tmp_path)) == modules - {f"{tmp_path.name}/mallows.py"}
    assert not list(cache.glob(f"gibbs.*.{TAG}.*nb?"))
    assert (cache / f"mallows.run-1.{TAG}.1.nbc").exists()
    # Another interpreter's files are its own fingerprints' business.
    assert (cache / "gibbs.run_sweeps-1.py39.nbi").exists()


def _package(tmp_path):
    """A package ``pymc_partitions`` with kernels/ whose move imports a module
    outside kernels/ (relative import), which imports another (absolute), and a
    second move that imports neither."""
    pkg = tmp_path / "pymc_partitions"
    (pkg / "kernels").mkdir(parents=True)
    (pkg / "support").mkdir()
    (pkg / "__init__.py").write_text("from pymc_partitions import unrelated\n")
    (pkg / "unrelated.py").write_text("z = 0\n")
    (pkg / "kernels" / "__init__.py").write_text("")
    (pkg / "kernels" / "move.py").write_text(
        '"""A move."""\n\nfrom ..support import (  # a comment first\n'
        '    constants as c,  # inlined\n)\n'
    )
    (pkg / "kernels" / "other.py").write_text("from pymc_partitions.kernels.move2 import V\n")
    (pkg / "kernels" / "move2.py").write_text("V = 2\n")
    (pkg / "support" / "__init__.py").write_text("")
    (pkg / "support" / "constants.py").write_text("import pymc_partitions.deep\n\nK = 1\n")
    (pkg / "deep.py").write_text("D = 1\n")
    return pkg


def test_sources_follow_the_kernels_imports_out_of_kernels(tmp_path):
    pkg = _package(tmp_path)
    sources = {p.relative_to(pkg).as_posix() for p in kernel_sources(pkg / "kernels")}
    assert sources == {
        "kernels/__init__.py", "kernels/move.py", "kernels/other.py", "kernels/move2.py",
        "support/__init__.py", "support/constants.py", "deep.py",
    }
    # The real kernels: every file under kernels/ and what they import. Today
    # nothing outside kernels/ is imported.
    real = Path(pymc_partitions.__file__).parent / "kernels"
    assert set(kernel_sources(real)) == set(real.rglob("*.py"))


def test_cache_dropped_when_an_imported_module_outside_kernels_changes(tmp_path):
    """Regression: the fingerprint covered kernels/ only, so an edit to a module
    the kernels import from elsewhere in the package kept stale machine code. Now
    per module: the edit drops the cache of the modules importing it (directly or
    not), here kernels/move.py and support/constants.py, not kernels/other.py's."""
    pkg = _package(tmp_path)
    kernels = pkg / "kernels"
    assert drop_stale_cache(kernels)
    cache = kernels / "__pycache__"
    cache.mkdir(exist_ok=True)  # (the stamp is there unless NUMBA_CACHE_DIR is set)
    outside_cache = pkg / "support" / "__pycache__"
    outside_cache.mkdir()

    def fill():
        (cache / f"move.run-5.{TAG}.nbi").write_text("index")
        (cache / f"other.run-1.{TAG}.nbi").write_text("index")
        (cache / f"__init__.f-1.{TAG}.nbi").write_text("index")  # numba's name for __init__
        (outside_cache / f"constants.f-3.{TAG}.nbi").write_text("index")

    fill()
    (pkg / "unrelated.py").write_text("z = 1\n")  # not imported by any kernel
    assert drop_stale_cache(kernels) == []
    assert (cache / f"move.run-5.{TAG}.nbi").exists()
    for edited in ("support/constants.py", "deep.py"):
        fill()
        path = pkg / edited
        path.write_text(path.read_text() + "# edited\n")
        stale = drop_stale_cache(kernels)
        assert {"kernels/move.py", "support/constants.py", edited} == set(stale), edited
        assert not list(outside_cache.glob("*.nbi")), edited
        assert sorted(p.name for p in cache.glob("*.nbi")) == [
            f"__init__.f-1.{TAG}.nbi", f"other.run-1.{TAG}.nbi"], edited
    (kernels / "__init__.py").write_text("# edited\n")
    assert drop_stale_cache(kernels) == ["kernels/__init__.py"]
    assert not (cache / f"__init__.f-1.{TAG}.nbi").exists()
    assert (cache / f"other.run-1.{TAG}.nbi").exists()
    (kernels / "move2.py").write_text("V = 3\n")
    assert drop_stale_cache(kernels) == ["kernels/move2.py", "kernels/other.py"]
    assert not (cache / f"other.run-1.{TAG}.nbi").exists()


HUB = '''"""Generic primitive dispatched from a registry, like components/base.py."""

from numba.extending import overload

_REGISTRY = {}


def register(cls, fn):
    _REGISTRY[cls] = fn


def f(params):
    return _REGISTRY[type(params)](params)


@overload(f)
def _ol_f(params):
    return _REGISTRY.get(params.instance_class)
'''


def test_a_registered_implementation_is_a_dependency_of_the_dispatching_move(tmp_path):
    """A module that registers an implementation with a dispatch hub (a module
    defining a numba ``overload``) is a dependency of every module reaching the hub,
    though none of them imports it (loo.py's empty component, for the moves)."""
    pkg = _package(tmp_path)
    kernels = pkg / "kernels"
    (kernels / "base.py").write_text(HUB)
    (kernels / "sweep.py").write_text("from pymc_partitions.kernels.base import f\n")
    (kernels / "wrapper.py").write_text(
        "from pymc_partitions.kernels import base\n\nbase.register(int, abs)\n"
    )
    (kernels / "user.py").write_text("from pymc_partitions.kernels import base  # calls f only\n")
    deps = {m.name: {p.name for p in d} for m, d in module_dependencies(kernels).items()}
    # (``from pymc_partitions.kernels import base`` imports kernels/__init__.py too.)
    assert deps["sweep.py"] == {"sweep.py", "base.py", "wrapper.py", "__init__.py"}
    assert deps["user.py"] == {"user.py", "base.py", "wrapper.py", "__init__.py"}
    assert deps["wrapper.py"] == {"wrapper.py", "base.py", "__init__.py"}
    assert "wrapper.py" not in deps["move.py"]

    assert drop_stale_cache(kernels)
    (kernels / "__pycache__").mkdir(exist_ok=True)
    (kernels / "__pycache__" / f"sweep.run-1.{TAG}.nbi").write_text("index")
    (kernels / "wrapper.py").write_text((kernels / "wrapper.py").read_text() + "# edited\n")
    assert drop_stale_cache(kernels) == [
        "kernels/base.py", "kernels/sweep.py", "kernels/user.py", "kernels/wrapper.py"]
    assert not (kernels / "__pycache__" / f"sweep.run-1.{TAG}.nbi").exists()


KERNELS = Path(pymc_partitions.__file__).parent / "kernels"
# Modules a Gibbs sweep's compiled code cannot contain: editing one keeps it cached.
OUTSIDE_GIBBS = ("mallows.py", "mallows_beta.py", "transport.py", "salso.py", "split_merge.py")


def test_gibbs_dependencies():
    """gibbs.py depends on every component and prior (dispatch), on loo.py (a
    registered component), not on the modules of other moves."""
    gibbs = {p.relative_to(KERNELS).as_posix() for p in module_dependencies()[KERNELS / "gibbs.py"]}
    for used in ("reassign.py", "bookkeeping.py", "components/base.py",
                 "components/normal.py", "priors/crp.py", "loo.py"):
        assert used in gibbs, used
    assert not gibbs & set(OUTSIDE_GIBBS)


def test_every_registered_implementation_is_a_dependency_of_its_callers():
    """The rule's premise on the real kernels: every implementation registered for a
    generic primitive (once all kernel modules are imported) is in the dependencies
    of every module whose dependencies hold the registry's module."""
    for info in pkgutil.walk_packages([str(KERNELS)], "pymc_partitions.kernels."):
        importlib.import_module(info.name)
    from pymc_partitions.kernels.components import base as components
    from pymc_partitions.kernels.priors import base as priors

    deps = {m: set(d) for m, d in module_dependencies().items()}
    seen = set()
    for hub in (components, priors):
        registered = {
            Path(inspect.getfile(getattr(fn, "py_func", fn))).resolve()
            for functions in hub._REGISTRY.values() for fn in functions
        }
        # Implementations registered by test modules are outside the rule.
        registered = {path for path in registered if KERNELS in path.parents}
        seen |= registered
        hub_path = Path(hub.__file__).resolve()
        callers = [m for m, d in deps.items() if hub_path in d]
        assert KERNELS / "gibbs.py" in callers
        for module in callers:
            assert registered <= deps[module], (module, registered - deps[module])
    # Registered by a module no move imports: what the import closure alone misses.
    assert KERNELS / "loo.py" in seen


def test_fingerprints_include_numba_and_numpy_versions(tmp_path, monkeypatch):
    """numba keys its cache on its own version but not on NumPy's."""
    pkg = _package(tmp_path)
    before = module_fingerprints(pkg / "kernels")
    for module, attribute in ((np, "__version__"), (_jit.numba, "__version__")):
        monkeypatch.setattr(module, attribute, getattr(module, attribute) + ".post1")
        after = module_fingerprints(pkg / "kernels")
        assert after.keys() == before.keys()
        assert all(after[m] != before[m] for m in before), attribute
        before = after


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


GIBBS_SWEEP = """
import json

import numpy as np

from pymc_partitions.kernels import assign_labels, gibbs, new_state
from pymc_partitions.kernels.components import normal
from pymc_partitions.kernels.priors import crp
from pymc_partitions.kernels.random import new_stream

n = 20
x = np.random.default_rng(0).normal(size=(n, 2))
x[: n // 2] += 4.0
params = normal.make_params(np.zeros(2), np.ones(2), np.ones(2), n=n)
stats, data, state = normal.alloc_stats(n, 2, params), normal.make_data(x), new_state(n)
assign_labels(state, params, stats, data, np.zeros(n, dtype=np.int64))
gibbs.run_sweeps(new_stream(1), 5, state, crp.make_params(1.0, n), params, stats, data,
                 np.empty(n + 1), np.arange(n))
entries = (gibbs.run_sweeps, assign_labels)
print(json.dumps({
    "loaded": {f.__name__: sum(f.stats.cache_hits.values()) for f in entries},
    "compiled": {f.__name__: sum(f.stats.cache_misses.values()) for f in entries},
    "labels": state.labels.tolist(),
}))
"""


def test_gibbs_stays_cached_across_an_edit_of_a_module_it_does_not_use(tmp_path):
    """End to end in a copy of the package (its top-level __init__ emptied, so the
    subprocesses skip PyMC), caching under ``NUMBA_CACHE_DIR``: a Gibbs sweep (CRP x
    Normal, n = 20) compiled by one process is loaded from the cache by a fresh one
    after modules outside its dependencies are edited (before: every kernel's cache
    was dropped, the Gibbs set recompiled), and recompiled after an edit of
    components/normal.py, which the sweep reaches only through the components'
    dispatch. Load or compile is read from numba's per-dispatcher cache counters
    (``stats.cache_hits``, ``stats.cache_misses``), not from timings."""
    src = Path(pymc_partitions.__file__).parent
    pkg = tmp_path / "pymc_partitions"
    shutil.copytree(src, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    (pkg / "__init__.py").write_text("")
    env = {**os.environ, "PYTHONPATH": str(tmp_path),
           "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}

    def run():
        out = subprocess.run(
            [sys.executable, "-c", GIBBS_SWEEP],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
        )
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.splitlines()[-1])

    def edit(module):
        path = pkg / "kernels" / module
        path.write_text(path.read_text() + "# edited\n")

    once = {"run_sweeps": 1, "assign_labels": 1}
    never = {"run_sweeps": 0, "assign_labels": 0}
    first = run()
    assert (first["compiled"], first["loaded"]) == (once, never)
    assert len(set(first["labels"])) > 1  # the sweep moved items

    for module in OUTSIDE_GIBBS:
        edit(module)
    warm = run()
    assert (warm["compiled"], warm["loaded"]) == (never, once)
    assert warm["labels"] == first["labels"]

    edit("components/normal.py")
    cold = run()
    assert (cold["compiled"], cold["loaded"]) == (once, never)
    assert cold["labels"] == first["labels"]


def test_each_cache_location_keeps_its_own_stamp(tmp_path, monkeypatch):
    """Regression: the stamp lived in the source tree whatever ``NUMBA_CACHE_DIR`` was,
    so a run with another cache folder (or none) recorded the new fingerprints and a
    later run with the first folder trusted its stale entries (numba then failed
    unpickling a record type that no longer existed)."""
    pkg = _package(tmp_path)
    kernels = pkg / "kernels"
    folder_a = tmp_path / "cache-a"
    digest = hashlib.sha1(str(kernels).encode()).hexdigest()
    stale_file = folder_a / f"kernels_{digest}" / f"move2.run-1.{TAG}.nbi"

    monkeypatch.setattr(_jit.numba.config, "CACHE_DIR", str(folder_a))
    drop_stale_cache(kernels)
    stale_file.parent.mkdir(parents=True)
    stale_file.write_text("index compiled from the old move2.py")
    (kernels / "move2.py").write_text("V = 3\n")
    monkeypatch.setattr(_jit.numba.config, "CACHE_DIR", "")  # a run caching in the tree
    assert "kernels/move2.py" in drop_stale_cache(kernels)
    monkeypatch.setattr(_jit.numba.config, "CACHE_DIR", str(folder_a))
    assert "kernels/move2.py" in drop_stale_cache(kernels)
    assert not stale_file.exists()
