"""PEP 562 lazy names for a package: a name is imported from its module on first use.

Used by the subpackages whose modules import PyMC (``step_methods``, ``unbiased``), so
that a worker process or the kernels can import a PyMC-free module of theirs without
loading every step. (The top-level package has its own ``__getattr__``: it loads the
whole API at once and installs PyMC's hooks.)

Also :func:`load_api`: a partition variable needs the whole API loaded and the hooks
installed (our steps in PyMC's registry) even when the user imported submodules only.
The package ``__init__`` registers how (:func:`set_api_loader`), so the distributions
layer calls it without importing the package above it.
"""

import importlib
import importlib.util


def lazy_names(namespace, names):
    """``(__getattr__, __dir__)`` for the package whose globals are ``namespace``.

    ``names`` maps a name to the module that defines it (relative to the package, or
    absolute if it has a dot); the first access imports it and keeps it as a global of
    the package, so later accesses never come back here. Another name that is a
    submodule is imported; anything else is an AttributeError.
    """
    package = namespace["__name__"]

    def __getattr__(name):
        if name in names:
            module = names[name] if "." in names[name] else f"{package}.{names[name]}"
            value = getattr(importlib.import_module(module), name)
            namespace[name] = value
            return value
        if importlib.util.find_spec(f"{package}.{name}") is not None:  # a submodule
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__():
        return sorted({*namespace, *namespace.get("__all__", ())})

    return __getattr__, __dir__


_api_loader = None


def set_api_loader(loader):
    """Register the function :func:`load_api` calls (the package ``__init__`` does)."""
    global _api_loader
    _api_loader = loader


def load_api():
    """Load the package's PyMC-facing API and install its hooks, once (a no-op after
    the first call; the package ``__init__`` registered the loader when it ran, which
    is before any submodule)."""
    if _api_loader is not None:
        _api_loader()
