"""The exactness harness (DESIGN §6): every sampler is judged against the exact
posterior over all set partitions of a small n.

1. :func:`exact_posterior` enumerates the set partitions and evaluates the model's
   own compiled PyTensor log density at each. Free continuous variables (the
   hyperparameters: pmp.EscobarWest, pmp.HyperSlice or NUTS) are integrated out by the trapezoid rule on their
   unconstrained scale: the model's terms are grouped by the variables they
   depend on, and each group is integrated over the product grid of its variables.
2. The draws come from ``pm.sample`` with any step (:func:`sample`) or from any
   callable that returns canonical labels (the samplers that do not run through
   ``pm.sample``).
3. :func:`judge` applies three checks, each at family-wise level ``LEVEL``:

   - an **ESS floor**: the smallest bulk ESS (ArviZ) over the log posterior of the
     draw, the number of blocks and the indicator of the modal partition must reach
     ``min_ess``. A sampler that barely moves fails here instead of passing under a
     wide bound.
   - **total variation** against the null distribution of the TV distance of an iid
     sample of size ESS from the exact posterior (Monte Carlo, ``N_NULL``
     multinomial draws); the test fails above its 1 - ``LEVEL`` quantile.
   - **z-tests** on the summaries bias shows first: P(K = k) for every k and the
     co-clustering probability of every pair. Each sample mean is compared with the
     exact value e; its MCSE is sqrt(e (1 - e) / ESS), the exact Bernoulli standard
     deviation over ArviZ's mean-ESS of that summary (the sample's own standard
     deviation is unstable for rare events). Bonferroni over the summaries.
     Summaries that are exactly 0 or 1 must be matched exactly.

Each verdict is printed (``pytest -s``) and, when ``PMP_EXACT_REPORT`` names a file,
appended to it as a JSON line (``python tests/exact_table.py FILE`` tabulates).
"""

import itertools
import json
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy.special import logsumexp
from scipy.stats import norm

import pymc_partitions as pmp
from pymc_partitions.versions import ancestors
from pymc_partitions.kernels import gibbs
from pymc_partitions.kernels.components import add, log_pred
from pymc_partitions.kernels.errors import check_item
from pymc_partitions.kernels.random import new_stream
from pymc_partitions.kernels.state import open_slot
from pymc_partitions.step_methods.target import PartitionTarget

MIN_ESS = 1000.0  # the ESS floor every exactness test must reach
LEVEL = 1e-4  # family-wise false-alarm probability of each check
N_NULL = 20_000  # Monte Carlo draws of the null TV distribution


# ----------------------------------------------------------------------------------
# The exact posterior
# ----------------------------------------------------------------------------------


@dataclass
class Exact:
    """The exact posterior over all set partitions of n items.

    partitions : (B, n) int64 canonical labels; log_post : (B,) normalised log
    probabilities (-inf outside the support).
    """

    partitions: np.ndarray
    log_post: np.ndarray

    @property
    def p(self):
        return np.exp(self.log_post)

    def codes(self, draws):
        """Row of ``partitions`` of each draw, shape ``draws.shape[:-1]``; every draw
        must be a canonical partition of n items."""
        n = self.partitions.shape[1]
        weights = n ** np.arange(n, dtype=np.int64)
        keys = self.partitions @ weights
        order = np.argsort(keys)
        flat = np.asarray(draws).reshape(-1, n) @ weights
        pos = np.searchsorted(keys[order], flat)
        pos = np.minimum(pos, keys.size - 1)
        if not np.array_equal(keys[order][pos], flat):
            raise AssertionError("draws that are not canonical partitions of n items")
        return order[pos].reshape(np.shape(draws)[:-1])


def normal_model(n=6, seed=2, spread=2.0, alpha=0.7):
    """CRP(alpha) and a CollapsedNormal (D = 2, tau = 2, sigma = 1) on two groups of
    n // 2 and n - n // 2 points centred at -spread and +spread."""
    rng = np.random.default_rng(seed)
    half = n // 2
    y = np.concatenate([rng.normal(-spread, 1, (half, 2)), rng.normal(spread, 1, (n - half, 2))])
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=alpha, n=n)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=2.0, sigma=1.0, observed=y)
    return model


#: PyTensor mode of the reference log densities that are evaluated a few hundred
#: times (once per partition, or once per partition on a whole grid at a time):
#: PyTensor's Python VM, which compiles nothing. The C VM spent ~0.4 s of g++ per
#: distinct fused expression, and these graphs were most of the C modules the suite
#: compiled (50 of 89 in test_split_merge.py and test_arm.py). The graph is the
#: model's own log density; only the rewrites that speed it up are skipped.
REFERENCE_MODE = "FAST_COMPILE"


def compiled_logp(model, rvs, inputs, mode=REFERENCE_MODE):
    """``model.logp(vars=rvs)`` (with Jacobians) compiled as a function of ``inputs``."""
    return model.compile_fn(
        model.logp(vars=rvs, jacobian=True, sum=True), inputs=inputs, point_fn=False,
        on_unused_input="ignore", mode=mode,
    )


def exact_posterior(model, z="z", grids=None):
    """Exact p(z | data) from the model's own log density.

    grids : dict, value-variable name -> 1-d grid on the unconstrained scale (e.g.
        ``{"alpha_log__": np.linspace(-25, 7, 1200)}``), one for every free variable
        other than z. The model's terms are grouped by the free variables they
        depend on; a group's terms are integrated over the product of its grids
        with trapezoid weights (the Jacobians are in the terms).
    """
    partitions, groups = _grouped_log_terms(model, z, grids)
    total = np.zeros(len(partitions))
    for _, _, log_w, vals in groups:
        total += logsumexp(vals + log_w, axis=tuple(range(1, vals.ndim)))
    return Exact(partitions, total - logsumexp(total))


def exact_hyper_means(model, functions, z="z", grids=None):
    """Exact posterior means E[f(v) | data] of functions of free variables other than z.

    functions : dict, value-variable name -> f, a vectorised function of the value
        on its grid (e.g. ``{"alpha_log__": np.exp}`` for the mean of alpha).
    grids : as for :func:`exact_posterior` (the same trapezoid quadrature).
    """
    partitions, groups = _grouped_log_terms(model, z, grids)
    integrals = [logsumexp(vals + log_w, axis=tuple(range(1, vals.ndim)))
                 for _, _, log_w, vals in groups]
    out = {}
    for name, f in functions.items():
        g = next(i for i, group in enumerate(groups) if name in group[0])
        names, axes, log_w, vals = groups[g]
        rest = sum(integrals[:g] + integrals[g + 1:], np.zeros(len(partitions)))
        joint = vals + log_w + rest.reshape((-1,) + (1,) * (vals.ndim - 1))
        weights = np.exp(joint - logsumexp(joint))
        axis = names.index(name)
        marginal = weights.sum(axis=tuple(i for i in range(vals.ndim) if i != axis + 1))
        out[name] = float(np.sum(marginal * f(axes[axis])))
    return out


def _grouped_log_terms(model, z, grids):
    """``(partitions, groups)``: every set partition of n items, and per group of
    terms sharing free variables ``(names, axes, log trapezoid weights (grid shape),
    log density (B, *grid shape))``, each partition's terms on the product grid."""
    if model.potentials:
        raise ValueError(f"exact_posterior: potentials are not supported ({model.potentials})")
    grids = dict(grids or {})
    z_value = model.rvs_to_values[model[z]]
    n = int(model.initial_point()[z].shape[0])
    partitions = pmp.set_partitions(n)
    others = [v for v in model.value_vars if v is not z_value]
    missing = [v.name for v in others if v.name not in grids]
    if missing:
        raise ValueError(f"exact_posterior: give a quadrature grid for {missing}")
    # Group every term by the free variables (other than z) its log density reads.
    groups = {}  # frozenset of value names -> list of RVs
    for rv in model.free_RVs + model.observed_RVs:
        reads = set(ancestors([model.logp(vars=[rv], jacobian=True)]))
        key = frozenset(v.name for v in others if v in reads)
        groups.setdefault(key, []).append(rv)
    merged = []  # union of groups sharing a variable
    for names, rvs in groups.items():
        names, rvs = set(names), list(rvs)
        for other in [g for g in merged if g[0] & names]:
            merged.remove(other)
            names |= other[0]
            rvs += other[1]
        merged.append((names, rvs))
    out = []
    for names, rvs in merged:
        names = sorted(names)
        values = [next(v for v in others if v.name == name) for name in names]
        axes = [np.asarray(grids[name], dtype=float) for name in names]
        log_w = sum(np.ix_(*[_log_trapezoid(a) for a in axes])) if axes else np.zeros(())
        shape = tuple(a.size for a in axes)
        vals = np.empty((len(partitions), *shape))
        batched = _batched_logp(model, rvs, z_value, values)
        if batched is not None:
            mesh = [np.ascontiguousarray(m.ravel(), dtype=v.dtype)
                    for m, v in zip(np.meshgrid(*axes, indexing="ij"), values)]
            for b, labels in enumerate(partitions):
                vals[b] = np.asarray(batched(labels, *mesh)).reshape(shape)
        else:
            # one call per partition and grid point: the C VM pays for its compile
            fn = compiled_logp(model, rvs, [z_value, *values],
                               mode=None if axes else REFERENCE_MODE)
            dtypes = [v.dtype for v in values]
            for b, labels in enumerate(partitions):
                for idx in itertools.product(*[range(a.size) for a in axes]):
                    args = [np.asarray(a[i], dtype=t) for a, i, t in zip(axes, idx, dtypes)]
                    vals[(b, *idx)] = float(fn(labels, *args))
        out.append((names, axes, log_w, vals))
    return partitions, out


def _batched_logp(model, rvs, z_value, values):
    """The terms' log density as a function of (labels, one flat vector per scalar
    variable in ``values``), vectorised over the grid points (``vectorize_graph``),
    or None when a variable is not a scalar or the graph does not vectorise (the
    caller then loops over the grid)."""
    if not values or any(v.ndim != 0 for v in values):
        return None
    from pytensor.graph.replace import vectorize_graph
    import pytensor.tensor as pt

    try:
        terms = model.logp(vars=rvs, jacobian=True, sum=False)
        total = pt.add(*[t.sum() for t in terms]) if len(terms) > 1 else terms[0].sum()
        batch = [pt.vector(f"{v.name}_grid", dtype=v.dtype) for v in values]
        out = vectorize_graph(total, dict(zip(values, batch)))
        return model.compile_fn(out, inputs=[z_value, *batch], point_fn=False,
                                on_unused_input="ignore", mode=REFERENCE_MODE)
    except Exception:  # noqa: BLE001 - any failure: the loop is the reference
        return None


def _log_trapezoid(grid):
    w = np.gradient(grid)  # interior (x[i+1] - x[i-1]) / 2, ends one half-step
    w[0] = (grid[1] - grid[0]) / 2
    w[-1] = (grid[-1] - grid[-2]) / 2
    return np.log(w)


def exact_from_log_density(log_density, n):
    """Exact posterior from a log density of canonical labels (e.g. a compiled prior)."""
    partitions = pmp.set_partitions(n)
    logps = np.array([float(log_density(p)) for p in partitions])
    return Exact(partitions, logps - logsumexp(logps))


# ----------------------------------------------------------------------------------
# Draws
# ----------------------------------------------------------------------------------


def sample(model, draws, chains=4, seed=0, step=None, **kwargs):
    """``pm.sample`` with the settings the exactness tests share (quiet, cores=1)."""
    with model:
        return pm.sample(
            draws=draws,
            tune=kwargs.pop("tune", 200),
            chains=chains,
            cores=kwargs.pop("cores", 1),
            step=step,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
            **kwargs,
        )


def draws_of(idata, name="z"):
    """(chain, draw, n) labels of ``name`` from a ``pm.sample`` result, or the array."""
    if isinstance(idata, np.ndarray):
        return idata
    return np.asarray(idata["posterior"][name].values)


# ----------------------------------------------------------------------------------
# The verdict
# ----------------------------------------------------------------------------------


@dataclass
class Verdict:
    """What :func:`judge` found; ``failures`` names each check that failed."""

    label: str
    draws: int
    ess: float
    tv: float
    tv_bound: float
    worst_z: float
    worst_summary: str
    failures: list = field(default_factory=list)

    @property
    def passed(self):
        return not self.failures

    def row(self):
        return (f"{self.label}: draws {self.draws} ESS {self.ess:.0f} TV {self.tv:.4f} "
                f"(bound {self.tv_bound:.4f}) worst |z| {self.worst_z:.2f} "
                f"({self.worst_summary}) -> {'pass' if self.passed else self.failures}")


def _ess(values, method="bulk"):
    ess = float(np.asarray(az.ess(np.asarray(values, dtype=float), method=method)))
    return ess if np.isfinite(ess) else 0.0


def tv_null_quantile(p, m, level=LEVEL, n_null=N_NULL, seed=0):
    """The 1 - ``level`` quantile of the TV distance between the empirical
    distribution of ``m`` iid draws from ``p`` and ``p`` (Monte Carlo)."""
    rng = np.random.default_rng(seed)
    support = p > 0
    q = p[support] / p[support].sum()
    m = max(int(round(m)), 1)
    tvs = []
    for chunk in np.array_split(np.arange(n_null), max(1, n_null // 2000)):
        counts = rng.multinomial(m, q, size=chunk.size)
        tvs.append(0.5 * np.abs(counts / m - q).sum(axis=1))
    return float(np.quantile(np.concatenate(tvs), 1.0 - level))


def judge(exact, draws, *, min_ess=MIN_ESS, level=LEVEL, label=None):
    """Judge ``draws`` ((chain, draw, n) canonical labels) against ``exact``."""
    draws = np.asarray(draws)
    if draws.ndim == 2:
        draws = draws[None]
    label = label or os.environ.get("PYTEST_CURRENT_TEST", "?").split(" ")[0]
    codes = exact.codes(draws)
    p = exact.p
    failures = []
    if np.any(p[codes] == 0):
        failures.append("draws outside the support")
    # 1. ESS floor over scalars that vary under the target.
    k_draws = draws.max(axis=-1) + 1
    k_exact = exact.partitions.max(axis=1) + 1
    mode = np.argmax(p)
    floor_scalars = [
        (np.where(p[codes] > 0, exact.log_post[codes], -1e300), exact.log_post),  # log p
        (k_draws, k_exact),  # number of blocks
        ((codes == mode).astype(float), (np.arange(p.size) == mode).astype(float)),  # mode
    ]
    ess = np.inf
    for values, on_partitions in floor_scalars:
        support = p > 0
        if np.ptp(on_partitions[support]) > 0:  # varies under the target ...
            ess = min(ess, _ess(values) if np.ptp(values) > 0 else 0.0)  # ... not in the draws
    if ess < min_ess:
        failures.append(f"ESS {ess:.0f} < floor {min_ess:.0f}")
    # 2. TV against its null distribution at sample size ESS.
    freq = np.bincount(codes.ravel(), minlength=p.size) / codes.size
    tv = 0.5 * np.abs(freq - p).sum()
    bound = tv_null_quantile(p, max(ess, 1.0), level)
    if tv > bound:
        failures.append(f"TV {tv:.4f} > {bound:.4f}")
    # 3. z-tests: P(K = k) and P(i ~ j), Bonferroni-corrected.
    n = draws.shape[-1]
    summaries = []
    for k in range(1, n + 1):
        summaries.append((f"P(K={k})", (k_draws == k).astype(float), p[k_exact == k].sum()))
    for i, j in itertools.combinations(range(n), 2):
        together = exact.partitions[:, i] == exact.partitions[:, j]
        summaries.append(
            (f"P({i}~{j})", (draws[..., i] == draws[..., j]).astype(float), p[together].sum())
        )
    z_crit = norm.isf(level / (2 * len(summaries)))
    worst, worst_name = 0.0, "-"
    for name, values, e in summaries:
        mean = values.mean()
        if e < 1e-12 or e > 1 - 1e-12:
            z = 0.0 if abs(mean - round(e)) == 0 else np.inf
        else:
            ess_s = _ess(values, "mean") if np.ptp(values) > 0 else max(ess, 1.0)
            z = (mean - e) / np.sqrt(e * (1 - e) / max(ess_s, 1.0))
        if abs(z) > worst:
            worst, worst_name = abs(z), name
    if worst > z_crit:
        failures.append(f"|z| {worst:.2f} > {z_crit:.2f} on {worst_name}")
    verdict = Verdict(label, int(codes.size), float(ess), float(tv), bound, float(worst),
                      worst_name, failures)
    print(verdict.row())
    report = os.environ.get("PMP_EXACT_REPORT")
    if report:
        with open(report, "a") as fh:
            fh.write(json.dumps(verdict.__dict__ | {"passed": verdict.passed}) + "\n")
    return verdict


def assert_exact(model, *, draws=None, seed=0, step=None, sampler=None, exact=None, grids=None,
                 z="z", chains=4, min_ess=MIN_ESS, **sample_kwargs):
    """Sample ``model`` (``pm.sample`` with ``step``, or ``sampler()`` returning draws or
    an InferenceData) and assert the draws pass :func:`judge`. Returns the verdict and
    the sampler's output."""
    exact = exact if exact is not None else exact_posterior(model, z, grids)
    if sampler is None:
        out = sample(model, draws=draws, chains=chains, seed=seed, step=step, **sample_kwargs)
    else:
        out = sampler()
    verdict = judge(exact, draws_of(out, z), min_ess=min_ess)
    assert verdict.passed, verdict.row()
    return verdict, out


# ----------------------------------------------------------------------------------
# Draws from kernels driven directly (samplers that do not run through pm.sample)
# ----------------------------------------------------------------------------------


class KernelChain:
    """One chain's kernel state for ``model``'s partition ``z`` at the model's initial
    point (fixed hyperparameters), read through the steps' own ``PartitionTarget``.

    Attributes used by moves: ``state, prior, params, stats, data, n, log_w, order``
    and ``stream``, the chain's kernel random stream (from ``seed``, anything
    :func:`~pymc_partitions.kernels.random.new_stream` takes); :meth:`reload`
    replaces the state by the partition ``labels``.
    """

    def __init__(self, model, z="z", start=None, wrap_params=None, seed=None):
        self.target = PartitionTarget(model, model.rvs_to_values[model[z]], "test")
        self.values, self.prior, self.per_lik = self.target.params(model.initial_point())
        self.n = self.target.n
        self.wrap_params = wrap_params
        self.reload(np.zeros(self.n, dtype=np.int64) if start is None else start)
        self.log_w = np.empty(self.n + 1)
        self.order = np.arange(self.n, dtype=np.int64)
        self.stream = new_stream(seed)

    def reload(self, labels):
        chain = self.target.new_chain_state(np.asarray(labels, dtype=np.int64), self.values,
                                            self.per_lik)
        params, self.stats, self.data = self.target.kernel_args(chain, self.values, self.per_lik)
        self.params = self.wrap_params(params) if self.wrap_params else params
        self.state = chain.state

    def labels(self):
        return pmp.canonicalize(self.state.labels)


def kernel_draws(model, move, draws, chains=4, seed=0, **chain_kwargs):
    """(chains, draws, n) canonical labels from ``move(rng, chain)`` applied once per
    draw to a :class:`KernelChain` per chain (each started at one block). Chain c
    has the numpy generator ``rng`` and the kernel stream ``chain.stream``, both
    from ``(seed, c)``."""
    out = []
    for c in range(chains):
        rng = np.random.default_rng([seed, c])
        chain = KernelChain(model, seed=np.random.SeedSequence([seed, c, 1]), **chain_kwargs)
        rows = np.empty((draws, chain.n), dtype=np.int64)
        for t in range(draws):
            move(rng, chain)
            rows[t] = chain.labels()
        out.append(rows)
    return np.stack(out)


def gibbs_move(rng, chain, run_sweeps=gibbs.run_sweeps):
    """One Gibbs sweep (Neal 2000, Alg. 3) with the package's kernel (or another
    compilation of it, ``run_sweeps``), drawing from the chain's kernel stream
    (``rng`` unused)."""
    failed = run_sweeps(chain.stream, 1, chain.state, chain.prior,
                              chain.params, chain.stats, chain.data, chain.log_w, chain.order)
    check_item(failed, "gibbs_move")


# ----------------------------------------------------------------------------------
# Kernel states for the kernel-versus-model tests
# ----------------------------------------------------------------------------------


def load_all_but(state, params, stats, data, labels, skip):
    """Load slot ``labels`` into a fresh kernel state for every item except ``skip``
    (an item or a collection of items, left unassigned), opening slots as needed."""
    skip = set(np.atleast_1d(skip).tolist())
    for j in range(labels.shape[0]):
        if j in skip:
            continue
        k = int(labels[j])
        if state.sizes[k] == 0:
            open_slot(state, k)
        add(params, stats, data, j, k)
        state.sizes[k] += 1
        state.labels[j] = k


def data_file(relative):
    """Path of a file in the shared data folder (``PMP_DATA_DIR``, set by conftest).

    Missing: a failure in CI (``CI`` set), where the data must be there; a skip on a
    user's machine."""
    path = Path(os.environ.get("PMP_DATA_DIR", "")) / relative
    if not path.is_file():
        message = f"data file {path} not found (set PMP_DATA_DIR to the shared data directory)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


def check_log_preds(f, params, stats, data, state, x, labels, i, rtol=1e-8):
    """Item i unassigned in ``state`` (the others loaded from ``labels``): the
    kernel's ``log_pred`` of i into each block and into a new one equals the
    difference of the model's log density ``f(labels, rows)`` of the block with and
    without i; and the difference of two predictives equals that of the full-data
    log densities with i in the block and i alone."""
    rest = np.delete(np.arange(labels.shape[0]), i)
    new_slot = int(state.free[state.counts[1] - 1])
    for k in list(np.unique(labels[rest])) + [None]:
        members = rest[labels[rest] == k] if k is not None else np.array([], dtype=int)
        slot = int(k) if k is not None else new_slot
        kernel = log_pred(params, stats, data, i, slot)
        with_i = np.append(members, i)
        model = f(np.zeros(len(with_i), dtype=np.int64), x[with_i])
        without = f(np.zeros(len(members), dtype=np.int64), x[members]) if len(members) else 0.0
        diff = model - without
        assert abs(kernel - diff) <= rtol * abs(diff) or abs(kernel - diff) < 1e-12, (
            k, kernel, diff)
    # Full-data form: i in block k versus i alone, on all n rows.
    for k in np.unique(labels[rest]):
        joined, alone = labels.copy(), labels.copy()
        joined[i] = k
        alone[i] = labels.max() + 1
        diff = f(pmp.canonicalize(joined), x) - f(pmp.canonicalize(alone), x)
        kernel = log_pred(params, stats, data, i, int(k)) - log_pred(
            params, stats, data, i, new_slot)
        assert abs(kernel - diff) <= rtol * abs(diff) or abs(kernel - diff) < 1e-12, (
            k, kernel, diff)


def random_block_move(rng, labels, log_joint):
    """A random set C inside one block of ``labels``, the candidates I (every block,
    then -1 for a new one) and the reference of ``sweep_{C,I}`` (Herlau et al.
    eq. 5) from a model log density of canonical labels: the log joint of each
    z^(k) and its softmax over I. Returns ``(items, candidates, ref, ref_logp)``."""
    n = labels.shape[0]
    members = np.flatnonzero(labels == int(rng.integers(labels.max() + 1)))
    items = np.sort(rng.choice(members, size=int(rng.integers(1, len(members) + 1)),
                               replace=False)).astype(np.int64)
    candidates = np.array(list(range(labels.max() + 1)) + [-1], dtype=np.int64)
    ref = []
    for k in candidates:
        moved = labels.copy()
        moved[items] = k if k >= 0 else n + 5
        ref.append(float(log_joint(pmp.canonicalize(moved))))
    # When C is a whole block, "its own block" and "a new block" are the same
    # partition; both stay candidates, as eq. 5 lists them.
    ref = np.array(ref)
    return items, candidates, ref, ref - np.logaddexp.reduce(ref)


def binary_data(n, d, seed):
    return (np.random.default_rng(seed).random((n, d)) < 0.5).astype(float)


def two_groups(n, d, seed, spread=2.0):
    """n points in d dimensions around two random centres (sd ``spread``)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, spread, size=(2, d))
    return centres[rng.integers(0, 2, n)] + rng.normal(0, 1, size=(n, d))



# ----------------------------------------------------------------------------------
# Coupled-chain traces
# ----------------------------------------------------------------------------------


def coupled_idata(x, y, meeting, first_sweep=1, warmup=0, extra_stats=None, drop=()):
    """A trace shaped like pmp.CoupledGibbs output: posterior z = X_t, sample_stats
    coupled_labels = Y_(t-1), sweep = t, meeting_sweep = tau once t >= tau else -1,
    for draws at sweeps first_sweep..; the first ``warmup`` draws go to the warm-up
    groups (discard_tuned_samples=False)."""
    chains, draws = x.shape[:2]
    sweeps = np.broadcast_to(first_sweep + np.arange(draws), (chains, draws)).astype(np.int64)
    tau = np.asarray(meeting)[:, None]
    meet = np.where((tau >= 1) & (sweeps >= tau), tau, -1).astype(np.int64)
    post = {"z": x.astype(np.int64)}
    stats = {"coupled_labels": y.astype(np.int64), "sweep": sweeps, "meeting_sweep": meet,
             "coupling_distance": (x != y).sum(axis=-1).astype(np.float64)}
    stats.update(extra_stats or {})
    stats = {k: v for k, v in stats.items() if k not in drop}

    def cut(d, sl):
        return {k: v[:, sl] for k, v in d.items()}

    groups = {"posterior": cut(post, slice(warmup, None)),
              "sample_stats": cut(stats, slice(warmup, None))}
    if warmup:
        groups["warmup_posterior"] = cut(post, slice(0, warmup))
        groups["warmup_sample_stats"] = cut(stats, slice(0, warmup))
    with warnings.catch_warnings():
        # one chain per pair: often more chains than draws
        warnings.filterwarnings("ignore", message="More chains|Found chain dimension")
        if int(az.__version__.split(".")[0]) >= 1:
            return az.from_dict(groups, save_warmup=bool(warmup))
        return az.from_dict(**groups, save_warmup=bool(warmup))


__all__ = ["pmp"]
