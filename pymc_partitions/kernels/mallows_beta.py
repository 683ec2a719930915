r"""Beta-Gibbs for Dirichlet-process mixtures of Generalized Mallows models (numba).

Meilă & Chen (2010), Section 5 and Figure 5, in two forms:

- **finite** (``finite=True``, the step's ``method="exact_beta"``): theta integrated
  out with the paper's eq. 14 function B~(a, b, m) of the finite model. Exact.
- **infinite** (``finite=False``, ``method="beta"``): the paper's approximation,
  the Beta function of the infinite GM (Lemma 4, eqs. 12-13) in place of B~.

Conventions of :mod:`pymc_partitions.kernels.mallows` (orderings, PAD, 0-based
stages j = 0..T-1 with m = n - 1 - j, the R_j counts) and of
:mod:`pymc_partitions.kernels.mallows_gibbs` (a chain's slots: labels, sizes,
counts, n_at_least, sigma, pos, theta, the free-slot stack). Beta-Gibbs adds per
slot ``sums`` (C, T) int64, S_j(sigma_c) of the slot's rankings, and ``log_pred``
(C, T, n) float64, the slot's predictive table (below); both are updated
incrementally when a ranking moves (S_j by the moving ranking's codes, never from
the members) and rebuilt from the R_j counts only when sigma_c changed.

**Predictive table.** With theta_j integrated out given sigma_c and the slot's
rankings, the code V_j of one more ranking has the law (Lemma 6, eq. 17)

.. math::

    q_{c,j}(s) = \frac{\tilde B(A + s,\ B + 1,\ m)}{\tilde B(A,\ B,\ m)},\qquad
    A = \nu r_j + S_j(\sigma_c),\ B = \nu + N_{c,j} + 1,\ s = 0..m,

a probability vector by Lemma 5 (sum_s B~(A + s, B + 1, m) = B~(A, B, m)). So
``log_pred[c, j, s] = log q_{c,j}(s)`` and the weight of ranking i in slot c is
log n_{-i,c} + sum over i's stages of ``log_pred[c, j, V_j(pi_i | sigma_c)]``: the
codes in O(t log n) and t table look-ups. A table row costs one quadrature
(:func:`stage_predictive`): q(s) = E[e^{-s theta}] under the density proportional
to e^{-A theta} psi_m(theta)^{-B} (the numerators; Lemma 5 normalises them), on
fixed Gauss-Legendre nodes adapted to that log-concave density
(:func:`quadrature_nodes`), so all m + 1 entries share the nodes and cost one
multiplication each per node. A ranking move rebuilds t rows of two slots. In the
infinite form the row is the closed form B(A + s, B + 1) / B(A, B) (lgamma), which
does not sum to one over s <= m: the approximation.

**theta given sigma.** theta_j has density proportional to
e^{-a theta} psi_m(theta)^{-c} (a = nu r_j + S_j, c = nu + N_j; finite form) or
e^{-a theta} (1 - e^{-theta})^{c} (infinite form: e^{-theta} ~ Beta(a, c + 1), eq. 12).
Both are log-concave in theta (log psi_m is a log-sum-exp of linear functions,
hence convex), and :func:`theta_log_concave_draw` draws them exactly by rejection
from a piecewise-exponential envelope made of tangent lines of the log density
(Gilks & Wild 1992, with fixed abscissae: the mode and the two points where the
log density has dropped by one), which lies above the log density by concavity
whatever the abscissae. Acceptance is about 0.9 for a near-Gaussian density and
does not degrade with the number of rankings (unlike the Exponential(a)
proposal of :func:`~pymc_partitions.kernels.mallows_gibbs.theta_exact_draw`).
"""

import math

import numpy as np

from pymc_partitions.kernels._jit import entry, primitive, routine
from pymc_partitions.kernels.mallows import (
    add_ranking,
    inversion_codes,
    log_psi,
    remove_ranking,
    sigma_update,
    stage_statistics,
    weighted_counts,
)
from pymc_partitions.kernels.mallows_gibbs import _categorical, new_cluster_draw
from pymc_partitions.kernels.random import shuffle, uniform

#: Rejection sampling of theta gives up (returns -1.0) after this many proposals.
MAX_REJECTIONS = 1_000_000
#: Gauss-Legendre nodes per quadrature panel (the step passes ``numpy.polynomial.
#: legendre.leggauss(GL_NODES)``).
GL_NODES = 16
#: The quadrature covers where the log density is within this of its maximum
#: (e^-46 ~ 1e-20: the tails beyond are negligible in double precision).
QUAD_DROP = 46.0
#: Panels over that range (more near theta = 0 when m is large, see
#: :func:`quadrature_nodes`).
QUAD_PANELS = 12
#: Largest number of panels :func:`quadrature_nodes` makes; scratch arrays for the
#: nodes need ``MAX_PANELS * GL_NODES`` entries.
MAX_PANELS = 64
MAX_NODES = MAX_PANELS * GL_NODES


# ------------------------------------------------------------------ the theta density
@primitive
def log_theta_density_any(theta, a, c, m):
    """h(theta) = -a theta - c log psi_m(theta) for m >= 0 (finite model), or
    -a theta + c log(1 - e^{-theta}) for m < 0 (the infinite model, psi_inf =
    1 / (1 - e^{-theta})). theta >= 0 (> 0 when m < 0 and c > 0)."""
    if m >= 0:
        return -a * theta - c * log_psi(m, theta)
    if c == 0.0:
        return -a * theta
    if theta <= 0.0:
        return -np.inf
    return -a * theta + c * math.log(-math.expm1(-theta))


@primitive
def _mean_code(theta, m):
    """E[k] for k on 0..m with weights e^{-k theta} (-d log psi_m / d theta); m < 0:
    k on 0, 1, ... (1 / (e^theta - 1)). Decreasing in theta."""
    if m < 0:
        return 1.0 / math.expm1(theta) if theta > 0.0 else np.inf
    if (m + 1) * theta < 1e-4:  # series: m/2 - theta m (m + 2) / 12 + O(theta^3)
        return 0.5 * m - theta * m * (m + 2.0) / 12.0
    return 1.0 / math.expm1(theta) - (m + 1.0) / math.expm1((m + 1.0) * theta)


@primitive
def log_theta_slope(theta, a, c, m):
    """h'(theta) of :func:`log_theta_density_any` (decreasing: h is concave)."""
    return -a + c * _mean_code(theta, m)


@primitive
def theta_mode(a, c, m):
    """The maximiser of h on theta >= 0 (0 when h'(0) <= 0), to ~1e-12 relative by
    bisection on h' (closed form log1p(c / a) when m < 0)."""
    if c == 0.0:
        return 0.0
    if m < 0:
        return math.log1p(c / a)
    if log_theta_slope(0.0, a, c, m) <= 0.0:
        return 0.0
    lo, hi = 0.0, c / a  # E[k] <= 1 / theta, so h' <= 0 at theta = c / a
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if log_theta_slope(mid, a, c, m) > 0.0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-13 * hi:
            break
    return 0.5 * (lo + hi)


@primitive
def _drop_point(a, c, m, start, top, drop, direction):
    """A point x on the side ``direction`` (+1 right, -1 left, down to 0) of ``start``
    (the mode, h(start) = ``top``) where h(x) is about ``top - drop``: doubling then
    bisection. On the left returns 0.0 when h(0) > top - drop."""
    if direction < 0:
        if start <= 0.0 or log_theta_density_any(0.0, a, c, m) > top - drop:
            return 0.0
        lo, hi = 0.0, start  # h(lo) <= top - drop < h(hi)
        for _ in range(100):
            mid = 0.5 * (lo + hi)
            if log_theta_density_any(mid, a, c, m) > top - drop:
                hi = mid
            else:
                lo = mid
            if hi - lo <= 1e-10 * hi:
                break
        return 0.5 * (lo + hi)
    step = 1e-6 * max(start, 1.0)
    while log_theta_density_any(start + step, a, c, m) > top - drop:
        step *= 2.0
        if step > 1e300:
            return start + step
    lo, hi = start + 0.5 * step, start + step
    if step <= 1e-6 * max(start, 1.0):
        lo = start
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if log_theta_density_any(mid, a, c, m) > top - drop:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-10 * hi:
            break
    return 0.5 * (lo + hi)


# ------------------------------------------------------------------ exact theta draws
@primitive
def _log_piece_mass(value_at_left, slope, width):
    """log of int_0^width exp(value_at_left + slope x) dx (width may be inf when
    slope < 0)."""
    if slope == 0.0:
        return value_at_left + math.log(width)
    x = slope * width
    if x > 0.0:  # rising: e^x - 1 = e^x (1 - e^-x)
        return value_at_left + x + math.log(-math.expm1(-x)) - math.log(slope)
    return value_at_left + math.log(-math.expm1(x)) - math.log(-slope)


@primitive
def _piece_draw(left, slope, width, u):
    """Inverse CDF of the density proportional to exp(slope x) on [left, left + width],
    at u in [0, 1)."""
    if slope == 0.0:
        return left + u * width
    x = slope * width
    if x > 1.0:  # steeply rising: measured from the right end, no overflow
        return left + width + math.log(u + (1.0 - u) * math.exp(-x)) / slope
    # expm1 / log1p keep full relative precision for a nearly flat piece (slope ~ 0
    # at the mode); a proposal off its envelope would bias the draw
    return left + math.log1p(u * math.expm1(x)) / slope


@primitive
def _intersection(x0, h0, s0, x1, h1, s1):
    """Where the tangent lines (x0, h0, slope s0) and (x1, h1, s1), x0 < x1, s0 > s1,
    cross, clipped to [x0, x1] (inside it for exact tangents of a concave h)."""
    if s0 > s1:
        z = (h1 - s1 * x1 - h0 + s0 * x0) / (s0 - s1)
    else:
        z = 0.5 * (x0 + x1)
    return min(max(z, x0), x1)


@routine
def theta_log_concave_draw(a, c, m, stream):
    """An exact draw of theta >= 0 with density proportional to exp(h(theta))
    (:func:`log_theta_density_any`; a > 0, c >= 0; m >= 0 finite psi_m, m < 0 the
    infinite model's eq. 12), by rejection from the envelope min of the tangent
    lines of h at the mode and at the points where h has dropped by one (module
    docstring; left point only when h(0) < max h - 1). Returns -1.0 after
    :data:`MAX_REJECTIONS` rejections."""
    if c == 0.0 or m == 0:  # exponential
        return -math.log1p(-uniform(stream)) / a
    mode = theta_mode(a, c, m)
    top = log_theta_density_any(mode, a, c, m)
    # three tangents (left, mode, right), values relative to the top: no overflow
    x0 = _drop_point(a, c, m, mode, top, 1.0, -1)
    x1 = mode
    x2 = _drop_point(a, c, m, mode, top, 1.0, 1)
    h1 = 0.0
    s1 = log_theta_slope(x1, a, c, m)
    h2 = log_theta_density_any(x2, a, c, m) - top
    s2 = log_theta_slope(x2, a, c, m)
    has_left = x0 > 0.0
    if has_left:
        h0 = log_theta_density_any(x0, a, c, m) - top
        s0 = log_theta_slope(x0, a, c, m)
        e1 = _intersection(x0, h0, s0, x1, h1, s1)
    else:  # no left piece: the mode's tangent reaches down to 0
        h0, s0, e1 = h1, s1, 0.0
    e2 = _intersection(x1, h1, s1, x2, h2, s2)
    # masses of [0, e1] (left tangent), [e1, e2] (mode), [e2, inf) (right)
    w0 = 0.0
    if has_left and e1 > 0.0:
        w0 = math.exp(_log_piece_mass(h0 + s0 * (0.0 - x0), s0, e1))
    w1 = 0.0
    if e2 > e1:
        w1 = math.exp(_log_piece_mass(h1 + s1 * (e1 - x1), s1, e2 - e1))
    w2 = math.exp(_log_piece_mass(h2 + s2 * (e2 - x2), s2, np.inf))
    total = w0 + w1 + w2
    for _ in range(MAX_REJECTIONS):
        u = uniform(stream) * total
        if u < w0:
            theta = _piece_draw(0.0, s0, e1, uniform(stream))
            envelope = h0 + s0 * (theta - x0)
        elif u < w0 + w1:
            theta = _piece_draw(e1, s1, e2 - e1, uniform(stream))
            envelope = h1 + s1 * (theta - x1)
        else:
            theta = _piece_draw(e2, s2, np.inf, uniform(stream))
            envelope = h2 + s2 * (theta - x2)
        if math.log1p(-uniform(stream)) <= log_theta_density_any(theta, a, c, m) - top - envelope:
            return theta
    return -1.0


# ------------------------------------------------------------------ eq. 14 by quadrature
@routine
def quadrature_nodes(a, c, m, gl_x, gl_w, node_theta, node_logw):
    """Nodes and log weights of a quadrature of int_0^inf exp(h(theta)) d theta,
    h = -a theta - c log psi_m(theta) (m >= 0; a > 0, c >= 0).

    gl_x, gl_w (GL_NODES,) float64: Gauss-Legendre nodes and weights on [-1, 1];
    node_theta, node_logw (>= MAX_NODES,) float64 outputs: node k at
    ``node_theta[k]`` with log(weight) + h(node) in ``node_logw[k]``. Returns the
    number of nodes. The range is where h > max h - :data:`QUAD_DROP` (h is
    concave: one interval), cut into :data:`QUAD_PANELS` equal panels, and near
    theta = 0 into panels no wider than max(x, pi / (m + 1)) at x: the integrand
    is analytic for Re theta > 0 but psi_m has zeros at theta = 2 pi i k / (m + 1),
    so a panel must stay well inside the region where it is analytic.
    """
    mode = theta_mode(a, c, m)
    top = log_theta_density_any(mode, a, c, m)
    lo = _drop_point(a, c, m, mode, top, QUAD_DROP, -1)
    hi = _drop_point(a, c, m, mode, top, QUAD_DROP, 1)
    base = (hi - lo) / QUAD_PANELS
    near = math.pi / (m + 1.0)
    count = 0
    x = lo
    panels = 0
    while x < hi and panels < MAX_PANELS:
        width = min(base, max(x, near))
        right = min(x + width, hi)
        if panels == MAX_PANELS - 1:
            right = hi
        half = 0.5 * (right - x)
        middle = 0.5 * (right + x)
        for g in range(gl_x.shape[0]):
            th = middle + half * gl_x[g]
            node_theta[count] = th
            node_logw[count] = math.log(half * gl_w[g]) + log_theta_density_any(th, a, c, m)
            count += 1
        x = right
        panels += 1
    return count


@primitive
def log_beta_tilde_quad(a, b, m, gl_x, gl_w, node_theta, node_logw):
    """log B~(a, b, m) of eq. 14 (a > 0, b >= 1, m >= 0) by :func:`quadrature_nodes`
    (relative error ~1e-13 against QUADPACK; tested)."""
    if m == 0:
        return -math.log(a)
    count = quadrature_nodes(a, b - 1.0, m, gl_x, gl_w, node_theta, node_logw)
    top = -np.inf
    for k in range(count):
        top = max(top, node_logw[k])
    acc = 0.0
    for k in range(count):
        acc += math.exp(node_logw[k] - top)
    return top + math.log(acc)


@routine
def stage_predictive(a, c, m, finite, gl_x, gl_w, node_theta, node_logw, out):
    """One row of the predictive table: ``out[s] = log q(s)``, s = 0..m, the law of
    the code V_j of one more ranking given A = ``a`` = nu r_j + S_j and c = nu + N_j
    (B = c + 1), theta integrated out (Lemma 6):

    finite: q(s) = B~(a + s, c + 2, m) / B~(a, c + 1, m), computed as the
    numerators int e^{-(a + s) theta} psi_m^{-(c + 1)} on one set of nodes,
    normalised by their sum (Lemma 5). infinite: the paper's B(a + s, c + 2) /
    B(a, c + 1) (Lemma 4; not normalised over s <= m).

    out (>= m + 1,) float64; node_theta, node_logw (MAX_NODES,) scratch.
    """
    if not finite:
        b = c + 1.0
        base = math.log(b) - math.lgamma(a) + math.lgamma(a + b)  # 1 / B(a, b) * B(.., b+1)
        for s in range(m + 1):
            out[s] = base + math.lgamma(a + s) - math.lgamma(a + s + b + 1.0)
        return
    count = quadrature_nodes(a, c + 1.0, m, gl_x, gl_w, node_theta, node_logw)
    top = -np.inf
    for k in range(count):
        top = max(top, node_logw[k])
    for s in range(m + 1):
        out[s] = 0.0
    for k in range(count):  # sum_k w_k e^{-s theta_k} for every s, one product per s
        weight = math.exp(node_logw[k] - top)
        ratio = math.exp(-node_theta[k])
        for s in range(m + 1):
            out[s] += weight
            weight *= ratio
    total = 0.0
    for s in range(m + 1):
        total += out[s]
    for s in range(m + 1):
        out[s] = math.log(out[s] / total) if out[s] > 0.0 else -np.inf


@primitive
def refresh_row(log_pred, sums, n_at_least, c, j, nu, r, log_prior_pred, finite, gl_x, gl_w,
                node_theta, node_logw):
    """Rebuild ``log_pred[c, j]`` from slot c's S_j and N_j. A stage none of the slot's
    rankings reaches (N_j = 0) has the prior's row ``log_prior_pred[j]``."""
    n = log_pred.shape[2]
    m = n - 1 - j
    if n_at_least[c, j] == 0:
        for s in range(m + 1):
            log_pred[c, j, s] = log_prior_pred[j, s]
        return
    stage_predictive(nu * r[j] + sums[c, j], nu + n_at_least[c, j], m, finite, gl_x, gl_w,
                     node_theta, node_logw, log_pred[c, j])


# ------------------------------------------------------------------ the moves
@entry
def reassign_items_beta(orderings, lengths, labels, sizes, counts, n_at_least, sums, log_pred,
                        sigma, pos, theta, free, n_free, order, start, log_alpha, log_new, nu, r,
                        log_bt1, log_prior_pred, finite, gl_x, gl_w, stream, log_w, cand, tree,
                        codes, taken, placed, rest, node_theta, node_logw, saved_rows, status):
    """Figure 5, step 1: theta integrated out, each ranking ``order[start:]`` in turn
    leaves its slot (an emptied slot and its sigma are discarded) and joins occupied
    slot c with probability proportional to n_{-i,c} prod_j q_{c,j}(V_j(pi_i |
    sigma_c)) (Lemma 6 / eq. 17 in the finite form; Lemma 4's Beta functions in the
    infinite form), or a new slot with probability proportional to alpha (n - t_i)!/n!
    (Lemma 1, ``log_alpha + log_new[i]``). A new slot's sigma is drawn from its
    posterior given pi_i by
    :func:`~pymc_partitions.kernels.mallows_gibbs.new_cluster_draw` with the code
    table ``log_bt1`` (T, n): log B~(nu r_j + v, nu + 2, n - 1 - j) makes it the
    exact draw, log B(nu r_j + v, nu + 2) the paper's Sample-sigma-N1 (Figure 4).
    Its theta (drawn there too) is not used: theta is redrawn given sigma before
    anything conditions on it (:func:`update_parameters_beta`).

    When ``start`` is 0 the order is shuffled and every occupied slot's ``sums``
    (S_j from its counts and sigma) and ``log_pred`` table are rebuilt (sigma
    changed since). Returns -1 when done, or the position p at which no free slot
    was left (nothing of ranking order[p] changed): the caller grows the arrays and
    calls again with start = p.

    sums (C, T) int64, log_pred (C, T, n) float64; log_prior_pred (T, n) float64,
    the prior's rows (N_j = 0); finite bool; gl_x, gl_w (GL_NODES,); status (1,)
    int64 set to 1 if a theta draw in new_cluster_draw failed. Scratch: log_w, cand
    (C + 1,); tree (n + 1,) zero; codes (w,) int64; taken, placed (n,) bool; rest
    (n,) int64; node_theta, node_logw (MAX_NODES,); saved_rows (T, n) float64.

    A ranking that returns to the slot it left finds that slot's S_j and N_j as they
    were, so its rows are restored from ``saved_rows`` (copied before the removal)
    instead of being rebuilt: the same values, half the quadratures of a sweep in
    which most rankings stay.
    """
    capacity = sizes.shape[0]
    n = pos.shape[1]
    stages_all = sums.shape[1]
    if start == 0:
        shuffle(stream, order, order.shape[0])
        for c in range(capacity):
            if sizes[c] > 0:
                stage_statistics(counts[c], pos[c], sums[c])
                for j in range(stages_all):
                    refresh_row(log_pred, sums, n_at_least, c, j, nu, r, log_prior_pred, finite,
                                gl_x, gl_w, node_theta, node_logw)
    for p in range(start, orderings.shape[0]):
        if n_free[0] == 0:
            return p
        i = order[p]
        k = labels[i]
        t = lengths[i]
        stages = min(t, n - 1)
        remove_ranking(counts, n_at_least, orderings[i], t, k)
        sizes[k] -= 1
        if sizes[k] == 0:
            free[n_free[0]] = k
            n_free[0] += 1
        else:  # S_j of the others: subtract i's codes
            inversion_codes(orderings[i], t, pos[k], tree, codes)
            for j in range(stages):
                sums[k, j] -= codes[j]
                for s in range(n - j):
                    saved_rows[j, s] = log_pred[k, j, s]
                refresh_row(log_pred, sums, n_at_least, k, j, nu, r, log_prior_pred, finite,
                            gl_x, gl_w, node_theta, node_logw)
        count = 0
        for c in range(capacity):
            if sizes[c] > 0:
                inversion_codes(orderings[i], t, pos[c], tree, codes)
                acc = math.log(sizes[c])
                for j in range(stages):
                    acc += log_pred[c, j, codes[j]]
                cand[count] = c
                log_w[count] = acc
                count += 1
        cand[count] = -1
        log_w[count] = log_alpha + log_new[i]
        count += 1
        c = cand[_categorical(log_w, count, stream)]
        if c < 0:
            n_free[0] -= 1
            c = free[n_free[0]]
            if not new_cluster_draw(orderings[i], t, nu, r, log_bt1, stream, sigma[c], pos[c],
                                    theta[c], taken, placed, rest):
                status[0] = 1
            for j in range(stages_all):
                sums[c, j] = 0
        add_ranking(counts, n_at_least, orderings[i], t, c)
        sizes[c] += 1
        labels[i] = c
        inversion_codes(orderings[i], t, pos[c], tree, codes)
        for j in range(stages):
            sums[c, j] += codes[j]
        if c == k and sizes[c] > 1:  # back where it was: the rows it left
            for j in range(stages):
                for s in range(n - j):
                    log_pred[c, j, s] = saved_rows[j, s]
            continue
        rows = stages_all if sizes[c] == 1 else stages  # a new slot: every row
        for j in range(rows):
            refresh_row(log_pred, sums, n_at_least, c, j, nu, r, log_prior_pred, finite,
                        gl_x, gl_w, node_theta, node_logw)
    return -1


@primitive
def _draw_theta_given_sigma(counts_c, n_at_least_c, pos_c, theta_c, nu, r, finite, sums,
                            stream):
    """theta_c | sigma_c, the slot's rankings: each theta_j drawn exactly
    (:func:`theta_log_concave_draw`; finite psi_{n-j}, or eq. 12 when not finite).
    Returns False if a draw failed."""
    n = pos_c.shape[0]
    stage_statistics(counts_c, pos_c, sums)
    ok = True
    for j in range(theta_c.shape[0]):
        m = n - 1 - j if finite else -1
        th = theta_log_concave_draw(nu * r[j] + sums[j], nu + n_at_least_c[j], m, stream)
        if th < 0.0:
            ok = False
            th = 1.0
        theta_c[j] = th
    return ok


@entry
def update_parameters_beta(orderings, lengths, labels, sizes, counts, n_at_least, sigma, pos,
                           theta, nu, r, log_bt1, finite, figure5_order, n_gibbs, stream,
                           weights, proposal, proposal_pos, alive, colsum, sums, member, taken,
                           placed, rest, status):
    """Figure 5, step 2, ordered for a valid partially collapsed Gibbs sampler.

    For every occupied slot c: a slot with one ranking pi gets sigma_c drawn from
    p(sigma | pi) with theta integrated out (:func:`~pymc_partitions.kernels.
    mallows_gibbs.new_cluster_draw` with ``log_bt1``: exact when finite, the paper's
    Sample-sigma-N1 otherwise). A larger slot, ``n_gibbs`` times: theta_c | sigma_c
    drawn exactly (theta was integrated out in step 1, so the value held is stale
    and must be redrawn before anything conditions on it; van Dyk & Park 2008), then
    sigma_c | theta_c by one exact Metropolis-Hastings step with the
    Sample-sigma-Stagewise proposal. Finally theta_c | sigma_c once more, so the
    reported (sigma_c, theta_c) is a draw of their joint conditional.

    ``figure5_order`` (for the negative control only): the paper's order for slots
    with more than one ranking, sigma_c | theta_c first (with the stale theta_c),
    then theta_c | sigma_c, ``n_gibbs`` times. Returns the number of accepted sigma
    proposals. member (C,) int64 scratch; sums (T,) int64; status (1,) set to 1 if
    a theta draw failed; other scratch as in
    :func:`~pymc_partitions.kernels.mallows_gibbs.update_parameters`.
    """
    for c in range(sizes.shape[0]):
        member[c] = -1
    for i in range(labels.shape[0]):
        if sizes[labels[i]] == 1:
            member[labels[i]] = i
    accepted = 0
    for c in range(sizes.shape[0]):
        if sizes[c] == 0:
            continue
        rounds = n_gibbs
        if sizes[c] == 1:
            rounds = 0
            i = member[c]
            if not new_cluster_draw(orderings[i], lengths[i], nu, r, log_bt1, stream, sigma[c],
                                    pos[c], theta[c], taken, placed, rest):
                status[0] = 1
        # valid: theta, sigma, theta, ..., sigma, theta; Figure 5: sigma, theta, ..., theta
        for g in range(rounds + 1):
            stale_first = figure5_order and rounds > 0 and g == 0
            if not stale_first and not _draw_theta_given_sigma(
                    counts[c], n_at_least[c], pos[c], theta[c], nu, r, finite, sums, stream):
                status[0] = 1
            if g < rounds:
                weighted_counts(counts[c], theta[c], weights)
                accepted += sigma_update(weights, sigma[c], pos[c], stream, proposal,
                                         proposal_pos, alive, colsum)
    return accepted


# ------------------------------------------------------------------ entries for tests
@entry
def beta_tilde_batch(a, b, m, gl_x, gl_w, node_theta, node_logw, out):
    """out[k] = log B~(a[k], b[k], m[k]) by :func:`log_beta_tilde_quad`: a, b (K,)
    float64, m (K,) int64, out (K,) float64; node scratch (MAX_NODES,)."""
    for k in range(a.shape[0]):
        out[k] = log_beta_tilde_quad(a[k], b[k], m[k], gl_x, gl_w, node_theta, node_logw)


@entry
def predictive_row(a, c, m, finite, gl_x, gl_w, node_theta, node_logw, out):
    """:func:`stage_predictive` for one row: out (>= m + 1,) float64."""
    stage_predictive(a, c, m, finite, gl_x, gl_w, node_theta, node_logw, out)


@entry
def theta_draws(a, c, m, stream, out):
    """out[k] = :func:`theta_log_concave_draw` (a, c, m), k < out.shape[0]."""
    for k in range(out.shape[0]):
        out[k] = theta_log_concave_draw(a, c, m, stream)
