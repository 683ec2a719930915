r"""Pitman-Yor (two-parameter) partition prior.

.. math::

    p(z \mid \alpha, d) = \frac{\prod_{i=1}^{K-1} (\alpha + i d)}{(\alpha + 1)_{n-1}}
    \prod_{k=1}^{K} (1 - d)_{n_k - 1},
    \qquad 0 \le d < 1,\ \alpha > -d

(Pitman 1995; Pitman & Yor 1997), with :math:`(x)_m = \Gamma(x+m)/\Gamma(x)` the
rising factorial. It is of Gibbs type, :math:`V(K) = \prod_{i<K}(\alpha+id)/(\alpha+1)_{n-1}`,
:math:`W(m) = (1-d)_{m-1}`. An item joins a block of size m with weight
:math:`m - d` and opens a new block with weight :math:`\alpha + K d` (K blocks
among the other items); ``d = 0`` is the CRP. A set of c items joins a block of
size m with weight :math:`\Gamma(m+c-d)/\Gamma(m-d)` and a new block with weight
:math:`(\alpha + K d)\,\Gamma(c-d)/\Gamma(1-d)`. The weights are tabulated as
:class:`~.gibbs_type.GibbsTypeParams`.
"""

import numpy as np

from pymc_partitions.kernels.priors.gibbs_type import gibbs_type, lgamma_table


def make_params(alpha, d, n):
    alpha, d = float(alpha), float(d)
    if not (0.0 <= d < 1.0) or not alpha > -d or not np.isfinite(alpha):
        raise ValueError(
            f"Pitman-Yor needs 0 <= d < 1 and alpha > -d; got alpha = {alpha!r}, d = {d!r}."
        )
    m = np.arange(n + 1, dtype=np.float64)
    join = np.zeros(n + 1)
    join[1:] = np.log(m[1:] - d)
    K = np.arange(n + 2, dtype=np.float64)
    new = np.zeros(n + 2)  # new[0]: a first block, the only choice
    new[1:] = np.log(alpha + K[1:] * d)
    # log W(m) - log W(1) = log Gamma(m - d) - log Gamma(1 - d); V from the new-block
    # ratios: log V(K) = lgamma(alpha + 1) - lgamma(alpha + n) + sum_{i<K} log(alpha + i d).
    log_w = np.zeros(n + 2)
    log_w[1:] = lgamma_table(1.0 - d, n + 1) - lgamma_table(1.0 - d, 1)[0]
    log_v = np.zeros(n + 2)
    log_v[1:] = np.cumsum(np.concatenate(([0.0], new[1:n + 1])))
    log_v += lgamma_table(alpha + 1.0, 1)[0] - lgamma_table(alpha + n, 1)[0]
    return gibbs_type(n, join=join, stay=0.0, new=new, log_v=log_v, log_w=log_w)
