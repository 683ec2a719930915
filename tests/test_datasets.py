"""Data sets: loaders against the shared data folder (no network), their errors and
downloads (urllib replaced), and the generators (shapes, labels, seeds, statistics)."""

import io
import os
import urllib.error
import urllib.request
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest

import pymc_partitions as pmp
from pymc_partitions.datasets import generators as gen
from pymc_partitions.datasets import loaders

DATA_DIR = os.environ.get("PMP_DATA_DIR")
NO_DATA = not DATA_DIR or not Path(DATA_DIR).is_dir()
# Skipped on a user's machine without the data; in CI (CI set) they run and fail.
needs_data = pytest.mark.skipif(
    NO_DATA and not os.environ.get("CI"),
    reason="no data folder: set PMP_DATA_DIR (tests/conftest.py uses ../shared/data)",
)


def test_shared_data_folder_is_there_in_ci():
    if os.environ.get("CI"):
        assert not NO_DATA, f"CI needs the shared data folder; PMP_DATA_DIR={DATA_DIR!r}"


@pytest.fixture
def no_network(monkeypatch):
    """Any download attempt fails the test."""

    def refuse(*args, **kwargs):
        pytest.fail(f"a loader tried to download: {args[:1]}")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)


# ------------------------------------------------------------------ loaders, shared folder
@needs_data
@pytest.mark.parametrize("key", sorted(loaders.FILES))
def test_files_match_readme_checksums(key, no_network):
    info = loaders.FILES[key]
    path = loaders.fetch_file(key)
    assert path == Path(DATA_DIR) / info.path
    digest, size = loaders.file_digest(path)
    assert digest.startswith(info.sha256) and size == info.size


@needs_data
def test_seeds(no_network):
    raw = pmp.datasets.load_seeds(download=False)
    assert raw.data.shape == (210, 7) and raw.data.dtype == np.float64
    assert raw.target.dtype == np.int64 and np.array_equal(np.bincount(raw.target), [70, 70, 70])
    assert np.array_equal(raw.target, np.repeat([0, 1, 2], 70))
    assert raw.licence == "CC BY 4.0" and len(raw.extra["feature_names"]) == 7
    std = pmp.datasets.load_seeds(standardised=True)
    assert std.data.shape == (210, 7) and np.array_equal(std.target, raw.target)
    # seed.csv is the UCI file's features standardised with ddof = 0, same rows
    expect = (raw.data - raw.data.mean(0)) / raw.data.std(0)
    np.testing.assert_allclose(std.data, expect, atol=1e-12)


@needs_data
def test_gene(no_network):
    d = pmp.datasets.load_gene()
    assert d.data.shape == (200, 50) and d.target is None
    np.testing.assert_allclose(d.data.mean(0), 0.0, atol=1e-6)
    assert d.extra["feature_names"][0] == "V1" and len(d.extra["feature_names"]) == 50


def _check_simple_graph(a, n):
    assert a.shape == (n, n) and a.dtype == np.int64
    assert np.array_equal(a, a.T) and not np.diag(a).any() and set(np.unique(a)) <= {0, 1}


@needs_data
def test_graphs(no_network):
    octa = pmp.datasets.load_octahedron()
    _check_simple_graph(octa.data, 6)
    assert np.all(octa.data.sum(1) == 4) and octa.extra["edges"].shape == (12, 2)
    nips = pmp.datasets.load_nips234()
    _check_simple_graph(nips.data, 234)
    assert nips.data.sum() // 2 == 598
    usair = pmp.datasets.load_usair97()
    _check_simple_graph(usair.data, 332)
    assert usair.data.sum() // 2 == 2126 and usair.extra["names"][1] == "Deadhorse"
    w = pmp.datasets.load_usair97(weighted=True).data
    assert w.shape == (332, 332) and np.array_equal(w, w.T)
    assert np.array_equal(w > 0, usair.data > 0)
    directed = pmp.datasets.load_usair97(symmetrise=False).data
    assert directed.sum() == 2126 and not np.array_equal(directed, directed.T)
    hag = pmp.datasets.load_hagmann()
    _check_simple_graph(hag.data, 998)
    assert hag.data.sum() // 2 == 17865 and int((hag.data.sum(1) == 0).sum()) == 9
    assert hag.extra["edges"].shape == (17865, 2) and hag.extra["weights"].min() > 0
    upper = pmp.datasets.load_hagmann(symmetrise=False).data
    assert upper.sum() == 17865 and not np.tril(upper).any()
    sparse = pmp.datasets.load_hagmann(threshold=0.5).data
    assert sparse.sum() // 2 == int((hag.extra["weights"] > 0.5).sum())


@needs_data
def test_rankings(no_network):
    ranks = pmp.datasets.load_apa_rankings()
    assert ranks.data.shape == (5738, 5)
    assert np.all(np.sort(ranks.data, axis=1) == np.arange(1, 6))  # each row a permutation
    # Published facts the rank representation must reproduce (Diaconis's numbering,
    # column c = candidate c + 1): candidate 3, the winner, has the most first choices
    # among complete ballots (1609); the Hare count (eliminate the fewest first
    # choices) elects candidate 3. Reading the file's rows as ranks gave candidate 2.
    assert np.bincount(np.argmax(ranks.data == 1, axis=1)).tolist() == [1053, 775, 1609, 1172, 1129]
    alive = list(range(5))
    while len(alive) > 1:
        sub = ranks.data[:, alive]
        first = np.bincount(np.argmin(sub, axis=1), minlength=len(alive))
        alive.pop(int(np.argmin(first)))
    assert alive == [2]
    top = pmp.datasets.load_apa_top_orderings()
    assert top.data.shape == (15449, 5)
    lengths, counts = np.unique(top.extra["lengths"], return_counts=True)
    assert np.array_equal(lengths, [1, 2, 3, 5])
    assert np.array_equal(counts, [5141, 2462, 2108, 5738])
    for row, t in zip(top.data, top.extra["lengths"]):  # ranked candidates first, distinct
        assert np.all(row[t:] == 0) and len(set(row[:t])) == t


@needs_data
def test_motifs(no_network):
    js = pmp.datasets.load_jaspar_motifs()
    tsv = pmp.datasets.load_jaspar_motifs(format="tsv")
    assert js.data.shape == (90, 4, 8) and js.data.dtype == np.int64
    assert np.array_equal(js.data, tsv.data) and js.extra["matrix_id"] == tsv.extra["matrix_id"]
    assert js.extra["matrix_id"][0] == "MA0008.1" and js.data[0, :, 0].tolist() == [3, 13, 4, 5]
    with pytest.raises(ValueError, match="format"):
        pmp.datasets.load_jaspar_motifs(format="xml")


# ------------------------------------------------------------------ missing files, downloads
def test_missing_file_no_network_is_clear(tmp_path, monkeypatch):
    def offline(*args, **kwargs):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    with pytest.raises(pmp.datasets.DataNotFoundError) as err:
        pmp.datasets.load_nips234(data_dir=tmp_path)
    msg = str(err.value)
    assert isinstance(err.value, FileNotFoundError)
    assert "networks/NIPS234.csv" in msg and str(tmp_path) in msg
    assert "PMP_DATA_DIR" in msg and "data_dir" in msg and "no network" in msg
    assert not any(tmp_path.rglob("*.csv*"))  # nothing half-written


def test_missing_file_download_disabled(tmp_path, no_network):
    with pytest.raises(pmp.datasets.DataNotFoundError, match="download=False"):
        pmp.datasets.load_seeds(data_dir=tmp_path, download=False)
    with pytest.raises(pmp.datasets.DataNotFoundError, match="download=False"):
        pmp.datasets.load_octahedron(data_dir=tmp_path, download=False)


def test_derived_file_is_not_downloaded(tmp_path, no_network):
    with pytest.raises(pmp.datasets.DataNotFoundError, match="derived") as err:
        pmp.datasets.load_hagmann(data_dir=tmp_path)
    assert "connectivity_998.zip" in str(err.value)


def test_env_var_and_default_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PMP_DATA_DIR", str(tmp_path / "env"))
    assert loaders.get_data_dir() == tmp_path / "env"
    assert loaders.get_data_dir(tmp_path / "arg") == tmp_path / "arg"
    monkeypatch.delenv("PMP_DATA_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert loaders.get_data_dir() == tmp_path / "xdg" / "pymc-partitions"


def test_octahedron_generated_when_absent(tmp_path, no_network):
    d = pmp.datasets.load_octahedron(data_dir=tmp_path)
    path = tmp_path / loaders.FILES["octahedron"].path
    assert path.is_file() and d.paths == (path,)
    loaders.verify(path, loaders.FILES["octahedron"])
    assert np.array_equal(d.data.sum(1), np.full(6, 4))


@needs_data
def test_download_verifies_then_renames(tmp_path, monkeypatch):
    info = loaders.FILES["seeds_uci"]
    payload = (Path(DATA_DIR) / info.path).read_bytes()
    calls = []

    def serve(url, timeout=None):
        calls.append(url)
        return io.BytesIO(payload)

    monkeypatch.setattr(urllib.request, "urlopen", serve)
    d = pmp.datasets.load_seeds(data_dir=tmp_path)
    assert calls == [info.urls[0]] and d.data.shape == (210, 7)
    assert (tmp_path / info.path).read_bytes() == payload

    # the publisher unreachable: the mirror serves the same file
    def mirror_only(url, timeout=None):
        if url == info.urls[0]:
            raise urllib.error.URLError("publisher down")
        return io.BytesIO(payload)

    monkeypatch.setattr(urllib.request, "urlopen", mirror_only)
    assert pmp.datasets.load_seeds(data_dir=tmp_path / "mirror").data.shape == (210, 7)

    # a corrupted download raises and leaves nothing under the final name
    monkeypatch.setattr(
        urllib.request, "urlopen", lambda url, timeout=None: io.BytesIO(payload[:-1])
    )
    other = tmp_path / "other"
    with pytest.raises(pmp.datasets.ChecksumError, match="sha256"):
        pmp.datasets.load_seeds(data_dir=other)
    assert not any(other.rglob("*seeds*"))


def test_corrupted_local_file_raises(tmp_path, no_network):
    path = tmp_path / loaders.FILES["octahedron"].path
    path.parent.mkdir(parents=True)
    path.write_text("0 1\n")
    with pytest.raises(pmp.datasets.ChecksumError, match="expected 48 bytes"):
        pmp.datasets.load_octahedron(data_dir=tmp_path)


# ------------------------------------------------------------------ generators
def test_jain_neal_table_and_shapes():
    probs = gen.jain_neal_probabilities(10)
    assert probs.shape == (5, 10)
    assert np.all(probs[:, 4:] == probs[:, [4]])  # columns 5..d copy column 5
    # Herlau et al. Table 1 (d = 6), row 3: .95 .05 .05 .95 .95 .95
    assert probs[2, :6].tolist() == [0.95, 0.05, 0.05, 0.95, 0.95, 0.95]
    for d in (6, 8, 10, 15, 18):
        X, labels = gen.jain_neal_bernoulli(d, seed=0)
        assert X.shape == (100, d) and X.dtype == np.int64 and set(np.unique(X)) <= {0, 1}
        assert np.array_equal(labels, np.repeat(np.arange(5), 20))
    X, _ = gen.pbc_bernoulli(seed=3)
    assert X.shape == (100, 15)
    with pytest.raises(ValueError, match="'d' must be an integer >= 5"):
        gen.jain_neal_bernoulli(4)


def test_jain_neal_frequencies():
    n = 20_000
    X, labels = gen.jain_neal_bernoulli(8, n_per_component=n, seed=1)
    freq = np.stack([X[labels == k].mean(0) for k in range(5)])
    sd = np.sqrt(0.95 * 0.05 / n)
    assert np.max(np.abs(freq - gen.jain_neal_probabilities(8))) < 5 * sd


def test_generators_reproducible():
    calls = [
        lambda s: gen.jain_neal_bernoulli(6, seed=s),
        lambda s: gen.pbc_normal(seed=s),
        lambda s: gen.nguyen_synthetic(50, seed=s),
        lambda s: gen.nguyen_gmm_1d(50, seed=s)[:2],
        lambda s: gen.planted_partition([5, 6], 0.8, 0.1, seed=s),
        lambda s: (gen.erdos_renyi_graph(12, 0.3, seed=s),),
        lambda s: (gen.random_regular_graph(8, 3, seed=s),),
    ]
    for call in calls:
        a, b, c = call(7), call(7), call(np.random.default_rng(7))
        for x, y, z in zip(a, b, c):
            assert np.array_equal(x, y) and np.array_equal(x, z)
        assert any(not np.array_equal(x, y) for x, y in zip(call(7), call(8)))


def test_nguyen_synthetic_matches_paper_recipe():
    X, labels = gen.nguyen_synthetic(300, seed=0)
    rng = np.random.default_rng(0)  # the recipe of App. G.3, spelled out
    comp = rng.integers(0, 4, 300)
    expect = gen.NGUYEN_CENTRES[comp] + rng.normal(0.0, 0.5, size=(300, 2))
    assert np.array_equal(X, expect) and np.array_equal(labels, pmp.canonicalize(comp))
    big, big_labels = gen.nguyen_synthetic(40_000, seed=1)
    assert abs(big.std(0) - np.sqrt(0.64 + 0.25)).max() < 0.02
    assert np.allclose(np.bincount(big_labels) / 40_000, 0.25, atol=0.01)


def test_pbc_normal_and_gmm_1d():
    X, labels = gen.pbc_normal(seed=2)
    assert X.shape == (200, 2) and np.array_equal(np.bincount(labels), [40] * 5)
    within = np.concatenate([X[labels == k] - X[labels == k].mean(0) for k in range(5)])
    assert abs(within.var() - 1.0) < 0.15  # sigma^2 = 1 (200 points)
    x, lab, truth = gen.nguyen_gmm_1d(5000, seed=3)
    assert x.shape == (5000,) and lab.shape == (5000,) and truth["weights"].shape == (10,)
    assert np.isclose(truth["weights"].sum(), 1.0)


def test_planted_partition():
    A, labels = gen.planted_partition([150, 150], 0.3, 0.05, seed=4)
    _check_simple_graph(A, 300)
    same = labels[:, None] == labels[None, :]
    iu = np.triu_indices(300, 1)
    p_in, p_out = A[iu][same[iu]].mean(), A[iu][~same[iu]].mean()
    n_in, n_out = same[iu].sum(), (~same[iu]).sum()
    assert abs(p_in - 0.3) < 5 * np.sqrt(0.3 * 0.7 / n_in)
    assert abs(p_out - 0.05) < 5 * np.sqrt(0.05 * 0.95 / n_out)
    with pytest.raises(ValueError, match="p_in"):
        gen.planted_partition([3, 3], 1.5, 0.1)


def test_erdos_renyi():
    A = gen.erdos_renyi_graph(200, 0.2, seed=5)
    _check_simple_graph(A, 200)
    m = 200 * 199 / 2
    assert abs(A.sum() / 2 / m - 0.2) < 5 * np.sqrt(0.2 * 0.8 / m)
    assert np.array_equal(gen.edges_from_adjacency(A).shape, (A.sum() // 2, 2))


def test_random_regular_graph_is_uniform():
    # 4-regular graphs on 6 labelled nodes: K6 minus one of the 15 perfect matchings.
    A = gen.random_regular_graph(6, 4, seed=6)
    _check_simple_graph(A, 6)
    assert np.all(A.sum(1) == 4)
    rng = np.random.default_rng(7)
    draws = 1500
    counts = {}
    for _ in range(draws):
        A = gen.random_regular_graph(6, 4, seed=rng)
        missing = tuple((i, j) for i, j in combinations(range(6), 2) if not A[i, j])
        counts[missing] = counts.get(missing, 0) + 1
    assert len(counts) == 15
    expected = draws / 15
    chi2 = sum((c - expected) ** 2 / expected for c in counts.values())
    assert chi2 < 36.1  # chi-square, 14 d.o.f., p = 0.001
    A = gen.random_regular_graph(30, 3, seed=8)
    assert np.all(A.sum(1) == 3)
    with pytest.raises(ValueError, match="n \\* k even"):
        gen.random_regular_graph(5, 3)
