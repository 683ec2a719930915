r"""Slice-Gibbs for Dirichlet-process mixtures of Generalized Mallows models (numba).

Meilă & Chen (2010), Figure 1, with explicit cluster parameters (sigma_c, theta_c)
per slot. Conventions of :mod:`pymc_partitions.kernels.mallows` (orderings, PAD,
stages j = 0..T-1 with m = n - 1 - j, the R_j counts). A chain's state is, for a
capacity of C slots: ``labels`` (N,) slot of each ranking; ``sizes`` (C,);
``counts`` (C, T, n, n) and ``n_at_least`` (C, T) (the R_j and N_j of each slot,
updated incrementally); ``sigma`` and ``pos`` (C, n) (central permutation and its
inverse); ``theta`` (C, T); a stack of free slots ``free`` (C,) with its height
``n_free`` (1,).

Exact draws used here:

- :func:`theta_exact_draw`: theta with density proportional to
  exp(-a theta) psi_m(theta)^(-c) (a > 0, c >= 0) by rejection from the
  Exponential(a) proposal, accepted with probability psi_m(theta)^(-c) <= 1
  (psi_m >= 1 for theta >= 0): an exact draw (the prior of theta_j is c = nu,
  a = nu r_j; its posterior given rankings c = nu + N_j, a = nu r_j + S_j).
- :func:`new_cluster_draw`: (sigma, theta) from P0(. | pi), the posterior given one
  top-t ordering pi. For fixed pi, the codes V_j(pi | sigma), j = 1..t, of a uniform
  sigma are independent and uniform on 0..n-j, each code vector having (n - t)!
  permutations (Lemma 1). So, theta integrated out, P(V_j = v | pi) is proportional
  to B~(nu r_j + v, nu + 2, n - j) (eq. 14) independently over j (tabulated once,
  ``log_bt1``), sigma is uniform among the permutations with those codes (place
  pi(j) at the (V_j + 1)-th still free position, then the unranked items in uniformly
  random order: Figure 4's construction, with the exact B~ in place of the Beta
  function), and theta_j | sigma, pi has density proportional to
  exp(-theta (nu r_j + V_j)) psi_{n-j}(theta)^(-(nu + 1)) (stages beyond t: the prior).
- :func:`theta_slice`: one univariate slice-sampling update (Neal 2003: stepping
  out, at most ``max_steps`` intervals of width w, then shrinkage) of theta_j from
  exp(-a theta) psi_m(theta)^(-c) on theta > 0 (the interval is clipped at 0, where
  the density is zero outside): leaves that law invariant (Figure 3).
"""

import math
from typing import NamedTuple

import numpy as np

from pymc_partitions.kernels._jit import entry, primitive
from pymc_partitions.kernels.mallows import (
    add_ranking,
    gm_energy,
    log_psi,
    log_psi_cumulative,
    positions,
    remove_ranking,
    sigma_update,
    stage_statistics,
    weighted_counts,
)
from pymc_partitions.kernels.random import bounded, shuffle, uniform

#: Rejection sampling of theta gives up (returns -1.0) after this many proposals.
MAX_REJECTIONS = 10_000_000


# ---------------------------------------------------------------------- the records
# The explicit-parameter component's records (DESIGN §8): its constant inputs, the
# partition in slot form, and per slot the sufficient statistics with the block
# parameters (sigma_c, theta_c) beside them. Plain NumPy: the entries below take their
# fields as arrays, so these records add no compiled signature.


class MallowsData(NamedTuple):
    """Constant inputs: ``orderings`` (N, w) int64 (PAD-padded, best first),
    ``lengths`` (N,) int64 (t_i), ``n_items`` int (n), ``nu`` float, ``r`` (T,) float64."""

    orderings: np.ndarray
    lengths: np.ndarray
    n_items: int
    nu: float
    r: np.ndarray


class MallowsSlots(NamedTuple):
    """The partition in slot form, capacity C: ``labels`` (N,) int64 slot of each
    ranking, ``sizes`` (C,) int64, ``free`` (C,) int64 stack of free slots with its
    height ``n_free`` (1,) int64."""

    labels: np.ndarray
    sizes: np.ndarray
    free: np.ndarray
    n_free: np.ndarray


class MallowsStats(NamedTuple):
    """Per slot (capacity C): the statistics ``counts`` (C, T, n, n) int64 (R_j) and
    ``n_at_least`` (C, T) int64 (N_j); the block parameters ``sigma``, ``pos`` (C, n)
    int64 (central permutation, its inverse) and ``theta`` (C, T) float64; for
    Beta-Gibbs (theta integrated out of the reassignment, ``mallows_beta``) ``sums``
    (C, T) int64 (S_j), ``log_pred`` (C, T, n) float64 (V_j's predictive table) and
    ``member`` (C,) int64, else arrays of C rows and no other extent."""

    counts: np.ndarray
    n_at_least: np.ndarray
    sigma: np.ndarray
    pos: np.ndarray
    theta: np.ndarray
    sums: np.ndarray
    log_pred: np.ndarray
    member: np.ndarray


def alloc_slots(labels, capacity):
    """:class:`MallowsSlots` of ``capacity`` slots holding the canonical ``labels``
    (N,) int64 in slots 0..K-1 (no statistics: :func:`alloc_stats`, then
    :func:`~pymc_partitions.kernels.mallows.add_ranking` per ranking)."""
    K = int(labels.max()) + 1
    sizes = np.zeros(capacity, dtype=np.int64)
    sizes[:K] = np.bincount(labels, minlength=K)
    free = np.zeros(capacity, dtype=np.int64)
    stack = np.arange(capacity - 1, K - 1, -1, dtype=np.int64)
    free[: stack.size] = stack
    return MallowsSlots(labels.astype(np.int64).copy(), sizes, free,
                        np.array([stack.size], dtype=np.int64))


def alloc_stats(capacity, n, T, beta):
    """Empty :class:`MallowsStats` of ``capacity`` slots (theta 1.0), with the
    Beta-Gibbs fields if ``beta``."""
    B = capacity if beta else 0
    return MallowsStats(
        np.zeros((capacity, T, n, n), dtype=np.int64), np.zeros((capacity, T), dtype=np.int64),
        np.zeros((capacity, n), dtype=np.int64), np.zeros((capacity, n), dtype=np.int64),
        np.ones((capacity, T)), np.zeros((B, T), dtype=np.int64), np.zeros((B, T, n)),
        np.zeros(B, dtype=np.int64))


def grow(slots, stats, capacity):
    """``(slots, stats)`` with ``capacity`` slots, the old ones copied into the first
    rows and the new ones pushed on the free stack (highest slot deepest)."""
    old = slots.sizes.shape[0]
    beta = stats.member.shape[0] > 0
    new_stats = alloc_stats(capacity, stats.sigma.shape[1], stats.theta.shape[1], beta)
    for dst, src in zip(new_stats, stats):
        dst[: src.shape[0]] = src
    sizes = np.zeros(capacity, dtype=np.int64)
    sizes[:old] = slots.sizes
    free = np.zeros(capacity, dtype=np.int64)
    free[:old] = slots.free
    nf = int(slots.n_free[0])
    added = np.arange(capacity - 1, old - 1, -1, dtype=np.int64)
    free[nf: nf + added.size] = added
    n_free = np.array([nf + added.size], dtype=np.int64)
    return MallowsSlots(slots.labels, sizes, free, n_free), new_stats


@primitive
def log_theta_density(theta, a, c, m):
    """log of exp(-a theta) psi_m(theta)^(-c), theta >= 0."""
    return -a * theta - c * log_psi(m, theta)


@primitive
def theta_exact_draw(a, c, m, stream):
    """An exact draw of theta > 0 with density proportional to
    exp(-a theta) psi_m(theta)^(-c) (a > 0, c >= 0, m >= 0): Exponential(a)
    proposals accepted with probability psi_m(theta)^(-c). Returns -1.0 if
    :data:`MAX_REJECTIONS` proposals were all rejected."""
    for _ in range(MAX_REJECTIONS):
        theta = -math.log1p(-uniform(stream)) / a
        if c == 0.0 or m == 0:
            return theta
        if math.log1p(-uniform(stream)) < -c * log_psi(m, theta):
            return theta
    return -1.0


@primitive
def theta_slice(theta, a, c, m, w, max_steps, stream):
    """One slice-sampling update of theta (Neal 2003, stepping out and shrinkage)
    leaving exp(-a theta) psi_m(theta)^(-c) on theta > 0 invariant."""
    log_y = log_theta_density(theta, a, c, m) + math.log1p(-uniform(stream))
    left = theta - w * uniform(stream)
    right = left + w
    j = math.floor(max_steps * uniform(stream))
    k = max_steps - 1 - j
    while j > 0 and left > 0.0 and log_theta_density(left, a, c, m) > log_y:
        left -= w
        j -= 1
    while k > 0 and log_theta_density(right, a, c, m) > log_y:
        right += w
        k -= 1
    left = max(left, 0.0)
    while True:
        proposal = left + uniform(stream) * (right - left)
        if proposal > 0.0 and log_theta_density(proposal, a, c, m) > log_y:
            return proposal
        if proposal < theta:
            left = proposal
        else:
            right = proposal


@primitive
def _categorical(log_w, count, stream):
    top = -np.inf
    for q in range(count):
        top = max(top, log_w[q])
    if not top > -np.inf:
        return -1
    total = 0.0
    for q in range(count):
        total += math.exp(log_w[q] - top)
    u = uniform(stream) * total
    for q in range(count):
        u -= math.exp(log_w[q] - top)
        if u < 0.0:
            return q
    return count - 1


@primitive
def new_cluster_draw(ordering, length, nu, r, log_bt1, stream, sigma, pos, theta, taken,
                     placed, rest):
    """(sigma, theta) drawn exactly from P0(. | pi) for one top-t ordering pi (module
    docstring). ordering (w,) int64, length t; nu float; r (T,) float64; log_bt1
    (T, n) float64, ``log_bt1[j, v]`` = log B~(nu r_j + v, nu + 2, n - 1 - j) for
    v <= n - 1 - j; outputs sigma, pos (n,) int64 and theta (T,) float64; scratch
    taken, placed (n,) bool and rest (n,) int64. Returns False if a theta draw
    failed (:func:`theta_exact_draw`)."""
    n = sigma.shape[0]
    stages_all = theta.shape[0]
    for p in range(n):
        taken[p] = False
        placed[p] = False
    stages = min(length, n - 1)
    ok = True
    for j in range(stages):
        m = n - 1 - j
        v = _categorical(log_bt1[j], m + 1, stream)
        th = theta_exact_draw(nu * r[j] + v, nu + 1.0, m, stream)
        if th < 0.0:
            ok = False
        theta[j] = th
        item = ordering[j]
        count = -1
        for p in range(n):
            if not taken[p]:
                count += 1
                if count == v:
                    taken[p] = True
                    sigma[p] = item
                    placed[item] = True
                    break
    for j in range(stages, stages_all):
        th = theta_exact_draw(nu * r[j], nu, n - 1 - j, stream)
        if th < 0.0:
            ok = False
        theta[j] = th
    count = 0
    for item in range(n):
        if not placed[item]:
            rest[count] = item
            count += 1
    for a in range(count - 1, 0, -1):  # Fisher-Yates
        b = bounded(stream, a + 1)
        tmp = rest[a]
        rest[a] = rest[b]
        rest[b] = tmp
    q = 0
    for p in range(n):
        if not taken[p]:
            sigma[p] = rest[q]
            q += 1
    positions(sigma, pos)
    return ok


@entry
def reassign_items(orderings, lengths, labels, sizes, counts, n_at_least, sigma, pos, theta,
                   free, n_free, order, start, log_alpha, log_new, nu, r, log_bt1, stream,
                   log_w, cand, tree, codes, taken, placed, rest, log_psi_cum, status):
    """Figure 1, step 1 (Neal 2000's Algorithm 2): rankings ``order[start:]`` in turn
    leave their slot (an emptied slot and its parameters are discarded) and join
    occupied slot c with probability proportional to n_{-i,c} GM(pi_i | sigma_c,
    theta_c) or a new slot with probability proportional to alpha (n - t_i)!/n!
    (``log_alpha + log_new[i]``); a new slot's (sigma, theta) are drawn from
    P0(. | pi_i) (:func:`new_cluster_draw`).

    When ``start`` is 0 the order is first shuffled (uniformly, from ``stream``).
    Returns -1 when done, or the position p in ``order`` at which no free slot
    was left (nothing of ranking order[p] changed): the caller grows the arrays and
    calls again with start = p. ``status`` (1,) int64 is set to 1 if a theta
    draw failed. Scratch: log_w, cand (C + 1,); tree (n + 1,) zero; codes (w,);
    taken, placed (n,) bool; rest (n,) int64; log_psi_cum (C, w + 1) float64.

    A weight is ``gm_energy`` minus the cluster's tabulated normaliser
    ``log_psi_cum[c, t_i]`` (:func:`log_psi_cumulative`): theta changes only when a
    slot opens, so the t transcendental normalisers are not recomputed per ranking.
    """
    capacity = sizes.shape[0]
    n = pos.shape[1]
    for c in range(capacity):
        if sizes[c] > 0:
            log_psi_cumulative(theta[c], n, log_psi_cum[c])
    if start == 0:  # a fresh uniformly random order for this sweep
        shuffle(stream, order, order.shape[0])
    for p in range(start, orderings.shape[0]):
        if n_free[0] == 0:
            return p
        i = order[p]
        k = labels[i]
        t = lengths[i]
        remove_ranking(counts, n_at_least, orderings[i], t, k)
        sizes[k] -= 1
        if sizes[k] == 0:
            free[n_free[0]] = k
            n_free[0] += 1
        count = 0
        for c in range(capacity):
            if sizes[c] > 0:
                cand[count] = c
                log_w[count] = (math.log(sizes[c]) + gm_energy(orderings[i], t, pos[c],
                                                              theta[c], tree, codes)
                                - log_psi_cum[c, t])
                count += 1
        cand[count] = -1
        log_w[count] = log_alpha + log_new[i]
        count += 1
        q = _categorical(log_w, count, stream)
        c = cand[q]
        if c < 0:
            n_free[0] -= 1
            c = free[n_free[0]]
            if not new_cluster_draw(orderings[i], t, nu, r, log_bt1, stream, sigma[c], pos[c],
                                    theta[c], taken, placed, rest):
                status[0] = 1
            log_psi_cumulative(theta[c], n, log_psi_cum[c])
        add_ranking(counts, n_at_least, orderings[i], t, c)
        sizes[c] += 1
        labels[i] = c
    return -1


@entry
def update_parameters(sizes, counts, n_at_least, sigma, pos, theta, nu, r, n_gibbs, n_slices,
                      width, max_steps, stream, weights, proposal, proposal_pos, alive, colsum,
                      sums):
    """Figure 1, step 2: for every occupied slot, ``n_gibbs`` times: sigma_c by one
    exact Metropolis-Hastings step with the Sample-sigma-Stagewise proposal and a sweep
    of insertion Gibbs moves (:func:`~pymc_partitions.kernels.mallows.sigma_update`),
    then each
    theta_{c,j} by ``n_slices`` slice updates of its conditional, proportional to
    exp(-theta (nu r_j + S_j(sigma_c))) psi_{n-j}(theta)^(-(nu + N_j)).
    Returns the number of accepted sigma proposals. Scratch: weights (n, n);
    proposal, proposal_pos (n,) int64; alive (n,) bool; colsum (n,); sums (T,) int64.
    """
    n = sigma.shape[1]
    stages = theta.shape[1]
    accepted = 0
    for c in range(sizes.shape[0]):
        if sizes[c] == 0:
            continue
        for _ in range(n_gibbs):
            weighted_counts(counts[c], theta[c], weights)
            accepted += sigma_update(weights, sigma[c], pos[c], stream, proposal,
                                     proposal_pos, alive, colsum)
            stage_statistics(counts[c], pos[c], sums)
            for j in range(stages):
                a = nu * r[j] + sums[j]
                e = nu + n_at_least[c, j]
                for _s in range(n_slices):
                    theta[c, j] = theta_slice(theta[c, j], a, e, n - 1 - j, width, max_steps,
                                              stream)
    return accepted


@entry
def prior_parameters(sizes, sigma, pos, theta, nu, r, stream):
    """Draw every occupied slot's (sigma, theta) from the prior P0: sigma uniform,
    theta_j exactly (:func:`theta_exact_draw`). Returns False if a draw failed."""
    n = sigma.shape[1]
    ok = True
    for c in range(sizes.shape[0]):
        if sizes[c] == 0:
            continue
        for p in range(n):
            sigma[c, p] = p
        for a in range(n - 1, 0, -1):
            b = bounded(stream, a + 1)
            tmp = sigma[c, a]
            sigma[c, a] = sigma[c, b]
            sigma[c, b] = tmp
        positions(sigma[c], pos[c])
        for j in range(theta.shape[1]):
            th = theta_exact_draw(nu * r[j], nu, n - 1 - j, stream)
            if th < 0.0:
                ok = False
            theta[c, j] = th
    return ok


@entry
def explicit_log_likelihood(sizes, counts, n_at_least, pos, theta, nu, r, log_prior_norm, sums):
    """Sum over occupied slots of log P0(sigma_c, theta_c) + sum of log GM of their
    rankings (from the statistics, O(K T n^2)). log_prior_norm (T,) holds
    log B~(nu r_j, nu + 1, n - 1 - j); the uniform prior's -log n! is included."""
    n = pos.shape[1]
    total = 0.0
    log_nfact = math.lgamma(n + 1.0)
    for c in range(sizes.shape[0]):
        if sizes[c] == 0:
            continue
        stage_statistics(counts[c], pos[c], sums)
        total -= log_nfact
        for j in range(theta.shape[1]):
            th = theta[c, j]
            total += (-th * (sums[j] + nu * r[j]) - (nu + n_at_least[c, j]) * log_psi(n - 1 - j, th)
                      - log_prior_norm[j])
    return total
