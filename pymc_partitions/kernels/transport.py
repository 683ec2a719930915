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
  component by component (see its docstring for the reduction and its proof):
  single-edge components in closed form (the whole step when the chains are
  close); the others by a greedy sub-coupling certified optimal by its duals
  (:func:`_greedy_certified`, nearly every step of a coupled sweep), else by the
  network simplex started from that greedy basis instead of an artificial root
  (:func:`_greedy_tree`), or by POT above the crossover. Per draw
  (``examples/benchmark_transport.py``): ~0.1 us for K = 5 single edges, ~0.2 us
  with a 2 x 2 component, against 0.2 and 0.8-2.5 us for the solver of every
  component by the simplex from an artificial root.

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

from pymc_partitions.kernels._jit import entry, primitive, routine
from pymc_partitions.kernels.contingency import xlogx

#: Status codes of the solvers.
OPTIMAL, MAX_PIVOTS, INFEASIBLE, TOO_LARGE = 0, 1, 2, 3

#: Metrics between partitions for :func:`overlap_reward`: Nguyen et al. (2022)
#: eq. (5) (Hamming distance of the co-clustering matrices) and App. I
#: (variation of information, Meila 2007).
HAMMING, VI = 0, 1

#: Problems with more cells than this (rows x columns after dropping zero masses,
#: slacks included) are solved by POT's ``ot.emd`` through ``objmode``: the
#: crossover measured by ``examples/benchmark_transport.py`` on dense random
#: problems (three runs on 2 shared cores): POT called from Python is faster from
#: K = 50-60, POT called through ``objmode`` (what a kernel pays: 50-100 us more)
#: from K = 70, 80 and 120; 80 x 80 cells. Near it the two differ by < 30 %.
POT_FALLBACK_CELLS = 80 * 80

# Relative tolerance on reduced costs: 64 ulps of the largest of |cost|,
# |potential of tail|, |potential of head|.
_RC_TOL = 64.0 * 2.220446049250313e-16
#: At most this many edges outside single-edge components are solved as one
#: problem by :func:`overlap_plan` (more: component by component).
MERGE_EDGES = 64

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
    (max_rows + max_cols,), ``count`` (max_rows + max_cols + 1,), ``edge_comp``,
    ``order``, ``edge_list`` (E,) int64: the options' degrees, the edges that need
    a solver, their connected components and their order.

    ``pot_above`` (1,) int64: problems with more cells (rows x columns, slacks
    included) go to POT's ``ot.emd`` (:func:`new_workspace`).
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
    count: np.ndarray
    edge_comp: np.ndarray
    order: np.ndarray
    edge_list: np.ndarray
    pot_above: np.ndarray


def new_workspace(max_rows, max_cols, max_edges=None, pot_above=None):
    """Scratch for problems with up to ``max_rows`` x ``max_cols`` options.

    max_edges : the most cells of positive reward a structured problem
        (:func:`overlap_plan`) can have; default ``max_rows * max_cols``. In a
        coupled sweep over n items, a cell of positive reward is a non-empty
        intersection of two blocks, so ``max_edges = n`` suffices and the workspace
        is O(n + max_rows + max_cols) instead of O(max_rows * max_cols). A dense
        :func:`emd` needs ``m1 * m2 <= max_edges + max_rows + max_cols + 1``
        (its cells are arcs too).
    pot_above : problems with more cells than this are solved by POT's ``ot.emd``
        (called through numba's ``objmode``); default :data:`POT_FALLBACK_CELLS`,
        the measured crossover. 0 sends every problem to POT (tests), a huge value
        none.
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
    if pot_above is None:
        pot_above = POT_FALLBACK_CELLS
    if int(pot_above) != pot_above or pot_above < 0:
        raise ValueError(f"'pot_above' must be a non-negative integer; got {pot_above!r}.")
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
        count=np.zeros(both + 1, dtype=np.int64),
        edge_comp=np.zeros(max_edges, dtype=np.int64),
        order=np.zeros(max_edges, dtype=np.int64),
        edge_list=np.zeros(max_edges, dtype=np.int64),
        pot_above=np.array([min(int(pot_above), 2**62)], dtype=np.int64),
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


def _pot_solve(n_rows, n_cols, n_arcs, src, dst, cost, supply, flow):
    """The problem of :func:`_network_simplex` solved by POT's ``ot.emd``; returns
    a status. Cells without an arc get a cost above that of any path of real arcs
    (the bound of the artificial arcs), so they carry no flow when the problem is
    feasible; flow left on one means it is not. Runs in Python: called from
    compiled code through ``objmode`` (the kernel allocates nothing, Python does).
    """
    import ot

    n = n_rows + n_cols
    tails = src[:n_arcs]
    heads = dst[:n_arcs] - n_rows
    costs = cost[:n_arcs]
    low, high = (float(costs.min()), float(costs.max())) if n_arcs else (0.0, 0.0)
    # Costs shifted to be >= 0 (the same constant on every cell: same optimal
    # plans): POT 0.9.7 reports a feasible problem with all costs negative as
    # infeasible and returns a zero plan.
    dense = np.full((n_rows, n_cols), (high - low + 1.0) * (n + 1))
    dense[tails, heads] = costs - low
    a = np.maximum(supply[:n_rows], 0.0)
    b = np.maximum(-supply[n_rows:n], 0.0)
    try:
        plan, log = ot.emd(a, b, dense, numItermax=10_000_000, log=True)
    except Exception:  # noqa: BLE001 - any failure is reported as a status
        return INFEASIBLE
    if log.get("result_code", 1) != 1:  # POT's code for an optimal solution
        return MAX_PIVOTS if log.get("result_code") == 3 else INFEASIBLE
    flow[:n_arcs] = plan[tails, heads]
    if flow[:n_arcs].sum() < plan.sum() * (1.0 - 1e-9):
        return INFEASIBLE
    return OPTIMAL


@njit(cache=True, _nrt=False)
def _pot_call(n_rows, n_cols, n_arcs, src, dst, cost, supply, flow):
    """:func:`_pot_solve` from compiled code. A separate compiled function, not a
    primitive: numba cannot inline a function with an ``objmode`` block."""
    with objmode(status="int64"):
        status = _pot_solve(n_rows, n_cols, n_arcs, src, dst, cost, supply, flow)
    return status


@primitive
def _pivot_loop(n, n_arcs, ws):
    """Pivots of the primal network simplex from the strongly feasible basis tree
    in ``ws`` (``parent``, ``pred``, ``up``, ``tree``, ``flow``, potentials ``pi``
    and a zeroed ``mark`` for nodes 0..n, root n) until no arc e < ``n_arcs`` has a
    negative reduced cost. Returns ``OPTIMAL``, ``MAX_PIVOTS`` or ``INFEASIBLE``.

    Entering arc by block search (LEMON), leaving arc by Cunningham's (1976) rule,
    which keeps the tree strongly feasible and so rules out cycling. Inlined into
    the routines that solve (a call passing the workspace costs ~50 ns, as much as
    a small solve).
    """
    src, dst, cost, flow, tree = ws.src, ws.dst, ws.cost, ws.flow, ws.tree
    parent, pred, up, pi, mark = ws.parent, ws.pred, ws.up, ws.pi, ws.mark
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
    return status


@routine
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
    if n_rows * n_cols > ws.pot_above[0]:
        return _pot_call(n_rows, n_cols, n_arcs, ws.src, ws.dst, ws.cost, ws.supply, ws.flow)
    src, dst, cost, flow, tree = ws.src, ws.dst, ws.cost, ws.flow, ws.tree
    supply, parent, pred, up, mark = ws.supply, ws.parent, ws.pred, ws.up, ws.mark
    c_min = np.inf
    c_max = -np.inf
    for e in range(n_arcs):
        c_min = min(c_min, cost[e])
        c_max = max(c_max, cost[e])
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
    status = _pivot_loop(n, n_arcs, ws)
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


@primitive
def emd(a, m1, b, m2, cost, plan, ws):
    """Exact optimal transport between ``a[:m1]`` and ``b[:m2]`` for ``cost``.

    Solves min <C, P> over P >= 0 with P 1 = a, P^T 1 = b (the linear program of
    POT's ``ot.emd``; Nguyen et al. 2022, eq. 4) by the network simplex of this
    module, or by POT above ``ws.pot_above`` cells (:func:`new_workspace`).

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


# ---------------------------------------------------------------------------------
# The structured problem of a coupled Gibbs step
# ---------------------------------------------------------------------------------


@primitive
def overlap_reward(count, metric):
    r"""The reward w(n) >= 0 of putting the left-out item into X's block a and Y's
    block b whose intersection (before adding the item) has ``count`` = n items;
    w(0) = 0 and w(n) > 0 for n >= 1.

    A coupled step's cost (Nguyen et al. 2022, App. D, eq. 10) is, up to a constant,
    C[a, b] = r_a + s_b - w(n_ab):

    - ``HAMMING`` (eq. 5): C = 2 |A_a| + 2 |B_b| - 4 n_ab, so w(n) = 4 n;
    - ``VI`` (App. I; Meila 2007, eq. 16): with g(x) = x log x, N VI changes by
      [g(|A_a| + 1) - g(|A_a|)] + [g(|B_b| + 1) - g(|B_b|)] - 2 [g(n + 1) - g(n)],
      so w(n) = 2 [g(n + 1) - g(n)]. The factor 1/N is dropped: a positive scale
      leaves the optimal plans unchanged.
    """
    if metric == HAMMING:
        return 4.0 * count
    return 2.0 * (xlogx(count + 1.0) - xlogx(1.0 * count))


@primitive
def _find(comp, v):
    """Root of v's set in the union-find forest ``comp`` (path halving)."""
    while comp[v] != v:
        comp[v] = comp[comp[v]]
        v = comp[v]
    return v


@primitive
def _sort_by_reward(order, t0, t1, reward):
    """Shell sort of ``order[t0:t1]`` by decreasing ``reward[order[t]]`` (Knuth's
    gaps 1, 4, 13, ...; in place, ties in any order)."""
    gap = 1
    while gap < (t1 - t0) // 3:
        gap = 3 * gap + 1
    while gap > 0:
        for i in range(t0 + gap, t1):
            e = order[i]
            w = reward[e]
            j = i
            while j >= t0 + gap and reward[order[j - gap]] < w:
                order[j] = order[j - gap]
                j -= gap
            order[j] = e
        gap //= 3


@primitive
def _greedy_tree(n_rows, n_cols, n_edges, ws):
    """A strongly feasible first basis for :func:`_pivot_loop` on the problem of
    :func:`_solve_component` (rows 0..R-1, slack row R, columns R+1..R+C, the slack
    column n = R+C+1 as the root; arcs: its edges 0..E-1 by decreasing reward, then
    row -> slack column, slack row -> column, slack row -> slack column).

    The greedy sub-coupling: edges in order, each carrying x = min of its two
    options' remaining masses, the rest of each option on its slack arc. Its edges
    of positive flow form a forest, each with at most one option left with mass:
    every such edge empties one of its options (the one it hangs below its other
    option in the tree; the column when both empty), which receives no edge after
    it, so each option is emptied by at most one edge (the last it has) and a cycle,
    whose earliest edge is not the last at either of its options, cannot form. An
    option of each tree is not emptied by its tree: if it keeps mass, it hangs on
    its slack arc with that mass; else it is a row (a column emptied with its row
    hangs below it) and hangs on its slack arc with flow 0, which points to the
    root. The slack row hangs on the root by the matched total. So every arc of zero
    flow points to the root: the tree is strongly feasible (Cunningham 1976), and
    often already optimal (a star: a fractional knapsack, solved by greedy).
    """
    src, dst, flow, tree = ws.src, ws.dst, ws.flow, ws.tree
    parent, pred, up, res = ws.parent, ws.pred, ws.up, ws.pi  # pi: scratch until the end
    slack_row = n_rows
    n = n_rows + 1 + n_cols
    for v in range(n_rows):
        res[v] = ws.supply[v]
        parent[v] = -1
    for v in range(slack_row + 1, n):
        res[v] = -ws.supply[v]
        parent[v] = -1
    matched = 0.0
    for k in range(n_edges):
        r = src[k]
        c = dst[k]
        x = min(res[r], res[c])
        if x > 0.0:
            flow[k] = x
            tree[k] = 1
            matched += x
            res[r] -= x  # the smaller of the two becomes an exact 0
            res[c] -= x
            if res[c] == 0.0:
                parent[c] = r
                pred[c] = k
                up[c] = 0
            else:
                parent[r] = c
                pred[r] = k
                up[r] = 1
        else:
            flow[k] = 0.0
            tree[k] = 0
    for r in range(n_rows):
        e = n_edges + r
        flow[e] = res[r]
        tree[e] = 0
        if parent[r] < 0:
            parent[r] = n
            pred[r] = e
            up[r] = 1
            tree[e] = 1
    for c in range(n_cols):
        v = slack_row + 1 + c
        e = n_edges + n_rows + c
        flow[e] = res[v]
        tree[e] = 0
        if parent[v] < 0:
            parent[v] = slack_row
            pred[v] = e
            up[v] = 0
            tree[e] = 1
    e = n_edges + n_rows + n_cols
    flow[e] = matched
    tree[e] = 1
    parent[slack_row] = n
    pred[slack_row] = e
    up[slack_row] = 1
    parent[n] = -1
    pred[n] = -1
    for v in range(n + 1):
        ws.mark[v] = 0
    _potentials(n, ws)


@primitive
def _solve_component(p, q, m1, t0, t1, ws):
    """Solve the relaxed problem on the edges ``ws.order[t0:t1]`` (a component or
    several, two edges or more, each option's ``ws.local`` = -1 on entry and on
    exit): max sum w P over P >= 0 with row sums <= p
    and column sums <= q, as a balanced transport problem with a slack row (supply
    = the component's column mass) and a slack column (demand = its row mass); an
    edge costs -w, every slack cell 0. Solved by the network simplex from the
    greedy basis of :func:`_greedy_tree` (few pivots, often none), or by POT above
    ``ws.pot_above`` cells. Writes ``ws.edge_mass``; returns a status."""
    order, erow, ecol = ws.order, ws.edge_row, ws.edge_col
    local, rows, cols = ws.local, ws.row_map, ws.col_map
    _sort_by_reward(order, t0, t1, ws.edge_reward)
    n_rows = 0
    n_cols = 0
    for t in range(t0, t1):
        a = erow[order[t]]
        b = ecol[order[t]]
        if local[a] < 0:
            local[a] = n_rows
            rows[n_rows] = a
            n_rows += 1
        if local[m1 + b] < 0:
            local[m1 + b] = n_cols
            cols[n_cols] = b
            n_cols += 1
    # Nodes: real rows 0..R-1, slack row R, real columns R+1..R+C, slack column.
    big_r = n_rows + 1
    slack_col = big_r + n_cols
    src, dst, cost, supply = ws.src, ws.dst, ws.cost, ws.supply
    row_mass = 0.0
    col_mass = 0.0
    for r in range(n_rows):
        supply[r] = p[rows[r]]
        row_mass += p[rows[r]]
    for c in range(n_cols):
        supply[big_r + c] = -q[cols[c]]
        col_mass += q[cols[c]]
    supply[n_rows] = col_mass
    supply[slack_col] = -row_mass
    k = 0
    for t in range(t0, t1):
        e = order[t]
        src[k] = local[erow[e]]
        dst[k] = big_r + local[m1 + ecol[e]]
        cost[k] = -ws.edge_reward[e]
        k += 1
    for r in range(n_rows):
        src[k] = r
        dst[k] = slack_col
        cost[k] = 0.0
        k += 1
    for c in range(n_cols):
        src[k] = n_rows
        dst[k] = big_r + c
        cost[k] = 0.0
        k += 1
    src[k] = n_rows
    dst[k] = slack_col
    cost[k] = 0.0
    k += 1
    if big_r * (n_cols + 1) > ws.pot_above[0]:
        status = _network_simplex(big_r, n_cols + 1, k, ws)  # POT
    else:
        _greedy_tree(n_rows, n_cols, t1 - t0, ws)
        status = _pivot_loop(slack_col, k, ws)
    for t in range(t0, t1):
        e = order[t]
        ws.edge_mass[e] = ws.flow[t - t0]
        local[erow[e]] = -1
        local[m1 + ecol[e]] = -1
    return status


@primitive
def _greedy_certified(p, m1, q, m2, overlap, metric, n_edges, erow, ecol, mass, reward,
                      res_p, res_q, row_degree, col_degree, sub, dual, tree_edge, col_child,
                      root, shift):
    r"""Step 2 of :func:`overlap_plan_totals` when some option has two or more
    edges, in the common case: the greedy sub-coupling with a certificate of
    optimality. Returns True if it is certified optimal, with ``ws.edge_mass`` and
    the residuals ``ws.res_p``, ``ws.res_q`` (p and q on entry) written; False
    (nothing usable written) if the exact solver is needed.

    Edges whose row and column have no other edge (single-edge components) get
    min(p_a, q_b). The others, by decreasing reward w, each get x = min of the
    remaining masses of its two options (the first basis of :func:`_greedy_tree`:
    a forest in which every edge of positive x empties one of its options, its
    child; the column when both empty). Duals u (rows), v (columns) of the
    relaxed problem, min sum p u + sum q v s.t. u_a + v_b >= w_ab, u, v >= 0: 0 on
    the roots (the options that keep mass, or an emptied row), u_a + v_b = w_ab on
    the forest's edges, assigned in reverse greedy order (an option is emptied,
    and made a child, before its parent is). If every dual is >= 0 and every edge
    has u_a + v_b >= w_ab (up to the simplex's tolerance on reduced costs), the
    duals are feasible and complementary to the greedy sub-coupling (positive x
    only on tight edges, mass left only on options of dual 0), so it is optimal
    (LP duality). A tree whose root is an emptied row has one free dual: rows
    + delta, columns - delta keeps every tree edge tight; delta >= 0 is set to the
    largest violation of its rows' edges to other trees (before the check, which
    stays the judge). It proves greedy plans such as a path of two-edge rows
    optimal; in coupled sweeps on model B (N = 300) the certificate still fails on
    ~6 % of steps, about 70 % of them with a greedy plan that is not optimal (checked
    with ``ot.emd2``), which the simplex then solves. In coupled sweeps this holds for nearly every step (the mean
    number of simplex pivots after the greedy basis was 0.03 per step on model B,
    N = 300), and costs no call: this primitive is inlined, the simplex is not.
    """
    n_sub = 0
    for t in range(n_edges):
        a = erow[t]
        b = ecol[t]
        if row_degree[a] == 1 and col_degree[b] == 1:
            x = min(p[a], q[b])
            mass[t] = x
            res_p[a] = p[a] - x
            res_q[b] = q[b] - x
        else:
            reward[t] = overlap_reward(overlap[a, b], metric)
            mass[t] = 0.0
            sub[n_sub] = t
            n_sub += 1
            dual[a] = 0.0
            dual[m1 + b] = 0.0
    for v in range(m1 + m2):
        root[v] = v
        shift[v] = 0.0
    _sort_by_reward(sub, 0, n_sub, reward)
    n_tree = 0
    for i in range(n_sub):
        t = sub[i]
        a = erow[t]
        b = ecol[t]
        x = min(res_p[a], res_q[b])
        if x > 0.0:
            mass[t] = x
            res_p[a] -= x  # the smaller becomes an exact 0
            res_q[b] -= x
            tree_edge[n_tree] = t
            col_child[n_tree] = res_q[b] == 0.0
            n_tree += 1
    for k in range(n_tree - 1, -1, -1):
        t = tree_edge[k]
        a = erow[t]
        b = m1 + ecol[t]
        if col_child[k]:
            dual[b] = reward[t] - dual[a]
            root[b] = root[a]
        else:
            dual[a] = reward[t] - dual[b]
            root[a] = root[b]
    # Free trees (root an emptied row): raise their rows by the largest violation.
    shifted = False
    for i in range(n_sub):
        t = sub[i]
        a = erow[t]
        r = root[a]
        if r < m1 and res_p[r] == 0.0 and root[m1 + ecol[t]] != r:
            gap = reward[t] - dual[a] - dual[m1 + ecol[t]]
            if gap > shift[r]:
                shift[r] = gap
                shifted = True
    if shifted:
        for a in range(m1):
            dual[a] += shift[root[a]]
        for b in range(m1, m1 + m2):
            dual[b] -= shift[root[b]]
    for i in range(n_sub):
        t = sub[i]
        u = dual[erow[t]]
        v = dual[m1 + ecol[t]]
        w = reward[t]
        if u < 0.0 or v < 0.0 or u + v - w < -_RC_TOL * max(w, abs(u), abs(v)):
            return False
    return True


@routine
def _solve_edges(p, m1, q, m2, overlap, metric, n_edges, ws):
    """Step 2 of :func:`overlap_plan_totals` when some option has two or more
    edges (degrees of rows in ``ws.comp``, of columns in ``ws.count``).

    An edge whose row and column have no other edge is a component of its own,
    solved in closed form. The other edges, if at most :data:`MERGE_EDGES`, are
    solved as one problem: several components together are independent problems,
    solved by solving each, and one small simplex costs less than finding the
    components. More are grouped into connected components (union-find, then a
    counting sort on the root) and solved one by one, so that large ones can go
    to POT. Writes ``ws.edge_mass[:n_edges]``; returns a status. A routine: the
    simplex inlined into every sweep would cost ~40 s of compilation per entry.
    """
    erow, ecol, mass = ws.edge_row, ws.edge_col, ws.edge_mass
    comp, count, order, sub, root = ws.comp, ws.count, ws.order, ws.edge_list, ws.edge_comp
    n_sub = 0
    for t in range(n_edges):
        a = erow[t]
        b = ecol[t]
        if comp[a] == 1 and count[b] == 1:
            mass[t] = min(p[a], q[b])
        else:
            ws.edge_reward[t] = overlap_reward(overlap[a, b], metric)
            sub[n_sub] = t
            n_sub += 1
    for v in range(m1 + m2):
        ws.local[v] = -1
    if n_sub <= MERGE_EDGES:  # one problem, one group
        for i in range(n_sub):
            order[i] = sub[i]
            root[sub[i]] = 0
    else:
        _group_by_component(m1, m2, n_sub, ws)
    # Each group (two edges or more: an edge of a single-edge component was solved
    # above) by the exact solver: one call site, as the solver is inlined.
    t0 = 0
    while t0 < n_sub:
        r = root[order[t0]]
        t1 = t0 + 1
        while t1 < n_sub and root[order[t1]] == r:
            t1 += 1
        status = _solve_component(p, q, m1, t0, t1, ws)
        if status != OPTIMAL:
            return status
        t0 = t1
    return OPTIMAL


@primitive
def _group_by_component(m1, m2, n_sub, ws):
    """Order ``ws.edge_list[:n_sub]`` (edge indices) into ``ws.order[:n_sub]`` grouped
    by connected component of the bipartite graph of the edges (union-find over the
    options, then a counting sort on the root); ``ws.edge_comp[t]`` = edge t's root."""
    erow, ecol = ws.edge_row, ws.edge_col
    comp, count, order, sub, root = ws.comp, ws.count, ws.order, ws.edge_list, ws.edge_comp
    for v in range(m1 + m2):
        comp[v] = v
    for i in range(n_sub):
        t = sub[i]
        ra = _find(comp, erow[t])
        rb = _find(comp, m1 + ecol[t])
        if ra != rb:
            if ra < rb:
                comp[rb] = ra
            else:
                comp[ra] = rb
    for v in range(m1 + m2 + 1):
        count[v] = 0
    for i in range(n_sub):
        t = sub[i]
        r = _find(comp, erow[t])
        root[t] = r
        count[r + 1] += 1
    for v in range(m1 + m2):
        count[v + 1] += count[v]
    for i in range(n_sub):
        t = sub[i]
        order[count[root[t]]] = t
        count[root[t]] += 1


@primitive
def overlap_plan(p, m1, q, m2, overlap, metric, ws):
    r"""Optimal coupling of one coupled Gibbs step from the intersection counts.

    Nguyen et al. (2022), Sec. 3.2, eq. (4), with the cost of App. D (Prop. 1):
    for the left-out item, X's options are its blocks a < m1 - 1 and a new block
    (a = m1 - 1), with probabilities ``p[:m1]``; likewise Y's with ``q[:m2]``.
    Putting the item into (a, b) costs C[a, b] = r_a + s_b - w[a, b] with
    w[a, b] = :func:`overlap_reward` (n_ab, metric) >= 0, n_ab = ``overlap[a, b]``
    the size of the intersection of X's block a and Y's block b without the item
    (n = 0 when either option is the new block).

    Reduction (proof). (i) Every coupling P has marginals p and q, so
    sum (r_a + s_b) P_ab = sum r_a p_a + sum s_b q_b is the same for all of them:
    minimising the cost is maximising V(P) = sum w_ab P_ab. (ii) Relax to
    sub-couplings (P >= 0, row sums <= p, column sums <= q). A sub-coupling Q
    completes to a coupling P = Q + p' q'^T / |p'| with the residuals p' = p - Q 1,
    q' = q - Q^T 1 (equal totals |p'| = |q'| = 1 - sum Q), and V(P) >= V(Q)
    because w >= 0; couplings are sub-couplings; so a best sub-coupling, completed,
    is an optimal coupling. (iii) Cells of zero reward add nothing: a best
    sub-coupling may be zero outside the positive-reward cells (edges), and edges
    in different connected components of the bipartite graph they form share no row
    or column, so the relaxed problem splits into one problem per component.
    (iv) A component with one edge (a, b): P_ab = min(p_a, q_b). A larger
    component is a transport problem with a slack row and column, solved exactly
    by the network simplex from a greedy first basis (or POT above
    ``ws.pot_above`` cells).

    Cost. The common case of chains that are close, every option with at most one
    edge (every component a single edge), costs one scan of the m1 x m2 table and
    O(m1 + m2) more; the weights w are computed only when some component needs a
    solver. Nothing of size max_edges or capacity is touched beyond the edges.

    Faithfulness: if X and Y (item left out) are the same partition and p, q agree
    on matching blocks, every component is one edge with p_a = q_b, so all the mass
    is matched and the residual is the new-block pair only.

    Parameters
    ----------
    p : (>= m1,) float64, q : (>= m2,) float64: probabilities (each sums to 1).
    overlap : (>= m1 - 1, >= m2 - 1) int32 or int64 intersection counts; the last
        row and column (new blocks) are never read.
    metric : ``HAMMING`` or ``VI``.
    ws : :class:`TransportWorkspace` with ``max_rows >= m1``, ``max_cols >= m2``
        and ``max_edges`` >= the number of non-empty intersections.

    Returns the number of edges E (>= 0): ``ws.edge_row[:E]``, ``ws.edge_col[:E]``
    (row-major order), ``ws.edge_mass[:E]`` is the matched part Q and
    ``ws.res_p[:m1]``, ``ws.res_q[:m2]`` the residuals; the plan is
    Q + res_p res_q^T / max(|res_p|, |res_q|) (:func:`completed_plan`). Returns -1
    if the problem exceeds the workspace or a solve fails.
    """
    n_edges, _, _, _ = overlap_plan_totals(p, m1, q, m2, overlap, metric, ws)
    return n_edges


@routine
def overlap_plan_totals(p, m1, q, m2, overlap, metric, ws):
    """:func:`overlap_plan`, returning ``(n_edges, matched, res_p_total,
    res_q_total)``: the number of edges (-1 on failure), the matched mass
    sum(Q) and the residual totals |res_p|, |res_q| (sums of the clipped
    residuals, each exactly 0 when every residual is).

    A routine, compiled once per signature and linked by every user (the coupled
    sweep's draw, the test entries): inlined, each user typed and lowered the greedy
    certificate and the edge solver again (``ot_pair_pmf`` 36-41 s cold)."""
    max_edges = ws.edge_row.shape[0]
    if m1 < 1 or m2 < 1 or m1 > ws.res_p.shape[0] or m2 > ws.res_q.shape[0]:
        return -1, 0.0, 0.0, 0.0
    erow, ecol, degree = ws.edge_row, ws.edge_col, ws.count
    res_p, res_q, mass = ws.res_p, ws.res_q, ws.edge_mass
    # 1. Edges: cells of positive reward that can carry mass, and whether an
    #    option has two or more (the degrees of columns in ``count``, of rows in
    #    ``comp``).
    for b in range(m2 - 1):
        degree[b] = 0
    n_edges = np.int64(0)  # not Literal[int](0): the solver routine compiled once
    single = True
    for a in range(m1 - 1):
        if not p[a] > 0.0:
            continue
        first = n_edges
        for b in range(m2 - 1):
            if overlap[a, b] > 0 and q[b] > 0.0:
                if n_edges == max_edges:
                    return -1, 0.0, 0.0, 0.0
                erow[n_edges] = a
                ecol[n_edges] = b
                n_edges += 1
                degree[b] += 1
        ws.comp[a] = n_edges - first  # the row's degree, for _solve_edges
        if n_edges > first + 1:
            single = False
    for b in range(m2 - 1):
        if degree[b] > 1:
            single = False
    for a in range(m1):
        res_p[a] = p[a]
    for b in range(m2):
        res_q[b] = q[b]
    matched = 0.0
    if single:
        # 2. Every component is one edge (a, b): P_ab = min(p_a, q_b), and a and b
        #    have no other edge.
        for t in range(n_edges):
            a = erow[t]
            b = ecol[t]
            x = min(p[a], q[b])
            mass[t] = x
            matched += x
            res_p[a] = p[a] - x
            res_q[b] = q[b] - x
    elif _greedy_certified(p, m1, q, m2, overlap, metric, n_edges, erow, ecol, mass,
                           ws.edge_reward, res_p, res_q, ws.comp, degree, ws.edge_list, ws.pi,
                           ws.mark, ws.up, ws.parent, ws.supply):
        # 2'. The greedy sub-coupling, proved optimal by its duals.
        for t in range(n_edges):
            matched += mass[t]
    else:
        # 2''. The exact solver; then the residuals, clipped (a solver's rounding
        #      may overshoot by an ulp).
        for a in range(m1):
            res_p[a] = p[a]
        for b in range(m2):
            res_q[b] = q[b]
        if _solve_edges(p, m1, q, m2, overlap, metric, n_edges, ws) != OPTIMAL:
            return -1, 0.0, 0.0, 0.0
        for t in range(n_edges):
            matched += mass[t]
            res_p[erow[t]] -= mass[t]
            res_q[ecol[t]] -= mass[t]
        for a in range(m1):
            res_p[a] = max(res_p[a], 0.0)
        for b in range(m2):
            res_q[b] = max(res_q[b], 0.0)
    rp = 0.0
    for a in range(m1):
        rp += res_p[a]
    rq = 0.0
    for b in range(m2):
        rq += res_q[b]
    return n_edges, matched, rp, rq


@primitive
def completed_plan(m1, m2, n_edges, ws, out):
    """Write the full coupling of :func:`overlap_plan` (its return value
    ``n_edges``) into ``out[:m1, :m2]`` (float64): the matched part plus the
    residuals' independent coupling res_p res_q^T / max(|res_p|, |res_q|)."""
    sp = 0.0
    sq = 0.0
    for a in range(m1):
        sp += ws.res_p[a]
    for b in range(m2):
        sq += ws.res_q[b]
    scale = max(sp, sq)
    for a in range(m1):
        for b in range(m2):
            out[a, b] = ws.res_p[a] * ws.res_q[b] / scale if scale > 0.0 else 0.0
    for t in range(n_edges):
        out[ws.edge_row[t], ws.edge_col[t]] += ws.edge_mass[t]


@entry
def overlap_plan_entry(p, m1, q, m2, overlap, metric, ws, out):
    """:func:`overlap_plan` then :func:`completed_plan` into ``out``; returns the
    number of edges (-1 on failure). For tests."""
    n_edges = overlap_plan(p, m1, q, m2, overlap, metric, ws)
    if n_edges >= 0:
        completed_plan(m1, m2, n_edges, ws, out)
    return n_edges
