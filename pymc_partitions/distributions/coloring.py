r"""``pmp.ProperColoring``: the vertex partition induced by a uniformly random proper
q-colouring of a graph (Nguyen et al. 2022, App. G.1, eq. 15).

.. math:: p(z) \propto 1\{\text{no edge within a block of } z\}\, \frac{q!}{(q-K)!}

(K blocks). The partition is the target itself (no likelihood is needed), or a
prior under collapsed likelihoods. In the kernels the indicator is a component
(:mod:`pymc_partitions.kernels.components.coloring`) that the op supplies through
:meth:`~pymc_partitions.distributions.partition.PartitionPriorRV.constraint_component`,
and the falling factorial is the prior
(:mod:`pymc_partitions.kernels.priors.falling_factorial`).
"""

import heapq
import time
import warnings
from functools import lru_cache

import numpy as np
import pytensor.tensor as pt

from pymc_partitions.distributions.partition import (
    ConstraintComponent,
    PartitionPrior,
    PartitionPriorRV,
    batched_draws,
    labels_in_range,
    start_value,
)
from pymc_partitions.distributions.priors import constant_n, size_stats
from pymc_partitions.distributions.validation import constant_integer, constant_value
from pymc_partitions.kernels.components import coloring as coloring_kernel
from pymc_partitions.kernels.priors import falling_factorial
from pymc_partitions.partitions import as_array, canonicalize

#: Nodes the exact colouring search may visit before giving up ...
SEARCH_BUDGET = 200_000
#: ... and its wall-time budget in seconds.
SEARCH_SECONDS = 10.0
#: Candidate colourings the rejection sampler of forward draws may try.
DRAW_BUDGET = 1 << 22


# --------------------------------------------------------------------------------------
# Graph input
# --------------------------------------------------------------------------------------


def graph_edges(graph, n, owner):
    """``(edges, n)``: the graph as a sorted (m, 2) int64 array of distinct edges
    (u < v) on vertices 0..n-1, from a dense symmetric 0/1 adjacency matrix, a
    scipy.sparse adjacency matrix, a networkx graph with nodes 0..n-1, or an (m, 2)
    integer edge list (then ``n`` is required). A square array whose side equals
    ``n`` (or with ``n`` omitted) is read as an adjacency matrix."""
    if hasattr(graph, "edges") and hasattr(graph, "number_of_nodes"):  # networkx
        nodes = sorted(graph.nodes())
        n_g = len(nodes)
        if nodes != list(range(n_g)):
            raise ValueError(
                f"{owner}: 'graph': the networkx graph's nodes must be 0..n-1; relabel them with "
                f"networkx.convert_node_labels_to_integers."
            )
        if n is not None and int(n) != n_g:
            raise ValueError(f"{owner}: 'n' = {n} but the graph has {n_g} nodes.")
        edges = np.array(list(graph.edges()), dtype=np.int64).reshape(-1, 2)
        return _edge_list(edges, n_g, owner), n_g
    if hasattr(graph, "tocoo"):  # scipy.sparse
        coo = graph.tocoo()
        if coo.shape[0] != coo.shape[1]:
            raise ValueError(f"{owner}: 'graph' (the adjacency matrix) must be square, got shape {coo.shape}.")
        side = coo.shape[0]
        if n is not None and int(n) != side:
            raise ValueError(f"{owner}: 'n' = {n} but the adjacency matrix is {side} x {side}.")
        data = np.asarray(coo.data)
        keep = data != 0
        if not np.all((data[keep] == 1)):
            raise ValueError(f"{owner}: 'graph' (the adjacency matrix) must be 0/1, found {data[keep & (data != 1)][0]!r}.")
        rows, cols = coo.row[keep], coo.col[keep]
        _check_adjacency_pairs(rows, cols, owner)
        return _edge_list(np.stack([rows, cols], axis=1), side, owner), side
    arr = as_array(graph, "graph", owner, "an (n, n) 0/1 adjacency matrix or an (m, 2) edge list")
    if arr.ndim != 2 or arr.dtype.kind not in "iufb":
        raise ValueError(
            f"{owner}: 'graph' must be a square 0/1 adjacency matrix, a scipy.sparse matrix, or "
            f"an (m, 2) integer edge list with n; got an array of shape {arr.shape}."
        )
    square = arr.shape[0] == arr.shape[1] and (n is None or int(n) == arr.shape[0])
    if square:
        if not np.all((arr == 0) | (arr == 1)):
            raise ValueError(f"{owner}: 'graph' (the adjacency matrix) must contain only 0 and 1.")
        rows, cols = np.nonzero(arr)
        _check_adjacency_pairs(rows, cols, owner)
        return _edge_list(np.stack([rows, cols], axis=1), arr.shape[0], owner), arr.shape[0]
    if arr.shape[1] != 2:
        raise ValueError(
            f"{owner}: 'graph' of shape {arr.shape} is neither a square adjacency matrix "
            f"(n x n) nor an (m, 2) edge list."
        )
    if n is None:
        raise ValueError(f"{owner}: 'graph' is an (m, 2) edge list, which needs the number of vertices 'n'.")
    if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
        raise ValueError(f"{owner}: 'graph' (the edge list) must hold integer vertex numbers.")
    return _edge_list(arr.astype(np.int64), int(n), owner), int(n)


def _check_adjacency_pairs(rows, cols, owner):
    if np.any(rows == cols):
        v = int(rows[rows == cols][0])
        raise ValueError(
            f"{owner}: 'graph' (the adjacency matrix) has a self-loop at vertex {v} (non-zero diagonal); "
            f"a vertex adjacent to itself has no proper colouring."
        )
    pairs = set(zip(rows.tolist(), cols.tolist()))
    for u, v in pairs:
        if (v, u) not in pairs:
            raise ValueError(
                f"{owner}: 'graph' (the adjacency matrix) is not symmetric (entry ({u}, {v}) is 1, "
                f"({v}, {u}) is 0). Pass a symmetric matrix (A + A.T > 0) for an undirected graph."
            )


def _edge_list(edges, n, owner):
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if n < 1:
        raise ValueError(f"{owner}: 'graph' needs at least one vertex.")
    if edges.size and (edges.min() < 0 or edges.max() >= n):
        raise ValueError(
            f"{owner}: 'graph': edge list vertices must lie in 0..n-1 = 0..{n - 1}; found "
            f"{int(edges.min())}..{int(edges.max())}."
        )
    if np.any(edges[:, 0] == edges[:, 1]):
        v = int(edges[edges[:, 0] == edges[:, 1]][0, 0])
        raise ValueError(f"{owner}: 'graph' has a self-loop at vertex {v}: a vertex adjacent to itself has no proper colouring.")
    edges = np.sort(edges, axis=1)
    return np.unique(edges, axis=0) if edges.size else edges


def _neighbours(edges, n):
    adj = [set() for _ in range(n)]
    for u, v in edges.tolist():
        adj[u].add(v)
        adj[v].add(u)
    return adj


# --------------------------------------------------------------------------------------
# Colourability: greedy, cliques, exact search
# --------------------------------------------------------------------------------------


def dsatur(adj):
    """Greedy DSatur colouring (Brélaz 1979): colour next the vertex whose
    neighbours use the most distinct colours (ties: higher degree, then lower
    index), with the smallest colour none of them uses. A heap with lazy updates:
    O((n + m) log n). Returns an (n,) int64 colour vector."""
    n = len(adj)
    colour = np.full(n, -1, dtype=np.int64)
    seen = [set() for _ in range(n)]
    heap = [(0, -len(adj[v]), v) for v in range(n)]
    heapq.heapify(heap)
    while heap:
        neg_sat, _, v = heapq.heappop(heap)
        if colour[v] >= 0 or -neg_sat != len(seen[v]):
            continue  # coloured already, or a stale entry
        c = 0
        while c in seen[v]:
            c += 1
        colour[v] = c
        for u in adj[v]:
            if colour[u] < 0 and c not in seen[u]:
                seen[u].add(c)
                heapq.heappush(heap, (-len(seen[u]), -len(adj[u]), u))
    return colour


def greedy_clique(adj):
    """A large clique found greedily from every vertex (a lower bound on the
    chromatic number). Returns a sorted list of vertices."""
    best = []
    order = sorted(range(len(adj)), key=lambda u: -len(adj[u]))
    for v in order:
        if len(adj[v]) + 1 <= len(best):
            continue
        clique, cand = [v], set(adj[v])
        while cand:
            u = max(cand, key=lambda w: (len(adj[w] & cand), -w))
            clique.append(u)
            cand &= adj[u]
        if len(clique) > len(best):
            best = clique
    return sorted(best)


def exact_colouring(adj, q, budget=SEARCH_BUDGET, seconds=SEARCH_SECONDS):
    """Backtracking search for a proper q-colouring (DSatur order, new colours only
    in increasing order). Returns ``(colour vector or None, exhausted)``:
    ``exhausted`` is True when the search proved no colouring exists and False when
    it stopped at ``budget`` nodes or after ``seconds``."""
    n = len(adj)
    colour = [-1] * n
    nodes = [0]
    deadline = time.monotonic() + seconds

    def pick():
        best, key = -1, None
        for u in range(n):
            if colour[u] < 0:
                sat = len({colour[w] for w in adj[u] if colour[w] >= 0})
                k = (sat, len(adj[u]))
                if key is None or k > key:
                    best, key = u, k
        return best

    def search(n_used):
        v = pick()
        if v < 0:
            return True
        nodes[0] += 1
        if nodes[0] > budget or (nodes[0] % 1024 == 0 and time.monotonic() > deadline):
            raise TimeoutError
        used = {colour[w] for w in adj[v]}
        for c in range(min(n_used + 1, q)):
            if c not in used:
                colour[v] = c
                if search(max(n_used, c + 1)):
                    return True
                colour[v] = -1
        return False

    try:
        found = search(0)
    except TimeoutError:
        return None, False
    return (np.array(colour, dtype=np.int64) if found else None), True


@lru_cache(maxsize=32)
def _start(edges_bytes, n, q):
    edges = np.frombuffer(edges_bytes, dtype=np.int64).reshape(-1, 2)
    adj = _neighbours(edges, n)
    colour = dsatur(adj)
    if colour.max() + 1 <= q:
        return canonicalize(colour), "greedy"
    colour, exhausted = exact_colouring(adj, q)
    if colour is not None:
        return canonicalize(colour), "search"
    return None, "none" if exhausted else "budget"


def starting_partition(edges, n, q, owner):
    """A proper q-colouring's partition (canonical labels) to start from: DSatur,
    then an exact search; a clear error when the graph has none or none was found."""
    adj = _neighbours(edges, n)
    clique = greedy_clique(adj)
    if len(clique) > q:
        shown = clique if len(clique) <= 12 else clique[:12] + ["..."]
        raise ValueError(
            f"{owner}: the graph has {len(clique)} mutually adjacent vertices {shown} (a clique "
            f"larger than q = {q}), so it has no proper {q}-colouring. Use q >= {len(clique)}."
        )
    labels, how = _start(np.ascontiguousarray(edges).tobytes(), n, q)
    if how == "none":
        raise ValueError(
            f"{owner}: the graph has no proper {q}-colouring (exhaustive search: its chromatic "
            f"number exceeds q). Increase q (a greedy colouring uses {int(dsatur(adj).max()) + 1})."
        )
    return labels, how


# --------------------------------------------------------------------------------------
# The distribution
# --------------------------------------------------------------------------------------


def _constants(node):
    edges, q, n = node.op.dist_params(node)
    edges = np.asarray(constant_value(edges), dtype=np.int64).reshape(-1, 2)
    return edges, int(constant_value(q)), int(constant_value(n))


class ColoringMixingWarning(UserWarning):
    """The partition samplers may not be irreducible on this colouring problem."""


class ProperColoringRV(PartitionPriorRV):
    """Vertex partition induced by a uniform proper q-colouring of a graph."""

    name = "proper_coloring"
    signature = "(m,e),(),()->(n)"
    dtype = "int64"
    _print_name = ("ProperColoring", "\\operatorname{ProperColoring}")
    hyper_names = ("edges", "q")

    def _supp_shape_from_params(self, dist_params, param_shapes=None):
        n = dist_params[-1]
        return (n if n.ndim == 0 else n.flatten()[0],)

    def check_hyper_values(self, values, owner):
        pass  # constants, validated when the variable was created

    def kernel_prior_params(self, values, n):
        return falling_factorial.make_params(int(np.asarray(values[1])), n)

    def constraint_component(self, node):
        edges, q, n = _constants(node)
        max_degree = int(np.bincount(edges.ravel(), minlength=n).max()) if edges.size else 0
        if q < max_degree + 2:
            warnings.warn(
                f"ProperColoring with q = {q} colours on a graph of maximum degree "
                f"{max_degree}: moves that recolour one vertex (Gibbs) or split and merge "
                f"blocks are guaranteed to reach every proper colouring only for "
                f"q >= max degree + 2 = {max_degree + 2} (Jerrum 1995). Below that, some "
                f"colourings can be frozen (every vertex sees all other colours) and the "
                f"sampler never visits or never leaves them, so its draws can miss part of "
                f"the posterior without any warning from the diagnostics. Use q >= "
                f"{max_degree + 2}, or check the sampler against the exact posterior on a "
                f"small graph of the same kind.",
                ColoringMixingWarning,
                stacklevel=2,
            )
        return ConstraintComponent(
            params=coloring_kernel.make_params(q),
            data=coloring_kernel.make_data(edges, n),
            alloc=lambda n_slots: coloring_kernel.alloc_stats(n_slots, n),
        )

    def check_support(self, labels, node, where):
        edges, q, n = _constants(node)
        clash = labels[edges[:, 0]] == labels[edges[:, 1]] if edges.size else np.zeros(0, bool)
        if np.any(clash):
            u, v = edges[np.flatnonzero(clash)[0]]
            raise ValueError(
                f"{where}: vertices {u} and {v} are adjacent but in the same block, so the "
                f"partition is not induced by a proper colouring (probability 0). Start from a "
                f"proper colouring (the default starting point is one)."
            )
        K = np.unique(labels).shape[0]
        if K > q:
            raise ValueError(
                f"{where}: the partition has {K} blocks, more than the q = {q} colours. "
                f"Start from a partition with at most q blocks."
            )

    @classmethod
    def rng_fn(cls, rng, edges, q, n, size):
        q = int(np.asarray(q).ravel()[0])
        edges = np.asarray(edges, dtype=np.int64)
        edges = edges.reshape(-1, *edges.shape[-2:])[0] if edges.ndim > 2 else edges
        # Constants, not batched: one draw per entry of size.
        return batched_draws(lambda n: coloring_draw(rng, edges, q, n), n, size)


proper_coloring = ProperColoringRV()


def coloring_draw(rng, edges, q, n, budget=DRAW_BUDGET):
    """One exact draw: a uniform colouring in {0..q-1}^n conditioned on being proper
    (rejection), returned as the canonical labels of the partition it induces.
    Expected cost q^n / P_G(q) candidates; beyond ``budget`` a clear error."""
    tried, batch = 0, 1024
    while tried < budget:
        cand = rng.integers(0, q, size=(batch, n))
        ok = np.all(cand[:, edges[:, 0]] != cand[:, edges[:, 1]], axis=1) if edges.size else np.ones(batch, bool)
        hit = np.flatnonzero(ok)
        if hit.size:
            return canonicalize(cand[hit[0]])
        tried += batch
        batch = min(batch * 2, 1 << 16)
    raise RuntimeError(
        f"ProperColoring: no proper {q}-colouring among {tried} uniform candidates; exact forward "
        f"draws by rejection are impractical for this graph. Sample the partition with pm.sample "
        f"(pmp.Gibbs targets it exactly) instead."
    )


def proper_coloring_logp(labels, edges, q, n):
    r"""Unnormalised log probability: :math:`\log q!/(q-K)!` if no edge lies within a
    block and K <= q, else -inf. (The normaliser, the number of proper q-colourings,
    is a constant.)"""
    n_items = labels.shape[-1]
    _, _, K = size_stats(labels)
    proper = pt.all(pt.neq(labels[edges[:, 0]], labels[edges[:, 1]]))
    qf = q.astype("float64")
    logp = pt.gammaln(qf + 1.0) - pt.gammaln(pt.maximum(qf - K, 0.0) + 1.0)
    valid = labels_in_range(labels, n_items) & pt.eq(n_items, n) & proper & pt.le(K, q)
    return pt.switch(valid, logp, -np.inf)


class ProperColoring(PartitionPrior):
    r"""Partition of a graph's vertices induced by a uniformly random proper
    q-colouring (Nguyen et al. 2022, App. G.1, eq. 15).

    .. math:: p(z) \propto 1\{\text{no edge within a block}\}\;\frac{q!}{(q-K)!}

    (:math:`q!/(q-K)!` colourings induce each partition with K <= q blocks).

    Parameters
    ----------
    graph : array_like, scipy.sparse matrix, networkx graph, or (m, 2) edge list
        An undirected simple graph: a symmetric 0/1 adjacency matrix with zero
        diagonal (dense or sparse), a networkx graph with nodes 0..n-1, or an
        (m, 2) integer edge list together with ``n``.
    q : int
        Number of colours (a constant, >= 1).
    n : int, optional
        Number of vertices; required with an edge list.
    summaries : bool, default True
        As for :class:`~pymc_partitions.CRP`.

    Notes
    -----
    The variable may be sampled on its own (the prior is the target: no likelihood
    is needed) or observed through collapsed likelihoods. :class:`pymc_partitions.Gibbs`
    moves one vertex at a time among the blocks holding none of its neighbours
    (and a new block while K < q). The log probability is unnormalised: it omits
    the constant -log P_G(q), P_G the chromatic polynomial.

    ``support_point`` is a proper colouring found by DSatur (Brélaz 1979), or by an
    exact search when greedy needs more than q colours. Creating the variable
    raises a ValueError when the graph has more than q mutually adjacent vertices
    or the search proves no proper q-colouring exists; if the search exhausts its
    budget, pass a proper colouring's labels as ``initval=``. Starting values that
    put adjacent vertices in one block or use more than q blocks are rejected with
    a clear error.

    Forward draws are exact (uniform colourings conditioned on being proper, by
    rejection) and raise a clear error when the acceptance rate is too low.
    """

    rv_op = proper_coloring

    @classmethod
    def dist(cls, graph, q, n=None, **kwargs):
        owner = "ProperColoring"
        if n is not None:
            n = constant_n(n, owner)
        edges, n = graph_edges(graph, n, owner)
        q = constant_integer("q", q, owner, minimum=1)
        starting_partition(edges, n, q, owner)  # clear errors now rather than at sampling
        return super().dist(
            [pt.constant(edges, dtype="int64"), pt.constant(q, dtype="int64"),
             pt.constant(n, dtype="int64")],
            **kwargs,
        )

    def support_point(rv, size, edges, q, n):
        edges_c = np.asarray(constant_value(edges), dtype=np.int64).reshape(-1, 2)
        q_c, n_c = int(constant_value(q)), int(constant_value(n))
        labels, how = starting_partition(edges_c, n_c, q_c, "ProperColoring")
        if labels is None:
            raise ValueError(
                f"ProperColoring: no proper {q_c}-colouring found within the search budget "
                f"({SEARCH_BUDGET} nodes, {SEARCH_SECONDS:g} s) and none proved impossible. Pass a proper colouring's "
                f"labels as initval= (or initvals= to pm.sample), or increase q."
            )
        return start_value(size, pt.as_tensor_variable(labels.astype(np.int64)))

    def logp(value, edges, q, n):
        return proper_coloring_logp(value, edges, q, n)


__all__ = ["ProperColoring", "dsatur", "exact_colouring", "graph_edges", "greedy_clique"]
