r"""The unbiased estimator H_{l:m} of one coupled pair (Jacob, O'Leary & Atchadé 2020,
eq. 2; Nguyen et al. 2022, eq. 2), on arrays of h values. No PyMC here: the estimator
from a trace (:func:`pymc_partitions.unbiased_estimate`) and the runner of many pairs
both call :func:`pair_estimate`.

Conventions (lag 1). X_0 and Y_0 are the starts; X_1 is drawn from X_0 alone; then
(X_t, Y_{t-1}) move together for t >= 2. The meeting time is
tau = min{t >= 1 : X_t = Y_{t-1}}, and the pair is faithful: X_t = Y_{t-1} for all
t >= tau. With burn-in l and m >= l,

.. math::

    H_{l:m}(X, Y) = \frac{1}{m-l+1} \sum_{t=l}^{m} h(X_t)
        + \sum_{t=l+1}^{\tau-1} \min\Big(1, \frac{t-l}{m-l+1}\Big)
          \big(h(X_t) - h(Y_{t-1})\big),

the usual average over sweeps l..m plus a bias correction that vanishes once the
chains have met. It needs h(X_t) for t = l..max(m, tau - 1) and h(Y_t) for
t = l..tau - 2.

Censoring. A pair that has not met by its last sweep T (tau unknown, tau > T) has no
estimate: it is *censored*, reported with its last sweep (a right-censored meeting
time, tau > T) and left out of averages, never given a value. A pair whose arrays end
before sweep m is a usage error (run at least m sweeps), except for a runner that
stops pairs early on a time budget, which records them with
:meth:`PairEstimate.censored_at`.
"""

import numbers
from typing import NamedTuple

import numpy as np

from pymc_partitions.arguments import integer_arg


class PairEstimate(NamedTuple):
    """H_{l:m} of one coupled pair.

    value : float64 array of h's shape; H_{l:m}, or NaN everywhere when censored
    meeting_time : int, tau (>= 1), or -1 when the pair had not met by ``last_sweep``
    last_sweep : int, T, the last sweep of X the pair ran
    censored : bool, True when there is no estimate (not met by T, or stopped early)
    """

    value: np.ndarray
    meeting_time: int
    last_sweep: int
    censored: bool

    @classmethod
    def censored_at(cls, last_sweep, shape=(), meeting_time=-1):
        """A pair stopped at sweep ``last_sweep`` without an estimate (not met by then,
        or met at ``meeting_time`` but stopped before sweep m, e.g. by a time budget)."""
        return cls(np.full(shape, np.nan), int(meeting_time), int(last_sweep), True)


def check_window(burn_in, m, owner, minimum=0):
    """``burn_in`` (an integer >= ``minimum``) and ``m`` (an integer >= burn_in) as ints."""
    burn_in = integer_arg("burn_in", burn_in, owner, minimum=minimum)
    m = integer_arg("m", m, owner)
    if m < burn_in:
        raise ValueError(
            f"{owner}: 'm' = {m} must be >= 'burn_in' = {burn_in}: H_{{l:m}} averages h over "
            f"sweeps burn_in..m (Jacob et al. 2020 suggest m of about 10 * burn_in)."
        )
    return burn_in, m


def _meeting_times(values, owner, arg):
    """Meeting times as an int64 array, None / -1 -> -1 (not met)."""
    values = np.asarray([-1 if v is None else v for v in np.ravel(np.asarray(values, object))],
                        dtype=object)
    bad = [v for v in values if isinstance(v, bool | np.bool_)
           or not isinstance(v, numbers.Integral)]
    if bad:
        raise TypeError(
            f"{owner}: '{arg}' must hold integers >= 1, or None / -1 for a pair that has "
            f"not met; got {bad[0]!r}."
        )
    out = values.astype(np.int64)
    wrong = out[(out < 1) & (out != -1)]
    if wrong.size:
        raise ValueError(
            f"{owner}: '{arg}' must be >= 1 (tau = min{{t >= 1: X_t = Y_(t-1)}}), or None / -1 "
            f"for a pair that has not met; got {int(wrong[0])}."
        )
    return out


def _h_values(value, name, owner, ndim):
    arr = np.asarray(value)
    if arr.dtype.kind not in "biuf" or arr.ndim < ndim:
        sweeps = "(pairs, sweeps, *shape)" if ndim == 2 else "(sweeps, *shape)"
        raise TypeError(
            f"{owner}: '{name}' must be an array of h values {sweeps} of numbers; got "
            f"{type(value).__name__} with shape {arr.shape} and dtype {arr.dtype}."
        )
    return arr.astype(np.float64, copy=False)


def pair_estimates(hx, hy, meeting_times, burn_in, m, owner="pair_estimates"):
    """H_{l:m} of P coupled pairs run to the same last sweep T (vectorised
    :func:`pair_estimate`).

    hx : (P, T + 1, *shape); hy : (P, T', *shape); meeting_times : (P,) ints, -1 (or
    None) for a pair not met by T. Returns a list of P :class:`PairEstimate`.
    """
    burn_in, m = check_window(burn_in, m, owner)
    hx = _h_values(hx, "hx", owner, 2)
    hy = _h_values(hy, "hy", owner, 2)
    tau = _meeting_times(meeting_times, owner, "meeting_time" if owner == "pair_estimate"
                         else "meeting_times")
    n_pairs, shape = hx.shape[0], hx.shape[2:]
    one = owner == "pair_estimate"

    def who(p):
        return "" if one else f" (pair {p})"

    if hy.shape[0] != n_pairs or hy.shape[2:] != shape or tau.shape != (n_pairs,):
        what = "h values of the shape of 'hx''s" if hy.shape[0] == n_pairs else "one row per pair"
        raise ValueError(
            f"{owner}: 'hy' must hold {what}: hx {hx.shape[int(one):]}, hy "
            f"{hy.shape[int(one):]}, {tau.size} meeting time(s)."
        )
    last = hx.shape[1] - 1
    if last < m:
        raise ValueError(
            f"{owner}: 'm' = {m} needs X up to sweep m, but 'hx' holds sweeps 0..{last}; run "
            f"the pair for at least m sweeps (a pair stopped early, e.g. by a time budget, is "
            f"recorded with PairEstimate.censored_at)."
        )
    met = tau >= 1
    for p in np.flatnonzero(met & (tau - 1 > last)):
        raise ValueError(
            f"{owner}: 'meeting_time' = {tau[p]}{who(p)} needs X up to sweep tau - 1 = "
            f"{tau[p] - 1}, but 'hx' holds sweeps 0..{last}."
        )
    for p in np.flatnonzero(met & (hy.shape[1] < tau - 1)):
        raise ValueError(
            f"{owner}: 'meeting_time' = {tau[p]}{who(p)} needs Y up to sweep tau - 2 = "
            f"{tau[p] - 2}, but 'hy' holds sweeps 0..{hy.shape[1] - 1}."
        )
    size = int(np.prod(shape))
    flat_x = hx.reshape(n_pairs, last + 1, size)
    flat_y = hy.reshape(n_pairs, hy.shape[1], size)
    # What H needs: X_l..X_m for the average, and for t = l+1..tau-1 the differences
    # h(X_t) - h(Y_(t-1)) (t = l+1..top across pairs; masked per pair at tau).
    top = int(max(tau[met].max() - 1, burn_in) if met.any() else burn_in)
    t = np.arange(burn_in + 1, top + 1)
    needed = met[:, None] & (t[None, :] < tau[:, None])                  # (P, J)
    average = flat_x[:, burn_in:m + 1]
    x_corr, y_corr = flat_x[:, t], flat_y[:, t - 1]
    for name, values, mask, first in (
        ("hx", average, np.broadcast_to(met[:, None], average.shape[:2]), burn_in),
        ("hx", x_corr, needed, burn_in + 1),
        ("hy", y_corr, needed, burn_in),
    ):
        bad = mask & ~np.isfinite(values).all(axis=2)
        if bad.any():
            p, j = (int(v[0]) for v in np.nonzero(bad))
            raise ValueError(
                f"{owner}: '{name}'{who(p)} is not finite at sweep {first + j}, which "
                f"H_{{{burn_in}:{m}}} with meeting time {tau[p]} needs (sweeps "
                f"{burn_in}..{max(m, tau[p] - 1)} of X, {burn_in}..{tau[p] - 2} of Y)."
            )
    # Faithfulness: X_t = Y_(t-1) for t >= tau, so their h values agree wherever both
    # are given; a mismatch means a wrong meeting time or misaligned arrays. (A
    # tolerance: a vectorised h may sum in another order for another batch.)
    if met.any():
        after = np.arange(int(tau[met].min()), min(last, hy.shape[1]) + 1)
        a, b = flat_x[:, after], flat_y[:, after - 1]
        differ = (met[:, None] & (after[None, :] >= tau[:, None])
                  & (np.isfinite(a) & np.isfinite(b)
                     & ~np.isclose(a, b, rtol=1e-9, atol=1e-300)).any(axis=2))
        if differ.any():
            p, j = (int(v[0]) for v in np.nonzero(differ))
            t_bad = int(after[j])
            raise ValueError(
                f"{owner}: 'hx' and 'hy' disagree after the meeting{who(p)}: h(X_{t_bad}) != "
                f"h(Y_{t_bad - 1}) although the meeting time is {tau[p]} <= {t_bad}, and X_t = "
                f"Y_(t-1) from then on. Check the meeting time and that hy[t] is h(Y_t) (Y one "
                f"sweep behind X)."
            )
    weights = np.minimum(1.0, (t - burn_in) / (m - burn_in + 1))
    diff = np.where(needed[:, :, None], x_corr - y_corr, 0.0)
    with np.errstate(invalid="ignore"):
        value = np.where(met[:, None], average.mean(axis=1), np.nan) + np.einsum(
            "j,pjk->pk", weights, diff)
    value = value.reshape((n_pairs,) + shape)
    return [PairEstimate(value[p], int(tau[p]), last, not met[p]) for p in range(n_pairs)]


def pair_estimate(hx, hy, meeting_time, burn_in, m):
    """H_{l:m} of one coupled pair from its h values (Jacob et al. 2020, eq. 2).

    Parameters
    ----------
    hx : array (T + 1, *shape)
        h(X_t) for t = 0..T (T, the last sweep of X). Entries the estimator does not
        need (t < burn_in, t > max(m, tau - 1)) are not read and may be NaN.
    hy : array (T', *shape)
        h(Y_t) for t = 0..T'-1 (T' = T for a pair run in step); only
        t = burn_in..tau - 2 are read.
    meeting_time : int or None
        tau >= 1 with tau - 1 <= T, or None / -1 when the pair has not met by sweep T.
    burn_in, m : int
        l >= 0 and m >= l; T must be >= m.

    Returns a :class:`PairEstimate`; a pair that has not met by T is censored (value
    NaN). Errors name the argument: T < m (the pair was not run to m), tau - 1 > T,
    hy too short, shapes that differ, non-finite needed values, h values that differ
    after the meeting (X_t = Y_{t-1} must give h(X_t) = h(Y_{t-1})).
    :func:`pair_estimates` does the same for a stack of pairs of one length.
    """
    owner = "pair_estimate"
    hx = _h_values(hx, "hx", owner, 1)
    hy = _h_values(hy, "hy", owner, 1)
    if isinstance(meeting_time, np.ndarray | list | tuple):
        raise TypeError(f"{owner}: 'meeting_time' must be one integer, got {meeting_time!r}.")
    return pair_estimates(hx[None], hy[None], [meeting_time], burn_in, m, owner=owner)[0]


__all__ = ["PairEstimate", "check_window", "pair_estimate", "pair_estimates"]
