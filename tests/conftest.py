import os
import sys
from pathlib import Path

import pytensor
import pytest

from pymc_partitions.versions import small_function_mode

sys.path.insert(0, os.path.dirname(__file__))

# Data sets: tests read the shared data folder next to the repository (never a
# download). An explicit PMP_DATA_DIR wins.
_SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
if not os.environ.get("PMP_DATA_DIR") and _SHARED_DATA.is_dir():
    os.environ["PMP_DATA_DIR"] = str(_SHARED_DATA)


@pytest.fixture(autouse=True)
def _small_function_mode(request):
    """PyTensor 3 compiles every function with numba by default, tens of seconds per
    reference graph; the tests compile theirs (and most models) with the C VM the
    steps already use for small functions (``versions.small_function_mode``).
    Tests marked ``default_backend`` (all of test_step.py) keep PyMC's default, so
    PyMC 6's own path stays covered. PyTensor 2: no change (the C VM is its default)."""
    mode = small_function_mode()
    if mode is None or request.node.get_closest_marker("default_backend"):
        yield
        return
    with pytensor.config.change_flags(mode=mode):
        yield
