"""Bad input, walked through every public constructor, step and function.

One table (``CASES``) of ``(id, call, error type, argument name)``: each call passes
one bad value (NaN, inf, wrong shape, wrong dtype, negative or zero
hyperparameters, empty data, an n mismatch, ragged lists, None, booleans, xarray
objects) to one argument, and must raise that error type with a message that
names the argument (quoted, as ``'alpha'``), never a raw traceback from numpy,
PyTensor or PyMC, and never nothing. A second table (``ALLOWED``) holds values
that look odd but are legitimate and are accepted on purpose (the choice is
stated there), so that the checks do not refuse too much.

Everything fails at construction or argument checking: no case compiles a
sampler or draws, so the module is fast. The pm.sample cases (``initvals``,
non-partition steps) stop in PyMC's step assignment or initial point, before any
compilation of our steps.
"""

import functools
import re

import numpy as np
import pymc as pm
import pytest
import xarray as xr
from helpers import coupled_idata

import pymc_partitions as pmp
from pymc_partitions import versions
from pymc_partitions.step_methods.target import PartitionModelError

N = 4
REAL = np.array([[0.1, -0.3], [1.2, 0.4], [-0.5, 2.0], [0.7, 0.0]])
BINARY = np.array([[0, 1], [1, 1], [0, 0], [1, 0]])
COUNTS = np.array([[0, 3], [2, 1], [5, 0], [1, 1]])
COUNTS3 = np.arange(N * 2 * 3).reshape(N, 2, 3) % 4
ADJ = np.array([[0, 1, 0, 0], [1, 0, 1, 0], [0, 1, 0, 1], [0, 0, 1, 0]])
EYE = np.eye(2)
LABELS = np.array([0, 0, 1, 2])
DRAWS = np.array([[0, 0, 1, 1], [0, 1, 1, 2], [0, 0, 0, 1], [0, 0, 1, 1], [0, 1, 2, 3]])

DATASET = xr.Dataset({"v": ("i", [1.0, 2.0])})
RAGGED = [[1.0, 2.0], [1.0]]

TE, VE = TypeError, ValueError

CASES = []


def case(group, label, call, error, arg):
    """Add a case: ``call()`` must raise ``error`` with ``'arg'`` in its message (the
    name quoted, as the messages quote argument names; ``arg`` as given when it is
    not a bare name, e.g. ``initvals['z']``)."""
    pattern = re.escape(f"'{arg}'" if arg.isidentifier() else arg)
    CASES.append(pytest.param(call, error, pattern, id=f"{group}-{label}"))


# ---------------------------------------------------------------------- value families
# (label, value, error) for one kind of argument.

# Finite real numbers (number arguments of functions: level, p_seq, ...).
NUMBER_BAD = [
    ("nan", np.nan, VE), ("inf", np.inf, VE), ("None", None, TE), ("bool", True, TE),
    ("str", "1", TE), ("complex", 1 + 2j, TE), ("list", [0.5], TE), ("Dataset", DATASET, TE),
]
REAL_BAD = [
    ("nan", np.nan, VE), ("inf", np.inf, VE), ("None", None, TE), ("bool", True, TE),
    ("str", "1", TE), ("complex", 1 + 2j, TE), ("ragged", RAGGED, VE), ("Dataset", DATASET, TE),
]
POSITIVE_BAD = REAL_BAD + [("zero", 0.0, VE), ("negative", -1.0, VE), ("neg-array", [1.0, -2.0], VE)]
VECTOR_SHAPE_BAD = [("wrong-length", [1.0, 1.0, 1.0], VE), ("matrix", np.ones((2, 2)), VE)]
SCALAR_SHAPE_BAD = [("vector", [1.0, 1.0], VE)]
COUNT_BAD = [
    ("zero", 0, VE), ("negative", -1, VE), ("fraction", 2.5, VE), ("nan", np.nan, VE),
    ("inf", np.inf, VE), ("None", None, TE), ("bool", True, TE), ("str", "3", TE),
    ("list", [3], TE), ("DataArray", xr.DataArray(3), TE), ("Dataset", DATASET, TE),
]
MATRIX_BAD = [
    ("nan", np.array([[np.nan, 0.0], [0.0, 1.0]]), VE),
    ("asymmetric", np.array([[1.0, 0.5], [0.0, 1.0]]), VE),
    ("not-pd", np.array([[1.0, 2.0], [2.0, 1.0]]), VE),
    ("wrong-shape", np.eye(3), VE), ("vector", [1.0, 1.0], VE), ("None", None, VE),
    ("bool", True, TE), ("str", "I", TE), ("ragged", RAGGED, VE), ("Dataset", DATASET, TE),
]
OBSERVED_BAD = [
    ("None", None, VE), ("nan", np.where(REAL > 1, np.nan, REAL), VE),
    ("inf", np.where(REAL > 1, np.inf, REAL), VE), ("3d", np.zeros((N, 2, 2)), VE),
    ("empty", np.zeros((0, 2)), VE), ("n-mismatch", REAL[:3], VE), ("ragged", [[1.0, 2.0]] * 3 + [[1.0]], VE),
    ("str", np.array([["a", "b"]] * N), VE), ("complex", REAL + 1j, VE), ("Dataset", DATASET, TE),
]


def model_with(build):
    """A call that builds a small model: CRP over N items, then ``build(z)``. (No
    summaries: they are most of the cost of building the model.)"""
    def call():
        with pm.Model():
            build(pmp.CRP("z", alpha=1.0, n=N, summaries=False))
    return call


# ---------------------------------------------------------------------- collapsed likelihoods
# name: (class, good observed, base kwargs, {hyper: bad-value families}, observed families)
LIKELIHOODS = {
    "CollapsedNormal": (
        pmp.CollapsedNormal, REAL, {},
        {"mu0": REAL_BAD + VECTOR_SHAPE_BAD, "tau": POSITIVE_BAD + VECTOR_SHAPE_BAD,
         "sigma": POSITIVE_BAD + VECTOR_SHAPE_BAD},
        OBSERVED_BAD + [("bool", REAL > 0, TE)],
    ),
    "CollapsedBetaBernoulli": (
        pmp.CollapsedBetaBernoulli, BINARY, {},
        {"a": POSITIVE_BAD + VECTOR_SHAPE_BAD, "b": POSITIVE_BAD + VECTOR_SHAPE_BAD},
        OBSERVED_BAD + [("not-binary", BINARY * 2, VE)],
    ),
    "CollapsedMvNormal": (
        pmp.CollapsedMvNormal, REAL, {"Sigma0": EYE, "Sigma": EYE},
        {"mu0": REAL_BAD + VECTOR_SHAPE_BAD, "Sigma0": MATRIX_BAD, "Sigma": MATRIX_BAD},
        OBSERVED_BAD + [("bool", REAL > 0, TE)],
    ),
    "CollapsedNIW": (
        pmp.CollapsedNIW, REAL, {"nu0": 4.0, "Psi0": EYE},
        {"mu0": REAL_BAD + VECTOR_SHAPE_BAD, "kappa0": POSITIVE_BAD + SCALAR_SHAPE_BAD,
         "nu0": [o if o[0] != "None" else ("None", None, VE) for o in REAL_BAD]
         + SCALAR_SHAPE_BAD + [("below-D-1", 0.5, VE)], "Psi0": MATRIX_BAD},
        OBSERVED_BAD + [("bool", REAL > 0, TE)],
    ),
    "CollapsedNormalInverseGamma": (
        pmp.CollapsedNormalInverseGamma, REAL, {},
        {"mu0": REAL_BAD + VECTOR_SHAPE_BAD, "kappa0": POSITIVE_BAD + VECTOR_SHAPE_BAD,
         "a0": POSITIVE_BAD + VECTOR_SHAPE_BAD, "b0": POSITIVE_BAD + VECTOR_SHAPE_BAD},
        OBSERVED_BAD + [("bool", REAL > 0, TE)],
    ),
    "CollapsedPoissonGamma": (
        pmp.CollapsedPoissonGamma, COUNTS, {},
        {"a": POSITIVE_BAD + VECTOR_SHAPE_BAD, "b": POSITIVE_BAD + VECTOR_SHAPE_BAD},
        OBSERVED_BAD + [("negative", -COUNTS, VE), ("fraction", COUNTS + 0.5, VE)],
    ),
    "CollapsedDirichletMultinomial": (
        pmp.CollapsedDirichletMultinomial, COUNTS3, {},
        {"concentration": POSITIVE_BAD + [("wrong-length", [1.0, 1.0], VE)]},
        [o for o in OBSERVED_BAD if o[0] != "3d"]
        + [("4d", np.zeros((N, 1, 2, 2)), VE), ("negative", -COUNTS3, VE),
           ("fraction", COUNTS3 + 0.5, VE)],
    ),
    "IRM": (
        pmp.IRM, ADJ, {},
        {"a": POSITIVE_BAD + SCALAR_SHAPE_BAD, "b": POSITIVE_BAD + SCALAR_SHAPE_BAD},
        [o for o in OBSERVED_BAD if o[0] not in ("3d", "n-mismatch")]
        + [("not-square", ADJ[:, :3], VE), ("n-mismatch", np.zeros((5, 5)), VE),
           ("weights", ADJ * 2.5, VE), ("asymmetric", np.triu(ADJ), VE),
           ("diagonal", ADJ + np.eye(N, dtype=int), VE)],
    ),
    "KMeansEnergy": (
        pmp.KMeansEnergy, REAL, {},
        {"temperature": POSITIVE_BAD + VECTOR_SHAPE_BAD},
        OBSERVED_BAD + [("bool", REAL > 0, TE)],
    ),
}

for lik_name, (cls, good, base, hypers, observed_bad) in LIKELIHOODS.items():
    for hyper, family in hypers.items():
        for label, value, error in family:
            kwargs = {**base, hyper: value}
            case(f"{lik_name}.{hyper}", label,
                 model_with(lambda z, c=cls, k=kwargs, g=good: c("y", partition=z, observed=g, **k)),
                 error, hyper)
    for label, value, error in observed_bad:
        case(f"{lik_name}.observed", label,
             model_with(lambda z, c=cls, b=base, v=value: c("y", partition=z, observed=v, **b)),
             error, "observed")
    for label, value, error in [("None", None, VE), ("labels", LABELS, VE), ("bool", True, VE)]:
        case(f"{lik_name}.partition", label,
             model_with(lambda z, c=cls, b=base, v=value, g=good:
                        c("y", partition=v, observed=g, **b)),
             error, "partition")


def _random_temperature(z):
    t = pm.Gamma("t", 1.0, 1.0)
    pmp.KMeansEnergy("y", partition=z, temperature=t, observed=REAL)


case("KMeansEnergy.temperature", "random-variable", model_with(_random_temperature), VE,
     "temperature")
for label, kwargs, error, arg in [
    ("threshold-str", {"threshold": "x"}, TE, "threshold"),
    ("threshold-nan", {"threshold": np.nan}, VE, "threshold"),
    ("threshold-vector", {"threshold": [0.0, 1.0]}, TE, "threshold"),
    ("symmetrize-str", {"symmetrize": "yes"}, TE, "symmetrize"),
    ("drop_diagonal-None", {"drop_diagonal": None}, TE, "drop_diagonal"),
]:
    case("IRM.options", label,
         model_with(lambda z, k=kwargs: pmp.IRM("y", partition=z, observed=ADJ, **k)), error, arg)


# ---------------------------------------------------------------------- partition priors
def prior_case(group, label, build, error, arg):
    def call():
        with pm.Model():
            build()
    case(group, label, call, error, arg)


for label, value, error in POSITIVE_BAD + SCALAR_SHAPE_BAD:
    prior_case("CRP.alpha", label, lambda v=value: pmp.CRP("z", alpha=v, n=N), error, "alpha")
for label, value, error in COUNT_BAD:
    prior_case("CRP.n", label, lambda v=value: pmp.CRP("z", alpha=1.0, n=v), error, "n")
    prior_case("PitmanYor.n", label, lambda v=value: pmp.PitmanYor("z", 1.0, 0.5, n=v), error, "n")
    prior_case("FixedBlocks.n", label, lambda v=value: pmp.FixedBlocks("z", n=v, k=2), error, "n")
    prior_case("FixedBlocks.k", label, lambda v=value: pmp.FixedBlocks("z", n=N, k=v), error, "k")
    prior_case("MFM.n", label, lambda v=value: pmp.MFM("z", n=v), error, "n")
    prior_case("ProperColoring.q", label, lambda v=value: pmp.ProperColoring("z", ADJ, q=v),
               error, "q")
    if value is not None:  # n=None: read from the graph
        prior_case("ProperColoring.n", label,
                   lambda v=value: pmp.ProperColoring("z", ADJ, q=3, n=v), error, "n")
for label, value, error in REAL_BAD + SCALAR_SHAPE_BAD + [("below-minus-d", -0.6, VE)]:
    prior_case("PitmanYor.alpha", label, lambda v=value: pmp.PitmanYor("z", alpha=v, d=0.5, n=N),
               error, "alpha")
for label, value, error in REAL_BAD + SCALAR_SHAPE_BAD + [("one", 1.0, VE), ("negative", -0.1, VE)]:
    prior_case("PitmanYor.d", label, lambda v=value: pmp.PitmanYor("z", alpha=1.0, d=v, n=N),
               error, "d")
prior_case("FixedBlocks.k", "above-n", lambda: pmp.FixedBlocks("z", n=N, k=N + 1), VE, "k")
for label, value, error in POSITIVE_BAD + SCALAR_SHAPE_BAD:
    prior_case("MFM.gamma", label, lambda v=value: pmp.MFM("z", n=N, gamma=v), error, "gamma")
for label, value, error in [
    ("not-normalised", [0.5, 0.6], VE), ("negative", [-0.1, 1.1], VE), ("nan", [np.nan, 1.0], VE),
    ("str", "geometric", VE), ("ragged", RAGGED, VE), ("Dataset", DATASET, VE),
    ("bool", True, VE), ("matrix", np.full((2, 2), 0.25), VE), ("empty", [], VE),
    ("callable-nan", lambda k: np.full(np.shape(k), np.nan), VE),
]:
    prior_case("MFM.k_prior", label, lambda v=value: pmp.MFM("z", n=N, k_prior=v), error,
               "k_prior")
for label, value, error in [
    ("None", None, TE), ("nan", np.where(ADJ > 0, np.nan, 0.0), VE), ("ragged", RAGGED, VE),
    ("Dataset", DATASET, TE), ("asymmetric", np.triu(ADJ), VE),
    ("self-loop", ADJ + np.eye(N, dtype=int), VE), ("weights", ADJ * 2, VE),
    ("str", np.array([["a"] * N] * N), VE), ("empty", np.zeros((0, 0)), VE),
    ("n-mismatch", ADJ[:3, :3], VE), ("vector", [0, 1, 0], VE),
]:
    prior_case("ProperColoring.graph", label,
               lambda v=value, n=N if label == "n-mismatch" else None:
               pmp.ProperColoring("z", v, q=3, n=n), error, "graph")
prior_case("ProperColoring.graph", "edge-list-out-of-range",
           lambda: pmp.ProperColoring("z", np.array([[0, 1], [1, 7]]), q=3, n=N), VE, "graph")
prior_case("ProperColoring.graph", "edge-list-without-n",
           lambda: pmp.ProperColoring("z", np.array([[0, 1], [1, 2]]), q=3), VE, "graph")

# A model variable is one partition: no vector hyperparameters, no batch shape.
for name, build, arg in [
    ("CRP", lambda: pmp.CRP("z", alpha=np.array([1.0, 2.0]), n=N), "alpha"),
    ("CRP", lambda: pmp.CRP("z", alpha=pm.Gamma("a", 1.0, 1.0, shape=2), n=N), "alpha"),
    ("PitmanYor", lambda: pmp.PitmanYor("z", alpha=1.0, d=pm.Beta("d", 1, 1, shape=2), n=N), "d"),
    ("MFM", lambda: pmp.MFM("z", n=N, gamma=pm.Gamma("g", 1.0, 1.0, shape=3)), "gamma"),
    ("CRP", lambda: pmp.CRP("z", alpha=1.0, n=N, size=2), "size"),
    ("CRP", lambda: pmp.CRP("z", alpha=1.0, n=N, shape=(2, N)), "shape"),
    ("CRP", lambda: pmp.CRP("z", alpha=1.0, n=N, shape=(N + 1,)), "shape"),
    ("FixedBlocks", lambda: pmp.FixedBlocks("z", n=N, k=2, size=(3,)), "size"),
]:
    prior_case(f"{name}.one-partition", arg, build, VE, arg)

# initval= of a partition variable: checked like initvals of pm.sample.
for label, value, error in [
    ("out-of-range", [0, 1, 2, 9], VE), ("short", [0, 1], VE), ("fraction", [0, 0.5, 1, 1], VE),
    ("nan", [0, np.nan, 1, 1], VE), ("ragged", RAGGED, VE), ("str", ["a", "b", "c", "d"], TE),
]:
    prior_case("CRP.initval", label, lambda v=value: pmp.CRP("z", alpha=1.0, n=N, initval=v),
               error, "initval")
prior_case("FixedBlocks.initval", "wrong-k",
           lambda: pmp.FixedBlocks("z", n=N, k=2, initval=[0, 0, 0, 0]), VE, "initval")


# ---------------------------------------------------------------------- steps
def step_model():
    # Beta-Bernoulli: PyMC's steps compile its logp quickly on both stacks.
    with pm.Model() as model:
        a = pm.Gamma("a", 2.0, 2.0)
        z = pmp.CRP("z", alpha=a, n=N, summaries=False)
        pmp.CollapsedBetaBernoulli("y", partition=z, observed=BINARY)
    return model


def step_case(label, make, error, arg):
    def call():
        model = step_model()
        with model:
            make(model)
    case("step", label, call, error, arg)


for step in (pmp.Gibbs, pmp.SplitMerge, pmp.CoupledGibbs):
    name = step.__name__
    for label, vars_, error in [
        ("None", lambda m: None, TE), ("empty", lambda m: [], VE), ("name", lambda m: "z", TE),
        ("name-list", lambda m: ["z"], TE), ("array", lambda m: [np.zeros(N)], TE),
        ("not-a-partition", lambda m: [m["a"]], PartitionModelError),
        ("DataArray", lambda m: xr.DataArray([1]), TE),
    ]:
        step_case(f"{name}.vars-{label}", lambda m, s=step, v=vars_: s(v(m)), error, "vars")
    step_case(f"{name}.model", lambda m, s=step: s([m["z"]], model="m"), TE, "model")
    step_case(f"{name}.rng", lambda m, s=step: s([m["z"]], rng="seed"), TE, "rng")
for label, value, error in COUNT_BAD:
    if label == "zero":
        continue
    step_case(f"Gibbs.n_sweeps-{label}", lambda m, v=value: pmp.Gibbs([m["z"]], n_sweeps=v),
              error, "n_sweeps")
    for arg in ("n_restricted_scans", "n_proposals", "n_gibbs_sweeps"):
        step_case(f"SplitMerge.{arg}-{label}",
                  lambda m, a=arg, v=value: pmp.SplitMerge([m["z"]], **{a: v}), error, arg)
step_case("Gibbs.n_sweeps-zero", lambda m: pmp.Gibbs([m["z"]], n_sweeps=0), VE, "n_sweeps")
step_case("SplitMerge.n_proposals-zero", lambda m: pmp.SplitMerge([m["z"]], n_proposals=0), VE,
          "n_proposals")
for label, value, error in [("None", None, VE), ("unknown", "gibbs", VE), ("list", ["random"], VE),
                            ("bool", True, VE)]:
    step_case(f"SplitMerge.proposal-{label}",
              lambda m, v=value: pmp.SplitMerge([m["z"]], proposal=v), error, "proposal")

# MallowsGibbs' options are checked before the model is read (any model will do).
for label, value, error in COUNT_BAD:
    for arg in ("n_split_merge", "n_restricted_scans"):
        if label == "zero" and arg == "n_restricted_scans":
            continue
        step_case(f"MallowsGibbs.{arg}-{label}",
                  lambda m, a=arg, v=value: pmp.MallowsGibbs([m["z"]], **{a: v}), error, arg)
for label, value, error in [("str", "yes", TE), ("int", 1, TE), ("None", None, TE)]:
    step_case(f"MallowsGibbs.split_merge-{label}",
              lambda m, v=value: pmp.MallowsGibbs([m["z"]], split_merge=v), error, "split_merge")
for method in ("exact_beta", "beta"):
    step_case(f"MallowsGibbs.split_merge-with-{method}",
              lambda m, k=method: pmp.MallowsGibbs([m["z"]], method=k, split_merge=True), VE,
              "split_merge")


def _gm_sample_log_likelihood(n_items):
    def call():
        orderings = np.array([[0, 1, 2, 3], [1, 0, 2, 3], [3, 2, 1, 0], [2, 3, -1, -1]])
        with pm.Model():
            z = pmp.CRP("z", alpha=1.0, n=4, summaries=False)
            pmp.GeneralizedMallows("y", partition=z, nu=1.0, r=0.6, observed=orderings,
                                   n_items=n_items)
            pm.sample(draws=2, tune=0, chains=1, cores=1, progressbar=False,
                      idata_kwargs={"log_likelihood": True})
    return call


# A GeneralizedMallows has no pointwise log-likelihood: refused before the first draw.
for n_items in (4, 8):
    case("pm.sample", f"idata_kwargs-log_likelihood-GeneralizedMallows-n{n_items}",
         _gm_sample_log_likelihood(n_items), VE, "y")

for label, value, error in COUNT_BAD:
    for arg in ("n_restricted_scans", "n_proposals"):
        if label == "zero" and arg == "n_restricted_scans":
            continue
        step_case(f"CoupledGibbs.{arg}-{label}",
                  lambda m, a=arg, v=value: pmp.CoupledGibbs([m["z"]], **{a: v}), error, arg)
for arg, values in [
    ("coupling", [("unknown", "wasserstein", VE), ("None", None, VE), ("list", ["ot"], VE)]),
    ("metric", [("unknown", "rand", VE), ("None", None, VE)]),
    ("proposal", [("unknown", "gibbs", VE), ("bool", True, VE)]),
    ("start", [("unknown", "random", VE), ("array", np.zeros(N), VE)]),
    ("eta", [("negative", -0.1, VE), ("one", 1.0, VE), ("nan", np.nan, VE), ("str", "small", TE)]),
    ("split_merge", [("str", "yes", TE), ("int", 1, TE)]),
    ("scan", [("unknown", "sequential", VE), ("None", None, VE)]),
]:
    for label, value, error in values:
        step_case(f"CoupledGibbs.{arg}-{label}",
                  lambda m, a=arg, v=value: pmp.CoupledGibbs([m["z"]], **{a: v}), error, arg)
step_case("CoupledGibbs.scan-systematic-with-split_merge",
          lambda m: pmp.CoupledGibbs([m["z"]], scan="systematic", split_merge=True), VE, "scan")


# PBC (issue 15): its target must be fixed, so its model has a constant alpha; every
# option is checked before the model is read.
def pbc_case(label, make, error, arg):
    def call():
        with pm.Model() as model:
            z = pmp.CRP("z", alpha=1.0, n=N, summaries=False)
            pmp.CollapsedBetaBernoulli("y", partition=z, observed=BINARY)
            make(model)
    case("step", label, call, error, arg)


LADDER = (4.0, 2.0, 1.0)
for label, vars_, error in [
    ("None", lambda m: None, TE), ("empty", lambda m: [], VE), ("name", lambda m: "z", TE),
    ("array", lambda m: [np.zeros(N)], TE),
]:
    pbc_case(f"PBC.vars-{label}", lambda m, v=vars_: pmp.PBC(v(m), temperatures=LADDER),
             error, "vars")
for label, value, error in [
    ("None", None, VE), ("empty", [], VE), ("increasing", [1.0, 2.0], VE),
    ("repeated", [2.0, 2.0], VE), ("negative", [2.0, -1.0], VE), ("nan", [np.nan, 1.0], VE),
    ("inf", [np.inf, 1.0], VE), ("matrix", [[2.0, 1.0]], VE), ("str", "hot", VE),
    ("str-entries", ["4", "1"], VE), ("str-entry", [4.0, "1"], VE),
    ("bool-entry", [2.0, True], VE),
]:
    pbc_case(f"PBC.temperatures-{label}", lambda m, v=value: pmp.PBC([m["z"]], temperatures=v),
             error, "temperatures")
for arg, values in [
    ("crossover", [("unknown", "three_new", VE), ("None", None, VE), ("dash", "one-new", VE)]),
    ("selection", [("unknown", "best", VE), ("None", None, VE)]),
    ("selection_temperature", [("zero", 0.0, VE), ("negative", -1.0, VE), ("nan", np.nan, VE),
                               ("str", "1", TE)]),
    ("mutation_rate", [("zero", 0.0, VE), ("above-one", 1.5, VE), ("nan", np.nan, VE),
                       ("str", "0.3", TE)]),
    ("split_probability", [("zero", 0.0, VE), ("one", 1.0, VE), ("None", None, TE)]),
    # None is the default (one sweep's worth, n mutations per member).
    ("n_mutations", [(label, value, error) for label, value, error in COUNT_BAD
                     if value is not None]),
    ("mode", [("unknown", "optimize", VE), ("None", None, VE), ("upper", "Sample", VE)]),
]:
    for label, value, error in values:
        pbc_case(f"PBC.{arg}-{label}",
                 lambda m, a=arg, v=value: pmp.PBC([m["z"]], temperatures=LADDER, **{a: v}),
                 error, arg)
# Issue 34, item 2: what the coldest rung samples is asked for by name.
pbc_case("PBC.temperatures-coldest-not-one-when-sampling",
         lambda m: pmp.PBC([m["z"]], temperatures=[8.0, 4.0, 2.0]), VE, "temperatures")
pbc_case("PBC.temperatures-coldest-below-one-when-sampling",
         lambda m: pmp.PBC([m["z"]], temperatures=[4.0, 2.0, 0.5], mode="sample"), VE,
         "temperatures")
pbc_case("PBC.mode-optimise-with-coldest-one",
         lambda m: pmp.PBC([m["z"]], temperatures=LADDER, mode="optimise"), VE, "mode")
pbc_case("PBC.mode-optimise-with-coldest-above-one",
         lambda m: pmp.PBC([m["z"]], temperatures=[8.0, 4.0, 2.0], mode="optimise"), VE,
         "mode")
step_case("PBC.free-hyperparameter", lambda m: pmp.PBC([m["z"]], temperatures=LADDER),
          PartitionModelError, "a")
for arg, values in [
    ("tau_min", [("zero", 0.0, VE), ("negative", -1.0, VE), ("nan", np.nan, VE)]),
    ("tau_max", [("below-tau_min", 0.5, VE), ("str", "60", TE)]),
    ("acceptance", [("reversed", (0.7, 0.6), VE), ("scalar", 0.6, VE), ("above-one", (0.6, 1.2), VE)]),
    ("grid_size", [("one", 1, VE), ("fraction", 2.5, VE)]),
    ("draws", [("one", 1, VE), ("None", None, TE)]),
    ("hot_fraction", [("zero", 0.0, VE), ("above-one", 1.5, VE)]),
    ("max_refinements", [("negative", -1, VE), ("fraction", 1.5, VE), ("None", None, TE)]),
    ("mode", [("unknown", "optimize", VE), ("None", None, VE)]),
]:
    for label, value, error in values:
        pbc_case(f"pbc_ladder.{arg}-{label}",
                 lambda m, a=arg, v=value: pmp.pbc_ladder([m["z"]], **{a: v}), error, arg)
pbc_case("pbc_ladder.tau_min-not-one-when-sampling",
         lambda m: pmp.pbc_ladder([m["z"]], tau_min=0.5), VE, "tau_min")
pbc_case("pbc_ladder.tau_min-missing-when-optimising",
         lambda m: pmp.pbc_ladder([m["z"]], mode="optimise"), VE, "tau_min")
pbc_case("pbc_ladder.tau_min-one-when-optimising",
         lambda m: pmp.pbc_ladder([m["z"]], mode="optimise", tau_min=1.0), VE, "mode")
pbc_case("pbc_ladder.tau_min-missing-when-tempered",
         lambda m: pmp.pbc_ladder([m["z"]], mode="tempered"), VE, "tau_min")
pbc_case("pbc_ladder.burn-not-below-draws",
         lambda m: pmp.pbc_ladder([m["z"]], draws=10, burn=10), VE, "burn")
step_case("pbc_ladder.free-hyperparameter", lambda m: pmp.pbc_ladder([m["z"]]),
          PartitionModelError, "a")


# Hyperparameter steps (issue 17): step_model's "a" is a Gamma concentration read by
# the CRP alone (EscobarWest's and HyperSlice's).
for step in (pmp.EscobarWest, pmp.HyperSlice):
    name = step.__name__
    for label, vars_, error in [
        ("None", lambda m: None, TE), ("empty", lambda m: [], VE), ("name", lambda m: "a", TE),
        ("name-list", lambda m: ["a"], TE), ("array", lambda m: [np.zeros(N)], TE),
        ("partition", lambda m: [m["z"]], PartitionModelError),
        ("DataArray", lambda m: xr.DataArray([1]), TE),
    ]:
        step_case(f"{name}.vars-{label}", lambda m, s=step, v=vars_: s(v(m)), error, "vars")
    step_case(f"{name}.model", lambda m, s=step: s([m["a"]], model="m"), TE, "model")
    step_case(f"{name}.rng", lambda m, s=step: s([m["a"]], rng="seed"), TE, "rng")
for label, value, error in NUMBER_BAD + [("zero", 0.0, VE), ("negative", -1.0, VE)]:
    step_case(f"HyperSlice.w-{label}", lambda m, v=value: pmp.HyperSlice([m["a"]], w=v), error,
              "w")
for label, value, error in COUNT_BAD:
    step_case(f"HyperSlice.max_steps-{label}",
              lambda m, v=value: pmp.HyperSlice([m["a"]], max_steps=v), error, "max_steps")
step_case("Gibbs.n_sweeps-other-str", lambda m: pmp.Gibbs([m["z"]], n_sweeps="many"), TE,
          "n_sweeps")


# ---------------------------------------------------------------------- pm.sample
def sample_case(label, make_kwargs, error, arg):
    def call():
        model = step_model()
        with model:
            pm.sample(draws=2, tune=0, chains=2, cores=1, progressbar=False,
                      compute_convergence_checks=False, **make_kwargs(model))
    case("pm.sample", label, call, error, arg)


BAD_LABELS = np.array([0, 1, 2, 9])
for label, kwargs in [
    ("dict-name", lambda m: {"initvals": {"z": BAD_LABELS}}),
    ("dict-rv", lambda m: {"initvals": {m["z"]: BAD_LABELS}}),
    ("dict-value-var", lambda m: {"initvals": {m.rvs_to_values[m["z"]]: BAD_LABELS}}),
    ("list", lambda m: {"initvals": [{"z": [0, 0, 1, 1]}, {"z": BAD_LABELS}]}),
    ("tuple", lambda m: {"initvals": ({"z": BAD_LABELS}, None)}),
    ("short", lambda m: {"initvals": {"z": [0, 1]}}),
    ("fraction", lambda m: {"initvals": {"z": [0, 0.5, 1, 1]}}),
    ("positional-arrays", lambda m: {"initvals": [np.zeros(N, int), np.zeros(N, int)]}),
    ("array", lambda m: {"initvals": np.zeros(N, int)}),
    ("set", lambda m: {"initvals": {"z"}}),
]:
    sample_case(f"initvals-{label}", kwargs, TE if "array" in label or label == "set" else VE,
                "initvals[" if "array" not in label and label != "set" else "initvals must")


def _set_bad_initval(model):
    model.set_initval(model["z"], BAD_LABELS)
    return {}


sample_case("initval-set_initval", _set_bad_initval, VE, "(initval= or model.set_initval)")

# Defect 6: a step that is not a partition step must not be given a partition. The
# model and PyMC's steps (each compiles a function) are built once and shared:
# pm.sample refuses them before using them.
@functools.cache
def foreign_steps():
    model = step_model()
    with model:
        z, a = model["z"], model["a"]
        metropolis = pm.Metropolis([z])
        return model, {
            "Metropolis": [metropolis],
            "Metropolis-blocked": pm.Metropolis([z, a]),
            "BinaryGibbsMetropolis": [pm.BinaryGibbsMetropolis([z])],
            "CompoundStep": pm.CompoundStep([metropolis, pm.Slice([a])]),
            "with-a-partition-step": [metropolis, pmp.Gibbs([z])],
        }


def foreign_step_case(label):
    def call():
        model, steps = foreign_steps()
        with model:
            pm.sample(draws=2, tune=0, chains=1, progressbar=False,
                      compute_convergence_checks=False, step=steps[label])
    case("pm.sample", f"step-{label}", call, PartitionModelError, "pmp.Gibbs([z])")


for label in ("Metropolis", "Metropolis-blocked", "BinaryGibbsMetropolis", "CompoundStep",
              "with-a-partition-step"):
    foreign_step_case(label)


# ---------------------------------------------------------------------- analysis
DRAWS_BAD = [
    ("nan", np.where(DRAWS > 1, np.nan, DRAWS), VE), ("fraction", DRAWS + 0.5, VE),
    ("float", DRAWS.astype(float), VE), ("ragged", [[0, 1], [0]], VE), ("None", None, TE),
    ("empty", np.zeros((0, N), int), VE), ("vector", LABELS, VE), ("4d", DRAWS[None, None], VE),
    ("str", DRAWS.astype(str), TE), ("complex", DRAWS + 1j, TE),
]
DRAW_FUNCTIONS = {
    "point_estimate": lambda d: pmp.point_estimate(d, seed=0, n_runs=1),
    "dahl_estimate": lambda d: pmp.dahl_estimate(d),
    "expected_loss": lambda d: pmp.expected_loss(d, LABELS),
    "credible_ball": lambda d: pmp.credible_ball(d, LABELS),
    "similarity_matrix": lambda d: pmp.similarity_matrix(d),
    "plot_block_sizes": lambda d: pmp.plots.plot_block_sizes(d),
}
for fname, fn in DRAW_FUNCTIONS.items():
    for label, value, error in DRAWS_BAD:
        case(f"{fname}.draws_or_idata", label, lambda f=fn, v=value: f(v), error,
             "draws_or_idata")

LABEL_BAD = [
    ("nan", [0, np.nan, 1, 1], VE), ("fraction", [0, 0.5, 1, 1], VE), ("inf", [0, np.inf, 1, 1], VE),
    ("ragged", RAGGED, VE), ("None", None, TE), ("Dataset", DATASET, TE), ("complex", LABELS + 1j, TE),
    ("str", ["a", "b", "b", "c"], TE),
]
for label, value, error in LABEL_BAD + [("short", [0, 1], VE), ("matrix", DRAWS, VE)]:
    case("credible_ball.estimate", label, lambda v=value: pmp.credible_ball(DRAWS, v), error,
         "estimate")
    case("expected_loss.labels", label, lambda v=value: pmp.expected_loss(DRAWS, v), error,
         "labels")
for label, value, error in NUMBER_BAD + [("zero", 0.0, VE), ("above-one", 1.5, VE)]:
    case("credible_ball.level", label, lambda v=value: pmp.credible_ball(DRAWS, LABELS, level=v),
         error, "level")
for fname, fn in [("point_estimate", pmp.point_estimate), ("credible_ball", None),
                  ("dahl_estimate", pmp.dahl_estimate), ("expected_loss", None)]:
    call = {
        "point_estimate": lambda v: pmp.point_estimate(DRAWS, loss=v, n_runs=1),
        "credible_ball": lambda v: pmp.credible_ball(DRAWS, LABELS, loss=v),
        "dahl_estimate": lambda v: pmp.dahl_estimate(DRAWS, loss=v),
        "expected_loss": lambda v: pmp.expected_loss(DRAWS, LABELS, loss=v),
    }[fname]
    for label, value in [("unknown", "ARI"), ("None", None), ("number", 2)]:
        case(f"{fname}.loss", label, lambda c=call, v=value: c(v), VE, "loss")
for arg, minimum in [("n_runs", 1), ("max_scans", 1), ("max_zealous", 0), ("max_blocks", 1)]:
    for label, value, error in COUNT_BAD:
        if (value == 0 and minimum == 0) or (value is None and arg == "max_blocks"):
            continue  # allowed (max_blocks=None: the most blocks among the draws)
        case(f"point_estimate.{arg}", label,
             lambda a=arg, v=value: pmp.point_estimate(DRAWS, **{a: v}), error, arg)
case("point_estimate.max_blocks", "above-n", lambda: pmp.point_estimate(DRAWS, max_blocks=N + 1),
     VE, "max_blocks")
for label, value, error in NUMBER_BAD + [("negative", -0.1, VE), ("above-one", 1.5, VE)]:
    case("point_estimate.p_seq", label, lambda v=value: pmp.point_estimate(DRAWS, p_seq=v),
         error, "p_seq")
for label, value in [("str", "seed"), ("negative", -1), ("bool", True), ("float", 1.5)]:
    case("point_estimate.seed", label, lambda v=value: pmp.point_estimate(DRAWS, seed=v), TE,
         "seed")

for label, value, error in [
    ("float", [0.0, 1.0], VE), ("nan", [0, np.nan], VE), ("out-of-range", [0, N], VE),
    ("matrix", [[0, 1]], VE), ("ragged", [[0, 1], [1]], VE), ("Dataset", DATASET, TE),
]:
    case("similarity_matrix.items", label, lambda v=value: pmp.similarity_matrix(DRAWS, items=v),
         error, "items")
for label, value in [("int", int), ("str", "nope"), ("None-ok?", "i8")]:
    case("similarity_matrix.dtype", label, lambda v=value: pmp.similarity_matrix(DRAWS, dtype=v),
         VE, "dtype")
for label, value, error in [("zero", 0, VE), ("nan", np.nan, VE), ("bool", True, TE)]:
    case("similarity_matrix.block_size", label,
         lambda v=value: pmp.similarity_matrix(DRAWS, block_size=v), error, "block_size")

DISTANCES = [pmp.binder_loss, pmp.hamming_distance, pmp.rand_index, pmp.adjusted_rand_index,
             pmp.variation_of_information]
for fn in DISTANCES:
    for label, value, error in LABEL_BAD + [("3d", DRAWS[None], VE), ("empty", [], VE)]:
        case(f"{fn.__name__}.a", label, lambda f=fn, v=value: f(v, LABELS), error, "a")
        case(f"{fn.__name__}.b", label, lambda f=fn, v=value: f(LABELS, v), error, "b")
    case(f"{fn.__name__}.b", "n-mismatch", lambda f=fn: f(LABELS, [0, 1]), VE, "'a' and 'b")
for label, value, error in NUMBER_BAD + [("one", 1.0, VE), ("negative", -2.0, VE)]:
    case("variation_of_information.base", label,
         lambda v=value: pmp.variation_of_information(LABELS, LABELS, base=v), error, "base")

for label, value, error in [
    ("nan", [0, np.nan, 1], VE), ("fraction", [0, 1.5, 1], VE), ("None", None, TE),
    ("ragged", RAGGED, VE), ("Dataset", DATASET, TE), ("scalar", 3, VE),
    ("complex", [1j, 2j], TE), ("objects", [object(), object()], TE),
]:
    case("canonicalize.labels", label, lambda v=value: pmp.canonicalize(v), error, "labels")
for label, value in [("zero", 0), ("negative", -1), ("fraction", 2.5), ("None", None),
                     ("bool", True), ("str", "3")]:
    case("set_partitions.n", label, lambda v=value: pmp.set_partitions(v), VE, "n")


# ---------------------------------------------------------------------- traces
def trace_model():
    rng = np.random.default_rng(0)
    with pm.Model() as model:
        a = pm.Gamma("a", 2.0, 2.0)
        z = pmp.CRP("z", alpha=a, n=N)
        pm.Poisson("counts", 3.0, shape=N)  # an integer vector that is not a partition
        pmp.CollapsedNormal("y", partition=z, observed=REAL)
        prior = pm.sample_prior_predictive(draws=6, random_seed=rng)
    idata = versions.add_group(prior, "posterior", versions.group_dataset(prior, "prior"))
    return model, idata


MODEL, TRACE = trace_model()
for label, value, error in [
    ("summary", "z_n_clusters", VE), ("integer-vector", "counts", VE), ("missing", "nope", VE),
    ("number", 3, TE), ("float-variable", "a", VE),
]:
    for fname, fn in [
        ("point_estimate", lambda v: pmp.point_estimate(TRACE, var_name=v, n_runs=1)),
        ("similarity_matrix", lambda v: pmp.similarity_matrix(TRACE, var_name=v)),
        ("add_partition_statistics", lambda v: pmp.add_partition_statistics(TRACE, v, pairs=[(0, 1)])),
        ("plot_n_blocks", lambda v: pmp.plots.plot_n_blocks(TRACE, v)),
    ]:
        case(f"{fname}.var_name", label, lambda f=fn, v=value: f(v), error, "var_name")
case("point_estimate.var_name", "ambiguous", lambda: pmp.point_estimate(TRACE, n_runs=1), VE,
     "var_name")
for label, value, error in [("array", DRAWS[None], TE), ("None", None, TE), ("Dataset", DATASET, TE)]:
    case("add_partition_statistics.idata", label,
         lambda v=value: pmp.add_partition_statistics(v, "z", pairs=[(0, 1)]), error, "idata")
for label, value, error in [("same-item", [(0, 0)], VE), ("fraction", [(0.5, 1)], VE),
                            ("out-of-range", [(0, N)], VE), ("str", "01", TE),
                            ("triple", [(0, 1, 2)], VE), ("number", 3, TE)]:
    case("add_partition_statistics.pairs", label,
         lambda v=value: pmp.add_partition_statistics(TRACE, "z", pairs=v), error, "pairs")
for label, value, error in [o for o in LABEL_BAD if o[0] != "None"] + [("short", [0, 1], VE)]:
    case("add_partition_statistics.reference", label,
         lambda v=value: pmp.add_partition_statistics(TRACE, "z", reference=v), error, "reference")
case("add_partition_statistics.distance", "unknown",
     lambda: pmp.add_partition_statistics(TRACE, "z", reference=LABELS, distance="ARI"), VE,
     "distance")
for label, value, error in [o for o in COUNT_BAD if o[0] != "None"]:
    case("add_partition_statistics.n_fractions", label,
         lambda v=value: pmp.add_partition_statistics(TRACE, "z", n_fractions=v), error,
         "n_fractions")

BP = {
    "sample_block_parameters": lambda **k: pmp.sample_block_parameters(
        k.pop("idata", TRACE), k.pop("model", MODEL), **k),
    "posterior_predictive_density": lambda **k: pmp.posterior_predictive_density(
        k.pop("idata", TRACE), k.pop("model", MODEL), k.pop("x_new", REAL[:1]), **k),
}
for fname, fn in BP.items():
    for label, value, error in [("array", DRAWS, TE), ("None", None, TE), ("Dataset", DATASET, TE)]:
        case(f"{fname}.idata", label, lambda f=fn, v=value: f(idata=v), error, "idata")
    for label, value, error in [("None-outside-context", None, TE), ("str", "model", TE)]:
        case(f"{fname}.model", label, lambda f=fn, v=value: f(model=v), error, "model")
for label, value, error in [("unknown", ["nope"], VE), ("numbers", [1], TE)]:
    case("sample_block_parameters.var_names", label,
         lambda v=value: BP["sample_block_parameters"](var_names=v), error, "var_names")
for label, value in [("str", "seed"), ("negative", -1), ("bool", True)]:
    case("sample_block_parameters.seed", label,
         lambda v=value: BP["sample_block_parameters"](seed=v), TE, "seed")
for label, value, error in [o for o in LABEL_BAD if o[0] != "None"] + [("short", [0, 1], VE)]:
    case("sample_block_parameters.partition", label,
         lambda v=value: BP["sample_block_parameters"](partition=v), error, "partition")
for label, value in [("None", None), ("empty", "")]:
    case("sample_block_parameters.group", label,
         lambda v=value: BP["sample_block_parameters"](group=v), TE, "group")
for label, value, error in [
    ("nan", [[np.nan, 0.0]], VE), ("inf", [[np.inf, 0.0]], VE), ("wrong-shape", np.ones((2, 3)), VE),
    ("ragged", RAGGED + [[1.0]], VE), ("None", None, TE), ("str", [["a", "b"]], TE),
    ("Dataset", DATASET, TE), ("complex", [[1j, 0.0]], TE),
]:
    case("posterior_predictive_density.x_new", label,
         lambda v=value: BP["posterior_predictive_density"](x_new=v), error, "x_new")
for label, value, error in [("unknown", "nope", VE), ("number", 3, TE)]:
    case("posterior_predictive_density.var_name", label,
         lambda v=value: BP["posterior_predictive_density"](var_name=v), error, "var_name")


# ---------------------------------------------------------------------- unbiased estimation
def coupled_trace(first_sweep=1):
    """Two pairs (chains) of a CoupledGibbs-shaped trace, sweeps first_sweep..+7, met
    at their third sweep."""
    rng = np.random.default_rng(0)
    x = pmp.canonicalize(rng.integers(0, 2, size=(2, 8, N)))
    y = x.copy()
    y[:, :2] = pmp.canonicalize(rng.integers(0, 2, size=(2, 2, N)))
    return coupled_idata(x, y, [first_sweep + 2] * 2, first_sweep=first_sweep)


COUPLED = coupled_trace()
LATE = coupled_trace(first_sweep=5)  # PyMC dropped 4 tuning draws


def unbiased_call(**k):
    return pmp.unbiased_estimate(k.pop("idata", COUPLED), k.pop("var_name", "z"),
                                 k.pop("h", pmp.unbiased.lcp), k.pop("burn_in", 1),
                                 k.pop("m", 4), **k)


for label, value, error in COUNT_BAD + [("after-first-sweep", 1, VE)]:
    kwargs = {"idata": LATE, "m": 6} if label == "after-first-sweep" else {}
    case("unbiased_estimate.burn_in", label,
         lambda v=value, k=kwargs: unbiased_call(burn_in=v, **k), error, "burn_in")
# H_{0:m} needs the start X_0, which a trace does not hold: the refusal says where it is.
case("unbiased_estimate.burn_in", "zero-start-not-in-the-trace",
     lambda: unbiased_call(burn_in=0), VE, "'burn_in' = 0 (H_{0:m}) needs h(X_0)")
for label, value, error in [o for o in COUNT_BAD if o[0] != "negative"] + [
    ("below-burn_in", 2, VE), ("beyond-the-trace", 9, VE), ("negative", -1, VE),
]:
    kwargs = {"burn_in": 3} if label == "below-burn_in" else {}
    case("unbiased_estimate.m", label, lambda v=value, k=kwargs: unbiased_call(m=v, **k), error,
         "m")
for label, value, error in NUMBER_BAD + [("negative", -0.1, VE), ("half", 0.5, VE),
                                         ("one", 1.0, VE)]:
    case("unbiased_estimate.trim", label, lambda v=value: unbiased_call(trim=v), error, "trim")
for label, value, error in NUMBER_BAD + [("zero", 0.0, VE), ("one", 1.0, VE),
                                         ("percent", 95, VE)]:
    case("unbiased_estimate.ci", label, lambda v=value: unbiased_call(ci=v), error, "ci")
for label, value, error in [("missing", "nope", VE), ("number", 3, TE)]:
    case("unbiased_estimate.var_name", label, lambda v=value: unbiased_call(var_name=v), error,
         "var_name")
for label, value, error in [
    ("None", None, TE), ("number", 3, TE), ("name", "lcp", TE),
    ("varying-shape", lambda z: np.zeros(z.max() + 1), VE),
    ("str-values", lambda z: "big", TE), ("nan", lambda z: np.nan, VE),
]:
    case("unbiased_estimate.h", label, lambda v=value: unbiased_call(h=v), error, "h")
for label, value, error in [("array", DRAWS[None], TE), ("None", None, TE),
                            ("Dataset", DATASET, TE), ("not-coupled", TRACE, VE)]:
    case("unbiased_estimate.idata", label,
         lambda v=value: unbiased_call(idata=v), error, "idata")
for arg in ("a", "b"):
    for label, value, error in [("negative", -1, VE), ("fraction", 0.5, VE), ("None", None, TE),
                                ("bool", True, TE), ("str", "0", TE)]:
        other = {"a": 1, "b": 2}
        other[arg] = value
        case(f"co_clustering.{arg}", label, lambda k=other: pmp.unbiased.co_clustering(**k),
             error, arg)
case("co_clustering.b", "beyond-n",
     lambda: pmp.unbiased.co_clustering(0, N).evaluate(LABELS[None]), VE, "b")
case("co_clustering.a", "same-item", lambda: pmp.unbiased.co_clustering(2, 2), VE, "'a' and 'b'")


def _const_model():
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=N, summaries=False)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=1.0, sigma=1.0, observed=REAL)
    return model


CONST_MODEL = _const_model()
PD = lambda **k: pmp.unbiased.predictive_density(
    k.pop("model", CONST_MODEL), k.pop("x_new", REAL[:1]), **k)
for label, value, error in [("None-outside-context", None, TE), ("str", "model", TE),
                            ("free-hyperparameter", MODEL, VE)]:
    case("predictive_density.model", label, lambda v=value: PD(model=v), error, "model")
for label, value, error in [
    ("nan", [[np.nan, 0.0]], VE), ("wrong-shape", np.ones((2, 3)), VE), ("None", None, TE),
    ("str", [["a", "b"]], TE), ("Dataset", DATASET, TE),
]:
    case("predictive_density.x_new", label, lambda v=value: PD(x_new=v), error, "x_new")
for label, value, error in [("unknown", "nope", VE), ("number", 3, TE)]:
    case("predictive_density.var_name", label, lambda v=value: PD(var_name=v), error,
         "var_name")

HX, HY = np.arange(9.0), np.r_[np.arange(1.0, 9.0)]  # met at sweep 1: h(Y_(t-1)) = h(X_t)
PE = lambda **k: pmp.unbiased.pair_estimate(
    k.pop("hx", HX), k.pop("hy", HY), k.pop("meeting_time", 1), k.pop("burn_in", 1),
    k.pop("m", 4))
for arg, values in [
    ("hx", [("str", "abc", TE), ("None", None, TE), ("scalar", 3.0, TE)]),
    ("hy", [("wrong-shape", np.zeros((8, 2)), VE), ("None", None, TE), ("unfaithful",
                                                                        HY[::-1], VE)]),
    ("meeting_time", [("zero", 0, VE), ("fraction", 2.5, TE), ("bool", True, TE),
                      ("str", "3", TE), ("list", [3], TE), ("beyond-hx", 11, VE)]),
    ("burn_in", [("negative", -1, VE), ("None", None, TE), ("fraction", 0.5, VE)]),
    ("m", [("beyond-hx", 9, VE), ("below-burn_in", 0, VE), ("str", "4", TE)]),
]:
    for label, value, error in values:
        case(f"pair_estimate.{arg}", label, lambda a=arg, v=value: PE(**{a: v}), error, arg)

PAIRS = [pmp.unbiased.PairEstimate(np.array(0.5), 3, 8, False)] * 3
for label, value, error in [("empty", [], TE), ("numbers", [1.0, 2.0], TE), ("None", None, TE)]:
    case("aggregate.pairs", label, lambda v=value: pmp.unbiased.aggregate(v, 1, 4), error,
         "pairs")
for arg, values in [("trim", [("half", 0.5, VE), ("str", "1%", TE)]),
                    ("ci", [("one", 1.0, VE), ("None", None, TE)]),
                    ("burn_in", [("negative", -1, VE)]), ("m", [("below-burn_in", 0, VE)])]:
    for label, value, error in values:
        kwargs = {"burn_in": 1, "m": 4, arg: value}
        case(f"aggregate.{arg}", label,
             lambda k=kwargs: pmp.unbiased.aggregate(PAIRS, **k), error, arg)
for label, kwargs in [("fn-number", {"fn": 3}), ("batch-str", {"batch": "fast"}),
                      ("neither", {})]:
    arg = "batch" if "batch" in kwargs else "fn"
    case("PartitionFunction.fn", label,
         lambda k=kwargs: pmp.unbiased.PartitionFunction(**k), TE, arg)


# ---------------------------------------------------------------------- data generators
D = pmp.datasets
GENERATORS = [
    ("jain_neal_probabilities", lambda **k: D.jain_neal_probabilities(**k), {"d": 4}),
    ("jain_neal_bernoulli", lambda **k: D.jain_neal_bernoulli(**k), {"d": 4}),
    ("jain_neal_bernoulli", lambda **k: D.jain_neal_bernoulli(**k), {"n_per_component": 0}),
    ("pbc_normal", lambda **k: D.pbc_normal(**k), {"n_per_component": 0}),
    ("pbc_normal", lambda **k: D.pbc_normal(**k), {"n_components": 0}),
    ("pbc_normal", lambda **k: D.pbc_normal(**k), {"dim": 0}),
    ("nguyen_synthetic", lambda **k: D.nguyen_synthetic(**k), {"n": 0}),
    ("nguyen_gmm_1d", lambda **k: D.nguyen_gmm_1d(**k), {"n": 0}),
    ("nguyen_gmm_1d", lambda **k: D.nguyen_gmm_1d(**k), {"n_components": 0}),
    ("erdos_renyi_graph", lambda **k: D.erdos_renyi_graph(p=0.5, **k), {"n": 0}),
    ("random_regular_graph", lambda **k: D.random_regular_graph(k=2, **k), {"n": 0}),
    ("random_regular_graph", lambda **k: D.random_regular_graph(n=6, **k), {"k": -1}),
    ("random_regular_graph", lambda **k: D.random_regular_graph(n=6, k=2, **k), {"max_tries": 0}),
]
for fname, fn, zero in GENERATORS:
    (arg, low), = zero.items()
    for label, value, error in COUNT_BAD:
        if label == "zero":
            value = low
        elif label == "negative" and low < 0:
            continue
        case(f"{fname}.{arg}", label, lambda f=fn, a=arg, v=value: f(**{a: v}), error, arg)
for fname, fn, arg in [
    ("pbc_normal", D.pbc_normal, "tau2"), ("pbc_normal", D.pbc_normal, "sigma2"),
    ("nguyen_gmm_1d", D.nguyen_gmm_1d, "sigma"), ("nguyen_gmm_1d", D.nguyen_gmm_1d, "mean_sd"),
]:
    for label, value, error in NUMBER_BAD + [("zero", 0.0, VE), ("negative", -1.0, VE)]:
        case(f"{fname}.{arg}", label, lambda f=fn, a=arg, v=value: f(**{a: v}), error, arg)
PROBABILITY_BAD = NUMBER_BAD + [("negative", -0.1, VE),
                                                            ("above-one", 1.5, VE)]
for label, value, error in PROBABILITY_BAD:
    case("planted_partition.p_in", label, lambda v=value: D.planted_partition([2, 2], v, 0.1),
         error, "p_in")
    case("planted_partition.p_out", label, lambda v=value: D.planted_partition([2, 2], 0.9, v),
         error, "p_out")
    case("erdos_renyi_graph.p", label, lambda v=value: D.erdos_renyi_graph(5, v), error, "p")
for label, value, error in [
    ("empty", [], VE), ("zero", [0, 3], VE), ("fraction", [1.5, 2], VE), ("ragged", [[1, 2], [3]], VE),
    ("None", None, TE), ("nan", [np.nan, 2], VE), ("matrix", [[2, 2]], VE), ("str", ["2"], VE),
    ("Dataset", DATASET, TE),
]:
    case("planted_partition.sizes", label, lambda v=value: D.planted_partition(v, 0.9, 0.1),
         error, "sizes")
for fname, fn in [("jain_neal_bernoulli", D.jain_neal_bernoulli), ("pbc_normal", D.pbc_normal),
                  ("nguyen_synthetic", D.nguyen_synthetic), ("nguyen_gmm_1d", D.nguyen_gmm_1d),
                  ("erdos_renyi_graph", lambda seed: D.erdos_renyi_graph(5, 0.5, seed=seed))]:
    for label, value in [("str", "seed"), ("negative", -1), ("bool", True), ("float", 0.5)]:
        case(f"{fname}.seed", label, lambda f=fn, v=value: f(seed=v), TE, "seed")
for label, value, error in [("None", None, TE), ("ragged", RAGGED, VE), ("vector", [0, 1], VE),
                            ("not-square", np.zeros((2, 3)), VE), ("Dataset", DATASET, TE)]:
    case("edges_from_adjacency.A", label, lambda v=value: D.edges_from_adjacency(v), error, "A")


# ---------------------------------------------------------------------- the table
@pytest.mark.parametrize("call, error, pattern", CASES)
def test_bad_input_is_refused_with_a_message_naming_the_argument(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call()


def test_the_table_covers_every_public_constructor_and_step():
    """Every partition prior, likelihood and step exported by the package appears."""
    ids = " ".join(p.id for p in CASES)
    public = [
        "CRP", "PitmanYor", "FixedBlocks", "MFM", "ProperColoring", "IRM", "KMeansEnergy",
        "Gibbs", "SplitMerge", "CoupledGibbs", "EscobarWest", "HyperSlice", "PBC",
        "pbc_ladder",
        *[n for n in pmp.__all__ if n.startswith("Collapsed")],
        "point_estimate", "dahl_estimate", "expected_loss", "credible_ball",
        "similarity_matrix", "add_partition_statistics", "sample_block_parameters",
        "posterior_predictive_density", "canonicalize", "set_partitions",
        "unbiased_estimate", "co_clustering", "predictive_density", "pair_estimate",
        "aggregate", "PartitionFunction",
        *[f.__name__ for f in DISTANCES],
    ]
    missing = [name for name in public if f"{name}." not in ids]
    assert not missing
    assert len(CASES) > 500


# ---------------------------------------------------------------------- accepted on purpose
def _observed_logp(observed, cls=pmp.CollapsedNormal, **kwargs):
    """What the model holds: its observed data and constant hyperparameters (equal
    values, equal model; no compilation)."""
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=N, summaries=False)
        y = cls("y", partition=z, observed=observed, **kwargs)
    hypers = [pm.draw(h) for h in y.owner.op.dist_params(y.owner)[1:]]
    return np.concatenate([np.ravel(model.rvs_to_values[y].data), *map(np.ravel, hypers)])


ALLOWED = [
    # An xarray.DataArray is read as its values (observed data, hyperparameters, labels).
    pytest.param(lambda: _observed_logp(xr.DataArray(REAL, dims=("item", "dim"))),
                 lambda: _observed_logp(REAL), id="DataArray-observed"),
    pytest.param(lambda: _observed_logp(REAL, sigma=xr.DataArray([1.0, 2.0], dims="dim")),
                 lambda: _observed_logp(REAL, sigma=[1.0, 2.0]), id="DataArray-hyperparameter"),
    # Booleans are binary data for the Bernoulli likelihood, and counts.
    pytest.param(lambda: _observed_logp(BINARY.astype(bool), pmp.CollapsedBetaBernoulli),
                 lambda: _observed_logp(BINARY, pmp.CollapsedBetaBernoulli), id="bool-Bernoulli"),
    pytest.param(lambda: _observed_logp(BINARY.astype(bool), pmp.CollapsedPoissonGamma),
                 lambda: _observed_logp(BINARY, pmp.CollapsedPoissonGamma), id="bool-counts"),
    # Whole-number floats are integers for counts and single label vectors.
    pytest.param(lambda: pm.draw(pmp.CRP.dist(alpha=1.0, n=4.0), random_seed=1),
                 lambda: pm.draw(pmp.CRP.dist(alpha=1.0, n=4), random_seed=1), id="n-float"),
    pytest.param(lambda: pmp.canonicalize([3.0, 3.0, 1.0]), lambda: np.array([0, 0, 1]),
                 id="canonicalize-whole-floats"),
    # Booleans and strings encode partitions ("same value, same block").
    pytest.param(lambda: pmp.canonicalize([True, False, True]), lambda: np.array([0, 1, 0]),
                 id="canonicalize-bool"),
    pytest.param(lambda: pmp.canonicalize(["b", "a", "b"]), lambda: np.array([0, 1, 0]),
                 id="canonicalize-str"),
    pytest.param(lambda: pmp.binder_loss([True, False], [0, 1]), lambda: 0.0, id="labels-bool"),
    pytest.param(lambda: pmp.canonicalize(np.zeros((0, 3), int)), lambda: np.zeros((0, 3), int),
                 id="canonicalize-no-draws"),
    # A posterior Dataset or a DataArray of draws stands for the trace.
    pytest.param(lambda: pmp.similarity_matrix(versions.posterior_dataset(TRACE), var_name="z"),
                 lambda: pmp.similarity_matrix(TRACE, var_name="z"), id="posterior-Dataset"),
    pytest.param(lambda: pmp.similarity_matrix(versions.posterior_dataset(TRACE)["z"]),
                 lambda: pmp.similarity_matrix(TRACE, var_name="z"), id="DataArray-draws"),
    # One likelihood name as a string, as ArviZ's var_names.
    pytest.param(lambda: versions.group_dataset(
                     pmp.sample_block_parameters(TRACE, MODEL, var_names="y", seed=1),
                     "block_parameters")["y_mu"].values,
                 lambda: versions.group_dataset(
                     pmp.sample_block_parameters(TRACE, MODEL, var_names=["y"], seed=1),
                     "block_parameters")["y_mu"].values, id="var_names-str"),
    # The model in context stands for model=None.
    pytest.param(lambda: _in_context(lambda: pmp.posterior_predictive_density(TRACE, None, [0.0, 0.0])),
                 lambda: pmp.posterior_predictive_density(TRACE, MODEL, [0.0, 0.0]),
                 id="model-from-context"),
]


def _in_context(fn):
    with MODEL:
        return fn()


@pytest.mark.parametrize("call, expected", ALLOWED)
def test_accepted_on_purpose(call, expected):
    np.testing.assert_array_equal(np.asarray(call()), np.asarray(expected()))


def test_non_partition_step_chosen_automatically_is_refused():
    """Without pmp.Gibbs in PyMC's registry, pm.sample would assign a PyMC step
    (Metropolis) to the partition on its own; that is refused too."""
    registry = pm.step_methods.STEP_METHODS  # PyMC holds this very list object
    model = step_model()
    registry.remove(pmp.Gibbs)
    try:
        with model, pytest.raises(PartitionModelError, match=r"automatically.*pmp\.Gibbs"):
            pm.sample(draws=2, tune=0, chains=1, progressbar=False,
                      compute_convergence_checks=False)
    finally:
        registry.append(pmp.Gibbs)


def test_partition_steps_and_other_steps_together_are_accepted():
    model = step_model()
    with model:
        provided, _ = pm.sampling.mcmc.assign_step_methods(
            model, [pmp.SplitMerge([model["z"]]), pm.Metropolis([model["a"]])]
        )
    assert {type(s).__name__ for s in provided} == {"SplitMerge", "Metropolis"}
