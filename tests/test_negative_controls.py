"""Negative controls: the exactness harness must FAIL samplers with plausible, subtle
bugs, and a valid sampler that mixes too slowly to prove anything.

Each control is a sampler written here from the package's kernels with one defect
(nothing of it is in the package); the matching correct sampler through the same
code path passes, so the failure is the defect's and not the path's. Each test
asserts which check of :func:`helpers.judge` catches the defect.
"""

from functools import partial
from typing import NamedTuple

import numpy as np
import pymc as pm
from helpers import (
    KernelChain,
    assert_exact,
    binary_data,
    exact_posterior,
    gibbs_move,
    judge,
    kernel_draws,
    sample,
)
from numba import njit

import pymc_partitions as pmp
from pymc_partitions.kernels import arm, gibbs, split_merge
from pymc_partitions.kernels.components import normal, register
from pymc_partitions.kernels.random import counter_uniform


def caught_by(verdict, check):
    """The verdict failed, and ``check`` ("ESS", "TV" or "|z|") is among its failures."""
    assert not verdict.passed, verdict.row()
    assert any(f.startswith(check) for f in verdict.failures), verdict.row()


def bernoulli_model(alpha, n=6):
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=alpha, n=n)
        pmp.CollapsedBetaBernoulli("y", partition=z, a=0.5, b=0.8, observed=binary_data(n, 3, 6))
    return model


# ------------------------------------------------------------------ wrong target


def test_crp_concentration_off_by_a_quarter_is_caught():
    """Draws of an exact sampler for alpha = 1.25, judged against alpha = 1."""
    exact = exact_posterior(bernoulli_model(1.0))
    idata = sample(bernoulli_model(1.25), draws=2500, seed=6)
    caught_by(judge(exact, idata.posterior["z"].values), "|z|")


# ------------------------------------------------------------------ Gibbs: a wrong weight


class NoNewBlockNormaliser(NamedTuple):
    """The Normal component with the bug: a new block's predictive lacks its
    normaliser -1/2 log(2 pi v_0), so new blocks get sqrt(2 pi v_0) times their
    weight (1.25 with sigma = 0.3, tau = 0.4)."""

    inner: normal.NormalParams


@njit
def _bad_log_pred(params, stats, data, i, k):
    value = normal.log_pred(params.inner, stats, data, i, k)
    if stats.count[k] == 0:
        value -= params.inner.by_size_lognorm[0]
    return value


@njit
def _add(params, stats, data, i, k):
    normal.add(params.inner, stats, data, i, k)


@njit
def _remove(params, stats, data, i, k):
    normal.remove(params.inner, stats, data, i, k)


@njit
def _refresh(params, stats, k):
    normal.refresh(params.inner, stats, k)


@njit
def _log_marginal(params, stats, k):
    return normal.log_marginal(params.inner, stats, k)


register(NoNewBlockNormaliser, log_pred=_bad_log_pred, add=_add, remove=_remove,
         refresh=_refresh, log_marginal=_log_marginal)

# The sweep over this test's component is compiled without the on-disk cache: cached,
# numba would pickle the component's type into the index of the package's
# run_sweeps cache, which then fails to load (ModuleNotFoundError) in any process
# that cannot import this test module, and the test's code would be cached beside
# the kernels without being part of their fingerprint (kernels/_jit.py).
_uncached_run_sweeps = njit(_nrt=False)(gibbs.run_sweeps.py_func)


def small_scale_normal_model():
    n = 6
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=n)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=0.4, sigma=0.3,
                            observed=np.random.default_rng(2).normal(0.0, 0.4, n))
    return model


def test_gibbs_new_block_weight_without_normaliser_is_caught():
    model = small_scale_normal_model()
    exact = exact_posterior(model)
    # The same kernel path with the correct component passes ...
    assert judge(exact, kernel_draws(model, gibbs_move, 2500, seed=1)).passed
    # ... and with the wrong new-block weight fails.
    draws = kernel_draws(model, partial(gibbs_move, run_sweeps=_uncached_run_sweeps), 2500,
                         seed=1, wrap_params=NoNewBlockNormaliser)
    caught_by(judge(exact, draws), "|z|")
    # ... and the package's cached sweep never saw the test's component type.
    assert not any("NoNewBlockNormaliser" in str(sig) for sig in gibbs.run_sweeps.signatures)


# ------------------------------------------------------------------ split-merge: no q


N_SCANS = 3


def split_merge_move(drop_proposal_term):
    """One restricted-Gibbs split-merge update (the package's kernel). With
    ``drop_proposal_term`` the decision uses pi(z')/pi(z) without q: a split's
    ratio is then lower (log q <= 0), a merge's higher, so the kernel's own
    decision is kept except for splits it accepted and merges it rejected."""
    members, origin = None, None

    def move(rng, chain):
        nonlocal members, origin
        n = chain.n
        if members is None:
            members, origin = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
        for _ in range(2):
            before = chain.labels()
            i, j = rng.choice(n, 2, replace=False)
            key = int(rng.integers(2**62))
            outcome, log_q, log_ratio = split_merge.split_merge_entry(
                chain.state, chain.prior, chain.params, chain.stats, chain.data, i, j, key,
                N_SCANS, split_merge.RESTRICTED_GIBBS, members, origin,
            )
            if not drop_proposal_term:
                continue
            log_u = np.log(counter_uniform(key, (N_SCANS + 2) * n))
            if outcome == split_merge.SPLIT_ACCEPTED and not log_u < log_ratio + log_q:
                chain.reload(before)
            elif outcome == split_merge.MERGE_REJECTED and log_u < log_ratio - log_q:
                merged = before.copy()
                merged[merged == before[j]] = before[i]
                chain.reload(pmp.canonicalize(merged))

    return move


def test_split_merge_without_proposal_probability_is_caught():
    model = bernoulli_model(1.0)
    exact = exact_posterior(model)
    assert judge(exact, kernel_draws(model, split_merge_move(False), 2500, seed=3)).passed
    draws = kernel_draws(model, split_merge_move(True), 2500, seed=3)
    caught_by(judge(exact, draws), "|z|")


# ------------------------------------------------------------------ extended ARM: a short reverse

# Background partitions z^a, z^b of 5 items: every pair of these, with every ordered
# pair (i, j) they disagree on, is one background (the mixture does not depend on z).
ARM_POOL = np.array([pmp.canonicalize(np.array(p)) for p in
                     ([0, 0, 0, 1, 1], [0, 0, 0, 0, 0], [0, 0, 1, 1, 1], [0, 1, 0, 1, 0],
                      [0, 0, 1, 1, 2])])


def extended_arm_tables(model):
    """For each background b (z^a, z^b, i, j and a fixed item order), the kernel's
    forced log T_b(w|z) (``kernels.arm.proposal_entry``, variant ``EXTENDED``) and its
    outside-block part (``scr.log_t_outside``) between all partitions z, w of the
    model's 5 items, -inf where w is unreachable. Returns ``(partitions, log T,
    outside part)``, the tables (backgrounds, B, B)."""
    chain = KernelChain(model, seed=0)
    n = chain.n
    partitions = np.array([pmp.canonicalize(np.array(p)) for p in pmp.set_partitions(n)])
    rng = np.random.default_rng(0)
    backgrounds = []
    for a in range(len(ARM_POOL)):
        for b in range(a + 1, len(ARM_POOL)):
            za, zb = ARM_POOL[a], ARM_POOL[b]
            order = rng.permutation(n).astype(np.int64)
            backgrounds += [(za, zb, i, j, order) for i in range(n) for j in range(n)
                            if i != j and (za[i] == za[j]) != (zb[i] == zb[j])]
    scr, log_w = arm.new_scratch(n), np.empty(n + 1)
    m = len(partitions)
    log_t = np.full((len(backgrounds), m, m), -np.inf)
    outside = np.zeros((len(backgrounds), m, m))
    def forced(g, goal):
        """The forced construction toward ``goal`` from the chain's state, which becomes
        ``goal`` if it is reached (else stays)."""
        za, zb, i, j, order = backgrounds[g]
        status, lt = arm.proposal_entry(chain.state, chain.prior, chain.params, chain.stats,
                                        chain.data, i, j, za, zb, order, arm.EXTENDED, 0, True,
                                        goal, scr, log_w)
        return (lt, scr.log_t_outside[0]) if status == arm.BUILT else (-np.inf, 0.0)

    # T_b(w|z) = 0 makes both P(z, w) and P(w, z) zero: T_b(z|w) is needed only where
    # w is reachable from z, and the round trip brings the state back to z.
    for s, z in enumerate(partitions):
        chain.reload(z)
        for g in range(len(backgrounds)):
            for t in range(s + 1, m):
                log_t[g, s, t], outside[g, s, t] = forced(g, partitions[t])
                if log_t[g, s, t] > -np.inf:
                    log_t[g, t, s], outside[g, t, s] = forced(g, z)
                    if log_t[g, t, s] == -np.inf:
                        chain.reload(z)
    return partitions, log_t, outside


def mh_matrix(partitions, log_q, log_t, reverse_log_t):
    """The transition matrix of the uniform mixture over backgrounds of the MH kernels
    that propose w with T_b(w|z) and accept with min{1, q(w) T'_b(z|w) / (q(z) T_b(w|z))},
    T' the reverse the acceptance uses."""
    m = len(partitions)
    P = np.zeros((m, m))
    for g in range(log_t.shape[0]):
        with np.errstate(invalid="ignore"):
            ratio = log_q[None, :] - log_q[:, None] + reverse_log_t[g].T - log_t[g]
        accept = np.exp(np.minimum(0.0, np.nan_to_num(ratio, nan=-np.inf)))
        P += np.exp(log_t[g]) * accept * (1 - np.eye(m))
    P /= log_t.shape[0]
    P[np.diag_indices(m)] = 1.0 - P.sum(axis=1)
    return P


def test_extended_arm_without_the_outside_block_reverse_term_is_caught():
    """Extended ARM (``kernels.arm``, ``EXTENDED``) as a fixed mixture of MH kernels at
    n = 5, its transition matrix from the kernel's own forced T (which
    ``tests/test_arm.py`` checks against every path of a set-based transcription):
    the exact posterior is stationary, pi P = pi, when the acceptance uses the full
    reverse T(z|z*); it is not when the reverse lacks the log-probability of its
    outside-block moves (line 8a). The sampling harness does not see this defect at
    the sizes it enumerates: dropping the term flips 1-3 % of the decisions at n = 6
    (measured: |z| 2.2-4.7 against the bound 4.58 at 4 x 2500 draws, 5.9 at 4 x 10000
    on an IRM), so the control is the stationarity of the exact matrix."""
    model = bernoulli_model(1.0, n=5)
    exact = exact_posterior(model)
    partitions, log_t, outside = extended_arm_tables(model)
    index = {tuple(p): k for k, p in enumerate(exact.partitions)}
    pi = exact.p[[index[tuple(p)] for p in partitions]]
    log_q = np.log(pi)
    assert (outside < 0).sum() > 0  # the backgrounds do move blocks from outside S
    correct = mh_matrix(partitions, log_q, log_t, log_t)
    print("extended ARM, n = 5: max |(pi P)_z / pi_z - 1|, full reverse",
          np.abs(pi @ correct / pi - 1).max())
    assert np.abs(pi @ correct / pi - 1).max() < 1e-10
    dropped = mh_matrix(partitions, log_q, log_t, np.where(log_t > -np.inf, log_t - outside,
                                                           -np.inf))
    print("... without the reverse's outside-block term", np.abs(pi @ dropped / pi - 1).max())
    assert np.abs(pi @ dropped / pi - 1).max() > 0.01


# ------------------------------------------------------------------ samplers that do not move


def test_sampler_that_never_leaves_its_start_is_caught():
    model = bernoulli_model(1.0)
    exact = exact_posterior(model)
    draws = kernel_draws(model, lambda rng, chain: None, 2500)
    caught_by(judge(exact, draws), "ESS")


def test_valid_but_slow_sampler_fails_the_ess_floor():
    """A lazy Gibbs sampler (a sweep with probability 0.03, else stay) is exact, but
    4 x 2500 of its draws hold a few hundred effective ones: the floor refuses to
    call that evidence, where an ESS-scaled bound alone would just widen."""
    model = bernoulli_model(1.0)
    exact = exact_posterior(model)

    def lazy(rng, chain):
        if rng.random() < 0.03:
            gibbs_move(rng, chain)

    verdict = judge(exact, kernel_draws(model, lazy, 2500, seed=4))
    caught_by(verdict, "ESS")
    assert not any(f.startswith("|z|") for f in verdict.failures)  # not biased, just slow


def test_the_correct_sampler_passes_on_the_same_models():
    """The controls' models and run lengths give the correct pm.sample run a pass."""
    assert_exact(bernoulli_model(1.0), draws=2500, seed=6)
