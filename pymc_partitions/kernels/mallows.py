r"""Generalized Mallows (GM) kernels for top-t orderings (Meilă & Bao 2008; Meilă & Chen 2010).

Conventions (shared with :mod:`pymc_partitions.distributions.mallows`, which
validates user input into this form):

- items are ``0 .. n-1``; a central permutation ``sigma`` is an (n,) int64 array,
  ``sigma[k]`` the item at position k (0 = first); ``pos`` is its inverse,
  ``pos[item]`` the item's position (:func:`positions`);
- a top-t ordering is a row of an (N, w) int64 array, w <= n: ``ordering[j]`` is the
  item ranked j-th (0-based ranks), for j < t; the rest of the row is
  :data:`PAD` (-1). ``lengths`` (N,) int64 holds each row's t >= 1;
- stages. The GM of a top-t ordering has one factor per rank j = 1..t (the paper's
  1-based j; index ``j - 1`` here). A top-(n-1) ordering is a complete one and its
  n-th stage is void (V_n = 0, psi_0 = 1), so a ranking of length t uses
  ``min(t, n - 1)`` stages; a cluster's parameters ``theta`` have ``T`` entries, T the
  number of stages of the longest ranking (T <= n - 1).

The model, for one ranking pi of length t given (sigma, theta):

.. math::

    V_j(\pi\mid\sigma) = \#\{l \notin \{\pi(1),\dots,\pi(j-1)\}:\ l \prec_\sigma \pi(j)\},
    \qquad 0 \le V_j \le n - j,

    GM(\pi \mid \sigma, \theta) = \exp\Big(-\sum_{j\le t} \theta_j V_j\Big) \Big/
    \prod_{j\le t} \psi_{n-j}(\theta_j), \qquad
    \psi_m(\theta) = \sum_{k=0}^{m} e^{-k\theta} = \frac{1 - e^{-(m+1)\theta}}{1 - e^{-\theta}}.

V_j is computed for all j <= t in O(t log n) with a Fenwick tree over the
positions of sigma (:func:`inversion_codes`): V_j = pos(pi(j)) minus the number of
earlier-ranked items placed before it.

Sufficient statistics of a cluster (the paper's R_j): for each stage j an (n, n)
count matrix, ``R[j, a, b]`` = number of the cluster's rankings with pi(j) = a and
b not among pi(1..j); then S_j(sigma) = sum of the cluster's V_j = sum of
``R[j, a, b]`` over pairs with b placed before a in sigma (:func:`stage_statistics`).
``N_j`` counts the rankings with at least j stages. Both are updated in O(t n) when
one ranking is added or removed (:func:`add_ranking` / :func:`remove_ranking`),
never recomputed from the members.

Sampling sigma given theta. With a uniform prior on sigma,
P(sigma | theta, R) is proportional to exp(-L_sigma(W)), W = sum_j theta_j R_j,
L_sigma(W) = sum over pairs (a, b) with b before a in sigma of W[a, b]
(:func:`log_sigma_target`). The paper's Sample-sigma-Stagewise (Figure 2) draws
the first item with probability proportional to exp(-column sum of W), deletes its
row and column, and repeats (:func:`stagewise_sample`). **It is exact only in
special cases** (e.g. a single ranking with all theta_j equal): the normaliser of
the remaining stages depends on the item chosen. For three items, one complete
ranking (0, 1, 2) and theta = (1, 0.2) it gives sigma = (0, 1, 2) probability
0.329 where the target gives 0.366 (``tests/test_mallows.py`` keeps this
counter-example). Sampling the target exactly is as hard as Kemeny aggregation in
general, so the exact move here uses the stagewise draw as an independence
Metropolis-Hastings proposal, whose probability :func:`stagewise_log_prob`
computes exactly: :func:`sigma_stagewise_mh` leaves P(sigma | theta, R) invariant.

An independence sampler alone does not mix at the sizes of real data (found on
Figure 6's data, N = 5000, n = 20): with hundreds of rankings the stagewise draw is
nearly deterministic, so a sigma it rarely proposes but the target does not rule out
has an enormous weight P/q, and a chain reaching one stays there for hundreds of
iterations while theta shrinks to fit it (clusters with the right members, their
sigma 23-35 inversions from the true centre, log joint 6800 nats below the truth's).
:func:`sigma_update` therefore follows each independence step by a sweep of exact
*insertion* Gibbs moves (:func:`sigma_insertion_sweep`): each item in turn is taken
out and put back at a position drawn from its conditional, a local move that the
independence proposal lacks. Both leave P(sigma | theta, R) invariant.

Randomness comes from an explicit stream (:mod:`pymc_partitions.kernels.random`).
All functions are allocation-free (scratch arrays are passed in).
"""

import math

import numpy as np

from pymc_partitions.kernels._jit import entry, primitive
from pymc_partitions.kernels.random import bounded, uniform

#: Padding value after the t ranked positions of a top-t ordering.
PAD = -1


# ------------------------------------------------------------------ basics
@primitive
def log_psi(m, theta):
    """log psi_m(theta) = log sum_{k=0}^{m} exp(-k theta), for an int m >= 0 and a
    float theta >= 0 (psi_{n-j} is the normaliser of stage j). Stable at theta -> 0
    (the limit log(m + 1)) and for large theta (-> 0)."""
    if m == 0:
        return 0.0
    if theta == 0.0:
        return math.log(m + 1.0)
    return math.log(-math.expm1(-(m + 1) * theta)) - math.log(-math.expm1(-theta))


@primitive
def positions(sigma, pos):
    """Fill ``pos`` (n,) int64 with the inverse of ``sigma`` (n,) int64:
    ``pos[sigma[k]] = k``."""
    for k in range(sigma.shape[0]):
        pos[sigma[k]] = k


@primitive
def n_stages(length, n):
    """Stages of a ranking of length t among n items: min(t, n - 1)."""
    return min(length, n - 1)


@primitive
def inversion_codes(ordering, length, pos, tree, out):
    """The codes V_j(pi | sigma), j = 1..length, of one top-t ordering.

    ordering : (w,) int64, the ranking (items, :data:`PAD` after ``length``);
    length : int, t >= 1; pos : (n,) int64, inverse of sigma (:func:`positions`);
    tree : (n + 1,) int64 scratch, all zero on entry and on return (a Fenwick tree
    over the positions of sigma); out : (>= length,) int64, ``out[j - 1] = V_j``.

    O(t log n): V_j = pos(pi(j)) - #{k < j : pos(pi(k)) < pos(pi(j))}.
    """
    n = pos.shape[0]
    for j in range(length):
        p = pos[ordering[j]]
        before = 0
        k = p
        while k > 0:
            before += tree[k]
            k -= k & (-k)
        out[j] = p - before
        k = p + 1
        while k <= n:
            tree[k] += 1
            k += k & (-k)
    for j in range(length):  # clear what was inserted
        k = pos[ordering[j]] + 1
        while k <= n:
            tree[k] -= 1
            k += k & (-k)


@primitive
def gm_energy(ordering, length, pos, theta, tree, codes):
    """-sum_j theta_j V_j(pi | sigma) over the stages j <= min(t, n - 1) of one top-t
    ordering: log GM without the normalisers (arguments as :func:`gm_log_likelihood`).
    O(t log n)."""
    n = pos.shape[0]
    inversion_codes(ordering, length, pos, tree, codes)
    acc = 0.0
    for j in range(min(length, n - 1)):
        acc -= theta[j] * codes[j]
    return acc


@primitive
def gm_log_likelihood(ordering, length, pos, theta, tree, codes):
    """log GM(pi | sigma, theta) of one top-t ordering (module docstring).

    ordering (w,) int64; length t >= 1; pos (n,) int64 (inverse of sigma); theta
    (T,) float64 with T >= min(t, n - 1); tree (n + 1,) int64 zero scratch;
    codes (>= t,) int64 scratch. Returns a float64. O(t log n).
    """
    n = pos.shape[0]
    acc = gm_energy(ordering, length, pos, theta, tree, codes)
    for j in range(min(length, n - 1)):
        acc -= log_psi(n - 1 - j, theta[j])
    return acc


@primitive
def log_psi_cumulative(theta, n, out):
    """Prefix sums of the stages' log normalisers: ``out[t]`` = sum_{j < min(t, n - 1)}
    log psi_{n-1-j}(theta[j]) for t = 0 .. out.shape[0] - 1, so a top-t ordering's
    log GM is :func:`gm_energy` minus ``out[t]``. theta (T,) float64 with T >=
    min(out.shape[0] - 1, n - 1); out (w + 1,) float64. One cluster's row serves every
    ranking scored against it (the reassignment step tabulates it per cluster)."""
    acc = 0.0
    out[0] = 0.0
    for t in range(1, out.shape[0]):
        if t - 1 < n - 1:
            acc += log_psi(n - t, theta[t - 1])
        out[t] = acc


# ------------------------------------------------------------------ cluster statistics
@primitive
def _update_ranking(counts, n_at_least, ordering, length, k, delta):
    n = counts.shape[3]
    stages = min(length, n - 1, counts.shape[1])
    for j in range(stages):
        a = ordering[j]
        n_at_least[k, j] += delta
        for b in range(n):
            counts[k, j, a, b] += delta
        for q in range(j + 1):  # items ranked at or before stage j are not "after"
            counts[k, j, a, ordering[q]] -= delta


@primitive
def add_ranking(counts, n_at_least, ordering, length, k):
    """Add one ranking to slot k's statistics, in O(t n).

    counts : (K, T, n, n) int64, ``counts[k, j, a, b]`` = rankings of slot k with
    a at rank j + 1 and b not among their first j + 1 items (the paper's R_j);
    n_at_least : (K, T) int64, the paper's N_j (rankings with > j stages);
    ordering (w,) int64 and its length t.
    """
    _update_ranking(counts, n_at_least, ordering, length, k, 1)


@primitive
def remove_ranking(counts, n_at_least, ordering, length, k):
    """Remove one ranking from slot k's statistics (inverse of :func:`add_ranking`)."""
    _update_ranking(counts, n_at_least, ordering, length, k, -1)


@primitive
def stage_statistics(counts_k, pos, out):
    """S_j(sigma) = sum over the slot's rankings of V_j, for every stage j.

    counts_k : (T, n, n) int64, one slot's R_j; pos (n,) int64 inverse of sigma;
    out (T,) int64. O(T n^2).
    """
    n = pos.shape[0]
    for j in range(counts_k.shape[0]):
        acc = 0
        for a in range(n):
            pa = pos[a]
            for b in range(n):
                if pos[b] < pa:
                    acc += counts_k[j, a, b]
        out[j] = acc


@primitive
def weighted_counts(counts_k, theta, out):
    """W = sum_j theta_j R_j: counts_k (T, n, n) int64, theta (T,) float64, out (n, n)
    float64 (the matrix of Sample-sigma-Stagewise, uniform prior on sigma)."""
    n = out.shape[0]
    for a in range(n):
        for b in range(n):
            out[a, b] = 0.0
    for j in range(counts_k.shape[0]):
        th = theta[j]
        for a in range(n):
            for b in range(n):
                out[a, b] += th * counts_k[j, a, b]


@primitive
def log_sigma_target(weights, pos):
    """-L_sigma(W): the log of P(sigma | theta, R) up to a constant (uniform prior on
    sigma). weights (n, n) float64; pos (n,) int64 inverse of sigma."""
    n = pos.shape[0]
    acc = 0.0
    for a in range(n):
        pa = pos[a]
        for b in range(n):
            if pos[b] < pa:
                acc += weights[a, b]
    return -acc


# ------------------------------------------------------------------ Sample-sigma-Stagewise
@primitive
def _stage_column_sums(weights, alive, colsum):
    """Column sums of W restricted to alive rows, for alive columns; returns
    (the smallest of them, whether any restricted entry is nonzero)."""
    n = alive.shape[0]
    lowest = np.inf
    nonzero = False
    for i in range(n):
        if not alive[i]:
            continue
        acc = 0.0
        for a in range(n):
            if alive[a] and a != i:
                w = weights[a, i]
                if w != 0.0:
                    nonzero = True
                acc += w
        colsum[i] = acc
        lowest = min(lowest, acc)
    return lowest, nonzero


@primitive
def _log_factorial(m):
    return math.lgamma(m + 1.0)


@primitive
def stagewise_sample(weights, stream, sigma, alive, colsum):
    """Meilă & Chen (2010) Figure 2, Sample-sigma-Stagewise, with its probability.

    weights : (n, n) float64, W = sum_j theta_j R_j (:func:`weighted_counts`);
    stream : (4,) uint64 random stream; sigma : (n,) int64 output (the draw);
    alive : (n,) bool scratch; colsum : (n,) float64 scratch.

    For positions k = 0, 1, ... while the remaining W is nonzero: draw the item at
    position k with probability proportional to exp(-its column sum over the
    remaining rows), then delete its row and column; once the remaining W is zero,
    place the remaining items in uniformly random order. Returns log q(sigma), the
    probability of this draw under the procedure (:func:`stagewise_log_prob`).
    Not an exact draw of P(sigma | theta, R) in general (module docstring).
    """
    n = alive.shape[0]
    for i in range(n):
        alive[i] = True
    log_q = 0.0
    k = 0
    while k < n:
        lowest, nonzero = _stage_column_sums(weights, alive, colsum)
        if not nonzero:
            break
        total = 0.0
        for i in range(n):
            if alive[i]:
                total += math.exp(lowest - colsum[i])
        u = uniform(stream) * total
        chosen = -1
        for i in range(n):
            if alive[i]:
                chosen = i
                u -= math.exp(lowest - colsum[i])
                if u < 0.0:
                    break
        log_q += lowest - colsum[chosen] - math.log(total)
        sigma[k] = chosen
        alive[chosen] = False
        k += 1
    rest = n - k
    if rest > 0:
        q = k
        for i in range(n):
            if alive[i]:
                sigma[q] = i
                q += 1
        for a in range(rest - 1, 0, -1):  # Fisher-Yates on sigma[k:]
            b = bounded(stream, a + 1)
            tmp = sigma[k + a]
            sigma[k + a] = sigma[k + b]
            sigma[k + b] = tmp
        log_q -= _log_factorial(rest)
    return log_q


@primitive
def stagewise_log_prob(weights, sigma, alive, colsum):
    """log q(sigma): the probability that :func:`stagewise_sample` draws ``sigma``.

    weights (n, n) float64; sigma (n,) int64; alive (n,) bool and colsum (n,)
    float64 scratch. O(n^3).
    """
    n = alive.shape[0]
    for i in range(n):
        alive[i] = True
    log_q = 0.0
    for k in range(n):
        lowest, nonzero = _stage_column_sums(weights, alive, colsum)
        if not nonzero:
            return log_q - _log_factorial(n - k)
        total = 0.0
        for i in range(n):
            if alive[i]:
                total += math.exp(lowest - colsum[i])
        chosen = sigma[k]
        log_q += lowest - colsum[chosen] - math.log(total)
        alive[chosen] = False
    return log_q


@primitive
def sigma_stagewise_mh(weights, sigma, pos, stream, proposal, proposal_pos, alive, colsum):
    """One independence Metropolis-Hastings update of sigma, exact for P(sigma | theta, R).

    The proposal is :func:`stagewise_sample`; the acceptance ratio uses its exact
    probability, so the target exp(-L_sigma(W)) (uniform prior on sigma) is left
    invariant. When the stagewise draw is exact (e.g. one ranking, equal theta_j)
    every proposal is accepted.

    weights (n, n) float64 (:func:`weighted_counts`); sigma (n,) int64 and its
    inverse pos (n,) int64, updated in place; stream (4,) uint64; proposal,
    proposal_pos (n,) int64, alive (n,) bool, colsum (n,) float64 scratch.
    Returns 1 if the proposal was accepted, else 0.
    """
    log_q_new = stagewise_sample(weights, stream, proposal, alive, colsum)
    positions(proposal, proposal_pos)
    log_q_old = stagewise_log_prob(weights, sigma, alive, colsum)
    log_ratio = (log_sigma_target(weights, proposal_pos) - log_q_new) - (
        log_sigma_target(weights, pos) - log_q_old
    )
    if log_ratio >= 0.0 or uniform(stream) < math.exp(log_ratio):
        for i in range(sigma.shape[0]):
            sigma[i] = proposal[i]
            pos[i] = proposal_pos[i]
        return 1
    return 0


@primitive
def sigma_insertion_sweep(weights, sigma, pos, stream, rest, log_w):
    """Insertion Gibbs moves of sigma, one per item x = 0..n-1: x is taken out, leaving
    the others in their order ``rest``, and put back at position p (0..n-1) with
    probability proportional to exp(-f(p)),

        f(p) = sum_{k < p} W[x, rest[k]] + sum_{k >= p} W[rest[k], x],

    the terms of L_sigma(W) that involve x (:func:`log_sigma_target`). The n
    permutations reachable this way are the same from each of them, so each move is
    an exact Gibbs update of P(sigma | theta, R). O(n^2) per sweep: f(p + 1) = f(p) +
    W[x, rest[p]] - W[rest[p], x].

    weights (n, n) float64; sigma (n,) int64 and its inverse pos (n,) int64, updated
    in place; stream (4,) uint64; rest (n,) int64 and log_w (n,) float64 scratch.
    """
    n = sigma.shape[0]
    for x in range(n):
        m = 0
        for k in range(n):
            if sigma[k] != x:
                rest[m] = sigma[k]
                m += 1
        f = 0.0
        for k in range(n - 1):
            f += weights[rest[k], x]
        log_w[0] = -f
        top = log_w[0]
        for p in range(n - 1):
            f += weights[x, rest[p]] - weights[rest[p], x]
            log_w[p + 1] = -f
            top = max(top, log_w[p + 1])
        total = 0.0
        for p in range(n):
            total += math.exp(log_w[p] - top)
        u = uniform(stream) * total
        chosen = n - 1
        acc = 0.0
        for p in range(n):
            acc += math.exp(log_w[p] - top)
            if u < acc:
                chosen = p
                break
        for k in range(n - 1, chosen, -1):  # rest[chosen:] moves one place right
            sigma[k] = rest[k - 1]
        sigma[chosen] = x
        for k in range(chosen):
            sigma[k] = rest[k]
    positions(sigma, pos)


@primitive
def sigma_update(weights, sigma, pos, stream, proposal, proposal_pos, alive, colsum):
    """One update of sigma leaving P(sigma | theta, R) invariant: the independence
    step :func:`sigma_stagewise_mh`, then :func:`sigma_insertion_sweep` (module
    docstring: why both). Arguments as :func:`sigma_stagewise_mh` (``proposal`` and
    ``colsum`` are reused as the sweep's scratch). Returns 1 if the independence
    proposal was accepted, else 0."""
    accepted = sigma_stagewise_mh(weights, sigma, pos, stream, proposal, proposal_pos, alive,
                                  colsum)
    sigma_insertion_sweep(weights, sigma, pos, stream, proposal, colsum)
    return accepted


@entry
def sigma_insertion_chain(weights, sigma, stream, out, pos, rest, log_w):
    """Run :func:`sigma_insertion_sweep` ``out.shape[0]`` times from ``sigma`` (n,)
    int64 (updated in place), storing each state in out (M, n) int64; scratch pos,
    rest (n,) int64, log_w (n,) float64."""
    positions(sigma, pos)
    for m in range(out.shape[0]):
        sigma_insertion_sweep(weights, sigma, pos, stream, rest, log_w)
        for i in range(sigma.shape[0]):
            out[m, i] = sigma[i]


# ------------------------------------------------------------------ entries (batches)
@entry
def inversion_codes_batch(orderings, lengths, sigma, pos, tree, out):
    """V codes of every row: orderings (N, w) int64, lengths (N,) int64, sigma (n,)
    int64; pos (n,) int64 and tree (n + 1,) int64 zero scratch; out (N, w) int64,
    ``out[i, j - 1] = V_j(pi_i | sigma)`` for j <= t_i (entries beyond untouched)."""
    positions(sigma, pos)
    for i in range(orderings.shape[0]):
        inversion_codes(orderings[i], lengths[i], pos, tree, out[i])


@entry
def gm_log_likelihood_batch(orderings, lengths, sigma, theta, pos, tree, codes, log_psi_cum,
                            out):
    """log GM(pi_i | sigma, theta) for every row: orderings (N, w) int64, lengths (N,)
    int64, sigma (n,) int64, theta (T,) float64; pos (n,), tree (n + 1,) (zero) and
    codes (w,) int64 and log_psi_cum (w + 1,) float64 scratch; out (N,) float64. As
    the reassignment step scores rankings: :func:`gm_energy` per row, the normalisers
    tabulated once (:func:`log_psi_cumulative`)."""
    positions(sigma, pos)
    log_psi_cumulative(theta, pos.shape[0], log_psi_cum)
    for i in range(orderings.shape[0]):
        out[i] = gm_energy(orderings[i], lengths[i], pos, theta, tree, codes) \
            - log_psi_cum[lengths[i]]


@entry
def stagewise_draws(weights, stream, out, alive, colsum, log_q):
    """``out.shape[0]`` independent Sample-sigma-Stagewise draws: weights (n, n)
    float64; stream (4,) uint64; out (M, n) int64; alive (n,) bool, colsum (n,)
    float64 scratch; log_q (M,) float64, each draw's log probability."""
    for m in range(out.shape[0]):
        log_q[m] = stagewise_sample(weights, stream, out[m], alive, colsum)


@entry
def sigma_stagewise_mh_chain(weights, sigma, stream, out, pos, proposal, proposal_pos,
                             alive, colsum):
    """Run :func:`sigma_stagewise_mh` ``out.shape[0]`` times from ``sigma`` (n,) int64
    (updated in place), storing each state in out (M, n) int64; scratch as there
    (pos, proposal, proposal_pos (n,) int64; alive (n,) bool; colsum (n,) float64).
    Returns the number of accepted proposals."""
    positions(sigma, pos)
    accepted = 0
    for m in range(out.shape[0]):
        accepted += sigma_stagewise_mh(weights, sigma, pos, stream, proposal, proposal_pos,
                                       alive, colsum)
        for i in range(sigma.shape[0]):
            out[m, i] = sigma[i]
    return accepted
