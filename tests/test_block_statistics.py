"""The collapsed likelihoods' log densities from memoised block statistics
(``pymc_partitions.distributions.statistics``, issue 17 Build item 2).

- The gradient NUTS takes (``model.compile_dlogp``) equals central finite
  differences of the model's log density, for every likelihood whose
  hyperparameters can be free, at a partition with several blocks; the values
  themselves are checked against the numba kernels in ``test_kernel_vs_model``,
  ``test_count_likelihoods``, ``test_gaussian_likelihoods`` and ``test_irm``.
- Under PyTensor's numba backend each op runs its native implementation
  (``kernels.statistics``), never Python in object mode, with the same outputs
  as ``perform`` on valid and invalid labels and data.
- The memo: statistics are computed once per labelling (a NUTS trajectory at
  fixed z costs O(K D)), and never served stale: new labels, a new ``pm.Data``
  array, new values of the same shape, and the container's array modified in
  place all give the log density of the data now held, equal to that of a model
  built on those data.
"""

import warnings

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest

import pymc_partitions as pmp
from pymc_partitions.versions import small_function_mode
from pymc_partitions.distributions import statistics

N = 24


def _labels(rng, n=N, k=4):
    return pmp.canonicalize(rng.integers(0, k, n))


def _normal(rng):
    y = rng.normal(0, 2, size=(N, 2))
    mu0 = pm.Normal("mu0", 0.0, 2.0, shape=2)
    tau = pm.HalfNormal("tau", 2.0)
    sigma = pm.HalfNormal("sigma", 2.0, shape=2)
    return pmp.CollapsedNormal, {"mu0": mu0, "tau": tau, "sigma": sigma}, y


def _nig(rng):
    y = rng.normal(1, 2, size=(N, 2))
    return pmp.CollapsedNormalInverseGamma, {
        "mu0": pm.Normal("mu0", 0.0, 2.0), "kappa0": pm.Gamma("kappa0", 2.0, 2.0),
        "a0": pm.Gamma("a0", 2.0, 1.0), "b0": pm.Gamma("b0", 2.0, 1.0, shape=2)}, y


def _bb(rng):
    y = (rng.random((N, 3)) < 0.4).astype(float)
    return pmp.CollapsedBetaBernoulli, {"a": pm.Gamma("a", 2.0, 2.0, shape=3),
                                            "b": pm.Gamma("b", 2.0, 2.0)}, y


def _pg(rng):
    y = rng.poisson(3.0, size=(N, 3)).astype(float)
    return pmp.CollapsedPoissonGamma, {"a": pm.Gamma("a", 2.0, 1.0),
                                           "b": pm.Gamma("b", 2.0, 1.0, shape=3)}, y


def _dm(rng):
    y = rng.multinomial(5, [0.2, 0.3, 0.5], size=(N, 2)).astype(float)
    return pmp.CollapsedDirichletMultinomial, {
        "concentration": pm.Gamma("c", 2.0, 1.0, shape=3)}, y


def _mvn(rng):
    y = rng.normal(0, 2, size=(N, 2))
    s = pm.HalfNormal("s", 2.0)
    t = pm.HalfNormal("t", 2.0)
    base = np.array([[1.0, 0.3], [0.3, 0.8]])
    return pmp.CollapsedMvNormal, {"mu0": pm.Normal("mu0", 0.0, 2.0, shape=2),
                                       "Sigma0": t**2 * base, "Sigma": s**2 * base.T @ base}, y


def _niw(rng):
    y = rng.normal(0, 2, size=(N, 2))
    p = pm.HalfNormal("p", 2.0)
    return pmp.CollapsedNIW, {"mu0": pm.Normal("mu0", 0.0, 2.0, shape=2),
                                  "kappa0": pm.Gamma("kappa0", 2.0, 2.0),
                                  "nu0": 3.0 + pm.Gamma("nu", 2.0, 1.0),
                                  "Psi0": p**2 * pt.eye(2) + 0.1}, y


def _irm(rng):
    a = rng.random((N, N)) < 0.3
    y = np.triu(a, 1)
    y = (y | y.T).astype(float)
    return pmp.IRM, {"a": pm.Gamma("a", 2.0, 2.0), "b": pm.Gamma("b", 2.0, 2.0)}, y


CASES = {"normal": _normal, "normal_inverse_gamma": _nig, "beta_bernoulli": _bb,
         "poisson_gamma": _pg, "dirichlet_multinomial": _dm, "mv_normal": _mvn, "niw": _niw,
         "irm": _irm}


def _model(make, rng, observed=None):
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=N)
        cls, hypers, y = make(rng)
        cls("y", partition=z, observed=y if observed is None else observed, **hypers)
    return model, y


@pytest.mark.parametrize("case", sorted(CASES))
def test_gradient_equals_finite_differences(case):
    rng = np.random.default_rng(sum(map(ord, case)))
    model, _ = _model(CASES[case], rng)
    # FAST_COMPILE (Python linker): the C and numba compiles of the dense
    # Gaussians' gradient graphs take minutes on a cold cache. The default modes
    # compile and run these graphs in test_compile_all_likelihoods and the memo
    # test below.
    mode = "FAST_COMPILE"
    logp = model.compile_logp(mode=mode)
    cont = [v for v in model.value_vars if v.name != "z"]
    dlogp = model.compile_dlogp(vars=[model.values_to_rvs[v] for v in cont], mode=mode)
    point = model.initial_point()
    for v in cont:  # away from the support point, inside the support
        point[v.name] = point[v.name] + rng.uniform(-0.4, 0.4, size=np.shape(point[v.name]))
    for _ in range(2):  # two partitions (the memo moves with them)
        point["z"] = _labels(rng)
        grad = dlogp(point)
        fd, h = [], 1e-5
        for v in cont:
            flat = np.atleast_1d(np.asarray(point[v.name], dtype=float))
            for e in range(flat.size):
                up, down = dict(point), dict(point)
                for p, sign in ((up, 1), (down, -1)):
                    x = flat.copy()
                    x[e] += sign * h
                    p[v.name] = x.reshape(np.shape(point[v.name]))
                fd.append((logp(up) - logp(down)) / (2 * h))
        np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6)
        assert np.all(grad != 0.0)


def test_statistics_computed_once_per_labelling(monkeypatch):
    """A NUTS trajectory at fixed z (log density and gradient at many values of the
    hyperparameters) computes the block statistics once; new labels once more."""
    calls = []
    original = statistics.NormalMoments.compute

    def counted(self, idx, sizes, prepared):
        calls.append(sizes.shape[0])
        return original(self, idx, sizes, prepared)

    monkeypatch.setattr(statistics.NormalMoments, "compute", counted)
    rng = np.random.default_rng(3)
    model, _ = _model(_normal, rng)
    # The memo is the Python linkers' (PyMC 5's default C VM; under numba the op
    # runs natively, test_native_statistics_equal_perform).
    kwargs = {"ravel_inputs": True} if _has_ravel() else {}
    fn = model.logp_dlogp_function(mode=pytensor.compile.mode.Mode(linker="cvm"), **kwargs)
    fn.set_extra_values({"z": _labels(rng, k=3)})
    x0 = np.concatenate([np.ravel(model.initial_point()[v.name]) for v in fn._grad_vars])
    values = [fn(x0 + 0.01 * j) for j in range(10)]
    assert len(calls) == 1 and calls[0] == 3
    fn.set_extra_values({"z": _labels(rng, k=5)})
    fn(x0)
    fn(x0 + 0.02)
    assert len(calls) == 2 and calls[1] == 5
    assert len({float(v[0]) for v in values}) == 10  # the hyperparameters did move


def _has_ravel():
    import inspect

    return "ravel_inputs" in inspect.signature(pm.Model.logp_dlogp_function).parameters


def _reference_logp(make, y, point):
    model, _ = _model(make, np.random.default_rng(0), observed=y)
    return model.compile_logp(mode="FAST_COMPILE")(point)


@pytest.mark.parametrize("case", ["normal", "beta_bernoulli"])
def test_set_data_never_serves_stale_statistics(case):
    make = CASES[case]
    rng = np.random.default_rng(11)
    _, y0 = _model(make, np.random.default_rng(0))
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=N)
        data = pm.Data("data", y0)
        cls, hypers, _ = make(np.random.default_rng(0))
        cls("y", partition=z, observed=data, **hypers)
    logp = model.compile_logp()
    point = model.initial_point()
    point["z"] = _labels(rng)

    def fresh():  # data of the same shape and kind, other values
        with pm.Model():
            return make(np.random.default_rng(rng.integers(1 << 30)))[2]

    assert logp(point) == pytest.approx(_reference_logp(make, y0, point), rel=1e-12)
    # 1. A new array (pm.set_data copies it into the container).
    y1 = fresh()
    pm.set_data({"data": y1}, model=model)
    assert logp(point) == pytest.approx(_reference_logp(make, y1, point), rel=1e-12)
    # 2. The user's array modified in place, then set again.
    y1[:5] = fresh()[:5]
    pm.set_data({"data": y1}, model=model)
    assert logp(point) == pytest.approx(_reference_logp(make, y1, point), rel=1e-12)
    # 3. The container's own array modified in place (no set_data at all).
    held = model["data"].get_value(borrow=True)
    y2 = fresh()
    held[...] = y2
    assert logp(point) == pytest.approx(_reference_logp(make, y2, point), rel=1e-12)
    # 4. Back to the first data and a new partition.
    pm.set_data({"data": y0}, model=model)
    point["z"] = _labels(rng, k=6)
    assert logp(point) == pytest.approx(_reference_logp(make, y0, point), rel=1e-12)


def test_invalid_labels_and_data_give_minus_inf():
    """Labels outside [0, n) and non-binary data give -inf, as the graphs did."""
    z = pt.lvector("z")
    y = pt.dmatrix("y")
    rv = pmp.CollapsedBetaBernoulli.dist(z, 1.0, 1.0, n_dims=2)
    import pytensor

    f = pytensor.function([z, y], pm.logp(rv, y).sum(), mode=small_function_mode())
    good = np.zeros((4, 2))
    assert np.isfinite(f(np.array([0, 0, 1, 1]), good))
    assert f(np.array([0, 0, 1, 4]), good) == -np.inf
    assert f(np.array([0, -1, 1, 1]), good) == -np.inf
    bad = good.copy()
    bad[2, 1] = 0.5
    assert f(np.array([0, 0, 1, 1]), bad) == -np.inf
    assert np.isfinite(f(np.array([0, 0, 1, 1]), good))  # and back


def _op_inputs(rng):
    """(op, inputs) per statistics op: valid data, then data each op must flag."""
    labels = _labels(rng)
    y = rng.normal(size=(N, 3))
    binary = (rng.random((N, 3)) < 0.4).astype(float)
    counts = rng.poisson(2.0, size=(N, 3)).astype(float)
    matrices = rng.multinomial(4, [0.2, 0.3, 0.5], size=(N, 2)).astype(float)
    a = np.triu(rng.random((N, N)) < 0.3, 1)
    graph = (a | a.T).astype(float)
    not_binary, not_counts, bad_totals, asymmetric = (binary.copy(), counts.copy(),
                                                      matrices.sum(axis=2),
                                                      graph.copy())
    not_binary[3, 1] = 0.5
    not_counts[2, 0] = 1.5
    bad_totals[4, 1] += 1.0
    asymmetric[0, 5], asymmetric[5, 0] = 1.0, 0.0
    return [
        (statistics.normal_moments, [(labels, y)]),
        (statistics.binary_sums, [(labels, binary), (labels, not_binary)]),
        (statistics.count_sums, [(labels, counts), (labels, not_counts)]),
        (statistics.count_matrices, [(labels, matrices, matrices.sum(axis=2)),
                                     (labels, matrices, bad_totals)]),
        (statistics.mean_scatter, [(labels, y)]),
        (statistics.edge_counts, [(labels, graph), (labels, asymmetric)]),
    ]


def test_native_statistics_equal_perform():
    """Each op compiled by the numba backend equals its Python ``perform`` (the memo's
    computation), on valid data, on data the op must flag, and on labels outside
    [0, n); and it compiles without falling back to object mode."""
    rng = np.random.default_rng(5)
    for op, cases in _op_inputs(rng):
        out_of_range = cases[0][0].copy()
        out_of_range[7] = N + 2
        cases = cases + [(out_of_range,) + cases[0][1:]]
        symbols = [pt.lvector("labels")] + [
            pt.tensor(dtype="float64", shape=(None,) * np.ndim(x)) for x in cases[0][1:]]
        outputs = op(*symbols)
        python = pytensor.function(symbols, outputs, mode="FAST_COMPILE")
        with warnings.catch_warnings():
            warnings.filterwarnings("error", message=".*object mode.*")
            native = pytensor.function(symbols, outputs, mode="NUMBA")
        flags = []
        for inputs in cases:
            expected, got = python(*inputs), native(*inputs)
            assert len(expected) == len(got)
            flags.append(bool(got[0]))
            assert bool(got[0]) == bool(expected[0]), type(op).__name__
            for e, g in zip(expected[1:], got[1:]):
                np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)
        # valid data pass, flagged data and out-of-range labels fail
        assert flags == [True] + [False] * (len(cases) - 1), (type(op).__name__, flags)
