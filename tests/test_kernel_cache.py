"""The kernels' numba cache is dropped when any kernel source changes."""

from pymc_partitions.kernels._jit import drop_stale_cache


def test_cache_dropped_only_when_a_source_changes(tmp_path):
    (tmp_path / "components").mkdir()
    source = tmp_path / "components" / "normal.py"
    source.write_text("x = 1\n")
    (tmp_path / "gibbs.py").write_text("y = 2\n")
    cache = tmp_path / "__pycache__"
    cache.mkdir()
    (cache / "gibbs.run_sweeps-1.py311.nbi").write_text("index")

    assert drop_stale_cache(tmp_path)  # no fingerprint yet: cache dropped
    assert not (cache / "gibbs.run_sweeps-1.py311.nbi").exists()

    (cache / "gibbs.run_sweeps-1.py311.nbi").write_text("index")
    (cache / "gibbs.run_sweeps-1.py311.1.nbc").write_text("code")
    assert not drop_stale_cache(tmp_path)  # unchanged sources: cache kept
    assert (cache / "gibbs.run_sweeps-1.py311.nbc".replace(".nbc", ".1.nbc")).exists()

    source.write_text("x = 3\n")  # a component edited: the inlined code is stale
    assert drop_stale_cache(tmp_path)
    assert not list(cache.glob("*.nb?"))
