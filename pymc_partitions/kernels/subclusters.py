r"""The sub-cluster split-merge sampler (Chang & Fisher 2013), in an exact form.

Chang & Fisher (2013), "Parallel Sampling of DP Mixture Models using Sub-Cluster
Splits", NeurIPS 26. The steps are cited by the paper's names for them (the
restricted Gibbs sampler's weights, parameters and labels; the sub-cluster updates;
the split and merge Hastings ratios H_split, H_merge), not by section and equation
numbers: the paper's text was not reachable from this project to check them. One
iteration (:func:`subclusters_iteration`):

1. **Weights and parameters** (restricted Gibbs sampler). Given the partition, each
   block's weight and parameters are drawn from their conditional posterior: the
   weights of the K blocks from Dir(n_1 - d, ..., n_K - d, alpha + K d) (d = 0: the CRP; only
   the K block weights are needed, as independent Gamma(n_k - d) variates, their
   normaliser cancels), the parameters from the component's conjugate posterior
   (:mod:`.components.explicit`).
2. **Restricted Gibbs update of every label in parallel**: item i proposes block k
   with probability proportional to pi_k f(x_i | theta_k), k among the K existing
   blocks (numba ``prange``; item i's uniform is ``counter_uniform(key, i)``, so the
   result does not depend on the number of threads). *Exact form.* The paper draws
   every label at once, each from pi_k f(x_i | theta_k); a block may then empty,
   where the Dirichlet of step 1 has no density (its parameter n_k - d would be
   <= 0), so that sweep is not a Gibbs step of the joint. Here each block keeps one
   *anchor* item, drawn uniformly from its members (an auxiliary variable with
   probability prod_k 1/n_k); the others are drawn from that law in parallel, and
   the whole proposal is accepted with Metropolis-Hastings probability
   min(1, prod_k n_k / n'_k) (the anchors' density ratio; the label factors cancel
   against the proposal). No block empties, K is unchanged.
3. **Split and merge proposals with sub-clusters.** A split of a block proposes
   its two sub-clusters; a merge of blocks a and b proposes their union;
   both are accepted with the paper's Hastings ratios H_split, H_merge: the
   *collapsed* target ratio, prior ratio times the ratio of marginal likelihoods
   (:func:`~.components.log_marginal`), with no proposal term. *Exact form.* The
   paper keeps the sub-clusters (sub-labels, sub-weights Dir(n_kl + alpha/2,
   n_kr + alpha/2), sub-parameters) as persistent auxiliary variables and proposes
   the split they hold. With them in the state, an exact ratio needs the normalised
   conditional law of the sub-labels given the block (a sum over its 2^{n_k}
   sub-partitions), which is intractable, and a hyperparameter step (EscobarWest,
   HyperSlice) that reads only z would not leave that law invariant; the printed
   H_merge, with its sub-cluster weight term, is not the ratio of any proposal we
   could identify. Here the sub-clusters are *launched* afresh for each proposal
   and the proposal is made deterministic given auxiliaries drawn independently of
   the state, which makes the paper's H exact:

   - draw two distinct items i, j uniformly (Jain & Neal 2004, §3) and a key; a
     split of their block if they share one, else a merge of their two blocks (the
     selection is symmetric: no selection term);
   - on the items S of the block(s), in item order, launch two sub-clusters from
     the seeds i (sub-label 0) and j (sub-label 1), parameters drawn from the
     posterior given the seed alone, weights 1/2; then ``n_launch`` rounds of the
     paper's sub-cluster updates (sub-labels in parallel given sub-weights and
     sub-parameters, then sub-weights Dir(n_0 + 1/2, n_1 + 1/2) and sub-parameters
     from their conjugate posteriors), then one more draw of the sub-labels, the
     seeds keeping theirs. Every draw comes from a stream seeded by the key, so the
     proposed split D(S) is a deterministic function of (key, i, j, S);
   - a split proposes D(S) and is accepted with probability min(1, H_split); a
     merge of a and b is accepted with probability min(1, H_merge) if D(a u b) =
     {a, b} (the reverse split exists), else rejected. For each (key, i, j) this is
     Metropolis-Hastings with a deterministic involutive proposal, so the Hastings
     term is 0 or -inf (log scale).

   New blocks appear only through splits, as in the paper.

Everything runs on the library's slot state (:mod:`.state`) and component
statistics; the sampler's explicit weights, parameters and sub-clusters are
transient (drawn within an iteration from their conditionals, then dropped), so any
other step may change the hyperparameters between iterations.
"""

import math
from typing import NamedTuple

import numpy as np
from numba import njit, prange
from numba.extending import overload

from pymc_partitions.kernels._jit import entry, primitive, routine
from pymc_partitions.kernels.bookkeeping import move_item, open_new_block
from pymc_partitions.kernels.components import add, log_marginal, remove
from pymc_partitions.kernels.components.explicit import draw_explicit, log_density_explicit
from pymc_partitions.kernels.dispatch import OVERLOAD_JIT_OPTIONS
from pymc_partitions.kernels.priors import log_prior
from pymc_partitions.kernels.priors.crp import CRPParams
from pymc_partitions.kernels.priors.pitman_yor import PitmanYorParams
from pymc_partitions.kernels.random import bounded, counter_uniform, random_key, uniform
from pymc_partitions.kernels.variates import log_gamma_variate



class Outcomes(NamedTuple):
    """Layout of the (5,) int64 ``outcomes`` array :func:`subclusters_iteration`
    fills with this iteration's counts (the kernel fills the plain array; this record
    names its entries, read by name in :func:`pymc_partitions.step_methods.info.counters`).

    Attributes
    ----------
    labels_accepted
        1 if step 2's parallel label update was accepted, else 0.
    split_proposed, split_accepted
        Split proposals made, and accepted.
    merge_proposed, merge_accepted
        Merge proposals made, and accepted.
    """

    labels_accepted: int
    split_proposed: int
    split_accepted: int
    merge_proposed: int
    merge_accepted: int


LABELS_ACCEPTED, SPLIT_PROPOSED, SPLIT_ACCEPTED, MERGE_PROPOSED, MERGE_ACCEPTED = range(5)
N_OUTCOMES = len(Outcomes._fields)
#: Outcome of one proposal (:func:`subclusters_proposal_entry`).
SPLIT_REJECTED_, SPLIT_ACCEPTED_, MERGE_REJECTED_, MERGE_ACCEPTED_ = range(4)
#: Sub-cluster weights' Dirichlet parameter added to the counts in the launch (the
#: paper uses alpha/2; any value keeps the sampler exact; 1/2 does not depend on
#: the prior).
SUB_WEIGHT_PRIOR = 0.5
#: Item loops run in parallel (``prange``) from this many items on: below it, a
#: parallel region's start-up costs more than the loop (and on a loaded machine its
#: threads wait for cores). The draws are the same either way.
PARALLEL_MIN = 4096
#: The key that makes :func:`_assign_sub` take each sub-label's mode (a hard launch).
HARD_KEY = -1
# int64 constants for routine arguments (a literal would type the routine twice: rule 6)
NO_SLOT, ONE, TWO = np.int64(-1), np.int64(1), np.int64(2)

_parallel = njit(cache=True, parallel=True)
# The pieces of an iteration are routines (compiled once per signature, called, no
# reference counting) and the entries are ``entry``: with numba's reference counting
# on, as before, CRP x Normal took 16.4 CPU s to compile cold, now ~13 s; the run
# time is unchanged (N = 20000, one thread: 9.0 ms per iteration, both). A shared
# routine for the split's and the merge's log marginal was tried and dropped: the
# iteration ran 3x slower (26 ms).
_serial = routine


def discount(prior_params):
    """The weights' discount d: 0 for the CRP, d for Pitman-Yor."""
    raise TypeError("SubClusters supports the CRP and Pitman-Yor priors only")


@overload(discount, jit_options=OVERLOAD_JIT_OPTIONS)
def _ol_discount(prior_params):
    cls = getattr(prior_params, "instance_class", None)
    if cls is CRPParams:
        return lambda prior_params: 0.0
    if cls is PitmanYorParams:
        return lambda prior_params: prior_params.d
    return None


# ------------------------------------------------------------------ parallel draws


@primitive
def _assign_block_item(i, labels, active, n_active, anchor, log_pi, theta, params, data, key,
                       prop):
    """Step 2's proposal for item i: prop[i] ~ pi_k f(x_i | theta_k) over the active
    slots (an anchor keeps its slot), from ``counter_uniform(key, i)``. An item whose
    weights are all zero or NaN keeps its slot."""
    k0 = labels[i]
    if anchor[k0] == i:
        prop[i] = k0
        return
    top = -np.inf
    total = 0.0
    for a in range(n_active):
        k = active[a]
        lw = log_pi[k] + log_density_explicit(params, theta, k, data, i)
        if lw > top:
            total = total * math.exp(top - lw) + 1.0
            top = lw
        else:
            total += math.exp(lw - top)
    if not (total > 0.0 and top > -np.inf and top < np.inf):
        prop[i] = k0
        return
    target = counter_uniform(key, i) * total
    acc = 0.0
    choice = k0
    for a in range(n_active):
        k = active[a]
        lw = log_pi[k] + log_density_explicit(params, theta, k, data, i)
        acc += math.exp(lw - top)
        if target < acc:
            choice = k
            break
    prop[i] = choice


@_parallel
def _assign_blocks_parallel(labels, active, n_active, anchor, log_pi, theta, params, data, key,
                            prop):
    for i in prange(labels.shape[0]):
        _assign_block_item(i, labels, active, n_active, anchor, log_pi, theta, params, data,
                           key, prop)


@primitive
def _assign_blocks(labels, active, n_active, anchor, log_pi, theta, params, data, key, prop):
    """Step 2's proposal for every item: in parallel (``prange``) from
    ``PARALLEL_MIN`` items on, else serially (the same draws: uniforms by item)."""
    n = labels.shape[0]
    if n >= PARALLEL_MIN:
        _assign_blocks_parallel(labels, active, n_active, anchor, log_pi, theta, params, data,
                                key, prop)
    else:
        for i in range(n):
            _assign_block_item(i, labels, active, n_active, anchor, log_pi, theta, params,
                               data, key, prop)


@primitive
def _assign_sub_item(p, items, log_pib0, log_pib1, sub_theta, params, data, key, forced, sub,
                     lp, alt):
    """Sub-label of ``items[p]`` given the sub-weights and sub-parameters (the paper's
    sub-cluster update): ``sub[p]`` in {0, 1} drawn (its mode when ``key == HARD_KEY``;
    ``forced[p]`` when ``forced[p] >= 0``), ``lp[p]`` its log probability, ``alt[p]``
    that of the other sub-label."""
    i = items[p]
    l0 = log_pib0 + log_density_explicit(params, sub_theta, 0, data, i)
    l1 = log_pib1 + log_density_explicit(params, sub_theta, 1, data, i)
    top = max(l0, l1)
    lse = top + math.log(math.exp(l0 - top) + math.exp(l1 - top))
    if forced[p] >= 0:
        c = forced[p]
    elif key == HARD_KEY:
        c = 0 if l0 >= l1 else 1  # the mode (a hard launch)
    else:
        c = 0 if counter_uniform(key, i) < math.exp(l0 - lse) else 1
    sub[p] = c
    if c == 0:
        lp[p], alt[p] = l0 - lse, l1 - lse
    else:
        lp[p], alt[p] = l1 - lse, l0 - lse


@_parallel
def _assign_sub_parallel(items, m, log_pib0, log_pib1, sub_theta, params, data, key, forced,
                         sub, lp, alt):
    for p in prange(m):
        _assign_sub_item(p, items, log_pib0, log_pib1, sub_theta, params, data, key, forced,
                         sub, lp, alt)


@_serial
def _assign_sub(items, m, log_pib0, log_pib1, sub_theta, params, data, key, forced, sub, lp,
                alt):
    """Sub-labels of ``items[:m]``: in parallel from ``PARALLEL_MIN`` items on, else
    serially (the same draws). Called, not inlined: the launch calls it twice."""
    if m >= PARALLEL_MIN:
        _assign_sub_parallel(items, m, log_pib0, log_pib1, sub_theta, params, data, key,
                             forced, sub, lp, alt)
    else:
        for p in range(m):
            _assign_sub_item(p, items, log_pib0, log_pib1, sub_theta, params, data, key,
                             forced, sub, lp, alt)


# ------------------------------------------------------------------ step 1 and 2


@_serial
def _label_update(stream, state, prior_params, params, stats, data, theta, log_pi, anchor,
                  prop, new_count):
    """Steps 1-2; returns 1 if the parallel proposal was accepted, 0 if not, -2 if a
    weight was not finite (the state is unchanged)."""
    n = state.labels.shape[0]
    n_active = state.counts[0]
    d = discount(prior_params)
    # 1. weights (unnormalised: log Gamma(n_k - d) variates) and parameters
    for a in range(n_active):
        k = state.active[a]
        log_pi[k] = log_gamma_variate(stream, state.sizes[k] - d)
        draw_explicit(params, stats, k, stream, theta, k)
        # anchor: a uniformly drawn member (the r-th one found below)
        anchor[k] = bounded(stream, state.sizes[k])
        new_count[k] = 0
    # anchors: the anchor[k]-th member of slot k in item order becomes its item
    for i in range(n):
        k = state.labels[i]
        if new_count[k] == anchor[k]:
            anchor[k] = -(i + 1)  # found (negative while scanning)
        new_count[k] += 1
    for a in range(n_active):
        k = state.active[a]
        anchor[k] = -anchor[k] - 1
    # 2. parallel proposal, then the anchors' Metropolis-Hastings correction
    key = random_key(stream)
    _assign_blocks(state.labels, state.active, n_active, anchor, log_pi, theta, params, data,
                   key, prop)
    for a in range(n_active):
        new_count[state.active[a]] = 0
    for i in range(n):
        new_count[prop[i]] += 1
    log_ratio = 0.0
    for a in range(n_active):
        k = state.active[a]
        log_ratio += math.log(state.sizes[k]) - math.log(new_count[k])
    if not log_ratio == log_ratio:
        return -2
    if not math.log(1.0 - uniform(stream)) < log_ratio:
        return 0
    for i in range(n):
        if prop[i] != state.labels[i]:
            move_item(state, params, stats, data, i, prop[i])  # never empties a slot
    return 1


# ------------------------------------------------------------------ step 3


@primitive
def _seed_stream(key, local):
    """Fill ``local`` ((4,) uint64) with a xoshiro256** state determined by ``key``:
    the launch's randomness is then a function of (key, S, i, j) only."""
    for w in range(4):
        hi = np.uint64(counter_uniform(key, 2 * w) * 9007199254740992.0)
        lo = np.uint64(counter_uniform(key, 2 * w + 1) * 9007199254740992.0)
        local[w] = (hi << np.uint64(11)) ^ lo
    if local[0] == 0 and local[1] == 0 and local[2] == 0 and local[3] == 0:
        local[0] = np.uint64(1)


@primitive
def _soft_key(local):
    """A key for sampled sub-labels: even, so never ``HARD_KEY`` (-1)."""
    return random_key(local) & np.int64(-2)


@_serial
def _launch(local, items, m, n_launch, hard, params, sub_stats, sub_theta, data, forced, sub, lp,
            alt, p0, p1):
    """Launch two sub-clusters on ``items[:m]`` from the seeds ``items[p0]`` (sub-label
    0) and ``items[p1]`` (sub-label 1), drawing only from ``local``, and write the
    proposed sub-labels into ``sub[:m]`` (see the module docstring, step 3); with
    ``hard``, every sub-label is its mode instead of a draw. The seeds keep their
    sub-labels (``forced``: -1 elsewhere, restored on return).
    ``sub_stats`` slots 0 and 1 are empty on entry and on return."""
    forced[p0] = 0
    forced[p1] = 1
    for s in range(2):  # a loop, not two copies: one inlined body to compile
        seed = items[p0] if s == 0 else items[p1]
        add(params, sub_stats, data, seed, s)
        draw_explicit(params, sub_stats, s, local, sub_theta, s)
        remove(params, sub_stats, data, seed, s)
    log_pib0 = math.log(0.5)
    log_pib1 = log_pib0
    # n_launch sweeps (sub-labels, then sub-weights and sub-parameters given them),
    # then the proposal's sub-labels: the last pass stops after the sub-labels.
    # (Loops rather than repeated calls: each inlined body is compiled once.)
    for sweep in range(n_launch + 1):
        key = np.int64(HARD_KEY) if hard else _soft_key(local)
        _assign_sub(items, m, log_pib0, log_pib1, sub_theta, params, data, key, forced, sub,
                    lp, alt)
        if sweep == n_launch:
            break
        n1 = 0
        for p in range(m):
            add(params, sub_stats, data, items[p], sub[p])
            n1 += sub[p]
        g0 = 0.0
        g1 = 0.0
        for s in range(2):
            g = log_gamma_variate(local, (m - n1 if s == 0 else n1) + SUB_WEIGHT_PRIOR)
            if s == 0:
                g0 = g
            else:
                g1 = g
        top = max(g0, g1)
        log_total = top + math.log(math.exp(g0 - top) + math.exp(g1 - top))
        log_pib0, log_pib1 = g0 - log_total, g1 - log_total
        for s in range(2):
            draw_explicit(params, sub_stats, s, local, sub_theta, s)
        for p in range(m):
            remove(params, sub_stats, data, items[p], sub[p])
    forced[p0] = -1
    forced[p1] = -1


@_serial
def _gather(labels, i, j, items, forced):
    """The items S of the blocks of ``i`` and ``j`` under ``labels``, in item order,
    into ``items[:m]`` (``forced[:m]`` reset to -1); returns (m, position of i in S,
    position of j in S)."""
    ka, kb = labels[i], labels[j]
    # int64 from the start: a literal 0 would type the routines' calls twice (rule 6)
    m = np.int64(0)
    p0 = np.int64(0)
    p1 = np.int64(0)
    for h in range(labels.shape[0]):
        if labels[h] == ka or labels[h] == kb:
            if h == i:
                p0 = m
            elif h == j:
                p1 = m
            items[m] = h
            forced[m] = -1
            m += 1
    return m, p0, p1


@_serial
def _move_marked(state, params, stats, data, items, m, sub, dest):
    """Move the items ``items[p]`` with ``sub[p] == 1`` (p < m) to the active slot
    ``dest``: an accepted split's new block, or an accepted merge's (whose reverse
    split matched: ``sub`` marks exactly j's block)."""
    for p in range(m):
        if sub[p] == 1:
            move_item(state, params, stats, data, items[p], dest)


@_serial
def _log_prior_after(prior_params, state, sizes_tmp, active_tmp, k_out, k_out2, new_sizes,
                     n_new):
    """log prior of the partition whose blocks are the active slots other than
    ``k_out``/``k_out2`` (-1: none) plus blocks of sizes ``new_sizes[:n_new]``."""
    count = 0
    for a in range(state.counts[0]):
        k = state.active[a]
        if k == k_out or k == k_out2:
            continue
        sizes_tmp[count] = state.sizes[k]
        active_tmp[count] = count
        count += 1
    for b in range(n_new):
        sizes_tmp[count] = new_sizes[b]
        active_tmp[count] = count
        count += 1
    return log_prior(prior_params, sizes_tmp, active_tmp, count, state.labels.shape[0])


@_serial
def _proposal(stream, n_launch, hard, state, prior_params, params, stats, data, sub_stats,
              sub_theta, items, forced, sub, lp, alt, sizes_tmp, active_tmp, pair, log_u_out,
              local):
    """One split or merge proposal (step 3). Returns ``(outcome, log target ratio, log
    Hastings term)``, outcome one of ``SPLIT_REJECTED_ .. MERGE_ACCEPTED_`` (-1: a NaN);
    accepted iff ``log u < target + Hastings`` (``log_u_out[0]`` receives log u).

    Selection: two distinct items i, j uniformly (Jain & Neal 2004, §3): a split of
    their block if they share one, else a merge of their blocks; symmetric, so no
    selection term. The launch draws only from a stream seeded by a fresh key, so
    given (key, i, j) the proposed split D(S) of S is a deterministic function of S:
    a split proposes D(S) (Hastings term 0), a merge's reverse split is D(a u b), and
    its Hastings term is 0 when D(a u b) = {a, b}, -inf otherwise.
    """
    n = state.labels.shape[0]
    n_blocks = state.counts[0]
    i = bounded(stream, n)
    j = bounded(stream, n - 1)
    if j >= i:
        j += 1
    ka, kb = state.labels[i], state.labels[j]
    split = ka == kb
    _seed_stream(random_key(stream), local)
    log_u = math.log(1.0 - uniform(stream))
    log_u_out[0] = log_u
    log_u_out[1] = i
    log_u_out[2] = j
    # S: the items of the block(s), in item order (a function of S alone)
    m, p0, p1 = _gather(state.labels, i, j, items, forced)
    log_prior_now = log_prior(prior_params, state.sizes, state.active, n_blocks, n)
    if split:
        _launch(local, items, m, n_launch, hard, params, sub_stats, sub_theta, data, forced,
                sub, lp, alt, p0, p1)
        n1 = 0
        for p in range(m):
            n1 += sub[p]
        for p in range(m):
            add(params, sub_stats, data, items[p], sub[p])
        lm_new = log_marginal(params, sub_stats, 0) + log_marginal(params, sub_stats, 1)
        for p in range(m):
            remove(params, sub_stats, data, items[p], sub[p])
        pair[0], pair[1] = m - n1, n1
        target = (_log_prior_after(prior_params, state, sizes_tmp, active_tmp, ka, NO_SLOT, pair,
                                   TWO)
                  - log_prior_now + lm_new - log_marginal(params, stats, ka))
        if not target == target:
            return -1, target, 0.0
        if not log_u < target:
            return SPLIT_REJECTED_, target, 0.0
        knew = open_new_block(state, params, stats)
        _move_marked(state, params, stats, data, items, m, sub, knew)
        return SPLIT_ACCEPTED_, target, 0.0
    # merge: the target ratio first (the Hastings term is 0 or -inf, so a merge the
    # target alone rejects needs no launch); then the reverse split D(a u b) must be
    # {a, b} (a = i's block: sub-label 0)
    for p in range(m):
        add(params, sub_stats, data, items[p], 0)
    lm_union = log_marginal(params, sub_stats, 0)
    for p in range(m):
        remove(params, sub_stats, data, items[p], 0)
    pair[0] = m
    target = (_log_prior_after(prior_params, state, sizes_tmp, active_tmp, ka, kb, pair, ONE)
              - log_prior_now + lm_union - log_marginal(params, stats, ka)
              - log_marginal(params, stats, kb))
    if not target == target:
        return -1, target, 0.0
    if not log_u < target:
        return MERGE_REJECTED_, target, np.nan  # the Hastings term was not computed
    _launch(local, items, m, n_launch, hard, params, sub_stats, sub_theta, data, forced, sub,
            lp, alt, p0, p1)
    hastings = 0.0
    for p in range(m):
        if sub[p] != (1 if state.labels[items[p]] == kb else 0):
            hastings = -np.inf
            break
    if not log_u < target + hastings:
        return MERGE_REJECTED_, target, hastings
    _move_marked(state, params, stats, data, items, m, sub, ka)
    return MERGE_ACCEPTED_, target, hastings


# ------------------------------------------------------------------ entries


def work_arrays(n, width, sub_stats):
    """Scratch of one chain for ``n`` items and explicit rows of ``width`` float64:
    a tuple ``(theta (n, width), sub_theta (2, width), log_pi (n,), anchor (n,),
    prop (n,), new_count (n,), items (n,), forced (n,) of -1, sub (n,), lp (n,),
    alt (n,), sizes_tmp (n,), active_tmp (n,), pair (2,), log_u (3,): log u, i, j of
    the last proposal, local (4,)
    uint64, sub_stats)``; ``sub_stats`` the component's statistics of 2 empty slots."""
    i64 = np.int64
    return (
        np.zeros((n, width)), np.zeros((2, width)), np.zeros(n), np.zeros(n, dtype=i64),
        np.zeros(n, dtype=i64), np.zeros(n, dtype=i64), np.zeros(n, dtype=i64),
        np.full(n, -1, dtype=i64), np.zeros(n, dtype=i64),
        np.zeros(n), np.zeros(n), np.zeros(n, dtype=i64), np.zeros(n, dtype=i64),
        np.zeros(2, dtype=i64), np.zeros(3), np.ones(4, dtype=np.uint64), sub_stats,
    )


@entry
def subclusters_iteration(stream, n_proposals, n_launch, hard, state, prior_params, params,
                          stats, data, work, outcomes):
    """One iteration: steps 1-2 once, then ``n_proposals`` split/merge proposals.

    ``work`` from :func:`work_arrays`; ``outcomes`` (N_OUTCOMES,) int64 receives this
    iteration's counts (``LABELS_ACCEPTED``, ``SPLIT_PROPOSED`` ...). Returns 0, or
    -1 when a weight or ratio was NaN (the state is a valid partition).
    """
    (theta, sub_theta, log_pi, anchor, prop, new_count, items, forced, sub, lp, alt,
     sizes_tmp, active_tmp, pair, log_u, local, sub_stats) = work
    for c in range(outcomes.shape[0]):
        outcomes[c] = 0
    status = _label_update(stream, state, prior_params, params, stats, data, theta, log_pi,
                           anchor, prop, new_count)
    if status < 0:
        return -1
    outcomes[LABELS_ACCEPTED] = status
    for _ in range(n_proposals):
        outcome, target, hastings = _proposal(
            stream, n_launch, hard, state, prior_params, params, stats, data, sub_stats, sub_theta,
            items, forced, sub, lp, alt, sizes_tmp, active_tmp, pair, log_u, local)
        if outcome < 0:
            return -1
        if outcome <= SPLIT_ACCEPTED_:
            outcomes[SPLIT_PROPOSED] += 1
            outcomes[SPLIT_ACCEPTED] += outcome == SPLIT_ACCEPTED_
        else:
            outcomes[MERGE_PROPOSED] += 1
            outcomes[MERGE_ACCEPTED] += outcome == MERGE_ACCEPTED_
    return 0


@entry
def subclusters_proposal_entry(stream, n_launch, hard, state, prior_params, params, stats, data,
                               work):
    """One split or merge proposal from Python (tests): ``(outcome, log target ratio,
    log Hastings term, log u)``; accepted iff ``log u < target + Hastings``; the
    pair (i, j) drawn is ``work[14][1:3]``."""
    (theta, sub_theta, log_pi, anchor, prop, new_count, items, forced, sub, lp, alt,
     sizes_tmp, active_tmp, pair, log_u, local, sub_stats) = work
    outcome, target, hastings = _proposal(
        stream, n_launch, hard, state, prior_params, params, stats, data, sub_stats, sub_theta,
        items, forced, sub, lp, alt, sizes_tmp, active_tmp, pair, log_u, local)
    return outcome, target, hastings, log_u[0]


@entry
def launch_entry(key, i, j, n_launch, hard, labels, params, data, work):
    """The split D(S) that step 3's launch proposes for the items S of the blocks of
    items ``i`` and ``j`` under ``labels`` ((n,) int64), from the stream seeded by
    ``key`` (int64) and the component ``params``: returns m = |S|; ``work[6][:m]``
    (items) holds S in item order and ``work[8][:m]`` (sub) their sub-labels (0: the
    side of i, 1: the side of j). A function of (key, i, j, S, params) only, for the
    joint moves of :class:`pymc_partitions.SubClusters` with likelihood
    hyperparameters (the step decides; nothing here reads the chain's state)."""
    (theta, sub_theta, log_pi, anchor, prop, new_count, items, forced, sub, lp, alt,
     sizes_tmp, active_tmp, pair, log_u, local, sub_stats) = work
    m, p0, p1 = _gather(labels, i, j, items, forced)
    _seed_stream(key, local)
    _launch(local, items, m, n_launch, hard, params, sub_stats, sub_theta, data, forced, sub, lp,
            alt, p0, p1)
    return m
