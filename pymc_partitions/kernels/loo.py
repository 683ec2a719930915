r"""Leave-one-out predictive densities of every item, for many partitions.

For a collapsed likelihood y observed on a partition z, PSIS-LOO needs for each
posterior draw a pointwise term :math:`\log p(y_i \mid y_{-i}, \phi)` whose
reciprocal is the importance ratio from the posterior to the leave-one-out
posterior (the non-factorised LOO of Bürkner, Gabry & Vehtari 2021, Comput. Stat.
36, §2, eqs. 5-7). Item i's own label :math:`z_i` is a latent variable of that item
alone, so it is integrated out (Vehtari et al. 2016, JMLR 17, §3, "integrated"
importance sampling for latent variables; Merkle, Furr & Rabe-Hesketh 2019): with
:math:`\phi = (z_{-i}, \theta)`,

.. math::

    p(y_i \mid y_{-i}, x, z_{-i}, \theta) =
    \frac{\sum_k \pi_k\, r_k\, p(y_i \mid y_{-i}, z_i = k)}{\sum_k \pi_k\, r_k},
    \qquad \pi_k \propto p(z_i = k \mid z_{-i}),\quad
    r_k = p(x_i \mid x_{-i}, z_i = k)\; c_k,

over the blocks k of :math:`z_{-i}` and one new block: :math:`\pi_k` is the prior's
prediction rule (``log_prior_pred``), :math:`c_k` a prior's support constraint
(0 or 1, e.g. a proper colouring) and :math:`x` the other likelihoods observed on
the same partition, which stay observed (the term is for leaving out :math:`y_i`
only). These are the weights of a Gibbs update of item i (Neal 2000, Alg. 3):
numerator and denominator are the log-sum-exp of the Gibbs log weights with and
without y's predictive. Conditioning on :math:`z_i` as well would also be a valid
importance ratio, but a heavy-tailed one (under the leave-one-out posterior
:math:`z_i` follows the prior rule, under the posterior it sits in its block: the
few draws with i in a poorly fitting block dominate and the Pareto k exceeds 0.7).

Components are passed as one ``Pair(rest, y)`` (:mod:`.components.base`): ``rest``
is the constraint and the other likelihoods combined, or :class:`Nothing` when there
are none. Cost per draw: one Gibbs sweep's worth of primitive calls (per item one
``remove``, K + 1 ``log_pred`` of each part, one ``add``) on sufficient statistics,
never a rescan of a block (DESIGN §3). No randomness.
"""

from typing import NamedTuple

import numpy as np

from pymc_partitions.kernels._jit import entry, primitive
from pymc_partitions.kernels.bookkeeping import assign_labels, open_new_block
from pymc_partitions.kernels.components import add, log_pred, remove
from pymc_partitions.kernels.components.base import register
from pymc_partitions.kernels.priors import log_prior_pred
from pymc_partitions.kernels.state import close_slot, log_sum_exp, top_free_slot


class Nothing(NamedTuple):
    """Params of the empty component (log density 0): the ``rest`` of a ``Pair`` when
    the partition carries no other likelihood and no constraint. Its stats and data
    are ``EMPTY``."""

    unused: int
    inv_t: float = 1.0  # 1/t: a tempered target (kernels/tempering.py)


EMPTY = np.empty(0, dtype=np.int64)
NOTHING = Nothing(0)


@primitive
def _nothing_log_pred(params, stats, data, i, k):
    return 0.0


@primitive
def _nothing_update(params, stats, data, i, k):
    pass


@primitive
def _nothing_refresh(params, stats, k):
    pass


@primitive
def _nothing_log_marginal(params, stats, k):
    return 0.0


register(
    Nothing,
    log_pred=_nothing_log_pred,
    add=_nothing_update,
    remove=_nothing_update,
    refresh=_nothing_refresh,
    log_marginal=_nothing_log_marginal,
)


@primitive
def loo_item(state, prior_params, params, stats, data, i, log_w, log_v):
    """log p(y_i | y_{-i}, x, z_{-i}) for the loaded partition; leaves it unchanged.

    ``params`` is ``Pair(rest, y)`` with stats and data 2-tuples; ``log_w``, ``log_v``
    are (n + 1,) float64 scratch.
    """
    sizes, active, counts = state.sizes, state.active, state.counts
    rest, y = params.first, params.second
    k_old = state.labels[i]
    remove(params, stats, data, i, k_old)
    sizes[k_old] -= 1
    if sizes[k_old] == 0:
        close_slot(state, k_old)  # now the top free slot: the new-block candidate
    n_active = counts[0]
    for a in range(n_active + 1):
        k = active[a] if a < n_active else top_free_slot(state)
        size = sizes[k] if a < n_active else 0
        base = log_prior_pred(prior_params, size, n_active) + log_pred(
            rest, stats[0], data[0], i, k
        )
        log_v[a] = base
        log_w[a] = base + log_pred(y, stats[1], data[1], i, k)
    value = log_sum_exp(log_w, n_active + 1) - log_sum_exp(log_v, n_active + 1)
    # Put i back where it was (a closed k_old is still the top free slot).
    k = open_new_block(state, params, stats) if sizes[k_old] == 0 else k_old
    add(params, stats, data, i, k)
    sizes[k] += 1
    state.labels[i] = k
    return value


@entry
def loo_log_preds(state, prior_params, params, stats, data, labels, out, log_w, log_v):
    """``out[s, i] = log p(y_i | y_{-i}, x, z_{-i} = labels[s, -i])`` for every draw s
    and item i (see the module docstring).

    Parameters
    ----------
    state : PartitionState of n items, all unassigned (``new_state(n)``)
    prior_params : the partition prior's params record
    params, stats, data : ``Pair(rest, y)`` and 2-tuples (stats of n empty slots)
    labels : (S, n) int64
        One partition per row, labels in [0, n) (canonical labels are).
    out : (S, n) float64
        Receives the log predictive densities.
    log_w, log_v : (n + 1,) float64
        Scratch.

    Each partition is loaded with ``assign_labels`` (which refreshes its blocks'
    caches for ``params``) and unloaded afterwards, so ``state`` and ``stats`` are
    empty again on return and may be reused with other params. A row equal to the
    previous one is copied, not recomputed.
    """
    n_draws, n = labels.shape
    for s in range(n_draws):
        if s > 0:
            same = True
            for i in range(n):
                if labels[s, i] != labels[s - 1, i]:
                    same = False
                    break
            if same:
                for i in range(n):
                    out[s, i] = out[s - 1, i]
                continue
        assign_labels(state, params, stats, data, labels[s])
        for i in range(n):
            out[s, i] = loo_item(state, prior_params, params, stats, data, i, log_w, log_v)
        # Unload: every item out, every slot back on the free stack.
        sizes = state.sizes
        for i in range(n):
            k = state.labels[i]
            remove(params, stats, data, i, k)
            sizes[k] -= 1
            if sizes[k] == 0:
                close_slot(state, k)
            state.labels[i] = -1


__all__ = ["EMPTY", "NOTHING", "Nothing", "loo_log_preds"]
