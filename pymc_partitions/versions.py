"""What differs between the supported stacks (DESIGN §4), and nothing else.

This module imports nothing from the package (an import-linter contract in
``pyproject.toml`` keeps it so); every other module that must tell one stack from the
other goes through it. The changes the plugin makes to PyMC / PyTensor themselves
are not here: they are the hooks (:mod:`pymc_partitions.hooks`).

- PyMC 5 gives a step its chain's generator with ``set_rng(rng)``; PyMC 6 with
  ``setup_chain(rng, tune, draws)`` and may reuse one instance for several chains.
  :class:`ChainSetup` answers both and calls ``self.start_chain(rng)``, where steps
  create their per-chain state (never in ``__init__``: with ``cores=1`` PyMC
  shallow-copies steps between chains, so anything made there is shared).
- ``pm.sample`` returns ``arviz.InferenceData`` (ArviZ < 1) or ``xarray.DataTree``
  (ArviZ >= 1): :func:`posterior_dataset`, :func:`group_dataset`,
  :func:`add_posterior_variables` and :func:`add_group` read and write either.
- ``ancestors`` moved from ``pytensor.graph.basic`` to ``pytensor.graph.traversal``.
- PyMC's progress bars live in ``pymc.progress_bar`` in PyMC 5.28 and 6.x
  (``pymc.util`` before): :func:`simple_progress` finds them.
- PyTensor 3 compiles with its numba linker by default; small per-iteration
  functions (the hyperparameter reader) call 3x faster through the C virtual
  machine, so :func:`small_function_mode` asks for it where it exists.
"""

from pymc.util import get_random_generator

try:  # PyTensor >= 2.3x
    from pytensor.graph.traversal import ancestors  # noqa: F401
except ImportError:  # pragma: no cover
    from pytensor.graph.basic import ancestors  # noqa: F401

__all__ = [
    "ChainSetup",
    "add_group",
    "add_posterior_variables",
    "ancestors",
    "group_dataset",
    "posterior_dataset",
    "simple_progress",
    "small_function_mode",
]


def small_function_mode():
    """Compilation mode for small functions called once per iteration.

    Measured on this project's hyperparameter reader: PyTensor 3 default (numba
    linker) ~15 us per call, ``"CVM"`` ~5 us; PyTensor 2 default is already the C VM.
    """
    import pytensor

    if int(pytensor.__version__.split(".")[0]) >= 3:
        return "CVM"
    return None


def simple_progress(progressbar=True):
    """PyMC's simple progress bar (``with bar: task = bar.add_task(description,
    completed=0, total=n); bar.advance(task, k)``): ``pymc.progress_bar.
    create_simple_progress`` (PyMC 5.28, 6.x; rich in a terminal or Jupyter, marimo's in
    marimo), else ``pymc.util.CustomProgress`` (older PyMC 5), whose rich progress
    has the same methods. ``progressbar=False``: a bar that shows nothing."""
    try:
        from pymc.progress_bar import create_simple_progress
    except ImportError:  # pragma: no cover - older PyMC 5
        from pymc.util import CustomProgress

        return CustomProgress(disable=not progressbar)
    return create_simple_progress(progressbar=bool(progressbar))


class ChainSetup:
    """Mixin: per-chain set-up for both PyMC 5 (``set_rng``) and PyMC 6 (``setup_chain``)."""

    def set_rng(self, rng):
        self.rng = get_random_generator(rng, copy=False)
        self.start_chain(self.rng)

    def setup_chain(self, rng, tune, draws):
        self.rng = get_random_generator(rng, copy=False)
        self.start_chain(self.rng)

    def start_chain(self, rng):  # pragma: no cover - overridden
        """Create the per-chain state. Called once per chain before its first step."""


def posterior_dataset(idata):
    """The posterior group of a ``pm.sample`` result as an ``xarray.Dataset``."""
    post = idata["posterior"]
    return post.to_dataset() if hasattr(post, "to_dataset") else post


def add_posterior_variables(idata, variables):
    """Add ``xarray.DataArray`` variables (dims starting with chain, draw) to the
    posterior group of an ``InferenceData`` or ``DataTree``, in place."""
    post = idata["posterior"]
    for name, value in variables.items():
        post[name] = value
    return idata


def group_dataset(idata, name):
    """Group ``name`` of an ``InferenceData`` / ``DataTree`` as an ``xarray.Dataset``."""
    group = idata[name]
    return group.to_dataset() if hasattr(group, "to_dataset") else group


def add_group(idata, name, dataset):
    """Add (or replace) group ``name`` holding ``dataset`` in place; returns ``idata``.

    ArviZ < 1: ``InferenceData.add_groups``; ArviZ >= 1: a child node of the ``DataTree``.
    """
    if hasattr(idata, "add_groups"):
        if name in idata.groups():
            delattr(idata, name)
        idata.add_groups({name: dataset})
    else:
        import xarray as xr

        idata[name] = xr.DataTree(dataset)
    return idata
