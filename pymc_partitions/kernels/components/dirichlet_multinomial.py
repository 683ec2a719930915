r"""Collapsed product-Dirichlet-multinomial likelihood for count matrices (motif clustering).

Each item is a count matrix :math:`Y_i` of P positions by C categories (e.g. a DNA
motif, 8 positions by A, C, G, T) with position totals :math:`d_{ip} = \sum_c Y_{ipc}`.
Model (Goswami, Liu & Wong 2005, §7.2, eqs. 20-21), independently per block k and
position p:

.. math::

    \theta_{kp} \sim \mathrm{Dirichlet}(c_{p1}, \dots, c_{pC}), \qquad
    Y_{ip\cdot} \mid z_i = k \sim \mathrm{Multinomial}(d_{ip}, \theta_{kp}).

**The likelihood is of the count matrices, with multinomial coefficients** (eq. 20,
22); the coefficients do not depend on the partition, so the posterior over
partitions is the same as for the sequences, but the log density is a proper
probability of the observed counts given the totals. With the block's counts
:math:`X_{kpc}`, totals :math:`T_{kp} = \sum_c X_{kpc}` and :math:`A_p = \sum_c c_{pc}`,
the predictive of a new item is (eq. 23, with the coefficient)

.. math::

    \log p(Y_i \mid k) = \log\mathrm{coef}_i + \sum_p \Big[\log\Gamma(T_{kp} + A_p)
      - \log\Gamma(T_{kp} + d_{ip} + A_p)
      + \sum_{c:\,Y_{ipc} > 0} \log\Gamma(X_{kpc} + Y_{ipc} + c_{pc})
      - \log\Gamma(X_{kpc} + c_{pc})\Big],

:math:`\log\mathrm{coef}_i = \sum_p \log d_{ip}! - \sum_{p,c}\log Y_{ipc}!`. Each slot
caches :math:`\log\Gamma(X_{kpc} + c_{pc})` and :math:`\log\Gamma(T_{kp} + A_p)`; an
item's non-zero counts are CSR lists over the flat index p*C + c, so ``log_pred``
costs P + (non-zero counts of the item) ``lgamma`` calls per block: O(P C) at most.
``add``/``remove`` cost the same. The block's log marginal (eq. 22) is

.. math::

    \sum_{i \in k}\log\mathrm{coef}_i + \sum_p \Big[\log\Gamma(A_p) - \log\Gamma(T_{kp} + A_p)
      + \sum_c \log\Gamma(X_{kpc} + c_{pc}) - \log\Gamma(c_{pc})\Big].
"""

import math
from typing import NamedTuple

import numpy as np

from pymc_partitions.kernels._jit import primitive
from pymc_partitions.kernels.components.base import alloc_slots, register
from pymc_partitions.kernels.variates import log_gamma_variate


class DirichletMultinomialParams(NamedTuple):
    """conc (P, C) float64, Dirichlet concentrations per position (> 0);
    conc_sum (P,) float64, A_p = sum_c conc[p, c]."""

    conc: np.ndarray
    conc_sum: np.ndarray
    inv_t: float = 1.0  # 1/t: a tempered target (kernels/tempering.py)


class DirichletMultinomialStats(NamedTuple):
    """count (n,) int64; counts (n, P, C) float64 (exact integers); totals (n, P)
    float64; lg_counts (n, P, C) float64, log Gamma(X + c); lg_totals (n, P) float64,
    log Gamma(T + A); coef (n,) float64, sum of the items' log multinomial coefficients."""

    count: np.ndarray
    counts: np.ndarray
    totals: np.ndarray
    lg_counts: np.ndarray
    lg_totals: np.ndarray
    coef: np.ndarray


def make_params(conc, n=None):
    """Params from a (P, C) array of concentrations (``n`` is not needed)."""
    conc = np.ascontiguousarray(conc, dtype=np.float64)
    return DirichletMultinomialParams(conc, np.ascontiguousarray(conc.sum(axis=1)))


def make_data(y):
    """Data ``(y, totals, logcoef, indptr, indices)`` from an (N, P, C) count array.

    y : (N, P, C) float64; totals (N, P) float64; logcoef (N,) float64, the log
    multinomial coefficient of each item; indptr (N+1,) int64 and indices (nnz,)
    int64: CSR lists of each item's non-zero counts as flat indices p*C + c.
    """
    from scipy.special import gammaln  # on use: kernels import numba, NumPy only
    y = np.ascontiguousarray(y, dtype=np.float64)
    n_items = y.shape[0]
    totals = np.ascontiguousarray(y.sum(axis=2))
    logcoef = np.ascontiguousarray(
        gammaln(totals + 1.0).sum(axis=1) - gammaln(y + 1.0).sum(axis=(1, 2))
    )
    rows, cols = np.nonzero(y.reshape(n_items, -1))
    indptr = np.zeros(n_items + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n_items), out=indptr[1:])
    return (y, totals, logcoef, indptr, cols.astype(np.int64))


def alloc_stats(n_slots, n_positions, n_categories, params):
    pc, p = (n_positions, n_categories), (n_positions,)
    return alloc_slots(DirichletMultinomialStats, n_slots, pc, p, pc, p, (), params=params,
                       refresh=refresh)


@primitive
def refresh(params, stats, k):
    conc = params.conc
    for p in range(conc.shape[0]):
        stats.lg_totals[k, p] = math.lgamma(stats.totals[k, p] + params.conc_sum[p])
        for c in range(conc.shape[1]):
            stats.lg_counts[k, p, c] = math.lgamma(stats.counts[k, p, c] + conc[p, c])


@primitive
def log_pred(params, stats, data, i, k):
    y, totals, logcoef, indptr, indices = data[0], data[1], data[2], data[3], data[4]
    conc = params.conc
    n_cat = conc.shape[1]
    acc = logcoef[i]
    for p in range(conc.shape[0]):
        acc += stats.lg_totals[k, p] - math.lgamma(
            stats.totals[k, p] + totals[i, p] + params.conc_sum[p]
        )
    for q in range(indptr[i], indptr[i + 1]):
        p = indices[q] // n_cat
        c = indices[q] - p * n_cat
        x_kpc = stats.counts[k, p, c]
        acc += math.lgamma(x_kpc + y[i, p, c] + conc[p, c]) - stats.lg_counts[k, p, c]
    return acc


@primitive
def _move(params, stats, data, i, k, sign):
    y, totals, logcoef, indptr, indices = data[0], data[1], data[2], data[3], data[4]
    conc = params.conc
    n_cat = conc.shape[1]
    for p in range(conc.shape[0]):
        if totals[i, p] != 0.0:
            stats.totals[k, p] += sign * totals[i, p]  # integers: exact
            stats.lg_totals[k, p] = math.lgamma(stats.totals[k, p] + params.conc_sum[p])
    for q in range(indptr[i], indptr[i + 1]):
        p = indices[q] // n_cat
        c = indices[q] - p * n_cat
        stats.counts[k, p, c] += sign * y[i, p, c]
        stats.lg_counts[k, p, c] = math.lgamma(stats.counts[k, p, c] + conc[p, c])


@primitive
def add(params, stats, data, i, k):
    stats.count[k] += 1
    stats.coef[k] += data[2][i]
    _move(params, stats, data, i, k, 1.0)


@primitive
def remove(params, stats, data, i, k):
    stats.count[k] -= 1
    if stats.count[k] == 0:
        stats.coef[k] = 0.0  # exact reset: no rounding residue in an empty slot
    else:
        stats.coef[k] -= data[2][i]
    _move(params, stats, data, i, k, -1.0)


@primitive
def log_marginal(params, stats, k):
    if stats.count[k] == 0:
        return 0.0
    conc = params.conc
    acc = stats.coef[k]
    for p in range(conc.shape[0]):
        a = params.conc_sum[p]
        acc += math.lgamma(a) - math.lgamma(stats.totals[k, p] + a)
        for c in range(conc.shape[1]):
            acc += math.lgamma(stats.counts[k, p, c] + conc[p, c]) - math.lgamma(conc[p, c])
    return acc


# ---------------------------------------------------------------- explicit parameters
# (the sub-cluster sampler, kernels/subclusters.py; registered below, components/explicit.py)
# A block's explicit parameters are one row of a float64 array: log theta_pc at the
# flat index p*C + c (P*C entries), so an item's log density is its log multinomial
# coefficient plus sum over its non-zero counts of Y_ipc log theta_pc (as ``log_pred``,
# O(non-zero counts)).


@primitive
def explicit_width(params):
    """Float64 entries per block in an explicit-parameter row: P*C log probabilities."""
    return params.conc.shape[0] * params.conc.shape[1]


@primitive
def draw_explicit(params, stats, k, stream, theta, row):
    """Draw slot k's theta_p ~ Dirichlet(c_p + X_kp) for each position p (the conjugate
    posterior, Goswami, Liu & Wong 2005, §7.2; the prior for an empty slot) into
    ``theta[row]`` as log probabilities: normalised Gamma(c_pc + X_kpc) variates,
    on the log scale (no underflow for small concentrations)."""
    conc = params.conc
    n_cat = conc.shape[1]
    for p in range(conc.shape[0]):
        base = p * n_cat
        top = -np.inf
        for c in range(n_cat):
            lg = log_gamma_variate(stream, conc[p, c] + stats.counts[k, p, c])
            theta[row, base + c] = lg
            top = max(top, lg)
        total = 0.0
        for c in range(n_cat):
            total += math.exp(theta[row, base + c] - top)
        log_total = top + math.log(total)
        for c in range(n_cat):
            theta[row, base + c] -= log_total


@primitive
def log_density_explicit(params, theta, row, data, i):
    """log Multinomial(Y_i | d_i, theta), with the coefficient (as ``log_pred``)."""
    y, logcoef, indptr, indices = data[0], data[2], data[3], data[4]
    n_cat = params.conc.shape[1]
    acc = logcoef[i]
    for q in range(indptr[i], indptr[i + 1]):
        p = indices[q] // n_cat
        c = indices[q] - p * n_cat
        acc += y[i, p, c] * theta[row, indices[q]]
    return acc

register(
    DirichletMultinomialParams,
    log_pred=log_pred,
    add=add,
    remove=remove,
    refresh=refresh,
    log_marginal=log_marginal,
    explicit_width=explicit_width,
    draw_explicit=draw_explicit,
    log_density_explicit=log_density_explicit,
)
