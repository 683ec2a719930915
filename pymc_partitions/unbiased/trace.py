r"""The unbiased estimator from a ``pm.sample`` trace of :class:`pmp.CoupledGibbs`.

Each PyMC chain is one coupled pair (lag 1). At the draw of sweep t the step writes

- ``posterior[var_name]`` (chain, draw, n) int64: canonical labels of X_t;
- ``sample_stats["coupled_labels"]`` (chain, draw, n) int64: canonical labels of
  Y_{t-1};
- ``sample_stats["sweep"]`` (chain, draw) int64: t;
- ``sample_stats["meeting_sweep"]`` (chain, draw) int64: tau once X and Y have met
  (tau <= t), -1 before;
- ``sample_stats["coupling_distance"]`` (chain, draw) float64: d(X_t, Y_{t-1}) (not
  needed here).

:func:`unbiased_estimate` reads them (with PyMC's ``warmup_*`` groups in front when the
tuning draws were kept), checks them (consecutive sweeps, a consistent meeting sweep,
X_t = Y_{t-1} after the meeting), evaluates h once on the draws H_{l:m} needs (sweeps
burn_in..max(m, tau - 1) of X and burn_in+1..tau-1 of the stored Y_{t-1}), computes each
pair's estimate with :func:`pymc_partitions.unbiased.pair_estimate` and aggregates them
(:class:`pymc_partitions.UnbiasedEstimate`). A pair whose chain has not met by its last
draw is censored: reported, counted and left out, never given a value.
"""

import numpy as np

from pymc_partitions import compat
from pymc_partitions.analysis._draws import partition_variable, posterior_of
from pymc_partitions.unbiased.aggregate import UnbiasedEstimate, check_trim_ci
from pymc_partitions.unbiased.estimator import PairEstimate, check_window, pair_estimate
from pymc_partitions.unbiased.functions import PartitionFunction, evaluate

#: sample_stats written by pmp.CoupledGibbs that the estimator reads
COUPLED_LABELS = "coupled_labels"
SWEEP = "sweep"
MEETING_SWEEP = "meeting_sweep"
REQUIRED_STATS = (COUPLED_LABELS, SWEEP, MEETING_SWEEP)


def _group(idata, name):
    try:
        if name not in idata:
            return None
        return compat.group_dataset(idata, name)
    except (KeyError, AttributeError, TypeError):
        return None


def _values(ds, name, ndim):
    da = ds[name]
    order = ("chain", "draw") + tuple(d for d in da.dims if d not in ("chain", "draw"))
    arr = np.asarray(da.transpose(*order).values)
    return arr if arr.ndim == ndim else None


class CoupledTrace:
    """The arrays of a CoupledGibbs trace, checked (one row per PyMC chain = pair).

    x, y : (P, D, n) int64, labels of X_t and of Y_{t-1} at draw d (sweep t);
    sweeps : (P, D) int64; meeting : (P,) int64, tau or -1; chains : (P,) chain ids.
    """

    def __init__(self, idata, var_name, owner):
        post = posterior_of(idata, owner, allow_dataset=False)
        name = partition_variable(post, var_name, owner)
        stats = _group(idata, "sample_stats")
        missing = [s for s in REQUIRED_STATS if stats is None or s not in stats.data_vars]
        if missing:
            raise ValueError(
                f"{owner}: 'idata' has no sample_stats {missing}: it is not the output of "
                f"pmp.CoupledGibbs. Sample the partition '{name}' with coupled chains, "
                f"pm.sample(step=[pmp.CoupledGibbs([{name}])], tune=0), each PyMC chain "
                f"being one coupled pair."
            )
        parts = [(post, stats)]
        warm_post, warm_stats = _group(idata, "warmup_posterior"), _group(idata,
                                                                          "warmup_sample_stats")
        if (warm_post is not None and warm_stats is not None and name in warm_post.data_vars
                and all(s in warm_stats.data_vars for s in REQUIRED_STATS)
                and warm_post.sizes.get("draw", 0) > 0):
            parts.insert(0, (warm_post, warm_stats))  # tuning draws kept: sweeps 1..tune

        def read(ds_index, var, ndim):
            arrays = [_values(p[ds_index], var, ndim) for p in parts]
            if any(a is None for a in arrays):
                raise ValueError(
                    f"{owner}: 'idata' sample_stats['{var}'] must have dims (chain, draw"
                    f"{', item' if ndim == 3 else ''}) as pmp.CoupledGibbs writes it."
                )
            return np.concatenate(arrays, axis=1)

        self.name = name
        self.x = read(0, name, 3).astype(np.int64)
        self.y = read(1, COUPLED_LABELS, 3).astype(np.int64)
        self.sweeps = read(1, SWEEP, 2).astype(np.int64)
        meeting = read(1, MEETING_SWEEP, 2).astype(np.int64)
        self.chains = np.asarray(post["chain"].values)
        if self.y.shape != self.x.shape:
            raise ValueError(
                f"{owner}: 'idata' sample_stats['{COUPLED_LABELS}'] has shape {self.y.shape} "
                f"but '{name}' has {self.x.shape}: the coupled labels must be those of the "
                f"partition var_name = {name!r}."
            )
        if np.any(np.diff(self.sweeps, axis=1) != 1):
            c = int(np.flatnonzero(np.any(np.diff(self.sweeps, axis=1) != 1, axis=1))[0])
            raise ValueError(
                f"{owner}: 'idata' sample_stats['{SWEEP}'] of chain {self.chains[c]} is not one "
                f"sweep per draw ({self.sweeps[c, :6].tolist()}...): the estimator needs "
                f"consecutive sweeps of each pair."
            )
        self.meeting = meeting[:, -1]
        for c in range(meeting.shape[0]):
            tau = self.meeting[c]
            expected = np.where(self.sweeps[c] >= tau, tau, -1) if tau >= 1 else -1
            if tau == 0 or tau < -1 or np.any(meeting[c] != expected):
                raise ValueError(
                    f"{owner}: 'idata' sample_stats['{MEETING_SWEEP}'] of chain "
                    f"{self.chains[c]} is inconsistent: it must be -1 before the meeting "
                    f"sweep tau >= 1 and tau from then on; got {meeting[c, :8].tolist()}..."
                )
            if tau >= 1:
                after = self.sweeps[c] >= tau
                if np.any(self.x[c, after] != self.y[c, after]):
                    raise ValueError(
                        f"{owner}: in chain {self.chains[c]}, X_t differs from Y_(t-1) at a "
                        f"sweep t >= the meeting sweep {tau}: the pair is not faithful, so "
                        f"H_{{l:m}} would be wrong."
                    )


def _h_name(h):
    if isinstance(h, PartitionFunction):
        return h.name
    name = getattr(h, "__name__", "h")
    return "h" if name == "<lambda>" else name


def unbiased_estimate(idata, var_name, h, burn_in, m, trim=0.01, ci=0.95):
    r"""Unbiased estimate of the posterior mean of h(partition) from coupled chains
    (Jacob, O'Leary & Atchadé 2020, eq. 2; Nguyen, Trippe & Broderick 2022, eq. 2, §3.4).

    Each PyMC chain of ``idata`` is one coupled pair of :class:`pmp.CoupledGibbs`. For
    each pair,

    .. math::

        H_{l:m} = \frac{1}{m-l+1}\sum_{t=l}^{m} h(X_t)
          + \sum_{t=l+1}^{\tau-1} \min\Big(1, \frac{t-l}{m-l+1}\Big)
            \big(h(X_t) - h(Y_{t-1})\big)

    (l = ``burn_in``), whose expectation is exactly E[h] under the posterior; the
    pairs are independent, so their mean has an honest standard error.

    Parameters
    ----------
    idata : InferenceData or DataTree
        ``pm.sample(step=[pmp.CoupledGibbs([z])], ...)``: one pair per chain. Every
        sweep from ``burn_in`` on must be in it: PyMC drops the ``tune`` first sweeps
        unless ``tune=0`` or ``discard_tuned_samples=False`` (the warm-up groups are
        then read in front).
    var_name : str
        The partition variable.
    h : callable
        A function of a partition's canonical labels, (n,) int64 -> a number or an
        array (the same shape for every partition): a built-in
        (``pmp.unbiased.lcp``, ``n_blocks``, ``co_clustering(a, b)``,
        ``predictive_density(model, x_new)``), a
        :class:`pmp.unbiased.PartitionFunction`, or any Python function. It is
        evaluated once per distinct partition among the draws needed (built-ins:
        vectorised).
    burn_in : int >= 1
        l, the first sweep averaged (sweep 0 is the start, not stored). Jacob et al.
        suggest a large quantile of the meeting time.
    m : int >= burn_in
        The last sweep averaged; the trace must reach sweep m in every chain.
    trim : float in [0, 0.5), default 0.01
        Total proportion trimmed for the trimmed mean, half at each end (the paper's 1 %).
    ci : float in (0, 1), default 0.95
        Level of the normal confidence interval around the mean.

    Returns an :class:`pmp.UnbiasedEstimate`: mean, standard error, interval, trimmed
    mean, per-pair estimates, meeting times, censored pairs (chains that had not met by
    their last draw: reported and left out, with a :class:`CensoredPairsWarning`),
    ``survival()`` (Kaplan–Meier) and ``to_dataset()``.
    """
    owner = "unbiased_estimate"
    burn_in, m = check_window(burn_in, m, owner, minimum=1)
    trim, ci = check_trim_ci(trim, ci, owner)
    if not callable(h):
        raise TypeError(
            f"{owner}: 'h' must be a function of a partition's labels (e.g. "
            f"pmp.unbiased.lcp, pmp.unbiased.co_clustering(0, 1), or your own function), "
            f"got {h!r}."
        )
    trace = CoupledTrace(idata, var_name, owner)
    first, last = trace.sweeps[:, 0], trace.sweeps[:, -1]
    if np.any(last < m):
        c = int(np.argmin(last))
        raise ValueError(
            f"{owner}: 'm' = {m} needs every pair up to sweep m, but chain {trace.chains[c]} "
            f"ends at sweep {last[c]}: sample at least {m - first[c] + 1} draws (or lower m)."
        )
    if np.any(first > burn_in):
        c = int(np.argmax(first))
        raise ValueError(
            f"{owner}: 'burn_in' = {burn_in} needs the sweeps from {burn_in} on, but chain "
            f"{trace.chains[c]} starts at sweep {first[c]} (PyMC dropped {first[c] - 1} tuning "
            f"draws): sample with tune=0 (coupled chains need no tuning) or "
            f"discard_tuned_samples=False, or use burn_in >= {first[c]}."
        )

    # The draws H needs: X at sweeps l..max(m, tau-1); Y_{t-1} (stored at sweep t) at
    # t = l+1..tau-1. One evaluation of h on all of them.
    rows, plan = [], []
    for c, tau in enumerate(trace.meeting):
        if tau < 1:
            plan.append(None)
            continue
        tx = np.arange(burn_in, max(m, tau - 1) + 1)
        ty = np.arange(burn_in + 1, tau)
        plan.append((tx, ty, len(rows)))
        rows.append(trace.x[c, tx - first[c]])
        rows.append(trace.y[c, ty - first[c]])
    if not rows:  # every pair censored: h's shape from one draw
        rows = [trace.x[0, -1:]]
    labels = np.concatenate(rows)
    try:
        values = evaluate(h, labels)
    except Exception as exc:
        exc.add_note(f"(while {owner} evaluated 'h' = {_h_name(h)!r} on the partitions of "
                     f"'{trace.name}')")
        raise
    sizes = np.cumsum([0] + [r.shape[0] for r in rows])
    shape = values.shape[1:]
    pairs = []
    for c, entry in enumerate(plan):
        if entry is None:
            pairs.append(PairEstimate.censored_at(last[c], shape))
            continue
        tx, ty, k = entry
        hx = np.full((last[c] + 1,) + shape, np.nan)
        hy = np.full((last[c],) + shape, np.nan)
        hx[tx] = values[sizes[k]:sizes[k + 1]]
        hy[ty - 1] = values[sizes[k + 1]:sizes[k + 2]]
        pairs.append(pair_estimate(hx, hy, int(trace.meeting[c]), burn_in, m))
    dims = h.dims if isinstance(h, PartitionFunction) else None
    coords = h.coords if isinstance(h, PartitionFunction) else None
    return UnbiasedEstimate(pairs, burn_in, m, trim, ci, name=_h_name(h), dims=dims,
                            coords=coords, pair_ids=trace.chains)


__all__ = ["CoupledTrace", "REQUIRED_STATS", "unbiased_estimate"]
