r"""A tempered target: any (component, prior) pair raised to 1/t, by a run-time field.

Population samplers on a temperature ladder (Goswami, Liu & Wong 2005, Population
Based Clustering; DESIGN §3: "Tempering multiplies the total log target by 1/t")
sample member i from

.. math:: f_i(z) \propto \pi(z)^{1/t_i} = \bigl(p(z)\, p(x \mid z)\bigr)^{1/t_i}.

Every move of the library reads the target only through the generic primitives of
:mod:`.components.base` (``log_pred``, ``log_pred_block``, ``log_marginal``) and
:mod:`.priors.base` (``log_prior_pred``, ``log_prior_block``, ``log_prior``). Every
params record (component, prior, ``Pair``) has a last field ``inv_t`` (default 1.0),
and each of these generic functions returns the record's own value times ``inv_t``,
while ``add``, ``remove`` and ``refresh`` do not read it, so the sufficient statistics
and their caches do not depend on the temperature (a state may move between rungs
without any recomputation). The temperature is a number, not a type: one compiled
kernel serves every rung and the untempered target (a wrapper record type compiled
every move once more, and hid the IRM's closed-form ``log_pred_block``), and at
1/t = 1 every value is the untempered one bit for bit (x * 1.0 = x). Every move
built on the primitives (Gibbs, split-merge, block sweeps, the PBC moves) thereby
samples the tempered target:

- a Gibbs conditional :math:`P(z_i = k \mid z_{-i}) \propto (W_k\, p(x_i \mid
  x_{-i,k}))^{1/t}`: its log weights are the untempered ones times 1/t, and a
  term common to all blocks stays common;
- a Metropolis-Hastings ratio of two partitions: 1/t times the untempered log
  target difference, as the log joint (``bookkeeping.log_joint``) sums the
  tempered prior and marginals.

Zero probabilities stay zero (-inf times 1/t > 0 is -inf), so constrained priors
(a fixed number of blocks, proper colourings) keep their support. At 1/t = 1 every
value equals the untempered one bit for bit.

Build the pair with :func:`temper`; :func:`untempered` sets 1/t back to 1. A ``Pair``
is tempered through its own field (its members keep 1.0).
"""

import numpy as np


def check_inverse_temperature(inv_t):
    """``inv_t`` as a float; a ValueError unless it is finite and > 0."""
    value = float(inv_t)
    if not (np.isfinite(value) and value > 0.0):
        raise ValueError(
            f"tempering: the inverse temperature 1/t must be finite and > 0, got {inv_t!r}."
        )
    return value


def temper(prior_params, params, inv_t):
    """``(prior_params, params)`` with ``inv_t`` = 1/t: the target pi(z)^(1/t) for the
    moves, in their argument order (prior first)."""
    inv_t = check_inverse_temperature(inv_t)
    for record in (prior_params, params):
        if "inv_t" not in getattr(type(record), "_fields", ()):
            raise TypeError(
                f"tempering: the params record {type(record).__name__} has no 'inv_t' "
                f"field; add `inv_t: float = 1.0` as its last field to make it temperable."
            )
    return prior_params._replace(inv_t=inv_t), params._replace(inv_t=inv_t)


def untempered(prior_params, params):
    """The records at 1/t = 1 (unchanged if not tempered)."""
    return prior_params._replace(inv_t=1.0), params._replace(inv_t=1.0)


__all__ = ["check_inverse_temperature", "temper", "untempered"]
