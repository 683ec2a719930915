"""How kernels are compiled, and how their disk cache stays consistent.

``primitive``: small functions (component and prior primitives, slot bookkeeping,
one move of one item) that moves call in their inner loops; inlined at numba IR
level.

``routine``: a large piece of a move that several entries call (one split-merge
update). Compiled once per signature and called, not inlined: inlined at numba IR
level it was recompiled whole in every entry that used it. Measured for one
component/prior pair (Beta-Bernoulli, CRP; cold cache): run_split_merge 31.5 s ->
24.8 s and split_merge_entry 32.9 s -> 5.2 s to compile, the update's run time
unchanged (ratio 1.01, medians of 8 alternated runs). Its inner pieces (launch,
restricted scans) stay inlined: as routines they cost 26 % of the update's time.

``entry``: a loop called from Python (a sweep, a block move). Compiled without
numba's reference-counting runtime (``_nrt=False``): an entry never allocates, its
scratch arrays are passed in. With reference counting, every tuple-of-arrays
access on the hot path paid atomic reference-count traffic: a Gibbs sweep at
N = 300 measured 0.27 ms against 0.058 ms without.

Cache consistency: numba keys a cached function by its own source file, its
bytecode, its signature, the CPU and numba's version. But a move inlines (and
freezes the global constants of) code from other modules, and numba does not key on
NumPy's version, though its typing branches on it (NumPy 2's promotion rules).
:func:`drop_stale_cache` fingerprints every source the kernels can depend on
(:func:`kernel_sources`: the files under ``kernels/`` and every module of the
package they import, followed transitively; today none outside ``kernels/``) with
the versions of Python, numba and NumPy. When the fingerprint changed since the
cache was written (an edited or upgraded component, a new NumPy) it deletes the
numba cache files of those modules, so nothing stale is loaded. Each Python
version (numba's file tag, e.g. ``py312``) keeps its own fingerprint and drops only
its own files, so two environments sharing one source tree do not erase each
other's cache. Cache files are found in the source tree and, when
``NUMBA_CACHE_DIR`` is set (as CI does), in numba's folder for each source
directory there. Not covered: a read-only install without ``NUMBA_CACHE_DIR``, where
numba caches in a user directory this function does not touch.
"""

import hashlib
import logging
import os
import re
import sys
import time
from pathlib import Path

import numba
import numpy as np
from numba import njit
from numba.core import event

primitive = njit(cache=True, inline="always")
routine = njit(cache=True, _nrt=False)
entry = njit(cache=True, _nrt=False)

_KERNELS = Path(__file__).resolve().parent
# numba names its cache files ``<module>.<function>-<line>.<tag>.nbi`` and
# ``....<tag>.<k>.nbc`` with this interpreter tag; two Python versions share one
# ``__pycache__``, so each keeps its own fingerprint and drops only its own files.
_TAG = f"py{sys.version_info[0]}{sys.version_info[1]}{getattr(sys, 'abiflags', '')}"
_STAMP = f"kernels-source-{_TAG}.sha256"


def _package_modules(package_dir, top):
    """``{module parts (tuple, without the package): source path (str)}`` of every
    module and subpackage under ``top`` (``package_dir`` or a folder in it)."""
    modules = {}
    for directory, subdirs, files in os.walk(top):
        subdirs[:] = [d for d in subdirs if d != "__pycache__" and not d.startswith(".")]
        rel = os.path.relpath(directory, package_dir)
        parts = () if rel == os.curdir else tuple(rel.split(os.sep))
        for name in files:
            if name == "__init__.py":
                modules[parts] = os.path.join(directory, name)
            elif name.endswith(".py"):
                modules[(*parts, name[:-3])] = os.path.join(directory, name)
    return modules


# An import statement at the start of a line: ``from <dots><module> import <names>``
# (names possibly in parentheses over several lines) or ``import <modules>``. A
# regular expression, not ``ast``: parsing every kernel at each import of the
# package costs ~0.15 s. A match inside a docstring only adds a file.
_IMPORT = re.compile(
    r"^[ \t]*(?:from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*)"
    r"|import[ \t]+([^\n#;]*))",
    re.MULTILINE,
)


def _names(text):
    """Imported names of a comma-separated list, ``as`` aliases dropped."""
    names = []
    for item in text.strip("()").replace("\\", " ").split(","):
        words = item.split()
        if words:
            names.append(words[0])
    return names


def _imported_files(path, package, parts_of_path, modules):
    """Source files of the package's modules that ``path`` (module parts
    ``parts_of_path``) imports, absolute or relative, including ``from M import
    submodule``; ``modules`` from :func:`_package_modules`."""
    here = list(parts_of_path if path.endswith("__init__.py") else parts_of_path[:-1])
    found = []
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    for dots, module, names, plain in _IMPORT.findall(text):
        if plain:
            targets = [(name.split("."), []) for name in _names(plain)]
        else:
            parts = module.split(".") if module else []
            if dots:
                parts = [package, *here[: len(here) - (len(dots) - 1)], *parts]
            targets = [(parts, _names(names))]
        for parts, members in targets:
            if not parts or parts[0] != package:
                continue
            for sub in [parts[1:], *(parts[1:] + [name] for name in members)]:
                source = modules.get(tuple(sub))
                if source is not None:
                    found.append(source)
    return found


def kernel_sources(root=_KERNELS):
    """Every source file the compiled kernels can depend on, sorted (as ``Path`` objects).

    The ``.py`` files under ``root`` (the kernels' package) and, followed
    transitively, every module of the enclosing package (``root.parent``) that one
    of them imports; parent packages' ``__init__`` files only when imported
    themselves. Modules outside the package (numba, NumPy) are covered by their
    versions in :func:`kernel_fingerprint`.
    """
    root = Path(root).resolve()
    package_dir = root.parent
    # Outside a package (a bare folder, in tests) only the folder's own files count.
    is_package = (package_dir / "__init__.py").is_file()
    modules = _package_modules(package_dir, package_dir if is_package else root)
    parts_of = {path: parts for parts, path in modules.items()}
    inside = str(root) + os.sep
    seen = {path for path in parts_of if path.startswith(inside)}
    todo = list(seen)
    while todo:
        path = todo.pop()
        for source in _imported_files(path, package_dir.name, parts_of[path], modules):
            if source not in seen:
                seen.add(source)
                todo.append(source)
    return [Path(path) for path in sorted(seen)]


def kernel_fingerprint(root=_KERNELS, sources=None):
    """SHA-256 of :func:`kernel_sources` (paths and contents; pass ``sources`` if
    already listed) and of the versions of Python, numba and NumPy."""
    root = Path(root).resolve()
    digest = hashlib.sha256()
    digest.update(f"{sys.version} numba {numba.__version__} numpy {np.__version__}".encode())
    for path in kernel_sources(root) if sources is None else sources:
        digest.update(path.relative_to(root.parent).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _cache_dirs(directory):
    """Where numba caches the functions of the sources in ``directory``: its
    ``__pycache__`` and, when ``NUMBA_CACHE_DIR`` is set, numba's folder for it there
    (``<name>_<sha1 of the path>``, numba's ``get_suitable_cache_subpath``)."""
    dirs = [directory / "__pycache__"]
    if numba.config.CACHE_DIR:
        digest = hashlib.sha1(str(directory).encode()).hexdigest()
        dirs.append(Path(numba.config.CACHE_DIR) / f"{directory.name}_{digest}")
    return dirs


def _cache_files(root, sources):
    """This interpreter's numba cache files of the kernels (every folder under
    ``root``) and of the other modules in ``sources``, in the source tree and in
    ``NUMBA_CACHE_DIR``."""
    patterns = (f"*.{_TAG}.nbi", f"*.{_TAG}.*.nbc")
    files = []
    folders = [root, *(p for p in root.rglob("*") if p.is_dir() and p.name != "__pycache__")]
    for folder in folders:
        for directory in _cache_dirs(folder):
            files.extend(path for pattern in patterns for path in directory.glob(pattern))
    for source in sources:
        if root in source.parents:
            continue
        stem = source.parent.name if source.name == "__init__.py" else source.stem
        for directory in _cache_dirs(source.parent):
            for pattern in patterns:
                files.extend(directory.glob(f"{stem}.{pattern}"))
    return files


def drop_stale_cache(root=_KERNELS):
    """Delete the numba cache of the kernels if anything they depend on changed
    (:func:`kernel_fingerprint`). Returns whether it did."""
    root = Path(root).resolve()
    sources = kernel_sources(root)
    fingerprint = kernel_fingerprint(root, sources)
    stamp = root / "__pycache__" / _STAMP
    try:
        if stamp.read_text() == fingerprint:
            return False
    except OSError:
        pass
    for cached in _cache_files(root, sources):
        try:
            cached.unlink()
        except OSError:
            pass  # another process removed it, or the install is read-only
    try:
        stamp.parent.mkdir(exist_ok=True)
        stamp.write_text(fingerprint)
    except OSError:
        pass  # read-only install: numba then caches in its user directory
    return True


drop_stale_cache()


# ------------------------------------------------------------- saying what compiles
_log = logging.getLogger("pymc_partitions")
if not logging.root.handlers and not _log.handlers:
    # As PyMC does for its own logger: INFO lines reach the terminal unless the user
    # configured logging (silence with logging.getLogger("pymc_partitions").setLevel).
    _log.setLevel(logging.INFO)
    _log.addHandler(logging.StreamHandler())


def _record_names(args):
    """The params records among a kernel's argument types, e.g. ``CRPParams × NormalParams``
    (numba types of NamedTuples carry their class; tuples of records are nested)."""
    names = []
    for arg in args:
        cls = getattr(arg, "instance_class", None)
        if cls is not None and cls.__name__.endswith(("Params", "Pair")):
            names.append(cls.__name__)
            if cls.__name__ == "Pair":
                names[-1] = "Pair(" + " + ".join(_record_names(arg.types)) + ")"
    return names


class CompileAnnouncer(event.Listener):
    """Logs one line when a kernel of this package starts compiling in this process and
    one when it is done (numba's ``numba:compile`` event fires only on a real compile,
    never on a load from the disk cache), so a first call never sits silent for a
    minute. Nested compiles (the routines and primitives a kernel calls) are part of
    the outermost one and are not announced."""

    def __init__(self):
        self.depth = 0
        self.started = 0.0

    def on_start(self, ev):
        self.depth += 1
        if self.depth == 1:
            self.started = time.perf_counter()
            what = self._describe(ev)
            if what:
                _log.info("pymc-partitions: compiling %s (once per machine; numba caches it "
                          "on disk)...", what)

    def on_end(self, ev):
        self.depth -= 1
        if self.depth == 0:
            what = self._describe(ev)
            if what:
                _log.debug("pymc-partitions: compiled %s in %.1f s", what,
                          time.perf_counter() - self.started)

    @staticmethod
    def _describe(ev):
        fn = getattr(ev.data.get("dispatcher"), "py_func", None)
        module = getattr(fn, "__module__", "") or ""
        if not module.startswith("pymc_partitions."):
            return None
        where = module.rsplit(".", 1)[-1]
        records = _record_names(ev.data.get("args") or ())
        return f"the {where} kernel {fn.__name__}" + (
            f" for {' × '.join(records)}" if records else "")


event.register("numba:compile", CompileAnnouncer())
