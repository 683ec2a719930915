r"""Split-merge for Dirichlet-process mixtures of Generalized Mallows models with
explicit cluster parameters (numba).

The state is Slice-Gibbs' (:mod:`pymc_partitions.kernels.mallows_gibbs`): a
partition z of the N rankings and, per occupied slot c, phi_c = (sigma_c, theta_c).
The target is

.. math::

    \pi(z, \phi) \propto p(z \mid \alpha) \prod_c P_0(\phi_c)
        \prod_{h \in c} GM(\pi_h \mid \phi_c).

One Metropolis-Hastings update (Jain & Neal 2004, §3.3, restricted Gibbs launch, the
pattern of :mod:`pymc_partitions.kernels.split_merge`, here with the cluster
parameters *held fixed* through the launch) picks an ordered pair (i, j) of distinct
rankings uniformly, a = z_i, and S = the rankings of z_i's and z_j's clusters other
than i and j.

**Split** (z_i = z_j = C). i's side keeps phi_C; j's side gets phi_b drawn exactly
from P0(. | pi_j) (:func:`~pymc_partitions.kernels.mallows_gibbs.new_cluster_draw`),
whose density is q(phi_b) = P0(phi_b) GM(pi_j | phi_b) / m(pi_j), with m(pi_j) =
(n - t_j)!/n! the marginal of one ranking (Meilă & Chen 2010, Lemma 1). The launch
puts each h of S on either side uniformly at random, then ``n_scans`` restricted
Gibbs scans move each h (in increasing item order) between the sides with
probability proportional to n_{c,-h} GM(pi_h | phi_c), c in {a, b} (the parameters
fixed, so GM(pi_h | phi_c) is computed once per h and side); one more scan gives the
proposal z^split with probability Q = prod_h (its conditionals). Accept with

.. math::

    \log r = \log\alpha + \log\Gamma(n_a) + \log\Gamma(n_b) - \log\Gamma(n_a + n_b)
           + \log m(\pi_j) - \log GM(\pi_j \mid \phi_C)
           + \sum_{h \in S_b} [\log GM(\pi_h \mid \phi_b) - \log GM(\pi_h \mid \phi_C)]
           - \log Q,

the ratio pi(z^split, phi) / (pi(z, phi) q(phi_b) Q): the CRP prior ratio, P0(phi_b)
/ q(phi_b) = m(pi_j) / GM(pi_j | phi_b), whose GM(pi_j | phi_b) cancels j's own term
in the new cluster's likelihood, and the likelihood ratio of the rankings S_b that
move to j's side.

**Merge** (z_i != z_j). The two clusters join with i's cluster's parameters phi_a;
phi_b is dropped. The reverse split (same ordered pair) would draw phi_b from
q and run the same launch with (phi_a, phi_b): so the launch is run with the present
phi_a, phi_b, and Q is the probability that a final scan from it is *forced* to the
present configuration. Accept with exp(-log r), log r as above at the present
state. The merge is deterministic given (i, j); the ordered pair is what tells
which parameters survive, so each update and its reverse are chosen with the same
probability 1 / (N (N - 1)).

*Exactness.* The launch state L is an auxiliary draw whose law depends only on S,
phi_a and phi_b, never on how S is split in z, and (S, phi_a, phi_b) are the same
before a split and after it (and before and after a merge), so the flows (z, phi) ->
(z', phi') with L drawn and L integrated over balance term by term (Jain & Neal
2004, §3.1). The explicit phi_b replaces the integrated-out parameters of the
conjugate case: the move is a reversible jump between (z, phi) of dimensions K and
K + 1 whose only new coordinate phi_b is proposed from a normalised density, so no
Jacobian enters. Tested against enumeration (``tests/test_mallows_split_merge.py``).

Where this differs from the paper: Meilă & Chen (2010) have no split-merge move;
their samplers (Figures 1, 5) move one ranking at a time. Jain & Neal (2007) give a
non-conjugate split-merge that also updates the parameters inside the launch; that
needs the transition densities of the parameter updates, which the MH and slice
steps of sigma and theta do not have in closed form, so the parameters are held
fixed here and refreshed by the sampler's parameter step after the update.

Randomness: every decision draws from the chain's ``stream`` (no counter-based
uniforms; the GM samplers are not coupled).

Cost of one update: O(N) to collect S, O(|S| t log n) for the 2 |S| log-likelihoods,
O((n_scans + 1) |S|) for the scans, O(t n) per moved ranking for the statistics,
and a new cluster's exact draw (O(T n) plus the theta rejections) for a split.
"""

import math

from pymc_partitions.kernels._jit import entry, primitive
from pymc_partitions.kernels.mallows import add_ranking, gm_log_likelihood, remove_ranking
from pymc_partitions.kernels.mallows_gibbs import new_cluster_draw
from pymc_partitions.kernels.random import bounded, uniform

# Outcomes, indices into ``outcomes`` (as kernels.split_merge).
SPLIT_REJECTED, SPLIT_ACCEPTED, MERGE_REJECTED, MERGE_ACCEPTED = 0, 1, 2, 3
#: Negative controls only (tests): the exact ratio, q(phi_b) taken as the prior
#: (m(pi_j) / GM(pi_j | phi_b) dropped), the launch's proposal probability Q dropped.
EXACT, DROP_NEW_CLUSTER_FACTOR, DROP_LAUNCH_PROBABILITY = 0, 1, 2


@primitive
def _move_ranking(counts, n_at_least, sizes, labels, ordering, length, h, dest):
    src = labels[h]
    remove_ranking(counts, n_at_least, ordering, length, src)
    add_ranking(counts, n_at_least, ordering, length, dest)
    sizes[src] -= 1
    sizes[dest] += 1
    labels[h] = dest


@entry
def split_merge_updates(orderings, lengths, labels, sizes, counts, n_at_least, sigma, pos,
                        theta, free, n_free, n_updates, start, n_scans, log_alpha, log_new, nu,
                        r, log_bt1, control, stream, members, side, log_a, log_b, tree, codes,
                        taken, placed, rest, outcomes, status):
    """Updates ``start .. n_updates - 1`` of the module's move, on the slot arrays of
    :mod:`~pymc_partitions.kernels.mallows_gibbs` (labels (N,), sizes (C,), counts
    (C, T, n, n), n_at_least (C, T), sigma, pos (C, n), theta (C, T), free (C,),
    n_free (1,)).

    log_alpha: log CRP concentration; log_new (N,): log m(pi_h) = log (n - t_h)!/n!
    (Lemma 1); nu, r, log_bt1: as ``new_cluster_draw``; n_scans: intermediate
    restricted scans (>= 0); control: :data:`EXACT` (tests set the others).
    outcomes (4,) int64 is incremented per update; status (1,) set to 1 if a theta
    draw failed. Scratch: members, side (N,) int64; log_a, log_b (N,) float64; tree
    (n + 1,) int64 zero; codes (>= max(w, n),) int64; taken, placed (n,) bool; rest
    (n,) int64.

    Returns -1 when done, or the index u of the first update that found no free slot
    (before drawing anything for it): the caller grows the arrays and calls again
    with start = u.
    """
    N = orderings.shape[0]
    for u in range(start, n_updates):
        if n_free[0] == 0:
            return u
        i = bounded(stream, N)
        j = bounded(stream, N - 1)
        if j >= i:
            j += 1
        a = labels[i]
        split = labels[j] == a
        if split:
            n_free[0] -= 1
            b = free[n_free[0]]
            if not new_cluster_draw(orderings[j], lengths[j], nu, r, log_bt1, stream, sigma[b],
                                    pos[b], theta[b], taken, placed, rest):
                status[0] = 1
        else:
            b = labels[j]
        count = 0
        for h in range(N):
            if h != i and h != j and (labels[h] == a or labels[h] == b):
                members[count] = h
                count += 1
        # The parameters stay fixed through the move: each log GM once per side.
        for q in range(count):
            h = members[q]
            log_a[q] = gm_log_likelihood(orderings[h], lengths[h], pos[a], theta[a], tree, codes)
            log_b[q] = gm_log_likelihood(orderings[h], lengths[h], pos[b], theta[b], tree, codes)
        log_j_a = gm_log_likelihood(orderings[j], lengths[j], pos[a], theta[a], tree, codes)
        # Launch: a uniformly random split of S (i on side a, j on side b) ...
        n_a = 1
        n_b = 1
        for q in range(count):
            if uniform(stream) < 0.5:
                side[q] = 1
                n_b += 1
            else:
                side[q] = 0
                n_a += 1
        # ... then n_scans restricted Gibbs scans; the last scan (s = n_scans) is the
        # proposal (split) or forced to the present configuration (merge).
        log_q = 0.0
        for s in range(n_scans + 1):
            final = s == n_scans
            for q in range(count):
                if side[q] == 1:
                    n_b -= 1
                else:
                    n_a -= 1
                w_a = math.log(n_a) + log_a[q]
                w_b = math.log(n_b) + log_b[q]
                top = max(w_a, w_b)
                log_norm = top + math.log(math.exp(w_a - top) + math.exp(w_b - top))
                if final and not split:
                    to_b = labels[members[q]] == b
                else:
                    to_b = uniform(stream) < math.exp(w_b - log_norm)
                if to_b:
                    side[q] = 1
                    n_b += 1
                    if final:
                        log_q += w_b - log_norm
                else:
                    side[q] = 0
                    n_a += 1
                    if final:
                        log_q += w_a - log_norm
        # log of pi(split) / (pi(merged) q(phi_b) Q) at the split configuration
        log_r = (log_alpha + math.lgamma(n_a) + math.lgamma(n_b) - math.lgamma(n_a + n_b)
                 - log_j_a)
        if control == DROP_NEW_CLUSTER_FACTOR:
            log_r += gm_log_likelihood(orderings[j], lengths[j], pos[b], theta[b], tree, codes)
        else:
            log_r += log_new[j]
        if control != DROP_LAUNCH_PROBABILITY:
            log_r -= log_q
        for q in range(count):
            if side[q] == 1:
                log_r += log_b[q] - log_a[q]
        log_u = math.log1p(-uniform(stream))
        if split:
            if log_u < log_r:
                _move_ranking(counts, n_at_least, sizes, labels, orderings[j], lengths[j], j, b)
                for q in range(count):
                    if side[q] == 1:
                        h = members[q]
                        _move_ranking(counts, n_at_least, sizes, labels, orderings[h],
                                      lengths[h], h, b)
                outcomes[SPLIT_ACCEPTED] += 1
            else:
                n_free[0] += 1  # b back on the free stack
                outcomes[SPLIT_REJECTED] += 1
        else:
            if log_u < -log_r:
                _move_ranking(counts, n_at_least, sizes, labels, orderings[j], lengths[j], j, a)
                for q in range(count):
                    h = members[q]
                    if labels[h] == b:
                        _move_ranking(counts, n_at_least, sizes, labels, orderings[h],
                                      lengths[h], h, a)
                free[n_free[0]] = b
                n_free[0] += 1
                outcomes[MERGE_ACCEPTED] += 1
            else:
                outcomes[MERGE_REJECTED] += 1
    return -1
