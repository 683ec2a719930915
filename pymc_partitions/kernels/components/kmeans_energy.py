r"""K-means energy as a partition target (Goswami, Liu & Wong 2005, §7.3.1, eq. 24).

Not a likelihood: a Gibbs (Boltzmann) energy over partitions for fixed data,

.. math::

    \log g(z) = -\sum_d \frac{1}{T_d} \sum_k \sum_{i \in k} (x_{id} - \bar x_{kd})^2
    + \text{const},

the within-block sum of squares (the k-means objective) over a temperature
(eq. 24 has one temperature :math:`\tau_{min}` for all dimensions). Item x joining
a block of m items with mean :math:`\bar x` raises the block's sum of squares by
:math:`\frac{m}{m+1}\lVert x - \bar x\rVert^2` (0 for an empty block), so

.. math:: \text{log\_pred}(x, k) = -\frac{m}{m+1}\sum_d \frac{(x_d - \bar x_{kd})^2}{T_d},

O(D) per (item, block). Statistics are the block's size, mean and centred sum of
squares (:mod:`.welford`); ``log_marginal`` is :math:`-\sum_d M_{kd}/T_d`.
"""

from typing import NamedTuple

import numpy as np

from pymc_partitions.kernels._jit import primitive
from pymc_partitions.kernels.components.base import alloc_slots, register, row_data
from pymc_partitions.kernels.components.welford import welford_add, welford_remove


class KMeansEnergyParams(NamedTuple):
    """inv_temperature : (D,) float64, 1 / T_d (> 0)."""

    inv_temperature: np.ndarray
    inv_t: float = 1.0  # 1/t: a tempered target (kernels/tempering.py)


class KMeansEnergyStats(NamedTuple):
    """count (n,) int64; mean, m2 (n, D) float64: block mean and centred sum of squares."""

    count: np.ndarray
    mean: np.ndarray
    m2: np.ndarray


def make_params(temperature, n=None):
    """Params from a (D,) array of temperatures (> 0); ``n`` is not needed."""
    return KMeansEnergyParams(1.0 / np.ascontiguousarray(temperature, dtype=np.float64))


make_data = row_data  # (x,) from an (N, D) float array


def alloc_stats(n_slots, n_dims, params):
    """Statistics of ``n_slots`` empty slots (no caches)."""
    return alloc_slots(KMeansEnergyStats, n_slots, (n_dims,), (n_dims,))


@primitive
def refresh(params, stats, k):
    pass  # no cache depends on the temperature


@primitive
def log_pred(params, stats, data, i, k):
    m = stats.count[k]
    if m == 0:
        return 0.0
    x = data[0]
    acc = 0.0
    for d in range(x.shape[1]):
        r = x[i, d] - stats.mean[k, d]
        acc += params.inv_temperature[d] * r * r
    return -acc * m / (m + 1.0)


@primitive
def add(params, stats, data, i, k):
    stats.count[k] += 1
    welford_add(stats.mean, stats.m2, data[0], i, k, stats.count[k])


@primitive
def remove(params, stats, data, i, k):
    stats.count[k] -= 1
    welford_remove(stats.mean, stats.m2, data[0], i, k, stats.count[k])


@primitive
def log_marginal(params, stats, k):
    acc = 0.0
    for d in range(params.inv_temperature.shape[0]):
        acc -= params.inv_temperature[d] * stats.m2[k, d]
    return acc


register(
    KMeansEnergyParams,
    log_pred=log_pred,
    add=add,
    remove=remove,
    refresh=refresh,
    log_marginal=log_marginal,
)
