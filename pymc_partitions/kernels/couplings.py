r"""Couplings of two chains' Gibbs conditionals, for coupled partition samplers.

In a coupled Gibbs sweep (Nguyen, Trippe & Broderick 2022, Alg. 2) the left-out
item n gets a pair of options (a, b) drawn from a coupling of X's conditional p
(over X's blocks and a new block) and Y's conditional q. One primitive per
coupling, each drawing from a kernel stream (:mod:`.random`):

- :func:`sample_ot_pair`: their psi^OT_eta (Sec. 3.2, eq. 4 and 6): the optimal
  transport plan for the Hamming metric (eq. 5) or the variation of information
  (App. I) between the partitions that result, mixed with the independent
  coupling p q^T by the nugget eta. The plan comes from the intersection counts
  of X's and Y's blocks (App. D, Prop. 1) through :func:`.transport.overlap_plan`.
- :func:`sample_maximal_pair` and :func:`sample_common_rng_pair`: the label-based
  baselines of their Sec. 5.3 (Jerrum 1998; Gibbs 2004), as the reference
  implementation defines them (``modules/couplings.py`` of
  github.com/tinnguyen96/partition-coupling: ``max_coupling`` and
  ``naive_coupling``): options are labels, X's i-th option and Y's i-th option
  share the label i; X's new block is label m1 - 1 and Y's m2 - 1, so they share a
  label only when m1 == m2. Putting p and q in the reference's label order (blocks
  in order of creation, compacted when one empties, then the new block) is the
  caller's job.

Every primitive returns the pair ``(a, b)`` of indices into p and q, or
``(NO_CHOICE, NO_CHOICE)`` if there is nothing to draw from (a solve failed or
the workspace is too small). None allocates: each can be inlined into an entry
compiled without numba's reference-counting runtime. The nugget is applied as
the reference applies it, always: for faithfulness (eq. 6, psi^OT(X, X) when
X = Y) the caller passes ``eta = 0`` once the chains have met.
"""

from pymc_partitions.kernels._jit import entry, primitive, routine
from pymc_partitions.kernels.random import uniform
from pymc_partitions.kernels.state import NO_CHOICE
from pymc_partitions.kernels.transport import (  # noqa: F401 - re-exported
    HAMMING,
    VI,
    TransportWorkspace,
    new_workspace,
    overlap_plan,
    overlap_plan_totals,
    overlap_reward,
)

#: Coupling codes.
OT, MAXIMAL, COMMON_RNG = 0, 1, 2

#: The nugget of Nguyen et al. (2022), Sec. 3.2 ("we set eta to 1e-5"), and of
#: every configuration of the reference implementation (``"OT=1e-5"``).
DEFAULT_ETA = 1e-5


@primitive
def _draw(weights, m, total, u):
    """Inverse-CDF draw from ``weights[:m]`` (>= 0, summing to ``total`` > 0) with
    the uniform ``u``; an index of zero weight is never returned (rounding that
    leaves the target past the last step gives the last positive weight)."""
    target = u * total
    acc = 0.0
    for a in range(m):
        acc += weights[a]
        if target < acc and weights[a] > 0.0:
            return a
    for a in range(m - 1, -1, -1):
        if weights[a] > 0.0:
            return a
    return NO_CHOICE


@primitive
def _total(weights, m):
    total = 0.0
    for a in range(m):
        total += weights[a]
    return total


@primitive
def _independent_pair(p, m1, q, m2, stream):
    """(a, b) from p q^T: two independent draws."""
    a = _draw(p, m1, _total(p, m1), uniform(stream))
    b = _draw(q, m2, _total(q, m2), uniform(stream))
    if a == NO_CHOICE or b == NO_CHOICE:
        return NO_CHOICE, NO_CHOICE
    return a, b


# ---------------------------------------------------------------------------------
# Optimal transport (Nguyen et al. 2022, Sec. 3.2)
# ---------------------------------------------------------------------------------


@primitive
def _ot_plan(p, m1, q, m2, overlap, metric, eta, ws):
    """:func:`.transport.overlap_plan` and the masses of the three parts of
    psi^OT_eta: the matched cells (1 - eta) sum Q, the residuals' independent
    coupling (1 - eta) min(|res_p|, |res_q|), and the nugget eta. Returns
    ``(n_edges, w_match, w_res, w_ind, sum Q, |res_p|, |res_q|)``; n_edges < 0 on
    failure."""
    n_edges, matched, rp, rq = overlap_plan_totals(p, m1, q, m2, overlap, metric, ws)
    return n_edges, (1.0 - eta) * matched, (1.0 - eta) * min(rp, rq), eta, matched, rp, rq


@primitive
def sample_ot_pair(p, m1, q, m2, overlap, metric, eta, stream, ws):
    r"""Draw (a, b) from psi^OT_eta = (1 - eta) psi^OT + eta p q^T.

    Nguyen et al. (2022), Sec. 3.2, eq. (4) and (6): psi^OT is an optimal coupling
    of p and q for the cost d(pi^a, nu^b) between the partitions that result from
    putting the item into X's option a and Y's option b, with d the Hamming metric
    (eq. 5, ``metric=HAMMING``) or the variation of information (App. I, ``VI``);
    :func:`.transport.overlap_plan` computes it exactly from the intersection
    counts (App. D, Prop. 1) and documents the reduction. The independent part
    p q^T (the nugget) makes every pair reachable (their Theorem 1, App. C).

    Parameters
    ----------
    p : (>= m1,) float64, normalised probabilities of X's options: its blocks
        0..m1-2 and a new block m1 - 1. q : (>= m2,) float64, the same for Y.
    overlap : (capacity, capacity) int32, C-contiguous; ``overlap[a, b]`` = the
        number of items (the left-out one excluded) in both X's block a and Y's
        block b, for a < m1 - 1, b < m2 - 1 (the last row and column are not read).
    metric : ``HAMMING`` or ``VI``.
    eta : the nugget in [0, 1); :data:`DEFAULT_ETA` in the paper. Pass 0 when
        X = Y (eq. 6): the plan then keeps the chains together.
    stream : (4,) uint64 kernel stream (advanced by one to three draws).
    ws : :class:`.transport.TransportWorkspace` (``new_workspace(capacity,
        capacity, max_edges=n_items)``).

    Returns ``(a, b)``, or ``(NO_CHOICE, NO_CHOICE)`` if the plan could not be
    computed (workspace too small, solver failure).
    """
    n_edges, w_match, w_res, w_ind, matched, rp, rq = _ot_plan(p, m1, q, m2, overlap, metric,
                                                               eta, ws)
    if n_edges < 0:
        return NO_CHOICE, NO_CHOICE
    t = uniform(stream) * (w_match + w_res + w_ind)
    # The part t falls in; rounding at the top end goes to the last part of
    # positive mass, so a part of zero mass is never used.
    part = 0 if t < w_match else (1 if t < w_match + w_res else 2)
    if part == 2 and not w_ind > 0.0:
        part = 1
    if part == 1 and not w_res > 0.0:
        part = 0 if w_match > 0.0 else 2
    if part == 0:
        e = _draw(ws.edge_mass, n_edges, matched, uniform(stream))
        if e == NO_CHOICE:
            return NO_CHOICE, NO_CHOICE
        return ws.edge_row[e], ws.edge_col[e]
    if part == 1:
        a = _draw(ws.res_p, m1, rp, uniform(stream))
        b = _draw(ws.res_q, m2, rq, uniform(stream))
        return a, b
    return _independent_pair(p, m1, q, m2, stream)


@entry
def ot_pair_pmf(p, m1, q, m2, overlap, metric, eta, ws, out):
    """The distribution :func:`sample_ot_pair` draws from, into ``out[:m1, :m2]``
    (float64): the three parts with the weights it uses. Returns the number of
    matched cells, -1 on failure. For tests."""
    n_edges, w_match, w_res, w_ind, matched, rp, rq = _ot_plan(p, m1, q, m2, overlap, metric,
                                                               eta, ws)
    if n_edges < 0:
        return n_edges
    total = w_match + w_res + w_ind
    sp = _total(p, m1)
    sq = _total(q, m2)
    for a in range(m1):
        for b in range(m2):
            x = w_ind * p[a] * q[b] / (sp * sq)
            if w_res > 0.0:
                x += w_res * ws.res_p[a] * ws.res_q[b] / (rp * rq)
            out[a, b] = x / total
    for t in range(n_edges):
        out[ws.edge_row[t], ws.edge_col[t]] += w_match * ws.edge_mass[t] / (matched * total)
    return n_edges


# ---------------------------------------------------------------------------------
# Label-based baselines (reference implementation, modules/couplings.py)
# ---------------------------------------------------------------------------------


@routine
def _draw_shared(p, q, shared, total, u):
    """Inverse-CDF draw from the weights min(p_i, q_i), i < ``shared``."""
    target = u * total
    acc = 0.0
    last = NO_CHOICE
    for i in range(shared):
        w = min(p[i], q[i])
        if w > 0.0:
            acc += w
            last = i
            if target < acc:
                return i
    return last


@routine
def _draw_excess(p, m, q, shared, total, u):
    """Inverse-CDF draw from the excess of p over q: p_i - min(p_i, q_i) for
    i < ``shared``, p_i beyond."""
    target = u * total
    acc = 0.0
    last = NO_CHOICE
    for i in range(m):
        w = p[i] - min(p[i], q[i]) if i < shared else p[i]
        if w > 0.0:
            acc += w
            last = i
            if target < acc:
                return i
    return last


@primitive
def maximal_masses(p, m1, q, m2):
    """(shared mass sum_{i < min(m1, m2)} min(p_i, q_i), X's excess mass, Y's
    excess mass) of the maximal coupling over shared labels."""
    shared = min(m1, m2)
    overlap = 0.0
    for i in range(shared):
        overlap += min(p[i], q[i])
    ex_p = 0.0
    for i in range(m1):
        ex_p += p[i] - min(p[i], q[i]) if i < shared else p[i]
    ex_q = 0.0
    for i in range(m2):
        ex_q += q[i] - min(p[i], q[i]) if i < shared else q[i]
    return overlap, ex_p, ex_q


@primitive
def sample_maximal_pair(p, m1, q, m2, eta, stream, ws):
    r"""Draw (a, b) from (1 - eta) maximal coupling + eta p q^T over labels.

    The reference's ``max_coupling`` (``pure_maximal_coupling`` mixed with the
    independent coupling by the nugget): labels 0..min(m1, m2) - 1 are shared;
    with probability S = sum_i min(p_i, q_i) over them both chains take label i
    with probability min(p_i, q_i) / S, otherwise a and b are drawn independently
    from the excesses p - min(p, q) and q - min(p, q) (normalised; labels beyond
    the shared ones keep their full mass). Lindvall (1992), the coupling that
    maximises P(a == b) = S; used for partitions by Jerrum (1998).

    The branch probabilities use the computed masses (S against the smaller excess
    total, equal to 1 - S up to rounding), so a branch of zero mass is never taken.
    p, q, m1, m2, eta, stream as in :func:`sample_ot_pair`; ``ws`` is not used
    (the three samplers share a call shape). Returns ``(a, b)``.
    """
    if uniform(stream) < eta:
        return _independent_pair(p, m1, q, m2, stream)
    shared = min(m1, m2)
    overlap, ex_p, ex_q = maximal_masses(p, m1, q, m2)
    excess = min(ex_p, ex_q)
    if overlap > 0.0 and (not excess > 0.0 or uniform(stream) * (overlap + excess) < overlap):
        i = _draw_shared(p, q, shared, overlap, uniform(stream))
        return i, i
    if not excess > 0.0:
        return NO_CHOICE, NO_CHOICE
    a = _draw_excess(p, m1, q, shared, ex_p, uniform(stream))
    b = _draw_excess(q, m2, p, shared, ex_q, uniform(stream))
    return a, b


@primitive
def sample_common_rng_pair(p, m1, q, m2, eta, stream):
    r"""Draw (a, b) from (1 - eta) common-random-number coupling + eta p q^T.

    The reference's ``naive_coupling`` (``pure_naive_coupling``): one uniform u
    through both inverse CDFs, a = F_p^{-1}(u), b = F_q^{-1}(u), over labels in
    the caller's order (Gibbs 2004); with probability eta, independent draws.
    Arguments as in :func:`sample_ot_pair`. Returns ``(a, b)``.
    """
    if uniform(stream) < eta:
        return _independent_pair(p, m1, q, m2, stream)
    u = uniform(stream)
    a = _draw(p, m1, _total(p, m1), u)
    b = _draw(q, m2, _total(q, m2), u)
    if a == NO_CHOICE or b == NO_CHOICE:
        return NO_CHOICE, NO_CHOICE
    return a, b


@entry
def maximal_pair_pmf(p, m1, q, m2, eta, out):
    """The distribution :func:`sample_maximal_pair` draws from, into
    ``out[:m1, :m2]`` (float64), with the weights it uses. For tests."""
    shared = min(m1, m2)
    overlap, ex_p, ex_q = maximal_masses(p, m1, q, m2)
    excess = min(ex_p, ex_q)
    sp = _total(p, m1)
    sq = _total(q, m2)
    for a in range(m1):
        wa = p[a] - min(p[a], q[a]) if a < shared else p[a]
        for b in range(m2):
            x = eta * p[a] * q[b] / (sp * sq)
            if excess > 0.0:
                wb = q[b] - min(p[b], q[b]) if b < shared else q[b]
                x += (1.0 - eta) * excess / (overlap + excess) * wa * wb / (ex_p * ex_q)
            out[a, b] = x
    for i in range(shared):
        out[i, i] += (1.0 - eta) * min(p[i], q[i]) / (overlap + excess)


@entry
def common_rng_pair_pmf(p, m1, q, m2, eta, out):
    """The distribution :func:`sample_common_rng_pair` draws from, into
    ``out[:m1, :m2]`` (float64): the nugget's p q^T plus, for each pair, the length
    of the set of u with F_p^{-1}(u) = a and F_q^{-1}(u) = b. For tests."""
    sp = _total(p, m1)
    sq = _total(q, m2)
    for a in range(m1):
        for b in range(m2):
            out[a, b] = eta * p[a] * q[b] / (sp * sq)
    a = 0
    b = 0
    cp = p[0] / sp
    cq = q[0] / sq
    low = 0.0
    while a < m1 and b < m2:
        high = min(cp, cq)
        if high > low:
            out[a, b] += (1.0 - eta) * (high - low)
            low = high
        if cp <= cq:
            a += 1
            if a < m1:
                cp += p[a] / sp
        else:
            b += 1
            if b < m2:
                cq += q[b] / sq


@routine
def sample_pair(coupling, p, m1, q, m2, overlap, metric, eta, stream, ws):
    """Draw (a, b) with the coupling of code ``coupling`` (``OT``, ``MAXIMAL`` or
    ``COMMON_RNG``); arguments as in :func:`sample_ot_pair`.

    A routine: compiled once (nothing in it depends on the model) and linked by the
    coupled sweep of every model and by :func:`draw_pairs`. Inlined, each of them
    typed and lowered the transport solver again: 17 s of ``draw_pairs``' 33 s cold
    compile (Python 3.12) and about 30 s of the first coupled sweep's."""
    if coupling == OT:
        return sample_ot_pair(p, m1, q, m2, overlap, metric, eta, stream, ws)
    if coupling == MAXIMAL:
        return sample_maximal_pair(p, m1, q, m2, eta, stream, ws)
    return sample_common_rng_pair(p, m1, q, m2, eta, stream)


@entry
def draw_pairs(coupling, p, m1, q, m2, overlap, metric, eta, stream, ws, out_a, out_b):
    """``len(out_a)`` independent draws of :func:`sample_pair` into ``out_a``,
    ``out_b`` (int64). For tests. Returns the number of failed draws."""
    failed = 0
    for t in range(out_a.shape[0]):
        a, b = sample_pair(coupling, p, m1, q, m2, overlap, metric, eta, stream, ws)
        out_a[t] = a
        out_b[t] = b
        if a == NO_CHOICE:
            failed += 1
    return failed
