r"""The naive-parallel baseline of Nguyen, Trippe & Broderick (2022), §5.2 and App. G.2:
independent single chains, one per processor, each run for the wall time its coupled
pair took (ξ^j), the first 10 % of its sweeps discarded, its average of h the
processor's estimate U^j; the U^j aggregated as the coupled estimates are (mean,
trimmed mean, standard error, interval). Its error stops falling with J because each
U^j is biased by the chains' finite length: the bias that coupling removes.

The chains are X chains of the coupled runner: the same model reading
(:func:`pymc_partitions.unbiased.runner.read_model`), start and single-chain move
(:class:`~pymc_partitions.step_methods.coupled_pair.CoupledPair`'s), executors and seeds.
"""

import time

import numpy as np
import xarray as xr

from pymc_partitions.arguments import number_arg
from pymc_partitions.unbiased.aggregate import UnbiasedEstimate, summary_statistics
from pymc_partitions.unbiased.executors import batches, dumps_payload, run_tasks
from pymc_partitions.unbiased.functions import PartitionFunction
from pymc_partitions.unbiased.runner import (
    CoupledJob,
    check_h,
    read_model,
    run_arguments,
    warm_up,
)
from pymc_partitions.unbiased.trace import _h_name

# The chains' job and task functions live in the PyMC-free worker module (see there).
from pymc_partitions.unbiased.worker import (  # noqa: F401
    CHUNK,
    NAIVE_CHILD,
    NaiveJob,
    run_chain,
    run_naive_batch,
)


class NaiveEstimate:
    """Aggregate of naive-parallel single-chain estimates (the baseline of Nguyen et al.
    2022, §5.2), computed as :class:`UnbiasedEstimate` computes its aggregates
    (:func:`~pymc_partitions.unbiased.aggregate.summary_statistics`) but *not*
    unbiased: each chain's average is biased by its finite length.

    Attributes: ``mean``, ``std_error``, ``ci_lower``, ``ci_upper``, ``trimmed_mean``,
    ``trimmed_std_error`` (as for :class:`UnbiasedEstimate`); per chain ``estimates``
    (J, *shape) (U^j), ``sweeps`` (sweeps run), ``discarded`` (sweeps discarded),
    ``seconds`` (wall time of the sweeps); ``name``, ``discard``, ``trim``, ``ci``,
    ``n_chains``, ``random_seed``; :meth:`to_dataset`.
    """

    def __init__(self, estimates, sweeps, discarded, seconds, *, discard, trim, ci, name,
                 dims=None, coords=None):
        self.estimates = np.asarray(estimates, dtype=np.float64)
        self.sweeps = np.asarray(sweeps, dtype=np.int64)
        self.discarded = np.asarray(discarded, dtype=np.int64)
        self.seconds = np.asarray(seconds, dtype=np.float64)
        self.discard, self.trim, self.ci, self.name = discard, trim, ci, name
        shape = self.estimates.shape[1:]
        self.dims = tuple(dims) if dims is not None else tuple(
            f"{name}_dim_{i}" for i in range(len(shape)))
        self.coords = dict(coords or {})
        self.n_chains = self.estimates.shape[0]
        for key, value in summary_statistics(self.estimates, trim, ci).items():
            setattr(self, key, value)

    def to_dataset(self):
        """An ``xarray.Dataset``: per chain (dimension ``chain``) ``estimate``,
        ``sweeps``, ``discarded``, ``seconds``; the aggregates; settings in ``attrs``."""
        hd = self.dims
        data = {"estimate": (("chain", *hd), self.estimates), "sweeps": (("chain",), self.sweeps),
                "discarded": (("chain",), self.discarded), "seconds": (("chain",), self.seconds)}
        for key in ("mean", "std_error", "ci_lower", "ci_upper", "trimmed_mean",
                    "trimmed_std_error"):
            data[key] = (hd, np.asarray(getattr(self, key)))
        coords = {"chain": np.arange(self.n_chains),
                  **{k: v for k, v in self.coords.items() if k in hd}}
        ds = xr.Dataset(data, coords=coords)
        ds.attrs.update(h=self.name, discard=self.discard, trim=self.trim, ci=self.ci,
                        n_chains=self.n_chains,
                        description="Naive-parallel estimates: one single chain per "
                                    "processor, first sweeps discarded (biased).")
        return ds

    def __repr__(self):
        def fmt(v):
            v = np.asarray(v)
            return f"{float(v):.6g}" if v.ndim == 0 else np.array2string(v, precision=4,
                                                                           threshold=6)
        return "\n".join([
            (f"NaiveEstimate of {self.name}: {self.n_chains} single chains (first "
             f"{100 * self.discard:g}% of sweeps discarded; not unbiased)"),
            f"  mean          {fmt(self.mean)}  (s.e. {fmt(self.std_error)})",
            f"  {100 * self.ci:g}% interval  [{fmt(self.ci_lower)}, {fmt(self.ci_upper)}]",
            f"  trimmed mean  {fmt(self.trimmed_mean)}  ({100 * self.trim:g}% trimmed)",
            (f"  sweeps        median {np.median(self.sweeps):g}, min "
             f"{self.sweeps.min()}, max {self.sweeps.max()}"),
        ])


def _budgets(name, value, owner, integer):
    if isinstance(value, UnbiasedEstimate):
        seconds = getattr(value, "seconds", None)
        if seconds is None:
            raise TypeError(f"{owner}: '{name}' is an UnbiasedEstimate without per-pair "
                            f"wall times; pass the result of pmp.coupled_estimates.")
        value = seconds[np.isfinite(seconds)]  # pairs never started have no time
    arr = np.asarray(value)
    if arr.ndim != 1 or arr.size == 0 or arr.dtype.kind not in "iuf":
        raise TypeError(
            f"{owner}: '{name}' must be a non-empty 1-d array, one entry per chain "
            f"(e.g. the coupled run's .seconds, or np.full(J, value)); got {value!r}.")
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0) or (
            integer and np.any(arr != np.round(arr))):
        what = "positive integers" if integer else "positive finite numbers of seconds"
        raise ValueError(f"{owner}: '{name}' must hold {what}; got {arr[:6]}...")
    return arr.astype(np.int64 if integer else np.float64)


def naive_estimates(model, var_name, h, wall_times=None, *, n_sweeps=None, discard=0.1,
                    executor=None, random_seed=None, progressbar=True, trim=0.01, ci=0.95,
                    **options):
    r"""The naive-parallel baseline of Nguyen et al. (2022, §5.2): J independent single
    chains of the same target, move and start as the coupled pairs' X chains, each run
    for a given wall time (or number of sweeps), the first ``discard`` of its sweeps
    dropped and the rest averaged; the J averages aggregated as
    :func:`pmp.coupled_estimates` aggregates its pairs. Compare the two to see the
    bias that coupling removes: the naive mean is not unbiased, so more chains shrink
    its interval around the wrong value.

    Parameters
    ----------
    model, var_name, h, executor, progressbar, trim, ci, **options
        As for :func:`pmp.coupled_estimates` (options: the move's, e.g.
        ``split_merge=True``; the coupling options are accepted and unused).
    wall_times : array (J,) of seconds, or the result of ``pmp.coupled_estimates``
        Chain j runs single-chain moves for ``wall_times[j]`` seconds of moves (its
        sweeps' wall time; h's evaluation not counted, as for the pairs). Passing the
        coupled result uses its per-pair times ``.seconds``: processor j gets the time
        its pair took, the paper's equal-wall-time comparison. Wall-time runs depend on
        the machine's speed, so they are not reproducible sweep for sweep.
    n_sweeps : array (J,) of ints, keyword-only
        Instead of ``wall_times``: chain j runs ``n_sweeps[j]`` sweeps (reproducible).
    discard : float in [0, 1), default 0.1
        Proportion of each chain's sweeps discarded as burn-in (the paper's 10 %):
        floor(discard T) of its T sweeps.
    random_seed
        As for ``coupled_estimates``; chain j's stream is a child of pair j's seed, so
        the same ``random_seed`` for both runs gives independent chains.

    Returns a :class:`NaiveEstimate`.
    """
    owner = "naive_estimates"
    if (wall_times is None) == (n_sweeps is None):
        raise TypeError(f"{owner}: pass exactly one of 'wall_times' (seconds per chain, e.g. "
                        f"the coupled result) and 'n_sweeps' (sweeps per chain).")
    wall = None if wall_times is None else _budgets("wall_times", wall_times, owner, False)
    sweeps = None if n_sweeps is None else _budgets("n_sweeps", n_sweeps, owner, True)
    n_chains = (wall if wall is not None else sweeps).size
    discard = number_arg("discard", discard, owner, low=0.0, high=1.0, high_open=True)
    trim, ci, root, runner = run_arguments(trim, ci, progressbar, random_seed, executor, owner)
    try:
        target, pair_options = read_model(model, var_name, owner, options)
        shape = check_h(h, target.start_labels, owner)
        cj = CoupledJob(target, pair_options, h, shape, 1, 1, None, root.entropy,
                        tuple(root.spawn_key), root.pool_size)
        job = NaiveJob(cj, wall, sweeps, discard)
        payload = job
        if not runner.serial:
            payload = (f"{id(job)}-{time.time_ns()}", dumps_payload(job, owner))
            warm_up(cj, pairs=False)
        results, _ = run_tasks(runner, run_naive_batch, payload,
                               batches(n_chains, runner.n_workers), None, "Single chains",
                               progressbar)
    finally:
        runner.shutdown()
    rows = sorted((row for batch in results for row in batch), key=lambda r: r[0])
    estimates = np.stack([r[1] for r in rows])
    result = NaiveEstimate(estimates, [r[2] for r in rows], [r[3] for r in rows],
                           [r[4] for r in rows], discard=discard, trim=trim, ci=ci,
                           name=_h_name(h),
                           dims=h.dims if isinstance(h, PartitionFunction) else None,
                           coords=h.coords if isinstance(h, PartitionFunction) else None)
    result.random_seed = root.entropy
    return result


__all__ = ["NaiveEstimate", "naive_estimates"]
