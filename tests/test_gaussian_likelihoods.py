"""CollapsedMvNormal and CollapsedNIW: kernel equals model, exact enumeration with
pmp.Gibbs, forced block moves, conjugate block posteriors, forward draws and input
errors (DESIGN §6)."""

import zlib

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from helpers import (
    exact_log_posterior,
    fixed_hyper_log_posterior,
    integrate_log_scale,
    sample,
    terms_over_partitions,
    tv_test,
)

import pymc_partitions as pmp
from pymc_partitions.kernels import assign_labels, new_state, refresh_all, summarise, sweep_block
from pymc_partitions.kernels.components import add, combine, log_pred, mv_normal, niw
from pymc_partitions.kernels.priors import crp
from pymc_partitions.kernels.state import open_slot

RTOL = 1e-8


def rel_err(a, b):
    return abs(a - b) / max(abs(b), 1e-300)


def spd(rng, d, scale=1.0):
    a = rng.normal(size=(d, d))
    return scale * (a @ a.T / d + 0.5 * np.eye(d))


def mvn_hypers(rng, d):
    return (rng.normal(size=d), spd(rng, d, 2.0), spd(rng, d, 0.7))


def niw_hypers(rng, d):
    return (rng.normal(size=d), float(rng.uniform(0.3, 2.0)), float(d - 1 + rng.uniform(0.5, 3.0)),
            spd(rng, d, 1.5))


LIKELIHOODS = {
    "mvn": (pmp.CollapsedMvNormal, mv_normal, mvn_hypers),
    "niw": (pmp.CollapsedNIW, niw, niw_hypers),
}


def likelihood_logp_fn(dist_cls, n_dims, hypers):
    """Compiled PyTensor logp of ``dist_cls`` as a function of (labels, data)."""
    z = pt.lvector("z")
    y = pt.dmatrix("y")
    rv = dist_cls.dist(z, *[pt.as_tensor(np.asarray(h, dtype=float)) for h in hypers], n_dims=n_dims)
    return pytensor.function([z, y], pm.logp(rv, y).sum())


def kernel_objects(module, x, hypers, n):
    params = module.make_params(*hypers, n=n)
    data = module.make_data(x)
    return params, module.alloc_stats(n, data, params), data


def load_all_but(state, params, stats, data, labels, skip):
    """Load ``labels`` for every item except ``skip`` (left unassigned)."""
    for j in range(labels.shape[0]):
        if j == skip:
            continue
        k = int(labels[j])
        if state.sizes[k] == 0:
            open_slot(state, k)
        add(params, stats, data, j, k)
        state.sizes[k] += 1
        state.labels[j] = k


def check_log_preds(f, params, stats, data, state, x, labels, i):
    n = labels.shape[0]
    rest = np.delete(np.arange(n), i)
    new_slot = int(state.free[state.counts[1] - 1])
    for k in list(np.unique(labels[rest])) + [None]:
        members = rest[labels[rest] == k] if k is not None else np.array([], dtype=int)
        slot = int(k) if k is not None else new_slot
        kernel = log_pred(params, stats, data, i, slot)
        with_i = np.append(members, i)
        model = f(np.zeros(len(with_i), dtype=np.int64), x[with_i])
        without = f(np.zeros(len(members), dtype=np.int64), x[members]) if len(members) else 0.0
        assert rel_err(kernel, model - without) <= RTOL, (k, kernel, model - without)
    # Full-data form: i in block k versus i alone, on all n rows.
    for k in np.unique(labels[rest]):
        joined, alone = labels.copy(), labels.copy()
        joined[i] = k
        alone[i] = labels.max() + 1
        diff = f(pmp.canonicalize(joined), x) - f(pmp.canonicalize(alone), x)
        kernel = log_pred(params, stats, data, i, int(k)) - log_pred(params, stats, data, i, new_slot)
        assert rel_err(kernel, diff) <= RTOL or abs(kernel - diff) < 1e-12


@pytest.mark.parametrize("d", [1, 3])
@pytest.mark.parametrize("lik", sorted(LIKELIHOODS))
def test_log_pred_equals_logp_difference(lik, d):
    """Every log_pred equals the model's logp difference, before and after a change
    of hyperparameters (the refresh path the step takes); the log joint too."""
    dist_cls, module, make_hypers = LIKELIHOODS[lik]
    rng = np.random.default_rng(zlib.crc32(f"{lik}{d}".encode()))
    n = 12
    for trial in range(3):
        x = rng.normal(0.5, 2.0, size=(n, d))
        hypers = make_hypers(rng, d)
        labels = pmp.canonicalize(rng.integers(0, 4, n))
        i = int(rng.integers(n))
        params, stats, data = kernel_objects(module, x, hypers, n)
        state = new_state(n)
        load_all_but(state, params, stats, data, labels, skip=i)
        check_log_preds(likelihood_logp_fn(dist_cls, d, hypers), params, stats, data, state, x,
                        labels, i)
        # New hyperparameters: params rebuilt, every active slot and the top free
        # slot refreshed (PartitionTarget.kernel_args), statistics kept.
        hypers2 = make_hypers(rng, d)
        params2 = module.make_params(*hypers2, n=n)
        refresh_all(state, params2, stats)
        f2 = likelihood_logp_fn(dist_cls, d, hypers2)
        check_log_preds(f2, params2, stats, data, state, x, labels, i)
        # After more moves under the new hyperparameters: log joint of the full partition.
        add(params2, stats, data, i, int(labels[i]) if state.sizes[labels[i]] else int(labels[i]))
        if state.sizes[labels[i]] == 0:
            open_slot(state, int(labels[i]))
        state.sizes[labels[i]] += 1
        state.labels[i] = labels[i]
        canon = np.empty(n, dtype=np.int64)
        alpha = 1.3
        _, _, lj = summarise(state, crp.make_params(alpha, n), params2, stats, canon,
                             np.empty(n, dtype=np.int64))
        ref = f2(labels, x) + float(pm.logp(pmp.CRP.dist(alpha=alpha, n=n), labels).eval())
        assert rel_err(lj, ref) <= RTOL, (lj, ref)
