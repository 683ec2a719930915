"""Credible balls around a point estimate (Wade & Ghahramani 2018, §3.2).

With a distance d on partitions (VI or Binder), the credible ball of level
1 - alpha around the estimate c* is B(c*) = {c : d(c, c*) <= eps*}, with the
radius eps* the smallest eps such that P(d(Z, c*) <= eps | data) >= 1 - alpha.
Both are estimated from the draws: eps* is the ceil((1 - alpha) M)-th smallest
distance of a draw to c* (as ``credibleball`` in the R package mcclust.ext).

The ball is described by partitions in it with posterior support (the draws):

- upper vertical bound: of those with the fewest blocks, the ones farthest from c*;
- lower vertical bound: of those with the most blocks, the ones farthest from c*;
- horizontal bound: the ones farthest from c*.

Ties are kept: each bound is a list of distinct partitions (canonical labels).
Unlike mcclust.ext, every draw at distance exactly eps* is in the ball (mcclust.ext
keeps the first ceil((1 - alpha) M) draws in sort order, so which of several draws
tied at eps* enter depends on their order in the trace).
"""

import math
from typing import NamedTuple

import numpy as np

from pymc_partitions.analysis.distances import distance_function
from pymc_partitions.analysis.point_estimates import PointEstimate, _loss_name, draw_set, n_blocks
from pymc_partitions.distributions.validation import number_arg
from pymc_partitions.partitions import as_labels, canonicalize


class CredibleBall(NamedTuple):
    """Credible ball around a point estimate.

    estimate : (n,) canonical labels of the centre
    radius : float, eps* (VI in bits, Binder in discordant pairs)
    level : float, the credible level 1 - alpha
    loss : "VI" or "binder"
    upper_vertical, lower_vertical, horizontal : lists of (n,) int64 canonical label
        vectors (more than one when tied)
    upper_vertical_distance, lower_vertical_distance, horizontal_distance : floats,
        distance of each bound to the centre
    """

    estimate: np.ndarray
    radius: float
    level: float
    loss: str
    upper_vertical: list
    lower_vertical: list
    horizontal: list
    upper_vertical_distance: float
    lower_vertical_distance: float
    horizontal_distance: float


class _LazyCanonical:
    """Rows ``index`` of a label array (no copy), canonicalised when read (int64)."""

    def __init__(self, rows, index):
        self.rows, self.index = rows, index

    def __getitem__(self, t):
        return np.asarray(canonicalize(self.rows[self.index[t]]), dtype=np.int64)

    def __len__(self):
        return self.index.shape[0]


def _farthest(partitions, dist, tol, members=None):
    """Partitions (canonical) at the largest distance among ``members`` (indices; all
    by default), and that distance."""
    members = np.arange(len(partitions)) if members is None else np.asarray(members)
    top = dist[members].max()
    return [partitions[t] for t in members[dist[members] >= top - tol]], float(top)


def credible_ball(draws_or_idata, estimate, var_name=None, loss="VI", level=0.95):
    """Credible ball of a partition's posterior around ``estimate``.

    draws_or_idata : ``pm.sample`` result (with ``var_name``) or int labels of shape
        (draws, n) or (chains, draws, n).
    estimate : a :class:`PointEstimate` or an (n,) label vector.
    loss : "VI" (bits) or "binder" (number of discordant pairs).
    level : credible level in (0, 1], e.g. 0.95.
    Returns a :class:`CredibleBall`.
    """
    owner = "credible_ball"
    name, _ = _loss_name(loss, owner)
    level = number_arg("level", level, owner, low=0.0, low_open=True, high=1.0)
    ds = draw_set(draws_or_idata, var_name, owner)
    centre = estimate.labels if isinstance(estimate, PointEstimate) else estimate
    centre = as_labels(centre, "estimate", owner)
    if centre.shape != (ds.draws.shape[1],):
        raise ValueError(
            f"{owner}: 'estimate' must label the {ds.draws.shape[1]} items of the draws; "
            f"got shape {centre.shape}."
        )
    centre = canonicalize(centre)
    dist = np.asarray(distance_function(name)(ds.unique, centre), dtype=np.float64)
    order = np.argsort(dist, kind="stable")
    cumulative = np.cumsum(ds.weights[order])
    # smallest radius holding at least `level` of the draws (ceil(level M) of them)
    need = math.ceil(level * ds.n_draws - 1e-9 * ds.n_draws)
    radius = float(dist[order][np.searchsorted(cumulative, need - 0.5)])
    tol = 1e-10 * max(1.0, radius)
    inside = np.flatnonzero(dist <= radius + tol)
    # canonical labels only for the draws a bound returns (canonicalize sorts each row)
    partitions = _LazyCanonical(ds.unique, inside)
    d_in = dist[inside]
    k_in = n_blocks(ds.unique)[inside]
    fewest = k_in == k_in.min()
    most = k_in == k_in.max()
    upper, d_upper = _farthest(partitions, d_in, tol, np.flatnonzero(fewest))
    lower, d_lower = _farthest(partitions, d_in, tol, np.flatnonzero(most))
    horizontal, d_h = _farthest(partitions, d_in, tol)
    return CredibleBall(centre, radius, float(level), name, upper, lower, horizontal,
                        d_upper, d_lower, d_h)
