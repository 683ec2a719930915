"""Every numba predictive and block-move probability equals the difference of the
model's compiled PyTensor log density between the two partitions (DESIGN §6)."""

import zlib

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from helpers import REFERENCE_MODE, load_all_but, random_block_move

import pymc_partitions as pmp
from pymc_partitions.kernels import assign_labels, new_state, summarise, sweep_block
from pymc_partitions.kernels.components import beta_bernoulli, combine, log_pred, normal
from pymc_partitions.kernels.priors import crp

RTOL = 1e-8


def rel_err(a, b):
    return abs(a - b) / max(abs(b), 1e-300)


def likelihood_logp_fn(dist_cls, n_dims, hyper_values):
    """Compiled PyTensor logp of ``dist_cls`` as a function of (labels, data)."""
    z = pt.lvector("z")
    y = pt.dmatrix("y")
    rv = dist_cls.dist(z, *[pt.as_tensor(np.asarray(h, dtype=float)) for h in hyper_values],
                       n_dims=n_dims)
    return pytensor.function([z, y], pm.logp(rv, y).sum(), mode=REFERENCE_MODE)


CASES = {
    "normal_D1_scalar": (pmp.CollapsedNormal, 1, lambda r: (0.3, 1.7, 0.6)),
    "normal_D3_scalar": (pmp.CollapsedNormal, 3, lambda r: (-0.2, 0.9, 1.3)),
    "normal_D3_vector": (
        pmp.CollapsedNormal,
        3,
        lambda r: (r.normal(size=3), r.uniform(0.5, 2, 3), r.uniform(0.3, 1.5, 3)),
    ),
    "bb_D1_scalar": (pmp.CollapsedBetaBernoulli, 1, lambda r: (0.7, 1.9)),
    "bb_D4_scalar": (pmp.CollapsedBetaBernoulli, 4, lambda r: (1.0, 1.0)),
    "bb_D4_vector": (
        pmp.CollapsedBetaBernoulli,
        4,
        lambda r: (r.uniform(0.2, 3, 4), r.uniform(0.2, 3, 4)),
    ),
    # Without n the Beta-Bernoulli params carry no log tables: the computed path.
    "bb_D4_vector_untabulated": (
        pmp.CollapsedBetaBernoulli,
        4,
        lambda r: (r.uniform(0.2, 3, 4), r.uniform(0.2, 3, 4)),
    ),
}


def kernel_objects(dist_cls, x, hypers, n, tabulate=True):
    d = x.shape[1]
    if dist_cls is pmp.CollapsedNormal:
        params = normal.make_params(*[np.broadcast_to(h, (d,)) for h in hypers], n=n)
        return params, normal.alloc_stats(n, d, params), normal.make_data(x)
    params = beta_bernoulli.make_params(*[np.broadcast_to(h, (d,)) for h in hypers],
                                        n=n if tabulate else None)
    return params, beta_bernoulli.alloc_stats(n, d, params), beta_bernoulli.make_data(x)


def make_data(dist_cls, rng, n, d):
    if dist_cls is pmp.CollapsedNormal:
        return rng.normal(0, 2, size=(n, d))
    return (rng.random((n, d)) < 0.4).astype(float)


@pytest.mark.parametrize("case", sorted(CASES))
def test_log_pred_equals_logp_difference(case):
    dist_cls, d, make_hypers = CASES[case]
    rng = np.random.default_rng(zlib.crc32(case.encode()))
    n = 12
    for trial in range(4):
        x = make_data(dist_cls, rng, n, d)
        hypers = make_hypers(rng)
        f = likelihood_logp_fn(dist_cls, d, hypers)
        labels = pmp.canonicalize(rng.integers(0, 4, n))
        params, stats, data = kernel_objects(dist_cls, x, hypers, n,
                                             tabulate="untabulated" not in case)
        state = new_state(n)
        i = int(rng.integers(n))
        rest = np.delete(np.arange(n), i)
        # Load every item but i; i is then scored against each block and a new one.
        slot_labels = labels.copy()
        load_all_but(state, params, stats, data, slot_labels, skip=i)
        for k in list(np.unique(labels[rest])) + [None]:
            members = rest[labels[rest] == k] if k is not None else np.array([], dtype=int)
            slot = int(k) if k is not None else int(state.free[state.counts[1] - 1])
            kernel = log_pred(params, stats, data, i, slot)
            with_i = np.append(members, i)
            model = f(np.zeros(len(with_i), dtype=np.int64), x[with_i])
            without = f(np.zeros(len(members), dtype=np.int64), x[members]) if len(members) else 0.0
            assert rel_err(kernel, model - without) <= RTOL, (case, trial, k, kernel, model - without)
        # Full-data form: i in block k versus i alone, on all n rows.
        for k in np.unique(labels[rest]):
            joined = labels.copy()
            joined[i] = k
            alone = labels.copy()
            alone[i] = n - 1 if n - 1 not in labels[rest] else labels.max() + 1
            alone = pmp.canonicalize(alone)
            diff = f(pmp.canonicalize(joined), x) - f(alone, x)
            new_slot = int(state.free[state.counts[1] - 1])
            kernel = log_pred(params, stats, data, i, int(k)) - log_pred(params, stats, data, i, new_slot)
            assert rel_err(kernel, diff) <= RTOL or abs(kernel - diff) < 1e-12


def crp_model(n, alpha, x_normal, x_binary, hypers_n, hypers_b):
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=alpha, n=n)
        pmp.CollapsedNormal("y", z, *hypers_n, observed=x_normal)
        pmp.CollapsedBetaBernoulli("b", z, *hypers_b, observed=x_binary)
    return model


def joint_fn(model):
    fn = model.compile_logp(jacobian=False)
    return lambda labels: float(fn({"z": labels}))


def test_log_joint_equals_model_logp():
    rng = np.random.default_rng(7)
    n, alpha = 15, 1.7
    xn, xb = rng.normal(size=(n, 2)), (rng.random((n, 3)) < 0.5).astype(float)
    hn, hb = (0.1, 1.3, 0.8), (0.6, 1.4)
    model = crp_model(n, alpha, xn, xb, hn, hb)
    logp = joint_fn(model)
    pn, sn, dn = kernel_objects(pmp.CollapsedNormal, xn, hn, n)
    pb, sb, db = kernel_objects(pmp.CollapsedBetaBernoulli, xb, hb, n)
    params, stats, data = combine([pn, pb], [sn, sb], [dn, db])
    for _ in range(5):
        labels = pmp.canonicalize(rng.integers(0, 5, n))
        state = new_state(n)
        fresh = combine(
            [pn, pb],
            [normal.alloc_stats(n, 2, pn), beta_bernoulli.alloc_stats(n, 3, pb)],
            [dn, db],
        )
        params, stats, data = fresh
        assign_labels(state, params, stats, data, labels)
        canon = np.empty(n, dtype=np.int64)
        _, _, kernel = summarise(state, crp.make_params(alpha, n), params, stats, canon, np.empty(n, dtype=np.int64))
        assert np.array_equal(canon, labels)
        assert rel_err(kernel, logp(labels)) <= RTOL


def test_block_move_probabilities_equal_model_ratios():
    """sweep_{C,I} (Herlau et al. eqs. 5-6): the forced log probability of each
    candidate equals the softmax of the model's log joint over the candidates."""
    rng = np.random.default_rng(11)
    n, alpha = 10, 0.9
    xn, xb = rng.normal(size=(n, 1)), (rng.random((n, 2)) < 0.5).astype(float)
    hn, hb = (0.0, 1.0, 1.0), (1.0, 1.0)
    logp = joint_fn(crp_model(n, alpha, xn, xb, hn, hb))
    pn = normal.make_params(np.zeros(1), np.ones(1), np.ones(1), n=n)
    pb = beta_bernoulli.make_params(np.ones(2), np.ones(2), n=n)
    for trial in range(6):
        labels = pmp.canonicalize(rng.integers(0, 3, n))
        items, candidates, ref, ref_logp = random_block_move(rng, labels, logp)
        for forced in range(len(candidates)):
            params, stats, data = combine(
                [pn, pb],
                [normal.alloc_stats(n, 1, pn), beta_bernoulli.alloc_stats(n, 2, pb)],
                [normal.make_data(xn), beta_bernoulli.make_data(xb)],
            )
            state = new_state(n)
            assign_labels(state, params, stats, data, labels)
            chosen, log_p, slot = sweep_block.sweep_block_entry(
                state, crp.make_params(alpha, n), params, stats, data, items, candidates, forced, 0.5,
                np.empty(len(candidates)),
            )
            assert chosen == forced
            assert rel_err(log_p, ref_logp[forced]) <= RTOL or abs(log_p - ref_logp[forced]) < 1e-12
            # The state now holds z^(k): its log joint is the model's.
            canon = np.empty(n, dtype=np.int64)
            _, _, lj = summarise(state, crp.make_params(alpha, n), params, stats, canon, np.empty(n, dtype=np.int64))
            assert rel_err(lj, ref[forced]) <= RTOL
