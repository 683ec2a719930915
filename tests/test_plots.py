"""Plots render to non-empty PNG files with the Agg backend."""

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import pymc_partitions as pmp  # noqa: E402


@pytest.fixture(scope="module")
def draws():
    rng = np.random.default_rng(0)
    truth = np.repeat([0, 1, 2], [12, 8, 5])
    out = np.tile(truth, (3, 120, 1))  # (chains, draws, n)
    noise = rng.random(out.shape) < 0.1
    out[noise] = rng.integers(0, 4, noise.sum())
    return pmp.canonicalize(out)


def rendered(ax, path):
    ax.figure.savefig(path, dpi=60)
    plt.close(ax.figure)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 2000
    image = plt.imread(path)
    assert image.std() > 0.01  # not a blank canvas


def test_plot_similarity_matrix(draws, tmp_path):
    psm = pmp.similarity_matrix(draws)
    est = pmp.point_estimate(draws, seed=0)
    ax = pmp.plots.plot_similarity_matrix(psm, order=est.labels)
    assert isinstance(ax, plt.Axes)
    rendered(ax, tmp_path / "psm.png")
    _, ax = plt.subplots()
    assert pmp.plots.plot_similarity_matrix(psm, ax=ax, colorbar=False) is ax
    rendered(ax, tmp_path / "psm_plain.png")
    with pytest.raises(ValueError, match="order"):
        pmp.plots.plot_similarity_matrix(psm, order=[0, 1])


def test_item_order_groups_blocks_largest_first():
    labels = np.array([1, 0, 1, 2, 1, 0])
    order = pmp.plots.item_order(labels)
    np.testing.assert_array_equal(labels[order], [1, 1, 1, 0, 0, 2])


def test_plot_block_fractions_n_blocks_and_sizes(draws, tmp_path):
    rendered(pmp.plots.plot_block_fractions(draws, n_fractions=3), tmp_path / "frac.png")
    rendered(pmp.plots.plot_n_blocks(draws), tmp_path / "k.png")
    rendered(pmp.plots.plot_block_sizes(draws), tmp_path / "sizes.png")
