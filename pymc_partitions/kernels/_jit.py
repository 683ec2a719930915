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
Never called from Python: compiled without a CPython or cfunc wrapper.

``entry``: a loop called from Python (a sweep, a block move). Compiled without
numba's reference-counting runtime (``_nrt=False``): an entry never allocates, its
scratch arrays are passed in. With reference counting, every tuple-of-arrays
access on the hot path paid atomic reference-count traffic: a Gibbs sweep at
N = 300 measured 0.27 ms against 0.058 ms without. No cfunc wrapper (nothing calls
an entry through ctypes).

Saying what compiles: :class:`CompileAnnouncer` listens to numba's ``numba:compile``
event (it fires on a real compile, never on a load from the cache) and logs one INFO
line when a kernel of the package starts compiling (the outermost one: what it
inlines and links is part of it), and, with ``PMP_COMPILE_LOG`` set, appends the
seconds it took to that file.

Cache consistency: numba keys a cached function by its own source file (its
modification time and size), its bytecode, its signature, the CPU and numba's
version. But a function's machine code also holds code of other modules: primitives
it inlines (their global constants frozen), routines it links, the component and
prior a generic primitive dispatches to; and numba does not key on NumPy's version,
though its typing branches on it (NumPy 2's promotion rules). So
:func:`drop_stale_cache` keeps, for each module M of the kernels
(:func:`kernel_sources`: the files under ``kernels/`` and every module of the
package they import, followed transitively; today none outside ``kernels/``), a
fingerprint of the contents of M's dependencies (:func:`module_dependencies`) with
the versions of Python, numba and NumPy. When M's fingerprint changed since it was
recorded, it deletes M's numba cache files only: an edit recompiles the modules
whose code can contain the edited one, no others (a comment added to ``mallows.py``
leaves the Gibbs sweep cached; one added to ``components/normal.py`` does not).

M's dependencies are M's import closure (the package modules it imports, followed
transitively), where a module defining a numba ``overload`` depends besides on
every module that can register an implementation with it. Why this is enough: numba
compiles into M's functions what it reaches from their globals, i.e. functions and
constants of M's import closure, and what an ``overload`` of that closure selects
at compile time. Ours (``components/base.py``, ``priors/base.py``) select from a
registry that the modules calling ``register`` fill at import; each of those
imports the base module and names the registry, which is how they are found (a
docstring that merely mentions it only adds a dependency). So every move that uses
a generic primitive depends on every component and prior (the packages' ``__init__``
import them all) and on ``loo.py``, which registers an implementation (a null
component) although no move imports it. A test checks the rule against the live registries. Not covered, as before:
implementations registered from outside the package (a user's or a test's
component): after editing one, delete the cache.

Each Python version (numba's file tag, e.g. ``py312``) keeps its own fingerprints
and drops only its own files, so two environments sharing one source tree do not
erase each other's cache. Cache files are found in the source tree and, when
``NUMBA_CACHE_DIR`` is set (as CI does), in numba's folder for each source
directory there; the fingerprints are recorded beside the cache in use (in
``NUMBA_CACHE_DIR`` when it is set, else in the tree), so a run with another cache
folder never vouches for this one. Not covered: a read-only install without
``NUMBA_CACHE_DIR``, where numba caches in a user directory this function does not
touch.
"""

import hashlib
import json
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
routine = njit(cache=True, _nrt=False, no_cpython_wrapper=True, no_cfunc_wrapper=True)
entry = njit(cache=True, _nrt=False, no_cfunc_wrapper=True)
# An entry that Python calls from several threads at once on independent tasks (SALSO's
# runs), each writing only its own slices: it releases the GIL. (Not ``parallel=True``
# with ``prange``: the same run time, 1.5-2 s more to compile the SALSO entry.)
entry_nogil = njit(cache=True, _nrt=False, no_cfunc_wrapper=True, nogil=True)

_KERNELS = Path(__file__).resolve().parent
# numba names its cache files ``<module>.<function>-<line>.<tag>.nbi`` and
# ``....<tag>.<k>.nbc`` with this interpreter tag; two Python versions share one
# ``__pycache__``, so each keeps its own fingerprints and drops only its own files.
_TAG = f"py{sys.version_info[0]}{sys.version_info[1]}{getattr(sys, 'abiflags', '')}"
_STAMP = f"kernels-modules-{_TAG}.json"
# ``<module stem>.<qualname>-<line>.<tag>.nbi`` or ``.<tag>.<k>.nbc`` (module stems
# have no dot, so the stem is the name up to the first one).
_CACHE_FILE = re.compile(rf"([^.]+)\..*\.{re.escape(_TAG)}\.(?:nbi|\d+\.nbc)")
# A module defining a numba ``overload`` (a dispatch hub, e.g. components/base.py):
# what it inlines is chosen at compile time, here from a registry.
_OVERLOAD = re.compile(r"\boverload(?:_method|_attribute|_classmethod)?\s*\(")


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
    """Imported names of a comma-separated list, ``as`` aliases and comments dropped."""
    names = []
    if "#" in text:  # a comment in parentheses, e.g. ``import (  # noqa``
        text = re.sub(r"#[^\n]*", "", text)
    for item in text.strip("()").replace("\\", " ").split(","):
        words = item.split()
        if words:
            names.append(words[0])
    return names


def _imported_files(text, path, package, parts_of_path, modules):
    """Source files of the package's modules that the source ``text`` of ``path``
    (module parts ``parts_of_path``) imports, absolute or relative, including ``from
    M import submodule``; ``modules`` from :func:`_package_modules`."""
    here = list(parts_of_path if path.endswith("__init__.py") else parts_of_path[:-1])
    found = []
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


def _scan(root):
    """The sources of :func:`kernel_sources` (``str`` paths), each read once:
    ``{path: (imported paths, SHA-256 of the contents, is a dispatch hub, names a
    registry)}``."""
    package_dir = root.parent
    # Outside a package (a bare folder, in tests) only the folder's own files count.
    is_package = (package_dir / "__init__.py").is_file()
    modules = _package_modules(package_dir, package_dir if is_package else root)
    parts_of = {path: parts for parts, path in modules.items()}
    inside = str(root) + os.sep
    todo = [path for path in parts_of if path.startswith(inside)]
    seen = set(todo)
    scanned = {}
    while todo:
        path = todo.pop()
        with open(path, "rb") as fh:
            data = fh.read()
        text = data.decode("utf-8")
        imports = _imported_files(text, path, package_dir.name, parts_of[path], modules)
        scanned[path] = (
            imports, hashlib.sha256(data).hexdigest(),
            # Substring tests first: regex searches of every file cost ~10 ms.
            "overload" in text and _OVERLOAD.search(text) is not None,
            # May fill a registry (``register(...)``, ``_REGISTRY[...]``).
            "regist" in text or "REGIST" in text,
        )
        for source in imports:
            if source not in seen:
                seen.add(source)
                todo.append(source)
    return scanned


def kernel_sources(root=_KERNELS):
    """Every source file the compiled kernels can depend on, sorted (as ``Path`` objects).

    The ``.py`` files under ``root`` (the kernels' package) and, followed
    transitively, every module of the enclosing package (``root.parent``) that one
    of them imports; parent packages' ``__init__`` files only when imported
    themselves. Modules outside the package (numba, NumPy) are covered by their
    versions in :func:`module_fingerprints`.
    """
    return [Path(path) for path in sorted(_scan(Path(root).resolve()))]


def _reach(start, edges):
    """``start`` and every node reachable from it along ``edges``."""
    seen = {start}
    todo = [start]
    while todo:
        for node in edges[todo.pop()]:
            if node not in seen:
                seen.add(node)
                todo.append(node)
    return seen


def _dependencies(scanned):
    """``{path: set of paths}``: see :func:`module_dependencies`."""
    imports = {path: info[0] for path, info in scanned.items()}
    edges = {path: list(targets) for path, targets in imports.items()}
    hubs = [path for path, info in scanned.items() if info[2]]
    if hubs:
        # A hub inlines what its registry holds: it depends on every module that
        # can register (imports the hub, directly or not, and names a registry).
        for path, info in scanned.items():
            if info[3]:
                closure = _reach(path, imports)
                for hub in hubs:
                    if hub in closure and hub != path:
                        edges[hub].append(path)
    return {path: _reach(path, edges) for path in scanned}


def module_dependencies(root=_KERNELS):
    """``{source: sorted sources}``: for each module M of :func:`kernel_sources`, the
    modules whose code numba can compile into M's cached functions, M included.

    M's import closure (the package modules it imports, followed transitively),
    where a module defining a numba ``overload`` (a dispatch hub:
    ``components/base.py``, ``priors/base.py``) also depends on every module that
    may register an implementation with it: one that imports it (directly or not)
    and names a registry (``register``, ``_REGISTRY``), e.g. ``tempering.py`` and
    ``loo.py``, which no move imports. Over-approximate, never under: a docstring
    match only adds a module.
    """
    dependencies = _dependencies(_scan(Path(root).resolve()))
    return {Path(path): sorted(map(Path, deps)) for path, deps in dependencies.items()}


def _fingerprints(root, scanned):
    """:func:`module_fingerprints` from a :func:`_scan` of ``root``."""
    versions = f"{sys.version} numba {numba.__version__} numpy {np.__version__}"
    start = len(str(root.parent)) + 1
    relative = {path: path[start:].replace(os.sep, "/") for path in scanned}
    lines = {path: f"{relative[path]} {info[1]}" for path, info in scanned.items()}
    fingerprints = {}
    for path, deps in _dependencies(scanned).items():
        listing = "\n".join(sorted(lines[dep] for dep in deps))
        fingerprints[relative[path]] = hashlib.sha256(
            f"{versions}\n{listing}".encode()
        ).hexdigest()
    return fingerprints


def module_fingerprints(root=_KERNELS):
    """``{module path relative to root.parent (posix): SHA-256}`` of each module's
    :func:`module_dependencies` (paths and contents) and of the versions of Python,
    numba and NumPy."""
    root = Path(root).resolve()
    return _fingerprints(root, _scan(root))


def _cache_dirs(directory):
    """Where numba caches the functions of the sources in ``directory``: its
    ``__pycache__`` and, when ``NUMBA_CACHE_DIR`` is set, numba's folder for it there
    (``<name>_<sha1 of the path>``, numba's ``get_suitable_cache_subpath``)."""
    dirs = [directory / "__pycache__"]
    if numba.config.CACHE_DIR:
        digest = hashlib.sha1(str(directory).encode()).hexdigest()
        dirs.append(Path(numba.config.CACHE_DIR) / f"{directory.name}_{digest}")
    return dirs


def _cache_files(package_dir, modules):
    """This interpreter's numba cache files of ``modules`` (paths relative to
    ``package_dir``), in the source tree and in ``NUMBA_CACHE_DIR``. numba names
    them after the file's stem, ``__init__`` included."""
    stems = {}
    for module in modules:
        folder, _, name = module.rpartition("/")
        stems.setdefault(folder, set()).add(name[:-3])
    files = []
    for folder, names in stems.items():
        for directory in _cache_dirs(package_dir / folder if folder else package_dir):
            try:
                listing = os.listdir(directory)
            except OSError:
                continue
            for name in listing:
                match = _CACHE_FILE.fullmatch(name)
                if match and match.group(1) in names:
                    files.append(directory / name)
    return files


def _stamp_path(root):
    """Where the fingerprints of the cache in use are recorded: beside that cache.
    numba caches in ``NUMBA_CACHE_DIR`` when it is set, else in the source tree; a
    stamp kept in the tree would make a run with another ``NUMBA_CACHE_DIR`` trust
    entries compiled from older sources (numba then fails unpickling their types)."""
    if numba.config.CACHE_DIR:
        digest = hashlib.sha1(str(root).encode()).hexdigest()[:16]
        return Path(numba.config.CACHE_DIR) / f"{root.parent.name}-{digest}-{_STAMP}"
    return root / "__pycache__" / _STAMP


def drop_stale_cache(root=_KERNELS):
    """Delete the numba cache files of each kernel module whose fingerprint
    (:func:`module_fingerprints`) changed since this interpreter last recorded it.
    Returns those modules (paths relative to ``root.parent``, sorted; empty when
    nothing changed)."""
    root = Path(root).resolve()
    fingerprints = _fingerprints(root, _scan(root))
    stamp = _stamp_path(root)
    try:
        recorded = json.loads(stamp.read_text())
    except (OSError, ValueError):
        recorded = {}
    if recorded == fingerprints:
        return []
    stale = sorted(m for m, fingerprint in fingerprints.items() if recorded.get(m) != fingerprint)
    for cached in _cache_files(root.parent, stale):
        try:
            cached.unlink()
        except OSError:
            pass  # another process removed it, or the install is read-only
    try:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        # Written aside and renamed: a concurrent reader sees the old or the new
        # stamp, never half of one (which would only drop more than needed).
        partial = stamp.with_name(f"{stamp.name}.{os.getpid()}")
        partial.write_text(json.dumps(fingerprints, indent=0, sort_keys=True))
        os.replace(partial, stamp)
    except OSError:
        pass  # read-only install: numba then caches in its user directory
    return stale


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
                seconds = time.perf_counter() - self.started
                _log.debug("pymc-partitions: compiled %s in %.1f s", what, seconds)
                record = os.environ.get("PMP_COMPILE_LOG")
                if record:  # a file to append "seconds<TAB>kernel" to (suite profiling)
                    try:
                        with open(record, "a", encoding="utf-8") as fh:
                            fh.write(f"{seconds:.3f}\t{what}\n")
                    except OSError:
                        pass

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
