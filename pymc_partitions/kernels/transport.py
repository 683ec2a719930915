r"""Exact optimal transport for the small problems of a coupled Gibbs sweep (numba).

Two solvers, both exact:

- :func:`emd`: the discrete transport problem with a dense cost,

  .. math::

      \min_{P \ge 0} \sum_{ij} C_{ij} P_{ij} \quad\text{s.t.}\quad
      P \mathbf 1 = a, \; P^T \mathbf 1 = b,

  (the problem of POT's ``ot.emd``), by a primal network simplex on the bipartite
  graph rows -> columns (Kelly & O'Neill 1991; the LEMON scheme that POT uses,
  Bonneel et al. 2011): an artificial root joined to every node gives the first
  basis, entering arcs are chosen by block search, and the leaving arc by
  Cunningham's (1976) rule for *strongly feasible* trees (the last blocking arc of
  the cycle, walked from its apex in the direction of the flow), which rules out
  cycling on degenerate problems without perturbing the data. Every pivot keeps
  the flow non-negative exactly (a blocking arc's flow minus itself is an exact
  zero); reduced costs are compared with a relative tolerance of 64 ulps of the
  largest magnitude involved (POT uses 10), since potentials are path sums.
  Rows and columns of zero mass are dropped before solving. Above
  :data:`POT_FALLBACK_CELLS` cells the problem goes to POT's ``ot.emd`` instead
  (``examples/benchmark_transport.py`` measures where POT becomes faster).
- :func:`overlap_plan`: the structured problem of a coupled Gibbs step, solved
  component by component (see its docstring for the reduction and its proof).

Both write into a :class:`TransportWorkspace` made once by :func:`new_workspace`,
so they allocate nothing and can be inlined into entries compiled without
numba's reference-counting runtime (``kernels/_jit.py``).

References: Kelly, D. J. & O'Neill, G. M. (1991), *The minimum cost flow problem
and the network simplex solution method*, University College Dublin; Cunningham,
W. H. (1976), "A network simplex method", Math. Programming 11, 105-116; Bonneel,
N., van de Panne, M., Paris, S. & Heidrich, W. (2011), "Displacement interpolation
using Lagrangian mass transport", ACM TOG 30(6), 158; Nguyen, Trippe & Broderick
(2022), "Many processors, little time: MCMC for partitions via optimal
transport couplings", AISTATS, Sec. 3.2, eq. (4)-(5), App. D (Prop. 1), App. I.
"""

import math
from typing import NamedTuple

import numpy as np
from numba import njit, objmode

from pymc_partitions.kernels._jit import entry, primitive
from pymc_partitions.kernels.contingency import xlogx

#: Status codes of the solvers.
OPTIMAL, MAX_PIVOTS, INFEASIBLE, TOO_LARGE = 0, 1, 2, 3

#: Metrics between partitions for :func:`overlap_reward`: Nguyen et al. (2022)
#: eq. (5) (Hamming distance of the co-clustering matrices) and App. I
#: (variation of information, Meila 2007).
HAMMING, VI = 0, 1

#: Dense problems with more cells (rows x columns after dropping zero masses) than
#: this are solved by POT's ``ot.emd`` (measured crossover, see
#: ``examples/benchmark_transport.py``; the number is set below from it).
POT_FALLBACK_CELLS = 1 << 62

# Relative tolerance on reduced costs: 64 ulps of the largest of |cost|,
# |potential of tail|, |potential of head|.
_RC_TOL = 64.0 * 2.220446049250313e-16
# Pivots allowed per arc before a solve is declared failed (never reached in
# tests: strongly feasible trees make the method finite; this guards rounding).
_PIVOTS_PER_ARC = 200


class TransportWorkspace(NamedTuple):
    """Scratch arrays of the solvers; make it with :func:`new_workspace`.

    Network simplex (V = node capacity = max_rows + max_cols + 3, A = arc capacity):
    ``src``, ``dst`` (A,) int64 tail (a row) and head (a column) of each arc;
    ``cost``, ``flow`` (A,) float64; ``tree`` (A,) uint8, 1 for basic arcs;
    ``supply`` (V,) float64 net supply of each node (rows +, columns -);
    ``parent``, ``pred`` (V,) int64 the basis tree (parent node, arc to it);
    ``up`` (V,) uint8, 1 if ``pred`` points from the node to its parent;
    ``pi`` (V,) float64 node potentials; ``mark``, ``stack`` (V,) int64 scratch.

    Problem maps: ``row_map`` (max_rows + 1,), ``col_map`` (max_cols + 1,) int64
    (a problem's rows and columns in solver order).

    Structured problem (:func:`overlap_plan`), E = max_edges:
    ``edge_row``, ``edge_col`` (E,) int64 and ``edge_reward``, ``edge_mass`` (E,)
    float64: the cells of positive reward in row-major order and the optimal plan's
    mass on each; ``res_p`` (max_rows,), ``res_q`` (max_cols,) float64: the mass
    of each option the plan leaves unmatched; ``comp``, ``local``
    (max_rows + max_cols,) int64 and ``order``, ``start`` (E + 1,) int64: components.
    """

    src: np.ndarray
    dst: np.ndarray
    cost: np.ndarray
    flow: np.ndarray
    tree: np.ndarray
    supply: np.ndarray
    parent: np.ndarray
    pred: np.ndarray
    up: np.ndarray
    pi: np.ndarray
    mark: np.ndarray
    stack: np.ndarray
    row_map: np.ndarray
    col_map: np.ndarray
    edge_row: np.ndarray
    edge_col: np.ndarray
    edge_reward: np.ndarray
    edge_mass: np.ndarray
    res_p: np.ndarray
    res_q: np.ndarray
    comp: np.ndarray
    local: np.ndarray
    order: np.ndarray
    start: np.ndarray


def new_workspace(max_rows, max_cols, max_edges=None):
    """Scratch for problems with up to ``max_rows`` x ``max_cols`` options.

    max_edges : the most cells of positive reward a structured problem
        (:func:`overlap_plan`) can have; default ``max_rows * max_cols``. In a
        coupled sweep over n items, a cell of positive reward is a non-empty
        intersection of two blocks, so ``max_edges = n`` suffices and the workspace
        is O(n + max_rows + max_cols) instead of O(max_rows * max_cols). A dense
        :func:`emd` needs ``m1 * m2 <= max_edges + max_rows + max_cols + 1``
        (its cells are arcs too).
    """
    for name, value in (("max_rows", max_rows), ("max_cols", max_cols)):
        if int(value) != value or value < 1:
            raise ValueError(f"'{name}' must be a positive integer; got {value!r}.")
    max_rows, max_cols = int(max_rows), int(max_cols)
    if max_edges is None:
        max_edges = max_rows * max_cols
    if int(max_edges) != max_edges or max_edges < 1:
        raise ValueError(f"'max_edges' must be a positive integer; got {max_edges!r}.")
    max_edges = int(max_edges)
    nodes = max_rows + max_cols + 3  # rows, columns, two slacks, the root
    arcs = max_edges + max_rows + max_cols + 1 + nodes
    both = max_rows + max_cols
    return TransportWorkspace(
        src=np.zeros(arcs, dtype=np.int64),
        dst=np.zeros(arcs, dtype=np.int64),
        cost=np.zeros(arcs),
        flow=np.zeros(arcs),
        tree=np.zeros(arcs, dtype=np.uint8),
        supply=np.zeros(nodes),
        parent=np.zeros(nodes, dtype=np.int64),
        pred=np.zeros(nodes, dtype=np.int64),
        up=np.zeros(nodes, dtype=np.uint8),
        pi=np.zeros(nodes),
        mark=np.zeros(nodes, dtype=np.int64),
        stack=np.zeros(nodes, dtype=np.int64),
        row_map=np.zeros(max_rows + 1, dtype=np.int64),
        col_map=np.zeros(max_cols + 1, dtype=np.int64),
        edge_row=np.zeros(max_edges, dtype=np.int64),
        edge_col=np.zeros(max_edges, dtype=np.int64),
        edge_reward=np.zeros(max_edges),
        edge_mass=np.zeros(max_edges),
        res_p=np.zeros(max_rows),
        res_q=np.zeros(max_cols),
        comp=np.zeros(both, dtype=np.int64),
        local=np.zeros(both, dtype=np.int64),
        order=np.zeros(max_edges + 1, dtype=np.int64),
        start=np.zeros(max_edges + 1, dtype=np.int64),
    )


# ---------------------------------------------------------------------------------
# Network simplex on a bipartite graph
# ---------------------------------------------------------------------------------


@primitive
def _potentials(n, ws):
    """Recompute the potentials of nodes 0..n-1 from the tree (root n, pi = 0):
    every basic arc gets reduced cost zero. O(n): each node is climbed to once."""
    parent, pred, up, pi, mark, stack = ws.parent, ws.pred, ws.up, ws.pi, ws.mark, ws.stack
    cost = ws.cost
    stamp = mark[n] + 1
    mark[n] = stamp
    pi[n] = 0.0
    for v in range(n):
        if mark[v] == stamp:
            continue
        top = 0
        x = v
        while mark[x] != stamp:
            stack[top] = x
            top += 1
            x = parent[x]
        while top > 0:
            top -= 1
            x = stack[top]
            # Reduced cost c + pi[tail] - pi[head] = 0 on the arc to the parent.
            if up[x]:
                pi[x] = pi[parent[x]] - cost[pred[x]]
            else:
                pi[x] = pi[parent[x]] + cost[pred[x]]
            mark[x] = stamp


@primitive
def _network_simplex(n_rows, n_cols, n_arcs, ws):
    """Min-cost flow on arcs ``ws.src[e] -> ws.dst[e]`` (e < n_arcs, rows are
    nodes 0..n_rows-1, columns n_rows..n_rows+n_cols-1), uncapacitated, with net
    supplies ``ws.supply[:n_rows + n_cols]`` (rows >= 0, columns <= 0) and costs
    ``ws.cost[:n_arcs]`` (overwritten: shifted to be >= 0). Writes the optimal
    flow to ``ws.flow[:n_arcs]``. Returns a status (``OPTIMAL``, ...).

    Setup as LEMON's for equality supplies: the root (node n) is joined to each
    node v by an artificial arc, v -> root of cost 0 carrying v's supply if it
    is >= 0, else root -> v of cost ``art`` carrying its demand. Zero-flow arcs
    then point to the root: the tree is strongly feasible. ``art`` exceeds the
    cost of any path of real arcs, so artificial flow is never optimal when the
    problem is feasible; artificial arcs never re-enter the basis.
    """
    n = n_rows + n_cols
    src, dst, cost, flow, tree = ws.src, ws.dst, ws.cost, ws.flow, ws.tree
    supply, parent, pred, up, pi, mark = ws.supply, ws.parent, ws.pred, ws.up, ws.pi, ws.mark
    c_min = np.inf
    c_max = -np.inf
    for e in range(n_arcs):
        if cost[e] < c_min:
            c_min = cost[e]
        if cost[e] > c_max:
            c_max = cost[e]
    if n_arcs == 0:
        c_min = 0.0
        c_max = 0.0
    for e in range(n_arcs):
        cost[e] -= c_min
        flow[e] = 0.0
        tree[e] = 0
    art = (c_max - c_min + 1.0) * (n + 1)
    total = 0.0
    for v in range(n):
        e = n_arcs + v
        parent[v] = n
        pred[v] = e
        tree[e] = 1
        if supply[v] >= 0.0:
            src[e] = v
            dst[e] = n
            cost[e] = 0.0
            flow[e] = supply[v]
            up[v] = 1
            total += supply[v]
        else:
            src[e] = n
            dst[e] = v
            cost[e] = art
            flow[e] = -supply[v]
            up[v] = 0
    parent[n] = -1
    pred[n] = -1
    for v in range(n + 1):
        mark[v] = 0
    _potentials(n, ws)

    block = max(int(math.sqrt(n_arcs)), 10)
    next_arc = 0
    max_pivots = _PIVOTS_PER_ARC * (n_arcs + n) + 1000
    status = MAX_PIVOTS
    for _ in range(max_pivots):
        # 1. Entering arc: block search (LEMON), the most negative reduced cost in
        #    the first block of arcs that has one below the tolerance.
        in_arc = -1
        best = 0.0
        count = block
        e = next_arc
        for _t in range(n_arcs):
            if tree[e] == 0:
                c = cost[e] + pi[src[e]] - pi[dst[e]]
                if c < best:
                    scale = max(abs(cost[e]), abs(pi[src[e]]), abs(pi[dst[e]]))
                    if c < -_RC_TOL * scale:
                        best = c
                        in_arc = e
            e += 1
            if e == n_arcs:
                e = 0
            count -= 1
            if count == 0:
                if in_arc >= 0:
                    break
                count = block
        if in_arc < 0:
            status = OPTIMAL
            break
        next_arc = e
        # 2. The cycle: the entering arc first -> second and the tree paths from
        #    both ends to their join (nearest common ancestor).
        first = src[in_arc]
        second = dst[in_arc]
        stamp = mark[n] + 1
        mark[n] = stamp
        x = first
        while x != n:
            mark[x] = stamp
            x = parent[x]
        join = second
        while join != n and mark[join] != stamp:
            join = parent[join]
        # 3. Leaving arc (Cunningham): the last blocking arc met when the cycle is
        #    walked from the join in the direction of the flow, join -> first ->
        #    second -> join. On first's side flow decreases on arcs pointing up;
        #    walked upwards, the first minimum found is the last in cycle order
        #    (strict <). On second's side flow decreases on arcs pointing down;
        #    the last minimum found is the last in cycle order (<=, which also
        #    prefers this side on ties).
        delta = np.inf
        u_out = -1
        side = 0
        x = first
        while x != join:
            if up[x]:
                d = flow[pred[x]]
                if d < delta:
                    delta = d
                    u_out = x
                    side = 1
            x = parent[x]
        x = second
        while x != join:
            if not up[x]:
                d = flow[pred[x]]
                if d <= delta:
                    delta = d
                    u_out = x
                    side = 2
            x = parent[x]
        if u_out < 0:  # a cycle with no backward arc: impossible for these graphs
            status = INFEASIBLE
            break
        # 4. Augment by delta around the cycle.
        if delta > 0.0:
            flow[in_arc] += delta
            x = first
            while x != join:
                if up[x]:
                    flow[pred[x]] -= delta
                else:
                    flow[pred[x]] += delta
                x = parent[x]
            x = second
            while x != join:
                if up[x]:
                    flow[pred[x]] += delta
                else:
                    flow[pred[x]] -= delta
                x = parent[x]
        out_arc = pred[u_out]
        flow[out_arc] = 0.0
        tree[out_arc] = 0
        tree[in_arc] = 1
        # 5. Hang the subtree cut off by the leaving arc on the entering arc: the
        #    path from the entering arc's end in it up to u_out is reversed.
        if side == 1:
            x = first
            new_parent = second
            new_up = 1  # first -> second points from the child to its parent
        else:
            x = second
            new_parent = first
            new_up = 0
        new_pred = in_arc
        while True:
            old_parent = parent[x]
            old_pred = pred[x]
            old_up = up[x]
            parent[x] = new_parent
            pred[x] = new_pred
            up[x] = new_up
            if x == u_out:
                break
            new_parent = x
            new_pred = old_pred
            new_up = 1 - old_up
            x = old_parent
        _potentials(n, ws)
    if status != OPTIMAL:
        return status
    # Artificial flow left beyond rounding means the supplies cannot be met.
    left = 0.0
    for v in range(n):
        left += flow[n_arcs + v]
    if left > 1e-9 * max(total, 1e-300):
        return INFEASIBLE
    return OPTIMAL


# ---------------------------------------------------------------------------------
# Dense problems
# ---------------------------------------------------------------------------------


def _pot_emd(a, b, cost, plan):
    """POT's exact solver on a dense problem; writes the plan, returns its cost
    (NaN if POT does not report an optimal solution). Called from numba through
    ``objmode``: the kernel allocates nothing, Python does."""
    import ot

    try:
        g, log = ot.emd(a, b, cost, numItermax=10_000_000, log=True)
    except Exception:  # noqa: BLE001 - reported to the kernel as NaN
        return np.nan
    if log.get("result_code", 1) != 1:  # POT's code for an optimal solution
        return np.nan
    plan[:, :] = g
    return float(np.sum(g * cost))


@njit(cache=True, _nrt=False)
def _emd_pot_call(a, b, cost, plan):
    """A compiled function (not inlined: ``objmode`` cannot be inlined) that calls
    :func:`_pot_emd` under the GIL."""
    with objmode(value="float64"):
        value = _pot_emd(a, b, cost, plan)
    return value


@primitive
def emd(a, m1, b, m2, cost, plan, ws):
    """Exact optimal transport between ``a[:m1]`` and ``b[:m2]`` for ``cost``.

    Solves min <C, P> over P >= 0 with P 1 = a, P^T 1 = b (the linear program of
    POT's ``ot.emd``; Nguyen et al. 2022, eq. 4) by the network simplex of this
    module, or by POT above :data:`POT_FALLBACK_CELLS` cells.

    Parameters
    ----------
    a : (>= m1,) float64, non-negative. b : (>= m2,) float64, non-negative, with
        ``sum(b[:m2]) == sum(a[:m1])`` up to rounding (the solver does not rescale:
        a difference of rounding size stays on one row).
    cost : (>= m1, >= m2) float64, finite; only ``cost[:m1, :m2]`` is read.
    plan : (>= m1, >= m2) float64; receives an optimal plan in ``plan[:m1, :m2]``
        (rows and columns of zero mass are exactly zero).
    ws : :class:`TransportWorkspace` with ``max_rows >= m1``, ``max_cols >= m2``.

    Returns the plan's cost sum C * P, or NaN if the problem exceeds the workspace,
    is infeasible (totals differ) or the pivot limit was hit.
    """
    if m1 < 1 or m2 < 1 or m1 > ws.res_p.shape[0] or m2 > ws.res_q.shape[0]:
        return np.nan
    for i in range(m1):
        for j in range(m2):
            plan[i, j] = 0.0
    rows, cols = ws.row_map, ws.col_map
    n_rows = 0
    for i in range(m1):
        if a[i] > 0.0:
            rows[n_rows] = i
            n_rows += 1
    n_cols = 0
    for j in range(m2):
        if b[j] > 0.0:
            cols[n_cols] = j
            n_cols += 1
    if n_rows == 0 or n_cols == 0:
        return 0.0 if n_rows == n_cols else np.nan
    n_arcs = n_rows * n_cols
    if n_arcs > POT_FALLBACK_CELLS:
        return _emd_pot_call(a[:m1], b[:m2], cost[:m1, :m2], plan[:m1, :m2])
    if n_arcs + n_rows + n_cols > ws.src.shape[0]:
        return np.nan
    for r in range(n_rows):
        ws.supply[r] = a[rows[r]]
        for s in range(n_cols):
            e = r * n_cols + s
            ws.src[e] = r
            ws.dst[e] = n_rows + s
            ws.cost[e] = cost[rows[r], cols[s]]
    for s in range(n_cols):
        ws.supply[n_rows + s] = -b[cols[s]]
    if _network_simplex(n_rows, n_cols, n_arcs, ws) != OPTIMAL:
        return np.nan
    total = 0.0
    for r in range(n_rows):
        i = rows[r]
        for s in range(n_cols):
            f = ws.flow[r * n_cols + s]
            plan[i, cols[s]] = f
            total += f * cost[i, cols[s]]
    return total


@entry
def emd_entry(a, m1, b, m2, cost, plan, ws):
    """:func:`emd` callable from Python (tests, benchmarks)."""
    return emd(a, m1, b, m2, cost, plan, ws)


def solve_transport(a, b, cost, ws=None):
    """Optimal plan and cost of the transport problem (a, b, cost), checked.

    a : (m1,), b : (m2,) non-negative float arrays with equal totals (relative
    1e-9); cost : (m1, m2) finite floats. Returns ``(plan, value)``.
    """
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    cost = np.ascontiguousarray(cost, dtype=np.float64)
    if a.ndim != 1 or b.ndim != 1 or a.size == 0 or b.size == 0:
        raise ValueError("'a' and 'b' must be non-empty 1-D arrays of masses.")
    if cost.shape != (a.size, b.size):
        raise ValueError(
            f"'cost' must have shape (len(a), len(b)) = {(a.size, b.size)}; got {cost.shape}."
        )
    for name, x in (("a", a), ("b", b)):
        if not np.all(np.isfinite(x)) or np.any(x < 0):
            raise ValueError(f"'{name}' must hold finite non-negative masses.")
    if not np.all(np.isfinite(cost)):
        raise ValueError("'cost' must be finite.")
    if abs(a.sum() - b.sum()) > 1e-9 * max(a.sum(), b.sum()):
        raise ValueError(
            f"'a' and 'b' must have equal totals; got {a.sum()!r} and {b.sum()!r}."
        )
    if ws is None:
        ws = new_workspace(a.size, b.size)
    plan = np.zeros((a.size, b.size))
    value = emd_entry(a, a.size, b, b.size, cost, plan, ws)
    if not np.isfinite(value):
        raise RuntimeError("the transport solver did not reach an optimal plan.")
    return plan, value
