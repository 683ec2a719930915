"""Plots of a partition's posterior (matplotlib, imported only when a plot is made).

Each function takes ``ax=`` (a matplotlib Axes; a new figure when None) and
returns the Axes, as ArviZ's plots do. Install the optional dependency with
``pip install "pymc-partitions[plots]"``.
"""

import numpy as np

from pymc_partitions.analysis._draws import read_draws
from pymc_partitions.analysis.point_estimates import n_blocks as count_blocks
from pymc_partitions.analysis.statistics import sorted_block_fractions
from pymc_partitions.partitions import canonicalize


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            'pymc_partitions.plots needs matplotlib: pip install "pymc-partitions[plots]"'
        ) from err
    return plt


def _axes(ax, figsize=(6.0, 4.0)):
    if ax is not None:
        return ax
    _, ax = _pyplot().subplots(figsize=figsize)
    return ax


def item_order(order, psm=None):
    """Item order that groups the blocks of the partition ``order`` (labels).

    Blocks by decreasing size; inside a block, items by decreasing mean similarity
    to their block when ``psm`` is given, else by index.
    """
    labels = canonicalize(np.asarray(order))
    sizes = np.bincount(labels)
    rank = np.argsort(-sizes, kind="stable")
    position = np.empty_like(rank)
    position[rank] = np.arange(rank.shape[0])
    within = np.zeros(labels.shape[0])
    if psm is not None:
        same = labels[:, None] == labels[None, :]
        within = -(np.where(same, psm, 0.0).sum(axis=1) / sizes[labels])
    return np.lexsort((np.arange(labels.shape[0]), within, position[labels]))


def plot_similarity_matrix(psm, order=None, ax=None, cmap="Greys", colorbar=True):
    """Heat map of a posterior similarity matrix.

    psm : (n, n) from :func:`pymc_partitions.similarity_matrix`.
    order : optional (n,) labels (e.g. ``point_estimate(...).labels``); items are
        then grouped by block, largest first, and block boundaries are drawn.
    """
    psm = np.asarray(psm)
    if psm.ndim != 2 or psm.shape[0] != psm.shape[1]:
        raise ValueError(f"'psm' must be a square (n, n) matrix; got shape {psm.shape}.")
    ax = _axes(ax, (5.5, 4.5))
    perm = np.arange(psm.shape[0])
    if order is not None:
        order = np.asarray(getattr(order, "labels", order))
        if order.shape != (psm.shape[0],):
            raise ValueError(
                f"'order' must be a label vector of length {psm.shape[0]}; got {order.shape}."
            )
        perm = item_order(order, psm)
    image = ax.imshow(psm[np.ix_(perm, perm)], cmap=cmap, vmin=0.0, vmax=1.0,
                      interpolation="nearest")
    if order is not None:
        sorted_labels = canonicalize(order)[perm]
        for edge in np.flatnonzero(np.diff(sorted_labels) != 0) + 0.5:
            ax.axhline(edge, color="tab:red", lw=0.6)
            ax.axvline(edge, color="tab:red", lw=0.6)
    ax.set_xlabel("item")
    ax.set_ylabel("item")
    ax.set_title("posterior similarity")
    if colorbar:
        ax.figure.colorbar(image, ax=ax, label="P(same block)")
    return ax


def plot_block_fractions(idata, var_name=None, n_fractions=5, ax=None):
    """Trace of the sorted block fractions (largest block's share, second, ...)
    against iteration, one colour per rank and one line per chain (as Jain & Neal
    2004 plot their samplers' progress)."""
    labels = read_draws(idata, var_name, keep_chains=True, owner="plot_block_fractions",
                        arg="idata")
    frac = sorted_block_fractions(labels, int(n_fractions))  # (chains, draws, r)
    ax = _axes(ax, (7.0, 3.5))
    colours = _pyplot().rcParams["axes.prop_cycle"].by_key()["color"]
    iterations = np.arange(frac.shape[1])
    for r in range(frac.shape[2]):
        for c in range(frac.shape[0]):
            ax.plot(iterations, frac[c, :, r], color=colours[r % len(colours)], lw=0.6,
                    alpha=0.7, label=f"block {r + 1}" if c == 0 else None)
    ax.set_xlabel("iteration")
    ax.set_ylabel("fraction of items")
    ax.set_ylim(0.0, 1.0)
    ax.legend(loc="upper right", fontsize="small", ncol=min(5, frac.shape[2]))
    return ax


def plot_n_blocks(idata, var_name=None, ax=None):
    """Posterior of the number of blocks, one bar series per chain."""
    labels = read_draws(idata, var_name, keep_chains=True, owner="plot_n_blocks", arg="idata")
    chains = labels.shape[0]
    k = count_blocks(labels.reshape(-1, labels.shape[-1])).reshape(chains, -1)
    values = np.arange(k.min(), k.max() + 1)
    ax = _axes(ax)
    width = 0.8 / chains
    for c in range(chains):
        share = np.array([(k[c] == v).mean() for v in values])
        ax.bar(values - 0.4 + width * (c + 0.5), share, width=width, label=f"chain {c}")
    ax.set_xlabel("number of blocks")
    ax.set_ylabel("posterior probability")
    ax.set_xticks(values)
    if chains > 1:
        ax.legend(fontsize="small")
    return ax


def plot_block_sizes(draws_or_idata, var_name=None, n_blocks=None, ax=None):
    """Distribution of the r-th largest block's size over the draws (box per rank)."""
    labels = read_draws(draws_or_idata, var_name, owner="plot_block_sizes")
    n = labels.shape[1]
    if n_blocks is None:
        n_blocks = int(min(10, labels.max() + 1))
    sizes = sorted_block_fractions(labels, int(n_blocks)) * n
    ax = _axes(ax)
    ax.boxplot([sizes[:, r] for r in range(sizes.shape[1])], showfliers=False)
    ax.set_xticks(np.arange(1, sizes.shape[1] + 1))
    ax.set_xlabel("block rank (largest first)")
    ax.set_ylabel("block size")
    return ax
