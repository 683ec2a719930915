"""pmp.ProperColoring: the partition induced by a uniform proper q-colouring
(Nguyen et al. 2022, App. G.1, eq. 15), its colouring component and its errors."""

import functools

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.sparse as sp
from helpers import (
    REFERENCE_MODE,
    assert_exact,
    binary_data,
    data_file,
    draws_of,
    exact_from_log_density,
    exact_posterior,
    judge,
    random_block_move,
    sample,
)

import pymc_partitions as pmp
from pymc_partitions.distributions.coloring import (
    dsatur,
    exact_colouring,
    graph_edges,
    greedy_clique,
)
from pymc_partitions.kernels import assign_labels, new_state, summarise, sweep_block
from pymc_partitions.kernels.components import coloring, log_pred
from pymc_partitions.kernels.priors import falling_factorial, log_prior_pred

RTOL = 1e-8
OCTAHEDRON = "coupling/kregular_6nodes_4regular_octahedron.edgelist"


def octahedron_edges():
    return np.loadtxt(data_file(OCTAHEDRON), dtype=np.int64).reshape(-1, 2)


def random_graph(n, p, seed):
    rng = np.random.default_rng(seed)
    iu = np.triu_indices(n, 1)
    keep = rng.random(iu[0].shape[0]) < p
    return np.stack([iu[0][keep], iu[1][keep]], axis=1).astype(np.int64)


def is_proper(labels, edges):
    return not np.any(labels[edges[:, 0]] == labels[edges[:, 1]])


def logp_fn(edges, q, n):
    value = pt.lvector("z")
    return pytensor.function([value], pm.logp(pmp.ProperColoring.dist(edges, q=q, n=n), value),
                             mode=REFERENCE_MODE)


# --------------------------------------------------------------------------------------
# Graph input and colourability
# --------------------------------------------------------------------------------------


def test_graph_inputs_agree():
    edges = random_graph(7, 0.4, 1)
    dense = np.zeros((7, 7), dtype=int)
    dense[edges[:, 0], edges[:, 1]] = dense[edges[:, 1], edges[:, 0]] = 1
    ref, n = graph_edges(edges, 7, "t")
    assert n == 7
    for graph, n_arg in [(dense, None), (dense.astype(bool), 7), (sp.csr_matrix(dense), None),
                         (edges[:, ::-1], 7), (np.concatenate([edges, edges]), 7)]:
        got, n_got = graph_edges(graph, n_arg, "t")
        assert n_got == 7 and np.array_equal(got, ref)


def test_networkx_graph_input():
    nx = pytest.importorskip("networkx")
    edges = random_graph(7, 0.4, 1)
    ref, _ = graph_edges(edges, 7, "t")
    g = nx.Graph()
    g.add_nodes_from(range(7))
    g.add_edges_from(edges.tolist())
    got, n_got = graph_edges(g, None, "t")
    assert n_got == 7 and np.array_equal(got, ref)


def test_dsatur_and_exact_search_give_proper_colourings():
    edges = octahedron_edges()
    adj = [set() for _ in range(6)]
    for u, v in edges:
        adj[u].add(v)
        adj[v].add(u)
    colour = dsatur(adj)
    assert is_proper(colour, edges) and colour.max() + 1 == 3  # chromatic number 3
    assert len(greedy_clique(adj)) == 3
    colour, exhausted = exact_colouring(adj, 3)
    assert exhausted and is_proper(colour, edges) and colour.max() < 3
    assert exact_colouring(adj, 2) == (None, True)
    assert exact_colouring(adj, 3, budget=1) == (None, False)


def test_support_point_is_a_proper_colouring_and_gibbs_is_assigned():
    edges = random_graph(12, 0.35, 3)
    with pm.Model() as model:
        pmp.ProperColoring("z", edges, q=5, n=12)
    start = model.initial_point()["z"]
    assert is_proper(start, edges) and start.max() < 5
    assert np.array_equal(pmp.canonicalize(start), start)
    assert pmp.Gibbs.competence(model["z"]) == pm.step_methods.compound.Competence.IDEAL


# --------------------------------------------------------------------------------------
# Kernel against model
# --------------------------------------------------------------------------------------

CASES = {"random_q3": (random_graph(8, 0.3, 5), 3, 8), "random_q4": (random_graph(8, 0.45, 6), 4, 8)}


@functools.lru_cache(maxsize=None)
def case_logp(case):
    edges, q, n = CASES[case]
    return logp_fn(edges, q, n)


def kernel_objects(edges, q, n, labels):
    params, data, stats = coloring.make_params(q), coloring.make_data(edges, n), coloring.alloc_stats(n, n)
    state = new_state(n)
    assign_labels(state, params, stats, data, labels)
    return params, data, stats, state


def random_proper(rng, edges, q, n):
    while True:
        labels = pmp.canonicalize(rng.integers(0, q, n))
        if is_proper(labels, edges):
            return labels


@pytest.mark.parametrize("case", sorted(CASES))
def test_gibbs_weights_and_log_joint_equal_model(case):
    edges, q, n = CASES[case]
    f = case_logp(case)
    prior = falling_factorial.make_params(q, n)
    rng = np.random.default_rng(len(case))
    for _ in range(8):
        labels = random_proper(rng, edges, q, n)
        params, data, stats, state = kernel_objects(edges, q, n, labels)
        canon = np.empty(n, dtype=np.int64)
        _, _, lj = summarise(state, prior, params, stats, canon, np.empty(n, dtype=np.int64))
        assert abs(lj - f(labels)) <= RTOL * abs(f(labels)) + 1e-12
        # Item i against each block of the others and a new block.
        i = int(rng.integers(n))
        coloring.remove(params, stats, data, i, labels[i])
        rest = np.delete(labels, i)
        blocks = sorted(set(rest.tolist()))
        nb = len(blocks)
        free = [s for s in range(n) if s not in blocks][0]
        kern, ref = [], []
        for k in blocks + [None]:
            slot = k if k is not None else free
            size = int(np.sum(rest == k)) if k is not None else 0
            kern.append(log_prior_pred(prior, size, nb) + log_pred(params, stats, data, i, slot))
            z = labels.copy()
            z[i] = k if k is not None else n
            ref.append(f(pmp.canonicalize(z)))
        kern, ref = np.array(kern), np.array(ref)
        assert np.array_equal(np.isneginf(kern), np.isneginf(ref)), (kern, ref)
        ok = np.isfinite(ref)
        r = int(np.flatnonzero(ok)[0])
        assert np.allclose(kern[ok] - kern[r], ref[ok] - ref[r], rtol=RTOL, atol=1e-12)


@pytest.mark.parametrize("case", sorted(CASES))
def test_forced_sweep_block_equals_model(case):
    """sweep_{C,I} under the colouring target: forced log probabilities are the
    softmax of the model's log probability over the candidates; a candidate block
    holding a neighbour of C (or a new block beyond q) gets -inf."""
    edges, q, n = CASES[case]
    f = case_logp(case)
    prior = falling_factorial.make_params(q, n)
    rng = np.random.default_rng(10 + len(case))
    saw_forbidden = False
    for _ in range(6):
        labels = random_proper(rng, edges, q, n)
        items, candidates, ref, ref_logp = random_block_move(rng, labels, f)
        saw_forbidden |= bool(np.any(np.isneginf(ref_logp)))
        for forced in range(len(candidates)):
            params, data, stats, state = kernel_objects(edges, q, n, labels)
            chosen, log_p, _ = sweep_block.sweep_block_entry(
                state, prior, params, stats, data, items, candidates, forced, 0.5,
                np.empty(len(candidates)))
            assert chosen == forced
            if np.isneginf(ref_logp[forced]):
                assert np.isneginf(log_p)
            else:
                assert abs(log_p - ref_logp[forced]) <= RTOL * abs(ref_logp[forced]) + 1e-12
    assert saw_forbidden


# --------------------------------------------------------------------------------------
# Exact targets under pmp.Gibbs (the prior itself is the target: no likelihood)
# --------------------------------------------------------------------------------------


def exact_target(edges, q, n):
    return exact_from_log_density(logp_fn(edges, q, n), n)


def test_octahedron_four_colourings_exact():
    edges = octahedron_edges()
    exact = exact_target(edges, 4, 6)
    # The unnormalised mass q!/(q-K)! summed over partitions counts the colourings.
    f = logp_fn(edges, 4, 6)
    assert np.isclose(np.exp(np.logaddexp.reduce([f(z) for z in exact.partitions])), 96.0,
                      rtol=1e-12)
    p = exact.p
    assert np.sum(p > 0) == 4 and np.allclose(p[p > 0], 0.25)  # each partition: 24 colourings
    with pm.Model() as model:
        pmp.ProperColoring("z", edges, q=4, n=6)
    assert_exact(model, exact=exact, draws=2000, seed=4)
    # Forward draws: exact uniform colourings, induced partitions (iid).
    draws = pm.draw(pmp.ProperColoring.dist(edges, q=4, n=6), draws=4000, random_seed=5)
    assert judge(exact, draws[None]).passed


def test_random_graph_three_colourings_exact():
    n, q = 6, 3
    edges = random_graph(n, 0.45, 13)  # 6 edges, 12 partitions with K in {2, 3}
    exact = exact_target(edges, q, n)
    assert np.sum(exact.p > 0) > 3 and len(edges) >= 4
    with pm.Model() as model:
        pmp.ProperColoring("z", edges, q=q, n=n)
    _, idata = assert_exact(model, exact=exact, draws=2000, seed=12)
    draws = draws_of(idata, "z").reshape(-1, n)
    assert all(is_proper(d, edges) for d in draws)


# --------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------


def test_non_symmetric_adjacency_is_rejected():
    a = np.zeros((4, 4), dtype=int)
    a[0, 1] = 1
    with pytest.raises(ValueError, match="not symmetric"):
        pmp.ProperColoring.dist(a, q=3)
    with pytest.raises(ValueError, match="not symmetric"):
        pmp.ProperColoring.dist(sp.csr_matrix(a), q=3)


@pytest.mark.parametrize(
    "graph,n,q,match",
    [
        (np.eye(3, dtype=int), None, 3, "self-loop"),
        (np.array([[0, 2], [2, 0]]), None, 3, "only 0 and 1"),
        (np.array([[0, 1], [2, 2]]), 3, 3, "self-loop"),
        (np.array([[0, 1], [1, 5]]), 4, 3, "0..n-1"),
        (np.array([[0, 1], [1, 2], [2, 0]]), None, 3, "needs the number of vertices"),
        (np.zeros((3, 3)), None, 0, "'q'"),
        (np.ones(4), None, 2, "adjacency matrix"),
    ],
)
def test_invalid_graphs_are_rejected(graph, n, q, match):
    with pytest.raises(ValueError, match=match):
        pmp.ProperColoring.dist(graph, q=q, n=n)


def test_clique_larger_than_q_is_rejected():
    k5 = np.array([(u, v) for u in range(5) for v in range(u + 1, 5)])
    edges = np.concatenate([k5, [[4, 5], [5, 6]]])
    with pytest.raises(ValueError, match=r"5 mutually adjacent vertices \[0, 1, 2, 3, 4\].*q >= 5"):
        pmp.ProperColoring.dist(edges, q=4, n=7)
    with pytest.raises(ValueError, match="mutually adjacent"):
        pmp.ProperColoring.dist(octahedron_edges(), q=2, n=6)


def test_uncolourable_graph_without_large_clique_is_rejected():
    c5 = np.array([[0, 1], [1, 2], [2, 3], [3, 4], [4, 0]])  # odd cycle: needs 3 colours
    with pytest.raises(ValueError, match="no proper 2-colouring.*exhaustive"):
        pmp.ProperColoring.dist(c5, q=2, n=5)


def test_initvals_violating_the_colouring_are_rejected():
    edges = octahedron_edges()
    with pm.Model() as model:
        pmp.ProperColoring("z", edges, q=4, n=6)
    bad_edge = np.array([0, 0, 1, 2, 3, 4])  # 0 and 1 are adjacent
    with pytest.raises(ValueError, match="adjacent but in the same block"):
        sample(model, draws=5, chains=1, initvals={"z": bad_edge})
    too_many = np.array([0, 1, 2, 3, 4, 0])  # proper, but 5 blocks > q = 4
    with pytest.raises(ValueError, match="more than the q = 4"):
        sample(model, draws=5, chains=1, initvals={"z": too_many})


def test_likelihood_free_sampling_only_for_constrained_priors():
    with pm.Model() as model:
        pmp.CRP("z", alpha=1.0, n=4)
    with pytest.raises(pmp.PartitionModelError, match="no collapsed likelihood"):
        pmp.Gibbs([model["z"]], model=model)


def test_colouring_prior_with_a_collapsed_likelihood_exact():
    """The constraint component and an observed likelihood combine (Pair)."""
    n, q = 5, 3
    edges = np.array([[0, 1], [1, 2], [2, 3], [3, 4]])
    y = (np.random.default_rng(21).random((n, 2)) < 0.5).astype(float)
    with pm.Model() as model:
        z = pmp.ProperColoring("z", edges, q=q, n=n)
        pmp.CollapsedBetaBernoulli("y", partition=z, a=0.5, b=0.5, observed=y)
    assert_exact(model, draws=2000, seed=21)


def test_frozen_colourings_are_missed_and_warned():
    """A 6-cycle with q = 3 colours has a frozen colouring (0 1 2 0 1 2: every vertex
    sees both other colours), so Gibbs never reaches the partition {0,3},{1,4},{2,5}.
    The step warns (q < max degree + 2) and the exactness harness catches the
    missing mass (found by the harness; the earlier TV bound passed it)."""
    n = 6
    edges = np.array([[v, (v + 1) % n] for v in range(n)])
    with pm.Model() as model:
        z = pmp.ProperColoring("z", edges, q=3, n=n)
        pmp.CollapsedBetaBernoulli("y", partition=z, a=0.5, b=0.8,
                                   observed=binary_data(n, 3, seed=61))
    exact = exact_posterior(model)
    with pytest.warns(pmp.ColoringMixingWarning, match="q >= max degree \\+ 2 = 4"):
        step = pmp.Gibbs([z], model=model)
    draws = draws_of(sample(model, draws=2500, seed=61, step=[step]))
    frozen = exact.codes(np.array([0, 1, 2, 0, 1, 2]))
    assert exact.p[frozen] > 0.005 and not np.any(exact.codes(draws) == frozen)
    verdict = judge(exact, draws)
    assert not verdict.passed and any(f.startswith("|z|") for f in verdict.failures)
