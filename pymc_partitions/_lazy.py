"""PEP 562 lazy names for a package: a name is imported from its module on first use.

Used by the subpackages whose modules import PyMC (``step_methods``, ``unbiased``), so
that a worker process or the kernels can import a PyMC-free module of theirs without
loading every step. (The top-level package has its own ``__getattr__``: it loads the
whole API at once and installs PyMC's hooks.)
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
