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

from pymc_partitions.distributions.validation import integer_arg


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


def _meeting_time(value, owner):
    if value is None:
        return -1
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{owner}: 'meeting_time' must be an integer >= 1, or None / -1 for a pair that "
            f"has not met; got {value!r}."
        )
    value = int(value)
    if value == -1:
        return -1
    if value < 1:
        raise ValueError(
            f"{owner}: 'meeting_time' must be >= 1 (tau = min{{t >= 1: X_t = Y_(t-1)}}), or "
            f"None / -1 for a pair that has not met; got {value}."
        )
    return value


def _h_values(value, name, owner):
    arr = np.asarray(value)
    if arr.dtype.kind not in "biuf" or arr.ndim < 1:
        raise TypeError(
            f"{owner}: '{name}' must be an array of h values with the sweep first, "
            f"(sweeps, *shape) of numbers; got {type(value).__name__} with shape "
            f"{arr.shape} and dtype {arr.dtype}."
        )
    return arr.astype(np.float64, copy=False)


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
    """
    owner = "pair_estimate"
    burn_in, m = check_window(burn_in, m, owner)
    hx = _h_values(hx, "hx", owner)
    hy = _h_values(hy, "hy", owner)
    tau = _meeting_time(meeting_time, owner)
    shape = hx.shape[1:]
    if hy.shape[1:] != shape:
        raise ValueError(
            f"{owner}: 'hy' must hold h values of the shape of 'hx''s, {shape}; got "
            f"{hy.shape[1:]} (hx {hx.shape}, hy {hy.shape})."
        )
    last = hx.shape[0] - 1
    if last < m:
        raise ValueError(
            f"{owner}: 'm' = {m} needs X up to sweep m, but 'hx' holds sweeps 0..{last}; run "
            f"the pair for at least m sweeps (a pair stopped early, e.g. by a time budget, is "
            f"recorded with PairEstimate.censored_at)."
        )
    if tau == -1:
        return PairEstimate.censored_at(last, shape)
    if tau - 1 > last:
        raise ValueError(
            f"{owner}: 'meeting_time' = {tau} needs X up to sweep tau - 1 = {tau - 1}, but "
            f"'hx' holds sweeps 0..{last}."
        )
    if hy.shape[0] < tau - 1:
        raise ValueError(
            f"{owner}: 'meeting_time' = {tau} needs Y up to sweep tau - 2 = {tau - 2}, but "
            f"'hy' holds sweeps 0..{hy.shape[0] - 1}."
        )
    top = max(m, tau - 1)
    average = hx[burn_in:m + 1]
    t = np.arange(burn_in + 1, tau)
    x_corr, y_corr = hx[t], hy[t - 1]
    for name, values, first in (("hx", average, burn_in), ("hx", x_corr, burn_in + 1),
                                ("hy", y_corr, burn_in)):
        bad = ~np.isfinite(values.reshape(values.shape[0], -1)).all(axis=1)
        if bad.any():
            raise ValueError(
                f"{owner}: '{name}' is not finite at sweep {first + int(np.flatnonzero(bad)[0])}, "
                f"which H_{{{burn_in}:{m}}} with meeting time {tau} needs (sweeps "
                f"{burn_in}..{top} of X, {burn_in}..{tau - 2} of Y)."
            )
    # Faithfulness: X_t = Y_{t-1} for t >= tau, so their h values agree wherever both
    # are given; a mismatch means a wrong meeting_time or misaligned arrays.
    after = np.arange(tau, min(last, hy.shape[0]) + 1)
    if after.size:
        a, b = hx[after], hy[after - 1]
        # (a tolerance: a vectorised h may sum in another order for another batch)
        differ = np.isfinite(a) & np.isfinite(b) & ~np.isclose(a, b, rtol=1e-9, atol=1e-300)
        if differ.any():
            t_bad = int(after[np.flatnonzero(differ.reshape(after.size, -1).any(axis=1))[0]])
            raise ValueError(
                f"{owner}: h(X_{t_bad}) != h(Y_{t_bad - 1}) although 'meeting_time' = {tau} <= "
                f"{t_bad}: after the meeting X_t = Y_(t-1). Check meeting_time and that hy[t] "
                f"is h(Y_t) (Y one sweep behind X)."
            )
    weights = np.minimum(1.0, (t - burn_in) / (m - burn_in + 1))
    value = average.mean(axis=0) + np.tensordot(weights, x_corr - y_corr, axes=1)
    return PairEstimate(np.asarray(value, dtype=np.float64), tau, last, False)


__all__ = ["PairEstimate", "check_window", "pair_estimate"]
