"""pmp.IRM: the numba relational component against the PyTensor model (kernel
predictive terms, log joint, block-move probabilities), exact enumeration with
pmp.Gibbs, and the checks on the observed network (DESIGN §6)."""

import functools

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.sparse as sp
from helpers import REFERENCE_MODE, assert_exact, load_all_but, random_block_move

import pymc_partitions as pmp
from pymc_partitions.kernels import assign_labels, new_state, summarise, sweep_block
from pymc_partitions.kernels.components import (
    add,
    irm,
    log_marginal,
    log_pred,
    log_pred_block,
    remove,
)
from pymc_partitions.kernels.components.base import chain_rule_log_pred_block
from pymc_partitions.kernels.priors import crp
from pymc_partitions.kernels.random import new_stream
from pymc_partitions.kernels.state import open_slot, top_free_slot

RTOL = 1e-8


def rel_err(a, b):
    return abs(a - b) / max(abs(b), 1e-300)


def close(a, b):
    return rel_err(a, b) <= RTOL or abs(a - b) < 1e-12


def random_graph(n, density, rng):
    upper = np.triu(rng.random((n, n)) < density, 1)
    return (upper | upper.T).astype(float)


@functools.cache
def _irm_logp():
    z, y = pt.lvector("z"), pt.dmatrix("A")
    a, b = pt.dscalar("a"), pt.dscalar("b")
    rv = pmp.IRM.dist(z, a=a, b=b)
    return pytensor.function([z, y, a, b], pm.logp(rv, y), mode=REFERENCE_MODE)


def irm_logp_fn(a, b):
    """Compiled PyTensor log density of the IRM as a function of (labels, adjacency);
    the adjacency is symbolic, so this is the edge-scan path of ``IRM.logp``
    (compiled once for the module, a and b are inputs)."""
    fn = _irm_logp()
    return lambda labels, adj: float(fn(np.asarray(labels, dtype=np.int64), adj, a, b))


def sub_logp(f, adjacency, slot_of, nodes):
    """The model's log density of the subnetwork of ``nodes`` under ``slot_of``."""
    nodes = np.asarray(nodes, dtype=np.int64)
    if len(nodes) == 0:
        return 0.0
    return f(pmp.canonicalize(slot_of[nodes]), adjacency[np.ix_(nodes, nodes)])


def random_problem(n, density, sparse, rng):
    """A random network, (a, b), the model's log density, an empty kernel state and
    random labels of up to 4 blocks, drawn from ``rng`` in that order."""
    adjacency = random_graph(n, density, rng)
    a, b = rng.uniform(0.3, 3.0, 2)
    params = irm.make_params(a, b)
    data = irm.make_data(sp.csr_matrix(adjacency) if sparse else adjacency)
    labels = pmp.canonicalize(rng.integers(0, 4, n))
    return (adjacency, irm_logp_fn(a, b), params, data, irm.alloc_stats(n, params),
            new_state(n), labels)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_log_pred_equals_model_difference_on_partial_states(seed):
    """log_pred(i, k) = log p(A_S+i | z with i in k) - log p(A_S | z_S) for every
    candidate k (active slots and a new one), S the assigned nodes, with several
    nodes unassigned as sweep_block leaves them; nodes are then added one by one
    (the chain rule), and the component's per-slot log marginals sum to the log
    density of the assigned subnetwork at every stage."""
    rng = np.random.default_rng(100 + seed)
    n = 12
    adjacency, f, params, data, stats, state, labels = random_problem(
        n, [0.15, 0.4, 0.7, 0.95][seed], sparse=seed % 2 == 1, rng=rng)
    unassigned = list(rng.choice(n, size=int(rng.integers(2, 6)), replace=False))
    load_all_but(state, params, stats, data, labels, skip=unassigned)
    checked = 0
    while unassigned:
        assigned = np.flatnonzero(state.labels >= 0)
        base = sub_logp(f, adjacency, state.labels, assigned)
        total = sum(
            log_marginal(params, stats, int(k)) for k in state.active[: state.counts[0]]
        )
        assert close(total, base), (total, base)
        candidates = [int(k) for k in state.active[: state.counts[0]]] + [top_free_slot(state)]
        # Score every unassigned node against every candidate, interleaving nodes so
        # the component's per-node edge-count cache switches between them.
        for k in candidates:
            for i in unassigned:
                kernel = log_pred(params, stats, data, int(i), k)
                slot_of = state.labels.copy()
                slot_of[i] = k
                model = sub_logp(f, adjacency, slot_of, np.append(assigned, i)) - base
                assert close(kernel, model), (seed, i, k, kernel, model)
                checked += 1
        # Add one node to a random candidate: the next round is the chain rule's next term.
        i = unassigned.pop(int(rng.integers(len(unassigned))))
        k = candidates[int(rng.integers(len(candidates)))]
        if state.sizes[k] == 0:
            open_slot(state, k)
        add(params, stats, data, int(i), k)
        state.sizes[k] += 1
        state.labels[i] = k
    assert checked > 10



@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_log_pred_block_equals_model_difference_and_chain_rule(seed):
    """The IRM's closed-form block term: log_pred_block(C, k) = log p(A_S+C | C in k)
    - log p(A_S | z_S) for every candidate k (active slots and a new one), with
    unassigned nodes outside C present (their edges to C must not count), equal to
    the generic chain rule, and the statistics unchanged afterwards (every node's
    log_pred as before)."""
    rng = np.random.default_rng(200 + seed)
    n = 12
    adjacency, f, params, data, stats, state, labels = random_problem(
        n, [0.2, 0.5, 0.8, 0.95][seed], sparse=seed % 2 == 1, rng=rng)
    unassigned = rng.choice(n, size=6, replace=False)
    load_all_but(state, params, stats, data, labels, skip=list(unassigned))
    assigned = np.flatnonzero(state.labels >= 0)
    base = sub_logp(f, adjacency, state.labels, assigned)
    candidates = [int(k) for k in state.active[: state.counts[0]]] + [top_free_slot(state)]
    before = [[log_pred(params, stats, data, int(i), k) for k in candidates] for i in unassigned]
    checked = 0
    for size in (1, 2, 3, 5):
        block = np.sort(rng.choice(unassigned, size=size, replace=False)).astype(np.int64)
        for k in candidates:
            kernel = log_pred_block(params, stats, data, block, k)
            chain = chain_rule_log_pred_block(params, stats, data, block, k)
            slot_of = state.labels.copy()
            slot_of[block] = k
            model = sub_logp(f, adjacency, slot_of, np.append(assigned, block)) - base
            assert close(kernel, model), (seed, size, k, kernel, model)
            assert close(kernel, chain), (seed, size, k, kernel, chain)
            checked += 1
    after = [[log_pred(params, stats, data, int(i), k) for k in candidates] for i in unassigned]
    np.testing.assert_array_equal(after, before)
    assert checked >= 8


@pytest.mark.parametrize("seed", [0, 1])
def test_a_node_returning_to_its_slot_restores_the_cached_terms(seed):
    """remove(i, k) then add(i, k) with nothing between but scoring (a Gibbs or ARM
    move that keeps i where it was) puts k's saved cached terms back: no slot is
    left dirty, and the terms equal a recomputation from scratch bit for bit; a node
    that returns after another node moved gets recomputed terms."""
    rng = np.random.default_rng(300 + seed)
    n = 40
    adjacency = random_graph(n, [0.2, 0.6][seed], rng)
    a, b = rng.uniform(0.3, 3.0, 2)
    params = irm.make_params(a, b)
    data = irm.make_data(adjacency)
    labels = pmp.canonicalize(rng.integers(0, 5, n))

    def fresh_terms():
        stats = irm.alloc_stats(n, params)
        load_all_but(new_state(n), params, stats, data, labels, skip=[])
        irm._clean(params, stats)
        return stats

    stats = fresh_terms()
    for _ in range(30):
        i = int(rng.integers(n))
        k = int(labels[i])
        if np.sum(labels == k) < 2:
            continue
        remove(params, stats, data, i, k)
        for l in np.unique(labels):
            log_pred(params, stats, data, i, int(l))
        add(params, stats, data, i, k)
        assert stats.meta[3] == 0  # nothing dirty: the saved terms came back
        ref = fresh_terms()
        active = np.sort(stats.active[: stats.meta[0]])
        np.testing.assert_array_equal(stats.t0[np.ix_(active, active)],
                                      ref.t0[np.ix_(active, active)])
        np.testing.assert_array_equal(stats.fresh[active], ref.fresh[active])
    # Another node leaving a slot in between: i's saved terms must not come back.
    i = int(np.flatnonzero(labels == labels[0])[1])
    k = int(labels[i])
    j = int(np.flatnonzero(labels != k)[0])
    remove(params, stats, data, i, k)
    remove(params, stats, data, j, int(labels[j]))
    add(params, stats, data, i, k)
    irm._clean(params, stats)
    ref = irm.alloc_stats(n, params)
    load_all_but(new_state(n), params, ref, data, labels, skip=[j])
    irm._clean(params, ref)
    active = np.sort(stats.active[: stats.meta[0]])
    np.testing.assert_allclose(stats.t0[np.ix_(active, active)],
                               ref.t0[np.ix_(active, active)], rtol=1e-12)

def test_log_pred_large_blocks():
    """Blocks larger than the rising-factorial cut-off (24 new pairs) take the
    log-gamma path of the Beta ratio; it too equals the model's difference."""
    rng = np.random.default_rng(5)
    n = 70
    adjacency = random_graph(n, 0.3, rng)
    a, b = 0.7, 2.5
    f = irm_logp_fn(a, b)
    labels = pmp.canonicalize(np.repeat([0, 1, 2], [30, 28, 12])[rng.permutation(n)])
    for i in rng.choice(n, size=4, replace=False):
        params = irm.make_params(a, b)
        stats, data, state = irm.alloc_stats(n, params), irm.make_data(adjacency), new_state(n)
        load_all_but(state, params, stats, data, labels, skip=i)
        rest = np.delete(np.arange(n), i)
        base = sub_logp(f, adjacency, state.labels, rest)
        for k in [int(k) for k in state.active[: state.counts[0]]] + [top_free_slot(state)]:
            slot_of = state.labels.copy()
            slot_of[i] = k
            model = sub_logp(f, adjacency, slot_of, np.arange(n)) - base
            kernel = log_pred(params, stats, data, int(i), k)
            assert close(kernel, model), (i, k, kernel, model)


def crp_irm_model(n, alpha, adjacency, a, b, **options):
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=alpha, n=n)
        pmp.IRM("A", partition=z, a=a, b=b, observed=adjacency, **options)
    return model


def joint_fn(model):
    fn = model.compile_logp(jacobian=False)
    return lambda labels: float(fn({"z": labels}))


def kernel_state(adjacency, labels, a, b):
    labels = np.asarray(labels, dtype=np.int64)
    n = len(labels)
    params = irm.make_params(a, b)
    stats, data, state = irm.alloc_stats(n, params), irm.make_data(adjacency), new_state(n)
    assign_labels(state, params, stats, data, labels)
    return params, stats, data, state


def test_log_joint_equals_model_logp():
    """bookkeeping.log_joint (CRP + the per-slot log marginals) equals the model's
    compiled logp (the constant-edge-list path); sparse input is stored densely; the
    likelihood alone equals the symbolic-adjacency path of the same logp."""
    rng = np.random.default_rng(7)
    n, alpha, a, b = 15, 1.7, 0.6, 1.9
    adjacency = random_graph(n, 0.3, rng)
    model = crp_irm_model(n, alpha, adjacency, a, b)
    logp_dense = joint_fn(model)
    lik_fn = model.compile_logp(vars=[model["A"]], jacobian=False)
    sparse_model = crp_irm_model(n, alpha, sp.csr_matrix(adjacency), a, b)
    # Sparse input is stored as the same dense matrix, so its logp is the same graph.
    assert np.array_equal(sparse_model.rvs_to_values[sparse_model["A"]].data, adjacency)
    f = irm_logp_fn(a, b)
    prior = crp.make_params(alpha, n)
    for trial in range(6):
        labels = pmp.canonicalize(rng.integers(0, [1, 3, 6, 15, 4, 2][trial], n))
        params, stats, _, state = kernel_state(adjacency, labels, a, b)
        canon = np.empty(n, dtype=np.int64)
        _, _, kernel = summarise(state, prior, params, stats, canon, np.empty(n, dtype=np.int64))
        assert np.array_equal(canon, labels)
        model_value = logp_dense(labels)
        assert rel_err(kernel, model_value) <= RTOL, (kernel, model_value)
        lik = float(lik_fn({"z": labels}))
        kernel_lik = sum(
            log_marginal(params, stats, int(k)) for k in state.active[: state.counts[0]]
        )
        assert close(kernel_lik, lik), (kernel_lik, lik)
        assert close(f(labels, adjacency), lik)


def test_block_move_probabilities_equal_model_ratios():
    """sweep_{C,I} (Herlau et al. eqs. 5-6) with the IRM: the forced log probability
    of each candidate equals the softmax of the model's log joint over the
    candidates, and the state then scores as the model does."""
    rng = np.random.default_rng(11)
    n, alpha, a, b = 10, 0.9, 0.8, 1.3
    adjacency = random_graph(n, 0.45, rng)
    logp = joint_fn(crp_irm_model(n, alpha, adjacency, a, b))
    prior = crp.make_params(alpha, n)
    for trial in range(6):
        labels = pmp.canonicalize(rng.integers(0, 3, n))
        items, candidates, ref, ref_logp = random_block_move(rng, labels, logp)
        for forced in range(len(candidates)):
            params, stats, data, state = kernel_state(adjacency, labels, a, b)
            chosen, log_p, _ = sweep_block.sweep_block_entry(
                state, prior, params, stats, data, items, candidates, forced, 0.5,
                np.empty(len(candidates)),
            )
            assert chosen == forced
            assert close(log_p, ref_logp[forced]), (trial, forced, log_p, ref_logp[forced])
            canon = np.empty(n, dtype=np.int64)
            _, _, lj = summarise(state, prior, params, stats, canon, np.empty(n, dtype=np.int64))
            assert rel_err(lj, ref[forced]) <= RTOL
        # Unforced: the draw leaves a consistent state.
        params, stats, data, state = kernel_state(adjacency, labels, a, b)
        sweep_block.sweep_block_entry(
            state, prior, params, stats, data, items, candidates, -1, float(rng.random()),
            np.empty(len(candidates)),
        )
        canon = np.empty(n, dtype=np.int64)
        _, _, lj = summarise(state, prior, params, stats, canon, np.empty(n, dtype=np.int64))
        assert rel_err(lj, logp(canon)) <= RTOL


def test_gibbs_sweeps_keep_the_statistics_exact():
    """After many Gibbs sweeps (thousands of incremental add/remove), the kept
    statistics still give the model's log joint of the current partition."""
    from pymc_partitions.kernels import gibbs

    rng = np.random.default_rng(9)
    n, alpha, a, b = 40, 1.2, 0.5, 2.0
    adjacency = random_graph(n, 0.2, rng)
    logp = joint_fn(crp_irm_model(n, alpha, sp.csr_matrix(adjacency), a, b))
    params, stats, data, state = kernel_state(adjacency, rng.integers(0, 5, n), a, b)
    prior = crp.make_params(alpha, n)
    canon, scratch = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    n_blocks = set()
    stream = new_stream(0)
    for _ in range(5):
        gibbs.run_sweeps(stream, 3, state, prior, params, stats, data, np.empty(n + 1),
                         np.arange(n, dtype=np.int64))
        k, _, lj = summarise(state, prior, params, stats, canon, scratch)
        n_blocks.add(int(k))
        assert rel_err(lj, logp(canon)) <= RTOL
        # The component's own active list matches the partition's.
        assert sorted(stats.active[: stats.meta[0]]) == sorted(state.active[: state.counts[0]])


# ------------------------------------------------------------------ exact enumeration


@pytest.mark.parametrize(
    "seed, density, a, b, sparse",
    [(1, 0.5, 1.0, 1.0, False), (2, 0.3, 0.5, 2.0, True), (3, 0.7, 2.0, 0.7, False)],
)
def test_gibbs_exact_fixed_hyperparameters(seed, density, a, b, sparse):
    n = 6
    adjacency = random_graph(n, density, np.random.default_rng(seed))
    observed = sp.csr_matrix(adjacency) if sparse else adjacency
    assert_exact(crp_irm_model(n, 1.0, observed, a, b), draws=2000, seed=seed)


def test_gibbs_exact_with_a_free():
    """a ~ Gamma(2, 1) free (pm.sample assigns it to pmp.HyperSlice), b = 1: the
    partition's marginal posterior against quadrature over log a."""
    n = 5
    adjacency = random_graph(n, 0.5, np.random.default_rng(21))
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=n)
        a = pm.Gamma("a", 2.0, 1.0)
        pmp.IRM("A", partition=z, a=a, b=1.0, observed=adjacency)
    assert_exact(model, draws=1200, seed=21, grids={"a_log__": np.linspace(-12.0, 5.0, 300)})


# ------------------------------------------------------------------ observed network


def make(observed, n=None, **options):
    n = n if n is not None else np.asarray(observed.shape)[0]
    with pm.Model():
        z = pmp.CRP("z", alpha=1.0, n=n)
        return pmp.IRM("A", partition=z, observed=observed, **options)


GOOD = random_graph(6, 0.5, np.random.default_rng(0))


@pytest.mark.parametrize(
    "observed, match",
    [
        (np.zeros((6, 5)), "square"),
        (np.zeros(6), "square"),
        (np.triu(GOOD), "symmetric.*symmetrize=True"),
        (GOOD * 0.5, "0/1.*threshold"),
        (GOOD + np.eye(6), "diagonal.*drop_diagonal=True"),
        (np.where(np.eye(6, k=1) + np.eye(6, k=-1) > 0, np.nan, GOOD), "NaN"),
        (sp.csr_matrix(np.triu(GOOD)), "symmetric"),
        (sp.csr_matrix(np.zeros((6, 5))), "square"),
    ],
)
def test_observed_errors(observed, match):
    with pytest.raises(ValueError, match=match):
        make(observed, n=6)


def test_errors_on_n_and_hyperparameters():
    with pytest.raises(ValueError, match="n = 7"):
        make(GOOD, n=7)
    with pytest.raises(ValueError, match="'a' must be positive"):
        make(GOOD, a=-1.0)
    with pytest.raises(ValueError, match="'b' must be a scalar"):
        make(GOOD, b=[1.0, 2.0])
    with pytest.raises(ValueError, match="'threshold'"):
        make(GOOD, threshold=np.nan)
    with pytest.raises(ValueError, match="'observed' is required"):
        make(None, n=6)


def test_threshold_symmetrize_and_diagonal_options():
    """Herlau et al. §3.3: weights thresholded at 0, symmetrised, diagonal removed,
    from a dense matrix or a sparse upper-triangular edge list."""
    rng = np.random.default_rng(4)
    weights = np.triu(rng.random((8, 8)) * (rng.random((8, 8)) < 0.4))  # directed, weighted
    weights[np.diag_indices(8)] = 0.3
    expected = ((weights + weights.T) > 0).astype(float)
    np.fill_diagonal(expected, 0.0)
    options = dict(threshold=0.0, symmetrize=True, drop_diagonal=True)
    # The processed matrix is what the model stores and the kernel reads.
    for observed in (weights, sp.coo_matrix(weights), sp.csr_matrix(weights)):
        with pm.Model() as model:
            z = pmp.CRP("z", alpha=1.0, n=8)
            rv = pmp.IRM("A", partition=z, observed=observed, **options)
        stored = model.rvs_to_values[rv].data
        assert np.array_equal(stored, expected)
    assert np.array_equal(weights[np.diag_indices(8)], np.full(8, 0.3))  # input untouched
    indptr, indices = irm.make_data(stored)
    assert indptr[-1] == expected.sum()
    # Negative weights are no edge at t = 0; the same as threshold=0.5 on the weights.
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=8)
        rv = pmp.IRM("A", partition=z, observed=weights - 0.5, **options)
    strict = ((weights - 0.5 > 0) | (weights.T - 0.5 > 0)).astype(float)
    np.fill_diagonal(strict, 0.0)
    assert np.array_equal(model.rvs_to_values[rv].data, strict)
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=8)
        rv = pmp.IRM("A", partition=z, observed=weights, threshold=0.5, symmetrize=True,
                     drop_diagonal=True)
    assert np.array_equal(model.rvs_to_values[rv].data, strict)


def test_forward_draws_and_block_pair_posterior():
    n = 9
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=2.0, n=n)
        a = pm.Gamma("a", 2.0, 1.0)
        rv = pmp.IRM("A", partition=z, a=a, b=1.5,
                     observed=random_graph(n, 0.4, np.random.default_rng(5)))
    draws = pm.draw(rv, draws=20, random_seed=3)
    assert draws.shape == (20, n, n)
    assert np.array_equal(draws, np.swapaxes(draws, 1, 2))
    assert np.all(np.diagonal(draws, axis1=1, axis2=2) == 0)
    assert set(np.unique(draws)) <= {0.0, 1.0}
    prior = pm.sample_prior_predictive(draws=5, model=model, random_seed=1)
    assert prior["prior_predictive"]["A"].shape[-2:] == (n, n)
    labels = np.array([0, 0, 1, 1, 1, 2, 2, 0, 1])
    adj = random_graph(n, 0.5, np.random.default_rng(6))
    eta = rv.owner.op.block_pair_posterior_draw(np.random.default_rng(0), labels, adj, [1.0, 1.0])
    assert eta["eta"].shape == (3, 3)
    assert np.allclose(eta["eta"], eta["eta"].T)
    # Beta(1 + E, 1 + P - E) posterior means, checked on many draws.
    draw = rv.owner.op.block_pair_posterior_draw
    many = np.array(
        [draw(np.random.default_rng(s), labels, adj, [1.0, 1.0])["eta"] for s in range(3000)]
    )
    upper = np.triu(adj, 1)
    for k in range(3):
        for l in range(k, 3):
            mask = np.outer(labels == k, labels == l) | np.outer(labels == l, labels == k)
            e = (upper * mask).sum()
            p = (np.triu(np.ones((n, n)), 1) * mask).sum()
            assert abs(many[:, k, l].mean() - (1 + e) / (2 + p)) < 0.02


def direct_log_pred(adjacency, slot_of, i, k, a, b):
    """log_pred from scratch: the Beta-ratio sum over the occupied slots l, with the
    block-pair counts of the assigned nodes (slot_of = -1: unassigned) recounted."""
    from scipy.special import betaln

    assigned = np.flatnonzero(slot_of >= 0)
    acc = 0.0
    m_k = int(np.sum(slot_of == k))
    for l in np.unique(slot_of[assigned]):
        in_k, in_l = assigned[slot_of[assigned] == k], assigned[slot_of[assigned] == l]
        m_l = len(in_l)
        e = int(adjacency[i, in_l].sum())
        if l == k:
            pairs, edges = m_k * (m_k - 1) // 2, int(np.triu(adjacency[np.ix_(in_k, in_k)], 1).sum())
        else:
            pairs, edges = m_k * m_l, int(adjacency[np.ix_(in_k, in_l)].sum())
        acc += betaln(a + edges + e, b + pairs - edges + m_l - e) - betaln(a + edges,
                                                                            b + pairs - edges)
    return acc


@pytest.mark.parametrize("seed", [0, 1])
def test_cached_block_pair_terms_stay_exact_under_random_moves(seed):
    """The incremental tables (no-edge terms T and F, dirty rows and columns, the
    node's cached edge counts, the (a, b) tag) against a from-scratch recount: after
    random sequences of remove/add (several nodes out at once, blocks emptied and
    reopened, several changes between two scorings, (a, b) changed without
    ``refresh``), log_pred of an unassigned node for every occupied slot and an empty
    one equals the direct formula, and the cleaned tables equal their definition."""
    from scipy.special import betaln

    rng = np.random.default_rng(40 + seed)
    n = 30
    adjacency = random_graph(n, [0.2, 0.6][seed], rng)
    a, b = 0.8, 1.7
    params = irm.make_params(a, b)
    stats, data = irm.alloc_stats(n, params), irm.make_data(adjacency)
    slot_of = rng.integers(0, 5, n)
    for i in range(n):
        add(params, stats, data, i, int(slot_of[i]))
    checked = 0
    for step in range(400):
        if step % 97 == 96:  # new hyperparameters, no refresh call
            a, b = rng.uniform(0.2, 3.0, 2)
            params = irm.make_params(a, b)
        # Take 1-3 nodes out, then put all but possibly one back somewhere random
        # (an occupied slot or a free one), scoring only at some steps.
        out = rng.choice(np.flatnonzero(slot_of >= 0), size=int(rng.integers(1, 4)),
                         replace=False)
        for i in out:
            remove(params, stats, data, int(i), int(slot_of[i]))
            slot_of[i] = -1
        if rng.random() < 0.5:
            i = int(out[0])
            occupied = [int(k) for k in np.unique(slot_of[slot_of >= 0])]
            free = int(np.setdiff1d(np.arange(n), occupied)[0])
            for k in occupied + [free]:
                kernel = log_pred(params, stats, data, i, k)
                direct = direct_log_pred(adjacency, slot_of, i, k, a, b)
                assert abs(kernel - direct) <= 1e-9 * max(1.0, abs(direct)), (step, k)
                checked += 1
            # The cleaned tables equal their definition on the occupied slots.
            assert stats.meta[3] == 0
            for k in occupied:
                m_k = int(np.sum(slot_of == k))
                assert np.isclose(stats.fresh[k], betaln(a, b + m_k) - betaln(a, b),
                                  rtol=1e-12, atol=1e-12)
                for l in occupied:
                    m_l = int(np.sum(slot_of == l))
                    in_k, in_l = np.flatnonzero(slot_of == k), np.flatnonzero(slot_of == l)
                    if l == k:
                        p_kl = m_k * (m_k - 1) // 2
                        e_kl = int(np.triu(adjacency[np.ix_(in_k, in_k)], 1).sum())
                    else:
                        p_kl, e_kl = m_k * m_l, int(adjacency[np.ix_(in_k, in_l)].sum())
                    y = b + p_kl - e_kl
                    assert np.isclose(stats.t0[k, l], betaln(a + e_kl, y + m_l) -
                                      betaln(a + e_kl, y), rtol=1e-12, atol=1e-12)
        keep_out = int(out[0]) if rng.random() < 0.3 and len(out) > 1 else -1
        for i in out:
            if i == keep_out:
                continue
            k = int(rng.integers(0, n)) if rng.random() < 0.1 else int(
                rng.choice(slot_of[slot_of >= 0]))
            add(params, stats, data, int(i), k)
            slot_of[i] = k
        if keep_out >= 0:  # put it back at the next step's start instead
            k = int(rng.choice(slot_of[slot_of >= 0]))
            add(params, stats, data, keep_out, k)
            slot_of[keep_out] = k
    assert checked > 1000
