"""pmp.ProperColoring: the partition induced by a uniform proper q-colouring
(Nguyen et al. 2022, App. G.1, eq. 15), its colouring component and its errors."""

import functools
import os
from pathlib import Path

import arviz as az
import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.sparse as sp
from helpers import draws_of, partition_index, sample

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
DATA_DIR = Path(os.environ.get("PMP_DATA_DIR", "/work/shared/data"))
OCTAHEDRON = DATA_DIR / "coupling" / "kregular_6nodes_4regular_octahedron.edgelist"


def octahedron_edges():
    if not OCTAHEDRON.exists():
        pytest.skip(f"data file {OCTAHEDRON} not found (set PMP_DATA_DIR to the shared data directory)")
    return np.loadtxt(OCTAHEDRON, dtype=np.int64).reshape(-1, 2)


def random_graph(n, p, seed):
    rng = np.random.default_rng(seed)
    iu = np.triu_indices(n, 1)
    keep = rng.random(iu[0].shape[0]) < p
    return np.stack([iu[0][keep], iu[1][keep]], axis=1).astype(np.int64)


def is_proper(labels, edges):
    return not np.any(labels[edges[:, 0]] == labels[edges[:, 1]])


def logp_fn(edges, q, n):
    value = pt.lvector("z")
    return pytensor.function([value], pm.logp(pmp.ProperColoring.dist(edges, q=q, n=n), value))


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
        source = int(rng.integers(labels.max() + 1))
        members = np.flatnonzero(labels == source)
        items = np.sort(rng.choice(members, size=int(rng.integers(1, len(members) + 1)),
                                   replace=False)).astype(np.int64)
        candidates = np.array(list(range(labels.max() + 1)) + [-1], dtype=np.int64)
        ref = []
        for k in candidates:
            z = labels.copy()
            z[items] = k if k >= 0 else n + 3
            ref.append(f(pmp.canonicalize(z)))
        ref = np.array(ref)
        ref_logp = ref - np.logaddexp.reduce(ref)
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


def tv_against(idata, partitions, p):
    """TV distance of the sampled partitions from ``p`` and the ESS-based bound of
    ``helpers.tv_test`` (there with delta = 1e-4); scalar functions that are
    constant under the target (its log probability, when it is uniform) are left
    out of the ESS."""
    draws = draws_of(idata, "z")
    index = partition_index(partitions)
    codes = np.array([[index[tuple(d)] for d in chain] for chain in draws])
    freq = np.bincount(codes.ravel(), minlength=len(partitions)) / codes.size
    tv = 0.5 * np.abs(freq - p).sum()
    scalars = [np.log(np.maximum(p[codes], 1e-300)), draws.max(axis=-1).astype(float),
               (codes == np.argmax(p)).astype(float), (codes == np.argsort(p)[-2]).astype(float)]
    ess = min(float(az.ess(s)) for s in scalars if np.ptp(s) > 0)
    bound = 0.5 * np.sqrt(p * (1 - p) / ess).sum() + np.sqrt(np.log(1e4) / (2 * ess))
    return tv, bound, ess


def exact_target(edges, q, n):
    f = logp_fn(edges, q, n)
    partitions = pmp.set_partitions(n)
    logps = np.array([f(z) for z in partitions])
    return partitions, logps


def test_octahedron_four_colourings_exact():
    edges = octahedron_edges()
    partitions, logps = exact_target(edges, 4, 6)
    # The unnormalised mass q!/(q-K)! summed over partitions counts the colourings.
    assert np.isclose(np.exp(np.logaddexp.reduce(logps)), 96.0, rtol=1e-12)
    p = np.exp(logps - np.logaddexp.reduce(logps))
    assert np.sum(p > 0) == 4 and np.allclose(p[p > 0], 0.25)  # each partition: 24 colourings
    with pm.Model() as model:
        pmp.ProperColoring("z", edges, q=4, n=6)
    idata = sample(model, draws=2000, seed=4)
    tv, bound, ess = tv_against(idata, partitions, p)
    print(f"TV {tv:.4f} bound {bound:.4f} ESS {ess:.0f}")
    assert tv < bound, (tv, bound, ess)
    # Forward draws: exact uniform colourings, induced partitions.
    draws = pm.draw(pmp.ProperColoring.dist(edges, q=4, n=6), draws=4000, random_seed=5)
    index = partition_index(partitions)
    freq = np.bincount([index[tuple(d)] for d in draws], minlength=len(partitions)) / 4000
    bound_iid = 0.5 * np.sqrt(p * (1 - p) / 4000).sum() + np.sqrt(np.log(1e4) / 8000)
    assert 0.5 * np.abs(freq - p).sum() < bound_iid


def test_random_graph_three_colourings_exact():
    n, q = 6, 3
    edges = random_graph(n, 0.45, 13)  # 6 edges, 12 partitions with K in {2, 3}
    partitions, logps = exact_target(edges, q, n)
    p = np.exp(logps - np.logaddexp.reduce(logps))
    assert np.sum(p > 0) > 3 and len(edges) >= 4
    with pm.Model() as model:
        pmp.ProperColoring("z", edges, q=q, n=n)
    idata = sample(model, draws=2000, seed=12)
    tv, bound, ess = tv_against(idata, partitions, p)
    print(f"edges {edges.tolist()} TV {tv:.4f} bound {bound:.4f} ESS {ess:.0f}")
    assert tv < bound, (tv, bound, ess)
    draws = draws_of(idata, "z").reshape(-1, n)
    assert all(is_proper(d, edges) for d in draws[::50])


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
    partitions = pmp.set_partitions(n)
    joint = model.compile_logp(jacobian=False)
    logps = np.array([float(joint({"z": p})) for p in partitions])
    p = np.exp(logps - np.logaddexp.reduce(logps))
    idata = sample(model, draws=2000, seed=21)
    tv, bound, ess = tv_against(idata, partitions, p)
    print(f"TV {tv:.4f} bound {bound:.4f} ESS {ess:.0f}")
    assert tv < bound, (tv, bound, ess)
