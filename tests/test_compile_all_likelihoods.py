"""Every collapsed likelihood compiles and samples with any of its hyperparameters
free (issue 11, defect 1).

On PyTensor 2 ``pm.sample`` never finished compiling ``CollapsedNormal`` with D >= 2
and a free ``mu0``, or ``CollapsedPoissonGamma`` with a free ``a`` and the default
``b=1.0``: PyMC rewrites the log density with ``("canonicalize", "stabilize")``
before taking its gradient, and PyTensor 2's ``local_log1p`` loops forever on
``log(c + x)`` when a constant c summing to 1 broadcasts x (here a length-D
hyperparameter against an (n, 1) column of block sizes). The graphs now keep every
per-block statistic at the shape of the per-dimension hyperparameters
(``statistics.NormalMoments``), so no hyperparameter combination reaches the
pattern; :func:`test_pytensor_log1p_broadcast_rewrite` keeps the PyTensor-only
reproduction.

One subprocess (so a hang fails instead of hanging CI; one start-up for all,
~8 s of imports) runs every case of every likelihood the library exports: D = 1
and D = 3, each hyperparameter free alone (scalar priors), and all free together
(length-D vector priors where the likelihood takes vectors, scalar priors
otherwise). Hyperparameters not free keep the likelihood's defaults (as a user who
leaves them out gets: ``b=1.0`` was one of the two reported hangs); required ones
get ``np.eye(D)`` (covariances) and ``nu0 = D + 1``; the CRP's ``alpha`` is 1. A case
builds ``pm.NUTS`` on the continuous variables (this compiles the log density and
its gradient, through PyMC's pre-gradient rewrites where the loop was) and
``pmp.Gibbs`` on the partition, then draws 3 tuning + 3 draws from one chain with
``pm.sample``. Its compile phase has a time limit (``COMPILE_LIMIT``, detected
inside the subprocess with an alarm, and the next case runs), its sampling phase
another (``SAMPLE_LIMIT``: with a cold numba cache it includes the Gibbs kernel's
first compile); the subprocess as a whole ``SUBPROCESS_TIMEOUT`` (wall clock). The
two case limits count the subprocess's own CPU time (``ITIMER_PROF``), not the wall
clock: a rewrite loop spins the CPU and is caught all the same, while a loaded
machine (the two CI stacks and anything else on two cores) no longer turns a slow
compile into a failure (the CollapsedMvNormal case once took more than 90 s of wall
time under a load average of 4). One test per
likelihood reads its cases' reports.

Exceptions:

- ``IRM`` takes an (n, n) adjacency matrix and scalar ``a``, ``b``: D has no meaning
  there, so its cases run once, on a network of n nodes.
- ``KMeansEnergy``'s temperature must be a constant (a random temperature is
  refused: the energy's missing normaliser depends on it), so its cases have the
  CRP's ``alpha`` free instead (NUTS differentiates the energy, whose
  temperature is the default constant 1), for D = 1 and D = 3.
- ``CollapsedDirichletMultinomial`` has one hyperparameter, the concentration;
  D is its number of positions P (3 categories each); its "all free" case is the
  concentration with a length-C vector prior.

Compilation modes (:func:`full_mode`): the all-free D = 3 case of each likelihood
(its largest graph) goes through the real mode's rewrites (``fast_run``:
canonicalize, stabilize, specialize, fusion), linked by PyTensor's Python VM; the
others compile in ``FAST_COMPILE``. The loop sat in PyMC's pre-gradient rewrites
(``rewrite_pregrad``), which run before and whatever the compilation mode, so every
case still meets it; a loop in the real mode's own rewrites would be met by the
largest graphs. Why not the C VM for those: what can hang is a rewrite, not the C
compiler, and the C compilation of the eleven largest graphs cost about 64 s of each
CI stack (this file: 142 s -> 78 s on Python 3.11 with an empty PyTensor compile
directory). ``PMP_COMPILE_FULL_LINK=1`` links them with the suite's C VM as before
(``versions.small_function_mode``), ``PMP_COMPILE_DEFAULT_BACKEND=1`` with PyMC 6's
default numba backend; ``PMP_COMPILE_FULL=1`` takes every case through the real
mode's rewrites. ``D = 1`` covariances are a free variance (PyMC 6's
``LKJCholeskyCov`` fails for n = 1).

Each case's times (wall clock and CPU, the latter fairer under contention) are
printed (``pytest -rP`` or ``-s`` shows them), with the worst compile time per
likelihood and mode.
"""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytensor
import pytest

# Time limits (seconds; the environment variables override them).
COMPILE_LIMIT = float(os.environ.get("PMP_COMPILE_LIMIT", "90"))  # a case: NUTS, Gibbs steps
SAMPLE_LIMIT = float(os.environ.get("PMP_SAMPLE_LIMIT", "300"))  # a case: pm.sample (with a
# cold numba cache, the Gibbs kernel's first compile)
SUBPROCESS_TIMEOUT = float(os.environ.get("PMP_SUBPROCESS_TIMEOUT", "1500"))  # all cases
N_ITEMS = 8
MAX_TREEDEPTH = 4  # a few cheap draws: this tests compilation, not NUTS's efficiency
N_CATEGORIES = 3  # Dirichlet-multinomial
TAG = "PMP_CASE "

# Hyperparameter kinds: how to make one free (and whether it may be a length-D vector).
LOC, POS, POS_SCALAR, COV, DOF, FIXED = "loc", "pos", "pos_scalar", "cov", "dof", "fixed"

LIKELIHOODS = {
    "CollapsedNormal": ({"mu0": LOC, "tau": POS, "sigma": POS}, "real"),
    "CollapsedBetaBernoulli": ({"a": POS, "b": POS}, "binary"),
    "CollapsedPoissonGamma": ({"a": POS, "b": POS}, "counts"),
    "CollapsedNormalInverseGamma": (
        {"mu0": LOC, "kappa0": POS, "a0": POS, "b0": POS},
        "real",
    ),
    "CollapsedMvNormal": ({"mu0": LOC, "Sigma0": COV, "Sigma": COV}, "real"),
    "CollapsedNIW": ({"mu0": LOC, "kappa0": POS_SCALAR, "nu0": DOF, "Psi0": COV}, "real"),
    "CollapsedDirichletMultinomial": ({"concentration": POS}, "count_matrices"),
    "IRM": ({"a": POS_SCALAR, "b": POS_SCALAR}, "network"),
    "KMeansEnergy": ({"temperature": FIXED}, "real"),
}


def cases(likelihood):
    """(D, free hyperparameter names, vector priors?) for every case of ``likelihood``."""
    hypers, kind = LIKELIHOODS[likelihood]
    free_able = tuple(h for h, k in hypers.items() if k != FIXED)
    sets = [((h,), False) for h in free_able] or [((), False)]  # none: alpha free
    if len(free_able) > 1 or (free_able and hypers[free_able[0]] in (LOC, POS)):
        vector = any(hypers[h] in (LOC, POS) for h in free_able)
        sets.append((free_able, vector))  # all together, as vectors where allowed
    dims = (None,) if kind == "network" else (1, 3)
    return [(d, free, vector) for d in dims for free, vector in sets]


def full_mode(likelihood, d, free, vector):
    """Whether a case goes through the real mode's rewrites (see :func:`_mode`): the
    largest graph of each likelihood (all free, D = 3), or every case with
    ``PMP_COMPILE_FULL=1``. The other cases compile in ``FAST_COMPILE``: the loop was
    in PyMC's pre-gradient rewrites, which run whatever the mode."""
    if os.environ.get("PMP_COMPILE_FULL") == "1":
        return True
    return (d, free, vector) == cases(likelihood)[-1]


def case_name(d, free, vector):
    dims = "" if d is None else f"D={d} "
    if not free:
        return dims + "free: none (alpha)"
    return dims + "free: " + ", ".join(free) + (" (vectors)" if vector else "")


# --------------------------------------------------------------------------------------
# The worker (runs in the subprocess)
# --------------------------------------------------------------------------------------


class CaseTimeout(BaseException):
    """Raised by the CPU-time alarm (SIGPROF). A BaseException, so that PyTensor's
    rewriters, which catch and report an Exception from a rewrite and go on, let it
    through."""


def _on_alarm(signum, frame):
    raise CaseTimeout


def _observed(kind, d, rng):
    n = N_ITEMS
    if kind == "real":
        centres = rng.normal(0.0, 3.0, size=(2, d))
        return centres[np.arange(n) % 2] + rng.normal(size=(n, d))
    if kind == "binary":
        return (rng.random((n, d)) < 0.5).astype(float)
    if kind == "counts":
        return rng.poisson(2.0, size=(n, d)).astype(float)
    if kind == "count_matrices":
        return np.stack(
            [rng.multinomial(4, np.ones(N_CATEGORIES) / N_CATEGORIES, size=d) for _ in range(n)]
        ).astype(float)
    if kind == "network":
        upper = np.triu(rng.random((n, n)) < 0.4, 1)
        return (upper | upper.T).astype(float)
    raise AssertionError(kind)


def _free(pm, pt, name, kind, d, shape):
    """A free hyperparameter of ``kind``; ``shape`` applies to LOC and POS."""
    if kind == LOC:
        return pm.Normal(name, 0.0, 1.0, shape=shape)
    if kind == POS:
        return pm.Gamma(name, 2.0, 2.0, shape=shape)
    if kind == POS_SCALAR:
        return pm.Gamma(name, 2.0, 2.0)
    if kind == DOF:
        return (d - 1) + pm.Gamma(f"{name}_excess", 2.0, 1.0)
    if kind == COV and d == 1:  # PyMC 6's LKJCholeskyCov fails for n = 1 (IndexError)
        return pt.reshape(pm.HalfNormal(f"{name}_sd", 1.0) ** 2, (1, 1))
    if kind == COV:
        chol, _, _ = pm.LKJCholeskyCov(
            f"{name}_chol", n=d, eta=2.0, sd_dist=pm.Exponential.dist(1.0), compute_corr=True
        )
        return pt.dot(chol, chol.T)
    raise AssertionError(kind)


def build_model(likelihood, d, free, vector):
    import pymc as pm
    import pytensor.tensor as pt

    import pymc_partitions as pmp

    hypers, kind = LIKELIHOODS[likelihood]
    observed = _observed(kind, d, np.random.default_rng(0))
    vector_shape = (N_CATEGORIES,) if kind == "count_matrices" else (d,)
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 2.0) if not free else 1.0
        z = pmp.CRP("z", alpha=alpha, n=N_ITEMS)
        kwargs = {}
        for h, k in hypers.items():
            if h in free:
                kwargs[h] = _free(pm, pt, h, k, d, vector_shape if vector else ())
            elif k == COV:
                kwargs[h] = np.eye(d)
            elif k == DOF:
                kwargs[h] = d + 1.0
        getattr(pmp, likelihood)("y", partition=z, observed=observed, **kwargs)
    return model


def _cpu_seconds():
    """CPU time of this process and its finished children (the C compiler), s: under
    contention a fairer measure than the wall clock."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def run_case(likelihood, d, free, vector):
    import pymc as pm

    import pymc_partitions as pmp
    from pymc_partitions.versions import posterior_dataset

    report = {"likelihood": likelihood, "case": case_name(d, free, vector)}
    full = full_mode(likelihood, d, free, vector)
    report["mode"] = "full" if full else "fast"
    phase = "build"
    try:
        signal.setitimer(signal.ITIMER_PROF, COMPILE_LIMIT)
        start, cpu = time.perf_counter(), _cpu_seconds()
        model = build_model(likelihood, d, free, vector)
        with model, pytensor.config.change_flags(mode=_mode(full)):
            phase = "compile"
            nuts = pm.NUTS(model.continuous_value_vars, max_treedepth=MAX_TREEDEPTH)
            gibbs = pmp.Gibbs([model["z"]])
            report["compile_s"] = time.perf_counter() - start
            report["compile_cpu_s"] = _cpu_seconds() - cpu
            phase = "sample"
            signal.setitimer(signal.ITIMER_PROF, SAMPLE_LIMIT)
            start, cpu = time.perf_counter(), _cpu_seconds()
            idata = pm.sample(
                draws=3, tune=3, chains=1, cores=1, step=[nuts, gibbs], random_seed=1,
                compute_convergence_checks=False, progressbar=False,
            )
            report["sample_s"] = time.perf_counter() - start
            report["sample_cpu_s"] = _cpu_seconds() - cpu
        signal.setitimer(signal.ITIMER_PROF, 0)
        post = posterior_dataset(idata)
        names = ["z"] + [v.name for v in model.free_RVs if v.name != "z"]
        bad = [n for n in names if n not in post or not np.all(np.isfinite(post[n].values))]
        if post["z"].shape != (1, 3, N_ITEMS) or bad:
            report.update(status="error", error=f"posterior wrong: z {post['z'].shape}, {bad}")
        else:
            report["status"] = "ok"
    except CaseTimeout:
        limit = COMPILE_LIMIT if phase != "sample" else SAMPLE_LIMIT
        report.update(status="timeout",
                      error=f"{phase} did not finish in {limit:.0f} s of CPU time")
    except Exception as err:  # noqa: BLE001 - reported to the parent, which fails
        signal.setitimer(signal.ITIMER_PROF, 0)
        report.update(status="error", error=f"{phase}: {type(err).__name__}: {err}")
    print(TAG + json.dumps(report), flush=True)


def _mode(full):
    if not full:
        return "FAST_COMPILE"
    if os.environ.get("PMP_COMPILE_DEFAULT_BACKEND") == "1":
        return pytensor.config.mode
    if os.environ.get("PMP_COMPILE_FULL_LINK") == "1":
        from pymc_partitions.versions import small_function_mode

        return small_function_mode() or pytensor.config.mode
    # The real mode's rewrites (FAST_RUN: canonicalize, stabilize, specialize, fusion),
    # where a rewrite loop would hang, linked by the Python VM: no C compilation.
    from pytensor.compile.mode import Mode
    from pytensor.link.vm import VMLinker

    return Mode(linker=VMLinker(use_cloop=False, c_thunks=False), optimizer="fast_run")


def worker(likelihoods):
    signal.signal(signal.SIGPROF, _on_alarm)
    for likelihood in likelihoods:
        for case in cases(likelihood):
            run_case(likelihood, *case)


# --------------------------------------------------------------------------------------
# The tests
# --------------------------------------------------------------------------------------


def _run_subprocess(args, timeout):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.run(
        [sys.executable, *args], check=False, capture_output=True, text=True, timeout=timeout,
        env=env,
    )


def _text(stream):
    return stream.decode() if isinstance(stream, bytes) else stream or ""


@pytest.fixture(scope="module")
def case_reports(request):
    """Run the cases of every selected likelihood in one subprocess (one start-up,
    ~8 s of imports, instead of one per likelihood); reports by likelihood."""
    test = "test_compiles_and_samples_with_free_hyperparameters"
    selected = {
        item.callspec.params["likelihood"]
        for item in request.session.items
        if getattr(item, "originalname", None) == test and hasattr(item, "callspec")
    }
    selected = [lik for lik in LIKELIHOODS if lik in selected]
    try:
        proc = _run_subprocess([__file__, *selected], SUBPROCESS_TIMEOUT)
        stdout, stderr = proc.stdout, proc.stderr
        died = None if proc.returncode == 0 else f"exited with code {proc.returncode}"
    except subprocess.TimeoutExpired as err:
        stdout, stderr = _text(err.stdout), _text(err.stderr)
        died = f"killed after {SUBPROCESS_TIMEOUT:.0f} s"
    reports = {lik: [] for lik in selected}
    for line in stdout.splitlines():
        if line.startswith(TAG):
            report = json.loads(line[len(TAG):])
            reports[report["likelihood"]].append(report)
    return reports, died, stderr


def _print_table(likelihood, reports):
    def get(r, key):
        return r.get(key, float("nan"))

    wall = sum(r.get("compile_s", 0) + r.get("sample_s", 0) for r in reports)
    cpu = sum(r.get("compile_cpu_s", 0) + r.get("sample_cpu_s", 0) for r in reports)
    print(
        f"{likelihood} (PyTensor {pytensor.__version__}): {len(reports)} cases, "
        f"{wall:.1f} s wall, {cpu:.1f} s CPU (cases that finished)"
    )
    print(f"  {'case':<44} {'mode':<4} {'status':<7} compile: wall   CPU   sample: wall   CPU")
    for r in reports:
        print(
            f"  {r['case']:<44} {r['mode']:<4} {r['status']:<7}"
            f" {get(r, 'compile_s'):13.1f} {get(r, 'compile_cpu_s'):5.1f}"
            f" {get(r, 'sample_s'):13.1f} {get(r, 'sample_cpu_s'):5.1f}  {r.get('error', '')}"
        )
    for mode in ("full", "fast"):
        timed = [r for r in reports if "compile_s" in r and r["mode"] == mode]
        if timed:
            worst = max(timed, key=lambda r: r["compile_cpu_s"])
            print(
                f"  worst compile ({mode} mode): {worst['compile_s']:.1f} s wall, "
                f"{worst['compile_cpu_s']:.1f} s CPU ({worst['case']})"
            )


@pytest.mark.skipif(not hasattr(signal, "SIGALRM"), reason="needs SIGALRM (POSIX)")
@pytest.mark.parametrize("likelihood", list(LIKELIHOODS))
def test_compiles_and_samples_with_free_hyperparameters(likelihood, case_reports):
    all_reports, died, stderr = case_reports
    reports = all_reports[likelihood]
    _print_table(likelihood, reports)
    failed = [f"{r['case']}: {r['status']}: {r['error']}" for r in reports if r["status"] != "ok"]
    done = {r["case"] for r in reports}
    missing = [case_name(*c) for c in cases(likelihood) if case_name(*c) not in done]
    if failed or missing:
        pytest.fail(
            f"{likelihood}: {len(failed)} case(s) failed, {len(missing)} not run"
            + (f" (the subprocess {died})" if died else "")
            + ":\n"
            + "\n".join(failed + [f"{c}: not run" for c in missing])
            + (f"\nstderr (end):\n{stderr[-3000:]}" if died else "")
        )


REPRO = """
import signal, numpy as np, pytensor, pytensor.tensor as pt
from pytensor.graph.rewriting.utils import rewrite_graph
x = pt.matrix("x", shape=(3, 1))
graph = pt.log(pt.as_tensor(np.array([1.0, 1.0])) + x).sum()
signal.alarm({limit})  # the default action ends the process
out = rewrite_graph(graph, include=("canonicalize", "stabilize"))
signal.alarm(0)
print(pytensor.dprint(out, file="str"))
"""
REPRO_LIMIT = 10


@pytest.mark.skipif(not hasattr(signal, "SIGALRM"), reason="needs SIGALRM (POSIX)")
@pytest.mark.xfail(
    int(pytensor.__version__.split(".")[0]) < 3,
    reason="PyTensor 2's local_log1p loops forever on log(c + x) when the constant c "
    "broadcasts x: alloc_like reads the shape of the node it replaces",
    strict=True,
)
def test_pytensor_log1p_broadcast_rewrite():
    """The PyTensor-only reproduction of the hang, as PyMC's ``rewrite_pregrad``
    runs it: ``log([1, 1] + x)`` for x of static shape (3, 1). PyTensor 3 rewrites it
    to ``log1p(x)`` broadcast to (3, 2) in well under a second; PyTensor 2.38 never
    ends (strict xfail there: a PyTensor 2 that finishes is noticed too). Our graphs
    avoid the pattern (see the module docstring)."""
    proc = _run_subprocess(["-c", REPRO.format(limit=REPRO_LIMIT)], timeout=REPRO_LIMIT + 60)
    assert proc.returncode == 0, (
        f"rewriting log(c + x) did not finish in {REPRO_LIMIT} s "
        f"(return code {proc.returncode}): {proc.stderr[-500:]}"
    )
    assert "Log1p" in proc.stdout, proc.stdout  # the stabiliser did its job


if __name__ == "__main__":
    worker(sys.argv[1:])
