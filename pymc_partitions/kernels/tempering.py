r"""A tempered target as a dispatch wrapper: any (component, prior) pair raised to 1/t.

Population samplers on a temperature ladder (Goswami, Liu & Wong 2005, Population
Based Clustering; DESIGN §3: "Tempering multiplies the total log target by 1/t")
sample member i from

.. math:: f_i(z) \propto \pi(z)^{1/t_i} = \bigl(p(z)\, p(x \mid z)\bigr)^{1/t_i}.

Every move of the library reads the target only through the generic primitives of
:mod:`.components.base` (``log_pred``, ``log_marginal``) and :mod:`.priors.base`
(``log_prior_pred``, ``log_prior_block``, ``log_prior``). Wrapping the params in
:class:`Tempered` and the prior params in :class:`TemperedPrior` (two more record
types with their own dispatch, like the components' ``Pair``) makes each of these
return the untempered value times 1/t, while ``add``, ``remove`` and ``refresh``
pass through, so the sufficient statistics and their caches do not depend on the
temperature (a state may move between rungs without any recomputation). Every
likelihood and prior is thereby temperable without editing it, and every move
built on the primitives (Gibbs, split-merge, block sweeps, the PBC moves) samples
the tempered target:

- a Gibbs conditional :math:`P(z_i = k \mid z_{-i}) \propto (W_k\, p(x_i \mid
  x_{-i,k}))^{1/t}`: its log weights are the untempered ones times 1/t, and a
  term common to all blocks stays common;
- a Metropolis-Hastings ratio of two partitions: 1/t times the untempered log
  target difference, as the log joint (``bookkeeping.log_joint``) sums the
  tempered prior and marginals.

Zero probabilities stay zero (-inf times 1/t > 0 is -inf), so constrained priors
(a fixed number of blocks, proper colourings) keep their support. At 1/t = 1 every
value equals the untempered one bit for bit.

Build the pair with :func:`temper`; :func:`untempered` recovers the inner records.
"""

from typing import Any, NamedTuple

import numpy as np

from pymc_partitions.kernels.components import base as components
from pymc_partitions.kernels.priors import base as priors


class Tempered(NamedTuple):
    """Component params ``inner`` (any registered component, a ``Pair`` included)
    with its log densities multiplied by ``inv_t`` = 1/t > 0."""

    inner: Any
    inv_t: float


class TemperedPrior(NamedTuple):
    """Prior params ``inner`` (any registered prior) with its log weights multiplied by
    ``inv_t`` = 1/t > 0."""

    inner: Any
    inv_t: float


def check_inverse_temperature(inv_t):
    """``inv_t`` as a float; a ValueError unless it is finite and > 0."""
    value = float(inv_t)
    if not (np.isfinite(value) and value > 0.0):
        raise ValueError(
            f"tempering: the inverse temperature 1/t must be finite and > 0, got {inv_t!r}."
        )
    return value


def temper(prior_params, params, inv_t):
    """``(TemperedPrior(prior_params, inv_t), Tempered(params, inv_t))``: the target
    pi(z)^(1/t) for the moves, in their argument order (prior first)."""
    inv_t = check_inverse_temperature(inv_t)
    return TemperedPrior(prior_params, inv_t), Tempered(params, inv_t)


def untempered(prior_params, params):
    """The inner records of a tempered pair (unchanged if not tempered)."""
    if isinstance(prior_params, TemperedPrior):
        prior_params = prior_params.inner
    if isinstance(params, Tempered):
        params = params.inner
    return prior_params, params


# --------------------------------------------------------------------- component
def _log_pred(params, stats, data, i, k):
    return params.inv_t * components.log_pred(params.inner, stats, data, i, k)


def _add(params, stats, data, i, k):
    components.add(params.inner, stats, data, i, k)


def _remove(params, stats, data, i, k):
    components.remove(params.inner, stats, data, i, k)


def _refresh(params, stats, k):
    components.refresh(params.inner, stats, k)


def _log_marginal(params, stats, k):
    return params.inv_t * components.log_marginal(params.inner, stats, k)


components.register(Tempered, log_pred=_log_pred, add=_add, remove=_remove,
                    refresh=_refresh, log_marginal=_log_marginal)


# ------------------------------------------------------------------------- prior
def _log_prior_pred(prior_params, size, n_blocks):
    return prior_params.inv_t * priors.log_prior_pred(prior_params.inner, size, n_blocks)


def _log_prior(prior_params, sizes, active, n_active, n):
    return prior_params.inv_t * priors.log_prior(prior_params.inner, sizes, active,
                                                 n_active, n)


def _log_prior_block(prior_params, size, c, n_blocks):
    return prior_params.inv_t * priors.log_prior_block(prior_params.inner, size, c, n_blocks)


priors.register(TemperedPrior, log_prior_pred=_log_prior_pred, log_prior=_log_prior,
                log_prior_block=_log_prior_block)


__all__ = ["Tempered", "TemperedPrior", "check_inverse_temperature", "temper", "untempered"]
