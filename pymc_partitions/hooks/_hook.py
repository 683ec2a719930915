"""The record of one hook (:class:`Hook`), its fingerprints, and its installation.

A hook is a change the plugin makes to PyMC or PyTensor when the package's API loads.
A *wrapping* hook replaces a PyMC/PyTensor function (or class) by a wrapper bound at
every name PyMC calls it by; any other hook gives an ``install`` function. A hook that
goes through a documented extension point is ``public``: it has no fingerprints.

Fingerprints. For each reviewed version of the package the hook patches, every
function the hook relies on (``relies_on``: the wrapped one first, then the callers
that look it up by name) is recorded as ``(signature, hash of the source)`` for the
first, the hash for the others (:func:`fingerprint`). :func:`install` computes them for
the running version *before* changing anything: on an unrecorded version, a missing
function or a changed one, the hook is not installed and a
:class:`HookNotInstalledWarning` names the package version, the hook, what changed and
what the user loses without it (``without``). The library keeps working without any
hook; ``tests/test_compat.py`` fails on the same condition, so a stack upgrade is
reviewed before it ships.
"""

import hashlib
import importlib
import inspect
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

#: Display names of the packages hooks patch.
_DISPLAY = {"pymc": "PyMC", "pytensor": "PyTensor"}

#: The command printing the fingerprints of the running versions, ready to paste.
RECORD_COMMAND = "python -m pymc_partitions.hooks"


class HookNotInstalledWarning(RuntimeWarning):
    """A hook of pymc_partitions was not installed: the running PyMC / PyTensor is not a
    version it was reviewed for, or a function it relies on changed. The message says
    what the user loses; everything else works."""


@dataclass(frozen=True)
class Hook:
    """One change the plugin makes to PyMC or PyTensor (one module of this package).

    name : short id, used in messages and as the replacement's ``__pmp_patch__``.
    why : what changes, why no public extension point does it, and what to re-check
        on a new version.
    without : what the user loses when the hook is not installed (said in the warning).
    wrap : ``original -> replacement`` for a function replaced by a wrapper, bound at
        every ``targets`` name ("module:attribute"; the first gives the original).
    install : for a hook that is not a wrapper, the function making the change
        (idempotent).
    relies_on : "module:qualname" of the functions whose code the hook relies on.
    package : the distribution whose version keys ``fingerprints``.
    fingerprints : ``{"major.minor" or exact version: {relies_on name: (signature,
        source hash) for the first, source hash for the others}}``, as printed by
        :func:`print_fingerprints`; the versions reviewed for this hook.
    public : the change goes through a documented mechanism (tested by behaviour, no
        fingerprints).
    """

    name: str
    why: str
    without: str
    wrap: Callable | None = None
    targets: tuple = ()
    install: Callable | None = None
    relies_on: tuple = ()
    package: str = "pymc"
    fingerprints: dict = field(default_factory=dict)
    public: bool = False


def resolve(dotted):
    """``"package.module:attr.sub"`` -> the object (importing the module)."""
    module, _, qualname = dotted.partition(":")
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _signature_text(func):
    """The signature without annotations (stable across typing-only edits)."""
    sig = inspect.signature(func)
    params = [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()]
    return str(sig.replace(parameters=params, return_annotation=inspect.Signature.empty))


def fingerprint(dotted):
    """``(signature, sha256 of the source [:16])`` of the function named ``dotted``
    (PyMC's own function when a hook has wrapped it)."""
    func = inspect.unwrap(resolve(dotted), stop=lambda f: not hasattr(f, "__pmp_patch__"))
    source = inspect.getsource(func)
    return _signature_text(func), hashlib.sha256(source.encode()).hexdigest()[:16]


def package_version(package):
    return importlib.import_module(package).__version__


def recorded_fingerprints(hook):
    """The fingerprints recorded for the running version (exact, then major.minor), or None."""
    version = package_version(hook.package)
    minor = ".".join(version.split(".")[:2])
    return hook.fingerprints.get(version, hook.fingerprints.get(minor))


def mismatches(hook):
    """Why the running version is not the one ``hook`` was reviewed for: a list of
    sentences, empty when every fingerprint matches (always empty for a public hook)."""
    if hook.public:
        return []
    recorded = recorded_fingerprints(hook)
    if recorded is None:
        return [f"this version was not reviewed for the hook (reviewed: "
                f"{', '.join(sorted(hook.fingerprints)) or 'none'})"]
    found = []
    if set(recorded) != set(hook.relies_on):
        found.append(f"the fingerprints are recorded for {sorted(recorded)} but the hook "
                     f"relies on {sorted(hook.relies_on)}")
    for name in hook.relies_on:
        try:
            signature, digest = fingerprint(name)
        except Exception as err:  # noqa: BLE001 - moved, renamed, no source: all one answer
            found.append(f"{name} is not found ({type(err).__name__}: {err})")
            continue
        want = recorded.get(name)
        if want is None:
            continue
        want_sig, want_digest = want if isinstance(want, tuple) else (None, want)
        if want_sig is not None and signature != want_sig:
            found.append(f"{name}: signature {want_sig} -> {signature}")
        elif digest != want_digest:
            found.append(f"{name}: source changed (hash {want_digest} -> {digest})")
    return found


def _warn_not_installed(hook, reasons):
    package = _DISPLAY.get(hook.package, hook.package)
    try:
        version = package_version(hook.package)
    except Exception:  # noqa: BLE001
        version = "(unknown version)"
    warnings.warn(
        f"pymc_partitions: hook '{hook.name}' is not installed with {package} {version}: "
        f"{'; '.join(reasons)}. Without it: {hook.without} Everything else works. "
        f"(The hook is pymc_partitions.hooks.{hook.name}; after reviewing it against this "
        f"version, record the version with `{RECORD_COMMAND}`.)",
        HookNotInstalledWarning,
        stacklevel=2,
    )


def _install_wrapper(hook):
    module_name, _, attr = hook.targets[0].partition(":")
    current = getattr(importlib.import_module(module_name), attr)
    original = current.__wrapped__ if getattr(current, "__pmp_patch__", None) == hook.name \
        else current
    replacement = hook.wrap(original)
    replacement.__wrapped__ = original
    replacement.__pmp_patch__ = hook.name
    for target in hook.targets:
        module_name, _, attr = target.partition(":")
        module = importlib.import_module(module_name)
        bound = getattr(module, attr, None)
        if bound is original or getattr(bound, "__pmp_patch__", None) == hook.name:
            setattr(module, attr, replacement)


def install(hook):
    """Install ``hook`` if the running version is one it was reviewed for; else warn
    with :class:`HookNotInstalledWarning` and change nothing. An exception while
    installing gets the same warning (never a traceback). Idempotent: a wrapper is
    installed once around PyMC's own function. Returns whether the hook is installed."""
    reasons = mismatches(hook)
    if reasons:
        _warn_not_installed(hook, reasons)
        return False
    try:
        if hook.wrap is not None:
            _install_wrapper(hook)
        else:
            hook.install()
    except Exception as err:  # noqa: BLE001 - a hook must never break the import
        _warn_not_installed(hook, [f"installing it failed ({type(err).__name__}: {err})"])
        return False
    return True


def fingerprint_lines(hook):
    """The lines :func:`print_fingerprints` prints for ``hook`` (running version)."""
    version = ".".join(package_version(hook.package).split(".")[:2])
    lines = [f"{hook.name} ({hook.package} {package_version(hook.package)}):",
             f"    {version!r}: {{"]
    for i, name in enumerate(hook.relies_on):
        value = fingerprint(name) if i == 0 else fingerprint(name)[1]
        lines.append(f"        {name!r}: {value!r},")
    lines.append("    },")
    return lines
