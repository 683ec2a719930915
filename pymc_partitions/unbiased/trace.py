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

from pymc_partitions import versions
from pymc_partitions.analysis._draws import (
    is_multitrace,
    multitrace_refusal,
    partition_variable,
    posterior_of,
)
from pymc_partitions.unbiased.aggregate import UnbiasedEstimate, check_trim_ci
from pymc_partitions.unbiased.estimator import check_window, pair_estimates
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
        return versions.group_dataset(idata, name)
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
        if is_multitrace(idata):
            raise multitrace_refusal(owner, why=f"{owner} reads the sample_stats of "
                                     f"pmp.CoupledGibbs from an InferenceData")
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
        if np.any(self.sweeps != self.sweeps[:1]):
            raise ValueError(
                f"{owner}: 'idata' sample_stats['{SWEEP}'] differs between chains: every pair "
                f"must have run the same sweeps (one pm.sample call)."
            )
        self.meeting = tau = meeting[:, -1]
        met = tau >= 1
        expected = np.where(met[:, None] & (self.sweeps >= tau[:, None]), tau[:, None], -1)
        wrong = np.any(meeting != expected, axis=1) | (tau == 0) | (tau < -1)
        if wrong.any():
            c = int(np.flatnonzero(wrong)[0])
            raise ValueError(
                f"{owner}: 'idata' sample_stats['{MEETING_SWEEP}'] of chain {self.chains[c]} "
                f"is inconsistent: it must be -1 before the meeting sweep tau >= 1 and tau "
                f"from then on; got {meeting[c, :8].tolist()}..."
            )
        after = met[:, None] & (self.sweeps >= tau[:, None])
        unfaithful = np.any(after[..., None] & (self.x != self.y), axis=(1, 2))
        if unfaithful.any():
            c = int(np.flatnonzero(unfaithful)[0])
            raise ValueError(
                f"{owner}: in chain {self.chains[c]}, X_t differs from Y_(t-1) at a sweep t >= "
                f"the meeting sweep {tau[c]}: the pair is not faithful, so H_{{l:m}} would be "
                f"wrong."
            )


def _evaluate(h, labels, var, owner):
    try:
        return evaluate(h, labels)
    except Exception as exc:
        exc.add_note(f"(while {owner} evaluated 'h' = {_h_name(h)!r} on the partitions of "
                     f"'{var}')")
        raise


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
        l, the first sweep averaged (sweep 0 is the start, not stored, so H_{0:m} is
        not available from a trace: :func:`pmp.coupled_estimates` runs the pairs
        itself and takes ``burn_in=0``). Jacob et al. suggest a large quantile of the
        meeting time.
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
    burn_in, m = check_window(burn_in, m, owner)
    if burn_in == 0:
        raise ValueError(
            f"{owner}: 'burn_in' = 0 (H_{{0:m}}) needs h(X_0), the pairs' start, which a "
            f"pm.sample trace does not hold (its first draw is sweep 1): use burn_in >= 1, "
            f"or pmp.coupled_estimates(model, {var_name!r}, h, burn_in=0, ...), which runs "
            f"the pairs itself from the start."
        )
    trim, ci = check_trim_ci(trim, ci, owner)
    if not callable(h):
        raise TypeError(
            f"{owner}: 'h' must be a function of a partition's labels (e.g. "
            f"pmp.unbiased.lcp, pmp.unbiased.co_clustering(0, 1), or your own function), "
            f"got {h!r}."
        )
    trace = CoupledTrace(idata, var_name, owner)
    first, last = int(trace.sweeps[0, 0]), int(trace.sweeps[0, -1])
    if last < m:
        raise ValueError(
            f"{owner}: 'm' = {m} needs every pair up to sweep m, but the chains end at sweep "
            f"{last}: sample at least {m - first + 1} draws (or lower m)."
        )
    if first > burn_in:
        raise ValueError(
            f"{owner}: 'burn_in' = {burn_in} needs the sweeps from {burn_in} on, but the "
            f"chains start at sweep {first} (PyMC dropped {first - 1} tuning draws): sample "
            f"with tune=0 (coupled chains need no tuning) or discard_tuned_samples=False, or "
            f"use burn_in >= {first}."
        )

    # The draws H needs: X at sweeps l..max(m, tau-1); Y_(t-1) (stored at sweep t) at
    # t = l+1..tau-1. h is evaluated on those only, in blocks of pairs so that the
    # (pairs, sweeps, *shape) arrays stay small.
    sweeps, tau = trace.sweeps, trace.meeting
    met = (tau >= 1)[:, None]
    need_x = met & (sweeps >= burn_in) & (sweeps <= np.maximum(m, tau - 1)[:, None])
    need_y = met & (sweeps >= burn_in + 1) & (sweeps <= (tau - 1)[:, None])
    probe = trace.x[need_x][:1] if need_x.any() else trace.x[0, -1:]
    shape = _evaluate(h, probe, trace.name, owner).shape[1:]
    n_pairs = sweeps.shape[0]
    block = max(1, int(4e6 // ((last + 1) * max(1, int(np.prod(shape))))))
    pairs = []
    for lo in range(0, n_pairs, block):
        sl = slice(lo, lo + block)
        nx, ny = need_x[sl], need_y[sl]
        hx = np.full((nx.shape[0], last + 1) + shape, np.nan)
        hy = np.full((nx.shape[0], last) + shape, np.nan)
        labels = np.concatenate([trace.x[sl][nx], trace.y[sl][ny]])
        if labels.shape[0]:
            values = _evaluate(h, labels, trace.name, owner)
            if values.shape[1:] != shape:
                raise ValueError(
                    f"{owner}: 'h' must return the same shape for every partition; it "
                    f"returned {shape} and {values.shape[1:]}."
                )
            count = int(nx.sum())
            c, d = np.nonzero(nx)
            hx[c, sweeps[sl][c, d]] = values[:count]
            c, d = np.nonzero(ny)
            hy[c, sweeps[sl][c, d] - 1] = values[count:]
        pairs += pair_estimates(hx, hy, tau[sl], burn_in, m, owner=owner)
    dims = h.dims if isinstance(h, PartitionFunction) else None
    coords = h.coords if isinstance(h, PartitionFunction) else None
    return UnbiasedEstimate(pairs, burn_in, m, trim, ci, name=_h_name(h), dims=dims,
                            coords=coords, pair_ids=trace.chains)


__all__ = ["REQUIRED_STATS", "CoupledTrace", "unbiased_estimate"]
