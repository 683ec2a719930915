"""``pmp.datasets.prepare_network``: Herlau et al. (2016) §3.3's preparation and
downsampling, against a direct transcription of the recipe, on the paper's
networks, and its errors."""

import doctest
import os
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse

import pymc_partitions as pmp
from pymc_partitions.datasets import networks

needs_data = pytest.mark.skipif(
    not os.environ.get("PMP_DATA_DIR") or not Path(os.environ["PMP_DATA_DIR"]).is_dir(),
    reason="no data folder: set PMP_DATA_DIR (tests/conftest.py uses ../shared/data)",
)


def transcription(a, scale, threshold=0.0):
    """The recipe in plain Python loops: symmetrise by adding the transpose,
    threshold, drop the diagonal, sort by (degree, index) descending, keep the first."""
    n = len(a)
    edge = [[i != j and a[i][j] + a[j][i] > threshold for j in range(n)] for i in range(n)]
    degree = [sum(row) for row in edge]
    order = sorted(range(n), key=lambda v: (degree[v], v), reverse=True)
    kept = sorted(order[: max(1, round(scale * n))])
    return [[int(edge[i][j]) for j in kept] for i in kept], kept, degree


@pytest.mark.parametrize("seed", range(6))
def test_equals_the_transcription_on_random_weighted_directed_graphs(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 30))
    # Weighted, directed, self-loops, negative weights, many degree ties.
    a = rng.choice([0.0, 0.0, 0.0, 0.5, 2.0, -1.0], size=(n, n))
    for scale in (1.0, 0.9, 0.5, 0.21, 1e-6):
        for threshold in (0.0, 1.0):
            got = pmp.datasets.prepare_network(a, scale=scale, threshold=threshold)
            adj, kept, degree = transcription(a.tolist(), scale, threshold)
            assert got.adjacency.tolist() == adj and got.vertices.tolist() == kept
            assert got.degrees.tolist() == degree
            assert got.adjacency.dtype == np.int64 and got.vertices.dtype == np.int64
            assert np.array_equal(got.adjacency, got.adjacency.T)
            assert not np.diag(got.adjacency).any()


def test_sparse_input_and_docstring_example():
    a = scipy.sparse.random(40, 40, density=0.1, random_state=3, format="csr")
    dense = pmp.datasets.prepare_network(a.toarray(), scale=0.5)
    sparse = pmp.datasets.prepare_network(a, scale=0.5)
    for x, y in zip(dense, sparse):
        assert np.array_equal(x, y)
    result = doctest.testmod(networks, verbose=False)
    assert result.attempted > 0 and result.failed == 0


@needs_data
def test_the_paper_networks_at_the_paper_scales():
    """NIPS, USAir and Hagmann at Table 3's scales: m = round(scale n) vertices, the
    highest-degree ones; a 0/1 network prepared is the loader's symmetric network."""
    nips = pmp.datasets.load_nips234().data
    usair = pmp.datasets.load_usair97(weighted=True, symmetrise=False).data
    hagmann = pmp.datasets.load_hagmann(weighted=True, symmetrise=False).data
    for a, scales in ((nips, (1.0, 0.9, 0.8)), (usair, (0.9, 0.8, 0.7)),
                      (hagmann, (0.4, 0.3, 0.2, 0.25))):
        full = pmp.datasets.prepare_network(a)
        assert np.array_equal(full.adjacency, ((a + a.T) > 0) & ~np.eye(len(a), dtype=bool))
        for scale in scales:
            net = pmp.datasets.prepare_network(a, scale=scale)
            m = round(scale * len(a))
            assert net.adjacency.shape == (m, m) and len(net.vertices) == m
            dropped = np.setdiff1d(np.arange(len(a)), net.vertices)
            if len(dropped):
                assert net.degrees[net.vertices].min() >= net.degrees[dropped].max()
    assert pmp.datasets.prepare_network(nips).adjacency.sum() // 2 == 598
    assert np.array_equal(pmp.datasets.prepare_network(usair).adjacency,
                          pmp.datasets.load_usair97().data)


@pytest.mark.parametrize("kwargs, error, words", [
    ({"adjacency": np.zeros((3, 4))}, ValueError, "'adjacency' must be a non-empty square"),
    ({"adjacency": np.zeros((0, 0))}, ValueError, "'adjacency' must be a non-empty square"),
    ({"adjacency": np.zeros(3)}, ValueError, "'adjacency' must be a non-empty square"),
    ({"adjacency": np.array([[0, np.nan], [1, 0]])}, ValueError, "NaN"),
    ({"adjacency": np.array([["a", "b"], ["c", "d"]])}, TypeError, "must be numeric"),
    ({"adjacency": np.eye(3), "scale": 0.0}, ValueError, "'scale' is the fraction"),
    ({"adjacency": np.eye(3), "scale": 1.5}, ValueError, "'scale' is the fraction"),
    ({"adjacency": np.eye(3), "scale": "half"}, TypeError, "'scale' and 'threshold'"),
])
def test_bad_input_names_the_argument(kwargs, error, words):
    with pytest.raises(error, match=words):
        pmp.datasets.prepare_network(**kwargs)
