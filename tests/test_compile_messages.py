"""A kernel's first compile in a process says so (``kernels/_jit.py``,
``CompileAnnouncer``); a load from the disk cache says nothing."""

import os
import subprocess
import sys

CODE = """
import numpy as np
from pymc_partitions.kernels import new_state, refresh_all
from pymc_partitions.kernels.components import normal
params = normal.make_params(np.zeros(1), np.ones(1), np.ones(1), n=3)
refresh_all(new_state(3), params, normal.alloc_stats(3, 1, params))
"""


def _stderr(cache):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stderr


def test_first_compile_is_announced_and_a_cached_load_is_not(tmp_path):
    first = _stderr(tmp_path)
    assert first.count("pymc-partitions: compiling") == 1, first
    assert "the bookkeeping kernel refresh_all for NormalParams" in first
    assert "once per machine" in first
    assert "pymc-partitions" not in _stderr(tmp_path)
