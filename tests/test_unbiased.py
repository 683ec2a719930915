"""The unbiased estimator H_{l:m} from coupled chains and its aggregation
(pymc_partitions.unbiased; Jacob, O'Leary & Atchadé 2020, eq. 2; Nguyen et al. 2022).

- H_{l:m} of one pair equals a direct transcription of the formula (several tau, l, m;
  scalar and vector h).
- Unbiasedness with a known answer, independent of the partition kernels: a lag-1
  coupled pair on the 5 partitions of 3 items with a known transition matrix and a
  maximal coupling (faithful); from a start far from stationarity the mean of 10,000
  H_{1:3} (read through ``unbiased_estimate`` from a trace shaped as
  ``pmp.CoupledGibbs`` writes it) is within 3 s.e. of the exact E[h], while the plain
  average over sweeps 1..3 of the same chains is off by more than 5 s.e.
- Trimmed mean and its s.e. against scipy (the total-proportion convention of App.
  G.2), the interval, Kaplan–Meier survival against a hand computation with censoring,
  censored pairs reported and left out, the xarray view.
- The built-in h's against direct computations; the predictive density against
  ``pmp.posterior_predictive_density``.
- Errors (more in test_bad_input.py).
"""

import numpy as np
import pymc as pm
import pytest
import scipy.stats as st
import xarray as xr
from helpers import coupled_idata

import pymc_partitions as pmp
from pymc_partitions import versions
from pymc_partitions.analysis.block_parameters import log_predictive_of_partition
from pymc_partitions.distributions.collapsed import collapsed_normal
from pymc_partitions.distributions.partition import crp as crp_op
from pymc_partitions.unbiased import (
    CensoredPairsWarning,
    PairEstimate,
    PartitionFunction,
    aggregate,
    pair_estimate,
)
from pymc_partitions.unbiased.functions import _normal_density

PARTITIONS3 = pmp.set_partitions(3)  # 5 partitions of 3 items, canonical


def direct_h_lm(hx, hy, tau, l, m):
    """Jacob et al. (2020) eq. 2, transcribed term by term."""
    total = sum(hx[t] for t in range(l, m + 1)) / (m - l + 1)
    for t in range(l + 1, tau):
        total = total + min(1.0, (t - l) / (m - l + 1)) * (hx[t] - hy[t - 1])
    return total


def faithful_arrays(rng, last, tau, shape=()):
    """Random h values of X (sweeps 0..last) and Y (0..last-1) with h(X_t) = h(Y_(t-1))
    for t >= tau."""
    hx = rng.normal(size=(last + 1,) + shape)
    hy = rng.normal(size=(last,) + shape)
    for t in range(tau, last + 1):
        hy[t - 1] = hx[t]
    return hx, hy


# ---------------------------------------------------------------------- H_{l:m} of one pair
@pytest.mark.parametrize("shape", [(), (3,), (2, 2)])
def test_pair_estimate_is_the_formula(shape):
    rng = np.random.default_rng(1)
    last = 30
    for l, m in [(0, 0), (1, 3), (2, 10), (5, 5), (4, 20), (1, 30)]:
        for tau in [1, 2, l + 1, l + 2, m, m + 1, m + 5, last + 1]:
            if tau < 1 or tau - 1 > last:
                continue
            hx, hy = faithful_arrays(rng, last, tau, shape)
            got = pair_estimate(hx, hy, tau, l, m)
            assert not got.censored and got.meeting_time == tau and got.last_sweep == last
            np.testing.assert_allclose(got.value, direct_h_lm(hx, hy, tau, l, m), rtol=1e-12)
            assert got.value.shape == shape
            # Entries outside what H needs are not read.
            hx2, hy2 = hx.copy(), hy.copy()
            hx2[:l] = np.nan
            hx2[max(m, tau - 1) + 1:] = np.nan
            hy2[:l] = np.nan
            hy2[max(tau - 1, l):] = np.nan
            np.testing.assert_allclose(pair_estimate(hx2, hy2, tau, l, m).value, got.value,
                                       rtol=1e-12)


def test_pair_estimate_before_meeting_is_the_plain_average_plus_correction():
    # tau <= l + 1: no correction, the plain average of h(X_l..X_m).
    rng = np.random.default_rng(2)
    hx, hy = faithful_arrays(rng, 12, 3)
    assert pair_estimate(hx, hy, 3, 2, 7).value == pytest.approx(hx[2:8].mean(), rel=1e-14)
    # Weights are capped at 1 for t > m: a late meeting adds full differences.
    hx, hy = faithful_arrays(rng, 12, 11)
    expected = hx[1:4].mean() + sum(min(1, (t - 1) / 3) * (hx[t] - hy[t - 1])
                                    for t in range(2, 11))
    assert pair_estimate(hx, hy, 11, 1, 3).value == pytest.approx(expected, rel=1e-12)


def test_pair_not_met_is_censored_not_estimated():
    rng = np.random.default_rng(3)
    hx, hy = rng.normal(size=(11, 2)), rng.normal(size=(10, 2))
    for tau in (None, -1):
        got = pair_estimate(hx, hy, tau, 1, 5)
        assert got.censored and got.meeting_time == -1 and got.last_sweep == 10
        assert got.value.shape == (2,) and np.all(np.isnan(got.value))


@pytest.mark.parametrize("kwargs, match", [
    ({"m": 12}, "'m' = 12 needs X up to sweep m"),
    ({"meeting_time": 13}, "'meeting_time' = 13 needs X up to sweep tau - 1"),
    ({"meeting_time": 0}, "'meeting_time' must be >= 1"),
    ({"meeting_time": 2.0}, "'meeting_time' must hold integers"),
    ({"burn_in": -1}, "'burn_in'"),
    ({"burn_in": 4, "m": 3}, "'m' = 3 must be >= 'burn_in' = 4"),
    ({"hy": np.zeros((10, 3))}, "'hy' must hold h values of the shape"),
    ({"hy": np.zeros(3)}, "'hy' needs|'meeting_time' = 5 needs Y"),
    ({"hx": "abc"}, "'hx' must be an array of h values"),
])
def test_pair_estimate_errors(kwargs, match):
    rng = np.random.default_rng(4)
    hx, hy = faithful_arrays(rng, 10, 5)
    args = {"hx": hx, "hy": hy, "meeting_time": 5, "burn_in": 1, "m": 4, **kwargs}
    with pytest.raises((ValueError, TypeError), match=match):
        pair_estimate(**args)


def test_pair_estimate_refuses_unfaithful_or_misaligned_values():
    rng = np.random.default_rng(5)
    hx, hy = faithful_arrays(rng, 10, 5)
    with pytest.raises(ValueError, match=r"h\(X_5\) != h\(Y_4\)"):
        pair_estimate(hx, np.roll(hy, 1), 5, 1, 4)       # hy one sweep off
    hx[3] = np.nan
    with pytest.raises(ValueError, match="'hx' is not finite at sweep 3"):
        pair_estimate(hx, hy, 5, 1, 4)


# ---------------------------------------------------------------------- unbiasedness, exactly
def finite_coupled_chains(P, start, pairs, min_sweeps, rng, max_sweeps=400):
    """Lag-1 coupled chains on states 0..S-1 with transition matrix P: X_0 = Y_0 =
    start, X_1 ~ P(X_0), then (X_t, Y_(t-1)) from the maximal coupling of P(X_(t-1))
    and P(Y_(t-2)) (the common part with its probability, else independent draws
    from the residuals): faithful, since equal states have equal rows.
    Returns X (pairs, T+1), Y (pairs, T), tau (pairs,), run to T = max(min_sweeps,
    max tau)."""
    cum = np.cumsum(P, axis=1)

    def draw(weights, u):
        c = np.cumsum(weights, axis=1)
        return np.minimum((u[:, None] * c[:, -1:] > c).sum(axis=1), P.shape[0] - 1)

    x = [np.full(pairs, start), None]
    y = [np.full(pairs, start)]
    x[1] = np.minimum((rng.random(pairs)[:, None] > cum[x[0]]).sum(axis=1), P.shape[0] - 1)
    tau = np.where(x[1] == y[0], 1, -1)
    t = 1
    while (t < min_sweeps or np.any(tau < 0)) and t < max_sweeps:
        t += 1
        p, q = P[x[-1]], P[y[-1]]
        common = np.minimum(p, q)
        w = common.sum(axis=1)
        coupled = (rng.random(pairs) < w) | (x[-1] == y[-1])
        both = draw(common, rng.random(pairs))
        xt = np.where(coupled, both, draw(p - common, rng.random(pairs)))
        yt = np.where(coupled, both, draw(q - common, rng.random(pairs)))
        x.append(xt)
        y.append(yt)
        tau = np.where((tau < 0) & (xt == yt), t, tau)
    return np.stack(x, axis=1), np.stack(y, axis=1), tau


def test_unbiased_on_a_finite_coupled_chain_with_known_answer():
    """Known E_pi[h] on the 5 partitions of 3 items; start at the one-block partition
    (pi's least likely state); l = 1, m = 3; 10,000 pairs."""
    rng = np.random.default_rng(20240612)
    n_states, eps = 5, 0.45
    Q = rng.dirichlet(np.ones(n_states), size=n_states)
    Q[:, 0] *= 0.2                                       # the one-block partition is rare
    Q /= Q.sum(axis=1, keepdims=True)
    P = (1 - eps) * np.eye(n_states) + eps * Q           # sticky: slow to forget the start
    evals, evecs = np.linalg.eig(P.T)
    pi = np.real(evecs[:, np.argmin(np.abs(evals - 1))])
    pi /= pi.sum()
    l, m, pairs = 1, 3, 10_000
    X, Y, tau = finite_coupled_chains(P, 0, pairs, m, rng)
    assert np.all(tau >= 1)                              # every pair met (no censoring)
    idata = coupled_idata(PARTITIONS3[X[:, 1:]], PARTITIONS3[Y], tau)

    def lcp_and_cc(labels):                              # a plain vector-valued user h
        return [np.bincount(labels).max() / labels.size, float(labels[0] == labels[1])]

    table = np.array([lcp_and_cc(p) for p in PARTITIONS3])
    exact = pi @ table
    est = pmp.unbiased_estimate(idata, "z", lcp_and_cc, burn_in=l, m=m)
    assert est.n_pairs == pairs and est.n_censored == 0 and est.estimates.shape == (pairs, 2)
    z_unbiased = (est.mean - exact) / est.std_error
    assert np.all(np.abs(z_unbiased) < 3), (est.mean, exact, est.std_error)
    # The same answers through the built-ins (vectorised path) ...
    for h, k in [(pmp.unbiased.lcp, 0), (pmp.unbiased.co_clustering(0, 1), 1)]:
        one = pmp.unbiased_estimate(idata, "z", h, burn_in=l, m=m)
        np.testing.assert_allclose(one.estimates, est.estimates[:, k], rtol=1e-12, atol=1e-12)
    # ... and directly from the arrays.
    for j in range(5):
        hx, hy = table[X[j]], table[Y[j]]
        direct = direct_h_lm(hx, hy, tau[j], l, m)
        np.testing.assert_allclose(est.estimates[j], direct, rtol=1e-12)
    # Power: the plain average over sweeps l..m of the same chains is biased.
    plain = table[X[:, l:m + 1]].mean(axis=1)
    plain_se = plain.std(axis=0, ddof=1) / np.sqrt(pairs)
    assert np.all(np.abs(plain.mean(axis=0) - exact) > 5 * plain_se)
    # (and the simulation itself is right: the plain average matches its exact mean)
    start = np.eye(n_states)[0]
    exact_plain = np.mean([start @ np.linalg.matrix_power(P, t) for t in range(l, m + 1)],
                          axis=0) @ table
    assert np.all(np.abs(plain.mean(axis=0) - exact_plain) < 3 * plain_se)
    assert est.meeting_times.min() >= 1 and np.array_equal(est.meeting_times, tau)


# ---------------------------------------------------------------------- aggregation
def met_pairs(values, meeting=5, last=20):
    return [PairEstimate(np.asarray(v, dtype=float), meeting, last, False) for v in values]


@pytest.mark.parametrize("j", [10, 199, 1000, 1001])
@pytest.mark.parametrize("trim", [0.0, 0.01, 0.1, 0.3])
def test_trimmed_mean_and_its_se_match_scipy(j, trim):
    rng = np.random.default_rng(j)
    values = rng.standard_t(2, size=(j, 3))              # heavy tails; vector h
    est = aggregate(met_pairs(values), 1, 4, trim=trim)
    np.testing.assert_allclose(est.trimmed_mean, st.trim_mean(values, trim / 2, axis=0),
                               rtol=1e-12)
    if trim:
        expected_se = [st.mstats.trimmed_stde(values[:, k], limits=(trim / 2, trim / 2))
                       for k in range(3)]
    else:  # (scipy's trimmed_stde fails with limits 0: nothing trimmed, the plain s.e.)
        expected_se = values.std(axis=0, ddof=1) / np.sqrt(j)
    np.testing.assert_allclose(est.trimmed_std_error, expected_se, rtol=1e-10)
    np.testing.assert_allclose(est.mean, values.mean(axis=0), rtol=1e-12)
    se = values.std(axis=0, ddof=1) / np.sqrt(j)
    np.testing.assert_allclose(est.std_error, se, rtol=1e-12)
    np.testing.assert_allclose(est.ci_upper - est.mean, 1.959963984540054 * se, rtol=1e-9)


def test_trim_is_the_total_proportion_half_at_each_end():
    """App. G.2: 1 % trimmed = the most extreme 0.5 % at either end: with 1000
    estimates, 5 at each end."""
    values = np.concatenate([np.full(5, -1e6), np.zeros(989), [1.0], np.full(5, 1e6)])
    est = aggregate(met_pairs(values), 1, 4, trim=0.01)
    assert est.trimmed_mean == pytest.approx(1.0 / 990, rel=1e-12)
    values[-6] = 1e6                                     # a 6th outlier stays in
    assert aggregate(met_pairs(values), 1, 4, trim=0.01).trimmed_mean > 1e3
    assert aggregate(met_pairs(values), 1, 4, trim=0.0).trimmed_mean == pytest.approx(
        values.mean())


def test_survival_is_kaplan_meier_with_censoring():
    met = [2, 3, 3, 5, 8]
    censored_at = [3, 4, 10]                             # tau > 3, > 4, > 10
    pairs = met_pairs(np.zeros(5))
    pairs = [p._replace(meeting_time=t, last_sweep=12) for p, t in zip(pairs, met)]
    pairs += [PairEstimate.censored_at(t) for t in censored_at]
    with pytest.warns(CensoredPairsWarning, match="3 of 8 coupled pairs"):
        est = aggregate(pairs, 1, 2)
    sf = est.survival().sf
    # By hand: 8 at risk; t=2: 1 of 8 meets; t=3: 2 of 7 (the pair censored at 3 is at
    # risk at 3); t=5: 1 of 3; t=8: 1 of 2.
    s2, s3 = 7 / 8, 7 / 8 * 5 / 7
    s5, s8 = s3 * 2 / 3, s3 * 2 / 3 * 1 / 2
    expected = [1, 1, s2, s3, s3, s5, s5, s5, s8, s8, s8, s8]
    np.testing.assert_allclose(sf.evaluate(np.arange(12)), expected, rtol=1e-12)
    # A pair stopped after meeting but before m: no estimate, but its tau is observed.
    stopped = pairs[1:] + [PairEstimate.censored_at(2, meeting_time=2)]
    with pytest.warns(CensoredPairsWarning, match="4 of 8"):
        again = aggregate(stopped, 1, 2)
    np.testing.assert_allclose(again.survival().sf.evaluate(np.arange(12)), expected,
                               rtol=1e-12)
    assert again.n_estimates == 4


def test_censored_pairs_are_reported_and_left_out():
    values = np.array([0.2, 0.4, 0.9])
    pairs = met_pairs(values) + [PairEstimate.censored_at(20), PairEstimate.censored_at(20)]
    with pytest.warns(CensoredPairsWarning, match="2 of 5 coupled pairs had not met"):
        est = aggregate(pairs, 1, 4, name="lcp", pair_ids=[10, 11, 12, 13, 14])
    assert est.n_pairs == 5 and est.n_censored == 2 and est.n_estimates == 3
    assert est.mean == pytest.approx(values.mean())
    assert est.std_error == pytest.approx(values.std(ddof=1) / np.sqrt(3))
    np.testing.assert_array_equal(est.censored, [False] * 3 + [True] * 2)
    np.testing.assert_array_equal(est.meeting_times, [5, 5, 5, -1, -1])
    assert np.all(np.isnan(est.estimates[3:]))
    text = repr(est)
    assert "5 coupled pairs (2 censored)" in text and "left out" in text
    assert "median 5, 90% > 20" in text                 # Kaplan-Meier, censoring included
    ds = est.to_dataset()
    assert isinstance(ds, xr.Dataset)
    assert ds["estimate"].dims == ("pair",) and list(ds["pair"].values) == [10, 11, 12, 13, 14]
    assert ds["censored"].values.tolist() == [False] * 3 + [True] * 2
    assert float(ds["mean"]) == pytest.approx(values.mean())
    assert ds.attrs["n_censored"] == 2 and ds.attrs["h"] == "lcp"
    # All censored: no estimate (NaN), still reported.
    with pytest.warns(CensoredPairsWarning):
        none = aggregate([PairEstimate.censored_at(20)] * 3, 1, 4)
    assert np.isnan(none.mean) and none.n_censored == 3 and "censored" in repr(none)


# ---------------------------------------------------------------------- from a trace
def small_trace(rng, chains=4, draws=12, n=5, meeting=(3, 1, 9, -1), first_sweep=1):
    """Random label paths with X_t = Y_(t-1) from each pair's meeting sweep on (draw d
    holds sweep first_sweep + d)."""
    x = rng.integers(0, 3, size=(chains, draws, n))
    y = rng.integers(0, 3, size=(chains, draws, n))
    x, y = pmp.canonicalize(x), pmp.canonicalize(y)
    for c, tau in enumerate(meeting):
        if tau >= 1:
            d = max(tau - first_sweep, 0)
            y[c, d:] = x[c, d:]
    return x, y, np.asarray(meeting)


def test_estimate_from_a_trace_equals_the_array_level_estimate():
    rng = np.random.default_rng(6)
    x, y, tau = small_trace(rng)
    idata = coupled_idata(x, y, tau)
    with pytest.warns(CensoredPairsWarning, match="1 of 4"):
        est = pmp.unbiased_estimate(idata, "z", pmp.unbiased.n_blocks, burn_in=2, m=6)
    for c in range(3):
        hx = np.r_[np.nan, [len(set(r)) for r in x[c]]]      # sweep 0 is not stored
        hy = np.array([len(set(r)) for r in y[c]])           # Y_t stored at sweep t+1
        np.testing.assert_allclose(est.estimates[c], direct_h_lm(hx, hy, tau[c], 2, 6),
                                   rtol=1e-12)
    assert est.censored.tolist() == [False, False, False, True]
    assert est.last_sweeps.tolist() == [12] * 4
    # Kept tuning draws (warm-up groups) are read in front: same answer.
    with pytest.warns(CensoredPairsWarning):
        warm = pmp.unbiased_estimate(coupled_idata(x, y, tau, warmup=4), "z",
                                     pmp.unbiased.n_blocks, burn_in=2, m=6)
    np.testing.assert_array_equal(warm.estimates, est.estimates)


def test_trace_that_lacks_needed_sweeps_or_stats_is_refused():
    rng = np.random.default_rng(7)
    x, y, tau = small_trace(rng, meeting=(13, 11, 19, 2), first_sweep=11)
    late = coupled_idata(x, y, tau, first_sweep=11)     # PyMC dropped tune=10 draws
    with pytest.raises(ValueError, match=r"'burn_in' = 2 .* start at sweep 11 .*tune=0"):
        pmp.unbiased_estimate(late, "z", pmp.unbiased.lcp, burn_in=2, m=6)
    est = pmp.unbiased_estimate(late, "z", pmp.unbiased.lcp, burn_in=11, m=15)
    assert est.n_censored == 0
    x, y, tau = small_trace(rng, meeting=(3, 1, 9, 2))
    with pytest.raises(ValueError, match=r"'m' = 13 needs every pair up to sweep m"):
        pmp.unbiased_estimate(coupled_idata(x, y, tau), "z", pmp.unbiased.lcp, 2, 13)
    plain = coupled_idata(x, y, tau, drop=("meeting_sweep",))
    with pytest.raises(ValueError, match=r"'idata' has no sample_stats \['meeting_sweep'\].*"
                                         r"CoupledGibbs"):
        pmp.unbiased_estimate(plain, "z", pmp.unbiased.lcp, 2, 6)


def test_inconsistent_trace_is_refused():
    rng = np.random.default_rng(8)
    x, y, tau = small_trace(rng, meeting=(3, 1, 9, 2))
    bad = y.copy()
    bad[0, 5] = (bad[0, 5] + 1) % 2                    # X_6 != Y_5 after meeting at 3
    with pytest.raises(ValueError, match="not faithful"):
        pmp.unbiased_estimate(coupled_idata(x, bad, tau), "z", pmp.unbiased.lcp, 2, 6)
    meet = np.where(np.arange(1, 13) >= tau[:, None], tau[:, None], -1)
    meet[1, 4] = -1                                    # met at 1, "not met" at sweep 5
    idata = coupled_idata(x, y, tau, extra_stats={"meeting_sweep": meet})
    with pytest.raises(ValueError, match="'meeting_sweep'.* inconsistent"):
        pmp.unbiased_estimate(idata, "z", pmp.unbiased.lcp, 2, 6)


def test_h_errors_name_h():
    rng = np.random.default_rng(9)
    x, y, tau = small_trace(rng, meeting=(3, 1, 9, 2))
    idata = coupled_idata(x, y, tau)
    with pytest.raises(ValueError, match="'h' must return the same shape"):
        pmp.unbiased_estimate(idata, "z", lambda z: np.zeros(z.max() + 1), 2, 6)
    with pytest.raises(TypeError, match="'h' must return numbers"):
        pmp.unbiased_estimate(idata, "z", lambda z: "many", 2, 6)
    with pytest.raises(ValueError, match="'h' returned a non-finite"):
        pmp.unbiased_estimate(idata, "z", lambda z: np.nan, 2, 6)

    def broken(z):
        raise ZeroDivisionError("boom")

    with pytest.raises(ZeroDivisionError, match="boom") as info:
        pmp.unbiased_estimate(idata, "z", broken, 2, 6)
    assert any("'broken'" in note for note in info.value.__notes__)


# ---------------------------------------------------------------------- built-in h's
def test_builtin_functions_of_a_partition():
    rng = np.random.default_rng(10)
    labels = pmp.canonicalize(rng.integers(0, 4, size=(200, 9)))
    sizes = [np.bincount(r) for r in labels]
    np.testing.assert_array_equal(pmp.unbiased.lcp.evaluate(labels),
                                  [s.max() / 9 for s in sizes])
    np.testing.assert_array_equal(pmp.unbiased.n_blocks.evaluate(labels),
                                  [np.count_nonzero(s) for s in sizes])
    cc = pmp.unbiased.co_clustering(2, 7)
    np.testing.assert_array_equal(cc.evaluate(labels), labels[:, 2] == labels[:, 7])
    assert pmp.unbiased.lcp(labels[0]) == sizes[0].max() / 9       # one partition
    assert cc(np.array([0, 1, 0, 1, 0, 1, 0, 0, 0])) == 1.0
    with pytest.raises(ValueError, match="'b' = 7 is not an item"):
        cc.evaluate(labels[:, :5])
    with pytest.raises(ValueError, match="canonical partition labels"):
        pmp.unbiased.lcp([0, 5, 5])
    # A user's function wrapped with a vectorised form gives the same values.
    wrapped = PartitionFunction(lambda z: z.max(), batch=lambda zz: zz.max(axis=1))
    np.testing.assert_array_equal(wrapped.evaluate(labels),
                                  pmp.unbiased.evaluate(lambda z: z.max(), labels))


def gaussian_model(data, alpha=0.7, mu0=(0.5, -1.0), tau=(2.0, 1.5), sigma=(0.8, 1.1)):
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=alpha, n=data.shape[0], summaries=False)
        pmp.CollapsedNormal("y", partition=z, mu0=np.array(mu0), tau=np.array(tau),
                            sigma=np.array(sigma), observed=data)
    return model


def test_predictive_density_matches_the_generic_predictive():
    rng = np.random.default_rng(11)
    data = rng.normal(size=(8, 2)) * 2
    model = gaussian_model(data)
    x_new = rng.normal(size=(6, 2)) * 2
    h = pmp.unbiased.predictive_density(model, x_new)
    labels = pmp.canonicalize(rng.integers(0, 4, size=(50, 8)))
    got = h.evaluate(labels)
    hypers = [np.array([0.5, -1.0]), np.array([2.0, 1.5]), np.array([0.8, 1.1])]
    expected = [np.exp(log_predictive_of_partition(collapsed_normal, crp_op, row, data,
                                                   x_new, [0.7], hypers)) for row in labels]
    np.testing.assert_allclose(got, expected, rtol=1e-10)
    # Chunked evaluation gives the same values.
    np.testing.assert_allclose(_normal_density(labels, data, x_new, *hypers, 0.7, chunk=7),
                               got, rtol=1e-12)


def test_predictive_density_on_a_grid_is_a_density_and_is_in_the_dataset():
    rng = np.random.default_rng(12)
    data = rng.normal(size=(10, 1)) * 3
    model = gaussian_model(data, mu0=0.0, tau=3.0, sigma=2.0)
    grid = np.linspace(-40, 40, 4001)
    h = pmp.unbiased.predictive_density(model, grid)
    labels = pmp.canonicalize(rng.integers(0, 3, size=(4, 10)))
    dens = h.evaluate(labels)
    np.testing.assert_allclose(np.trapezoid(dens, grid, axis=1), 1.0, rtol=1e-6)
    x = labels[None].repeat(8, axis=1)                   # 1 chain, 8 draws, met at 1
    est = pmp.unbiased_estimate(coupled_idata(x[:, :8], x[:, :8], [1]), "z", h, 1, 3)
    ds = est.to_dataset()
    assert ds["estimate"].dims == ("pair", "x_new")
    np.testing.assert_array_equal(ds["x_new"].values, grid)


def test_predictive_density_refuses_a_target_that_is_not_fixed():
    data = np.random.default_rng(13).normal(size=(6, 2))
    with pm.Model() as model:
        s = pm.HalfNormal("s", 1.0)
        z = pmp.CRP("z", alpha=1.0, n=6, summaries=False)
        pmp.CollapsedNormal("y", partition=z, sigma=s, observed=data)
    with pytest.raises(ValueError, match=r"depend\(s\) on the free variable\(s\) \['s'\]"):
        pmp.unbiased.predictive_density(model, data[:2])
    with pm.Model() as model:
        z = pmp.PitmanYor("z", alpha=1.0, d=0.2, n=6, summaries=False)
        pmp.CollapsedNormal("y", partition=z, observed=data)
    with pytest.raises(NotImplementedError, match="predictive_log_weights"):
        pmp.unbiased.predictive_density(model, data[:2])


# ---------------------------------------------------------------------- with pmp.CoupledGibbs
@pytest.mark.skipif(not hasattr(pmp, "CoupledGibbs"),
                    reason="pmp.CoupledGibbs is not on this branch yet (issue 12, the lead's step)")
def test_estimate_from_coupled_gibbs_sampling():
    """End to end: pm.sample with pmp.CoupledGibbs (one pair per chain), then
    unbiased_estimate; per-pair values equal H_{l:m} recomputed from the trace by the
    formula; tuning draws dropped are refused naming burn_in; kept ones are read."""
    rng = np.random.default_rng(14)
    data = np.concatenate([rng.normal(-2.5, 1, (3, 2)), rng.normal(2.5, 1, (3, 2))])
    with pm.Model():
        z = pmp.CRP("z", alpha=0.5, n=6)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=2.0, sigma=1.0, observed=data)
        kwargs = {"chains": 4, "cores": 1, "random_seed": 5, "progressbar": False,
                  "compute_convergence_checks": False}
        idata = pm.sample(tune=0, draws=25, step=[pmp.CoupledGibbs([z])], **kwargs)
        tuned = pm.sample(tune=5, draws=20, step=[pmp.CoupledGibbs([z])], **kwargs)
        kept = pm.sample(tune=5, draws=20, step=[pmp.CoupledGibbs([z])],
                         discard_tuned_samples=False, **kwargs)
    h = pmp.unbiased.co_clustering(0, 1)
    est = pmp.unbiased_estimate(idata, "z", h, burn_in=2, m=6)
    assert est.n_pairs == 4 and est.n_censored == 0
    x = versions.group_dataset(idata, "posterior")["z"].values
    stats = versions.group_dataset(idata, "sample_stats")
    y = stats["coupled_labels"].values
    for c in range(4):
        tau = int(stats["meeting_sweep"].values[c, -1])
        hx = np.r_[np.nan, (x[c, :, 0] == x[c, :, 1]).astype(float)]   # sweep 0: not stored
        hy = (y[c, :, 0] == y[c, :, 1]).astype(float)                   # Y_t at sweep t + 1
        assert est.meeting_times[c] == tau
        assert est.estimates[c] == pytest.approx(direct_h_lm(hx, hy, tau, 2, 6), abs=1e-12)
    with pytest.raises(ValueError, match=r"'burn_in' = 2 .*start at sweep 6.*tune=0"):
        pmp.unbiased_estimate(tuned, "z", h, burn_in=2, m=6)
    both = pmp.unbiased_estimate(kept, "z", h, burn_in=2, m=6)
    assert both.n_pairs == 4 and np.all(both.last_sweeps == 25)
