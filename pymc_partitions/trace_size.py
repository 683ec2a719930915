"""How much memory ``pm.sample`` will need to store partitions, said before sampling.

A partition variable of n items stores n int64 labels per draw: 8 MB a draw at
n = 10^6, so PyMC's default of 1000 draws per chain on 4 chains is 32 GB, and more at
the peak: PyMC's NumPy trace also holds the tuning draws until the end, and
``pm.sample`` copies the trace into ``InferenceData`` (measured at n = 10^6: 16.3 MiB
of peak memory per stored draw, issue 33). Labels are kept as they are (int64, the
variable's dtype, which ArviZ, ``pm.sample_posterior_predictive`` and the analysis
functions read); instead :func:`check_trace_size`, called by ``pm.sample`` before
the first draw (the hook :mod:`pymc_partitions.hooks.sample_checks`),
warns with the estimate and what to do when it exceeds :data:`WARN_BYTES` or half of
the available memory:

- fewer draws (``draws=``);
- keep only the label-invariant summaries and the other variables
  (``var_names=[...]``: ``{name}_n_clusters``, ``{name}_largest_cluster_frac``,
  ``{name}_entropy`` are Deterministics, stored without the labels);
- thin: ``pm.sample`` has no thinning argument, but more sweeps per stored draw do
  the same (``pmp.Gibbs([z], n_sweeps=k)`` keeps one draw in k sweeps).

The warning is a :class:`TraceSizeWarning`, so it can be silenced with the warnings
filter.
"""

import os
import warnings

#: Warn when the estimated peak memory of the stored partitions exceeds this (bytes).
WARN_BYTES = 2 << 30


class TraceSizeWarning(UserWarning):
    """``pm.sample`` is about to store partitions that need a lot of memory."""


def available_memory():
    """Bytes of memory available to a new allocation (Linux ``MemAvailable``; else
    free physical pages), or None when unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def format_bytes(n_bytes):
    """'1.5 GB'-style text (powers of 1024, as ``free -h``)."""
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if abs(n_bytes) < 1024 or unit == "GiB":
            return f"{n_bytes:.0f} {unit}" if unit == "bytes" else f"{n_bytes:.1f} {unit}"
        n_bytes /= 1024
    return f"{n_bytes:.1f} GiB"  # pragma: no cover


def _default_chains(cores):
    if cores is None:
        cores = min(4, os.cpu_count() or 1)  # as pm.sample
    return max(2, int(cores))


def stored_partitions(model, var_names):
    """(name, n) of the partition variables ``pm.sample`` stores: all of them unless
    ``var_names`` leaves them out."""
    from pymc_partitions.distributions.model_terms import partition_rvs
    from pymc_partitions.distributions.partition import partition_size

    out = []
    for rv in partition_rvs(model):
        if var_names is not None and rv.name not in var_names:
            continue
        n = partition_size(rv)
        if n is not None:
            out.append((rv.name, n))
    return out


def estimate_trace_bytes(n_labels, draws, tune, chains, discard_tuned_samples=True):
    """(bytes in the returned posterior, peak bytes while sampling) of ``n_labels``
    int64 labels per draw: the NumPy trace holds tune + draws per chain, and the
    conversion to InferenceData copies the kept draws."""
    kept = 8.0 * n_labels * chains * (draws + (0 if discard_tuned_samples else tune))
    return kept, 8.0 * n_labels * chains * (draws + tune) + kept


def check_trace_size(model, draws=1000, tune=1000, chains=None, cores=None, var_names=None,
                     discard_tuned_samples=True):
    """Warn (:class:`TraceSizeWarning`) when the partitions ``pm.sample`` would store
    need more than :data:`WARN_BYTES` or half the available memory at the peak; the
    message gives the sizes, the available memory and the remedies. Returns the
    estimated peak in bytes (0 without stored partitions)."""
    parts = stored_partitions(model, var_names)
    if not parts:
        return 0.0
    draws = int(draws)
    tune = 1000 if tune is None else int(tune)  # PyMC 6: None means the steps' default
    chains = _default_chains(cores) if chains is None else int(chains)
    n_labels = sum(n for _, n in parts)
    kept, peak = estimate_trace_bytes(n_labels, draws, tune, chains, discard_tuned_samples)
    available = available_memory()
    if peak <= WARN_BYTES and (available is None or peak <= available / 2):
        return peak
    names = ", ".join(f"'{name}' (n = {n})" for name, n in parts)
    first = parts[0][0]
    others = [v.name for v in model.free_RVs if v.name not in {p for p, _ in parts}]
    others += [d.name for d in model.deterministics]
    fits = "" if available is None else (
        f" Available memory: {format_bytes(available)}"
        + (" -- this will not fit." if peak > available else ".")
    )
    warnings.warn(
        f"pm.sample will store {chains} chains x {draws} draws of the partition labels of "
        f"{names}: {format_bytes(kept)} in the posterior (8 bytes a label), about "
        f"{format_bytes(peak)} at the peak (PyMC holds the {tune} tuning draws until the "
        f"end and copies the trace into InferenceData).{fits} To store less: fewer draws "
        f"(draws=...); or keep only the label-invariant summaries and the other variables, "
        f"var_names={others!r}; or thin: pm.sample has no thinning argument, but "
        f"pmp.Gibbs([{first}], n_sweeps=k) makes k sweeps per stored draw. Silence with "
        f"warnings.simplefilter('ignore', pmp.trace_size.TraceSizeWarning).",
        TraceSizeWarning,
        stacklevel=3,
    )
    return peak


__all__ = ["TraceSizeWarning", "check_trace_size", "estimate_trace_bytes", "available_memory"]
