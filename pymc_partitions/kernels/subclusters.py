r"""The sub-cluster split-merge sampler (Chang & Fisher 2013), in an exact form.

Chang & Fisher (2013), "Parallel Sampling of DP Mixture Models using Sub-Cluster
Splits", NeurIPS 26. One iteration (:func:`subclusters_iteration`):

1. **Weights and parameters** (§4, eqs. 7-8). Given the partition, each block's
   weight and parameters are drawn from their conditional posterior: the weights of
   the K blocks from Dir(n_1 - d, ..., n_K - d, alpha + K d) (d = 0: the CRP; only
   the K block weights are needed, as independent Gamma(n_k - d) variates, their
   normaliser cancels), the parameters from the component's conjugate posterior
   (:mod:`.components.explicit`).
2. **Restricted Gibbs update of every label in parallel** (§4, eq. 9): item i
   proposes block k with probability proportional to pi_k f(x_i | theta_k), k among
   the K existing blocks (numba ``prange``; item i's uniform is
   ``counter_uniform(key, i)``, so the result does not depend on the number of
   threads). *Exact form.* The paper draws every label from eq. 9 at once; a block
   may then empty, where the Dirichlet of step 1 has no density (its parameter
   n_k - d would be <= 0), so that sweep is not a Gibbs step of the joint. Here each
   block keeps one *anchor* item, drawn uniformly from its members (an auxiliary
   variable with probability prod_k 1/n_k); the others are drawn from eq. 9 in
   parallel, and the whole proposal is accepted with Metropolis-Hastings probability
   min(1, prod_k n_k / n'_k) (the anchors' density ratio; the eq. 9 factors cancel
   against the proposal). No block empties, K is unchanged.
3. **Split and merge proposals with sub-clusters** (§5, §5.1). A split of block k
   proposes the two sub-clusters of k; a merge of blocks a and b proposes their
   union; both are accepted with the Metropolis-Hastings ratio of the *collapsed*
   target (the paper's H, eqs. 15-16: the prior ratio times the ratio of marginal
   likelihoods, :func:`~.components.log_marginal`), times the Hastings term of the
   proposal. *Exact form.* The paper keeps the sub-clusters (sub-labels, sub-weights
   Dir(n_kl + alpha/2, n_kr + alpha/2), sub-parameters) as persistent auxiliary
   variables and proposes the split they hold. An exact Hastings ratio then needs
   the normalised conditional law of the sub-labels given the block (a sum over
   2^{n_k} sub-partitions), which is intractable, and a hyperparameter step
   (EscobarWest, HyperSlice) that reads only z would not leave it invariant. Here
   the sub-clusters are *launched* afresh for each proposal from the set S of items
   involved (Jain & Neal 2004, §3's launch state, which depends on S only): two
   distinct seed items of S drawn uniformly start the two sub-clusters (their
   parameters drawn from the posterior given the seed alone, weights 1/2 each),
   then ``n_launch`` rounds of the paper's sub-cluster updates (§5: sub-labels in
   parallel given sub-weights and sub-parameters, then sub-weights
   Dir(n_l + 1/2, n_r + 1/2) and sub-parameters from their conjugate posteriors).
   The proposal is one more parallel draw of the sub-labels: its probability is the
   product of the items' sub-label probabilities, summed over the two orientations
   (the two sub-clusters are unordered as blocks), computable exactly; a merge's
   Hastings term is the probability that this draw, from a launch on S = a u b,
   reproduces {a, b}. Proposal selection (choices the paper leaves to a schedule):
   with K blocks, a split with probability 1/2 (1 when K = 1) of a block drawn
   uniformly, else a merge of a pair drawn uniformly; the selection probabilities
   enter the ratio. New blocks appear only through splits, as in the paper.

Everything runs on the library's slot state (:mod:`.state`) and component
statistics; the sampler's explicit weights, parameters and sub-clusters are
transient (drawn within an iteration from their conditionals, then dropped), so any
other step may change the hyperparameters between iterations.
"""

import math

import numpy as np
from numba import njit, prange
from numba.extending import overload

from pymc_partitions.kernels.bookkeeping import move_item, open_new_block
from pymc_partitions.kernels.components import add, log_marginal, remove
from pymc_partitions.kernels.components.explicit import draw_explicit, log_density_explicit
from pymc_partitions.kernels.dispatch import OVERLOAD_JIT_OPTIONS
from pymc_partitions.kernels.priors import log_prior
from pymc_partitions.kernels.priors.crp import CRPParams
from pymc_partitions.kernels.priors.pitman_yor import PitmanYorParams
from pymc_partitions.kernels.random import bounded, counter_uniform, random_key, uniform
from pymc_partitions.kernels.variates import log_gamma_variate

#: Entries of the ``outcomes`` array an iteration fills (counts of this iteration).
LABELS_ACCEPTED, SPLIT_PROPOSED, SPLIT_ACCEPTED, MERGE_PROPOSED, MERGE_ACCEPTED = range(5)
N_OUTCOMES = 5
#: Outcome of one proposal (:func:`subclusters_proposal_entry`).
SPLIT_REJECTED_, SPLIT_ACCEPTED_, MERGE_REJECTED_, MERGE_ACCEPTED_ = range(4)
#: Sub-cluster weights' Dirichlet parameter added to the counts in the launch (the
#: paper uses alpha/2; any value keeps the sampler exact, 1/2 does not depend on the
#: prior).
SUB_WEIGHT_PRIOR = 0.5

_parallel = njit(cache=True, parallel=True)
_serial = njit(cache=True)


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


@_parallel
def _assign_blocks(labels, active, n_active, anchor, log_pi, theta, params, data, key, prop):
    """Step 2's proposal: prop[i] ~ pi_k f(x_i | theta_k) over the active slots for
    every non-anchor item (anchors keep their slot), in parallel; item i's uniform
    is ``counter_uniform(key, i)``. An item whose weights are all zero or NaN keeps
    its slot (it is reported through the caller's check of the weights)."""
    n = labels.shape[0]
    for i in prange(n):
        k0 = labels[i]
        if anchor[k0] == i:
            prop[i] = k0
            continue
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
            continue
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
def _assign_sub(items, m, log_pib0, log_pib1, sub_theta, params, data, key, forced, sub, lp, alt):
    """Sub-labels of ``items[:m]`` given the sub-weights and sub-parameters (§5), in
    parallel: ``sub[p]`` in {0, 1} drawn (or ``forced[p]`` when ``forced[p] >= 0``),
    ``lp[p]`` its log probability, ``alt[p]`` that of the other sub-label."""
    for p in prange(m):
        i = items[p]
        l0 = log_pib0 + log_density_explicit(params, sub_theta, 0, data, i)
        l1 = log_pib1 + log_density_explicit(params, sub_theta, 1, data, i)
        top = max(l0, l1)
        lse = top + math.log(math.exp(l0 - top) + math.exp(l1 - top))
        if forced[p] >= 0:
            c = forced[p]
        else:
            c = 0 if counter_uniform(key, i) < math.exp(l0 - lse) else 1
        sub[p] = c
        if c == 0:
            lp[p], alt[p] = l0 - lse, l1 - lse
        else:
            lp[p], alt[p] = l1 - lse, l0 - lse


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


@_serial
def _launch(stream, items, m, n_launch, params, sub_stats, sub_theta, data, forced, sub, lp, alt,
            no_force):
    """Launch two sub-clusters on ``items[:m]`` (see the module docstring, step 3) and
    draw the proposal (or score ``forced``). Returns ``(log q of the drawn/forced
    sub-labels, log q of the opposite orientation)``. ``sub_stats`` slots 0 and 1
    are empty on entry and on return."""
    # seeds: two distinct items of S, uniformly
    p0 = bounded(stream, m)
    p1 = bounded(stream, m - 1)
    if p1 >= p0:
        p1 += 1
    add(params, sub_stats, data, items[p0], 0)
    draw_explicit(params, sub_stats, 0, stream, sub_theta, 0)
    remove(params, sub_stats, data, items[p0], 0)
    add(params, sub_stats, data, items[p1], 1)
    draw_explicit(params, sub_stats, 1, stream, sub_theta, 1)
    remove(params, sub_stats, data, items[p1], 1)
    log_pib0 = math.log(0.5)
    log_pib1 = log_pib0
    for _ in range(n_launch):
        key = random_key(stream)
        _assign_sub(items, m, log_pib0, log_pib1, sub_theta, params, data, key, no_force, sub,
                    lp, alt)
        n1 = 0
        for p in range(m):
            add(params, sub_stats, data, items[p], sub[p])
            n1 += sub[p]
        g0 = log_gamma_variate(stream, m - n1 + SUB_WEIGHT_PRIOR)
        g1 = log_gamma_variate(stream, n1 + SUB_WEIGHT_PRIOR)
        top = max(g0, g1)
        log_total = top + math.log(math.exp(g0 - top) + math.exp(g1 - top))
        log_pib0, log_pib1 = g0 - log_total, g1 - log_total
        draw_explicit(params, sub_stats, 0, stream, sub_theta, 0)
        draw_explicit(params, sub_stats, 1, stream, sub_theta, 1)
        for p in range(m):
            remove(params, sub_stats, data, items[p], sub[p])
    key = random_key(stream)
    _assign_sub(items, m, log_pib0, log_pib1, sub_theta, params, data, key, forced, sub, lp, alt)
    q_drawn = 0.0
    q_other = 0.0
    for p in range(m):
        q_drawn += lp[p]
        q_other += alt[p]
    return q_drawn, q_other


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
def _log_select_split(n_blocks):
    """log probability of choosing a given block's split with ``n_blocks`` blocks."""
    return (0.0 if n_blocks == 1 else math.log(0.5)) - math.log(n_blocks)


@_serial
def _log_select_merge(n_blocks):
    """log probability of choosing a given pair's merge with ``n_blocks`` >= 2 blocks."""
    return math.log(0.5) - math.log(n_blocks * (n_blocks - 1) / 2.0)


@_serial
def _proposal(stream, n_launch, state, prior_params, params, stats, data, sub_stats, sub_theta,
              items, forced, no_force, sub, lp, alt, sizes_tmp, active_tmp, pair, log_u_out):
    """One split or merge proposal. Returns ``(outcome, log target ratio, log Hastings
    term)`` with outcome one of ``SPLIT_REJECTED_ .. MERGE_ACCEPTED_``; accepted when
    ``log u < target + Hastings`` (``log_u_out[0]`` receives log u)."""
    n = state.labels.shape[0]
    n_blocks = state.counts[0]
    split = n_blocks == 1 or uniform(stream) < 0.5
    if split:
        ka = state.active[bounded(stream, n_blocks)]
        kb = -1
    else:
        a = bounded(stream, n_blocks)
        b = bounded(stream, n_blocks - 1)
        if b >= a:
            b += 1
        ka, kb = state.active[a], state.active[b]
    # S: the items of the block(s), in item order (its law depends on S only)
    m = 0
    for i in range(n):
        k = state.labels[i]
        if k == ka or k == kb:
            items[m] = i
            forced[m] = 0 if k == ka else 1
            m += 1
    log_u = math.log(1.0 - uniform(stream))
    log_u_out[0] = log_u
    if split and m < 2:
        return SPLIT_REJECTED_, -np.inf, 0.0
    if split:
        q_drawn, q_other = _launch(stream, items, m, n_launch, params, sub_stats, sub_theta,
                                   data, no_force, sub, lp, alt, no_force)
        n1 = 0
        for p in range(m):
            n1 += sub[p]
        if n1 == 0 or n1 == m:
            return SPLIT_REJECTED_, -np.inf, 0.0
        for p in range(m):
            add(params, sub_stats, data, items[p], sub[p])
        lm_new = log_marginal(params, sub_stats, 0) + log_marginal(params, sub_stats, 1)
        for p in range(m):
            remove(params, sub_stats, data, items[p], sub[p])
        pair[0], pair[1] = m - n1, n1
        target = (_log_prior_after(prior_params, state, sizes_tmp, active_tmp, ka, -1, pair, 2)
                  - log_prior(prior_params, state.sizes, state.active, n_blocks, n)
                  + lm_new - log_marginal(params, stats, ka))
        top = max(q_drawn, q_other)
        log_q = top + math.log(math.exp(q_drawn - top) + math.exp(q_other - top))
        hastings = _log_select_merge(n_blocks + 1) - _log_select_split(n_blocks) - log_q
        if not target + hastings == target + hastings:
            return -1, target, hastings
        if not log_u < target + hastings:
            return SPLIT_REJECTED_, target, hastings
        knew = open_new_block(state, params, stats)
        for p in range(m):
            if sub[p] == 1:
                move_item(state, params, stats, data, items[p], knew)
        return SPLIT_ACCEPTED_, target, hastings
    q_drawn, q_other = _launch(stream, items, m, n_launch, params, sub_stats, sub_theta, data,
                               forced, sub, lp, alt, no_force)
    for p in range(m):
        add(params, sub_stats, data, items[p], 0)
    lm_union = log_marginal(params, sub_stats, 0)
    for p in range(m):
        remove(params, sub_stats, data, items[p], 0)
    pair[0] = m
    target = (_log_prior_after(prior_params, state, sizes_tmp, active_tmp, ka, kb, pair, 1)
              - log_prior(prior_params, state.sizes, state.active, n_blocks, n)
              + lm_union - log_marginal(params, stats, ka) - log_marginal(params, stats, kb))
    top = max(q_drawn, q_other)
    log_q = top + math.log(math.exp(q_drawn - top) + math.exp(q_other - top))
    hastings = _log_select_split(n_blocks - 1) - _log_select_merge(n_blocks) + log_q
    if not target + hastings == target + hastings:
        return -1, target, hastings
    if not log_u < target + hastings:
        return MERGE_REJECTED_, target, hastings
    for p in range(m):
        if forced[p] == 1:
            move_item(state, params, stats, data, items[p], ka)
    return MERGE_ACCEPTED_, target, hastings


# ------------------------------------------------------------------ entries


def work_arrays(n, width, sub_stats):
    """Scratch of one chain for ``n`` items and explicit rows of ``width`` float64:
    a tuple ``(theta (n, width), sub_theta (2, width), log_pi (n,), anchor (n,),
    prop (n,), new_count (n,), items (n,), forced (n,), no_force (n,) of -1, sub (n,),
    lp (n,), alt (n,), sizes_tmp (n,), active_tmp (n,), pair (2,), log_u (1,),
    sub_stats)``; ``sub_stats`` the component's statistics of 2 empty slots."""
    i64 = np.int64
    return (
        np.zeros((n, width)), np.zeros((2, width)), np.zeros(n), np.zeros(n, dtype=i64),
        np.zeros(n, dtype=i64), np.zeros(n, dtype=i64), np.zeros(n, dtype=i64),
        np.zeros(n, dtype=i64), np.full(n, -1, dtype=i64), np.zeros(n, dtype=i64),
        np.zeros(n), np.zeros(n), np.zeros(n, dtype=i64), np.zeros(n, dtype=i64),
        np.zeros(2, dtype=i64), np.zeros(1), sub_stats,
    )


@njit(cache=True)
def subclusters_iteration(stream, n_proposals, n_launch, state, prior_params, params, stats,
                          data, work, outcomes):
    """One iteration: steps 1-2 once, then ``n_proposals`` split/merge proposals.

    ``work`` from :func:`work_arrays`; ``outcomes`` (N_OUTCOMES,) int64 receives this
    iteration's counts (``LABELS_ACCEPTED``, ``SPLIT_PROPOSED`` ...). Returns 0, or
    -1 when a weight or ratio was NaN (the state is a valid partition).
    """
    (theta, sub_theta, log_pi, anchor, prop, new_count, items, forced, no_force, sub, lp, alt,
     sizes_tmp, active_tmp, pair, log_u, sub_stats) = work
    for c in range(outcomes.shape[0]):
        outcomes[c] = 0
    status = _label_update(stream, state, prior_params, params, stats, data, theta, log_pi,
                           anchor, prop, new_count)
    if status < 0:
        return -1
    outcomes[LABELS_ACCEPTED] = status
    for _ in range(n_proposals):
        outcome, target, hastings = _proposal(
            stream, n_launch, state, prior_params, params, stats, data, sub_stats, sub_theta,
            items, forced, no_force, sub, lp, alt, sizes_tmp, active_tmp, pair, log_u)
        if outcome < 0:
            return -1
        if outcome <= SPLIT_ACCEPTED_:
            outcomes[SPLIT_PROPOSED] += 1
            outcomes[SPLIT_ACCEPTED] += outcome == SPLIT_ACCEPTED_
        else:
            outcomes[MERGE_PROPOSED] += 1
            outcomes[MERGE_ACCEPTED] += outcome == MERGE_ACCEPTED_
    return 0


@njit(cache=True)
def subclusters_proposal_entry(stream, n_launch, state, prior_params, params, stats, data, work):
    """One split or merge proposal from Python (tests): ``(outcome, log target ratio,
    log Hastings term, log u)``; accepted iff ``log u < target + Hastings``."""
    (theta, sub_theta, log_pi, anchor, prop, new_count, items, forced, no_force, sub, lp, alt,
     sizes_tmp, active_tmp, pair, log_u, sub_stats) = work
    outcome, target, hastings = _proposal(
        stream, n_launch, state, prior_params, params, stats, data, sub_stats, sub_theta,
        items, forced, no_force, sub, lp, alt, sizes_tmp, active_tmp, pair, log_u)
    return outcome, target, hastings, log_u[0]
