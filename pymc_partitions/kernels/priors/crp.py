r"""Chinese restaurant process prior (Ewens distribution).

.. math::

    p(z \mid \alpha) = \alpha^K \frac{\Gamma(\alpha)}{\Gamma(\alpha + n)}
    \prod_{k=1}^K \Gamma(n_k)

An item joins a block of size m with weight m and opens a new block with weight
:math:`\alpha` (Neal 2000, eq. 3.7). The log weights are tabulated by block size
(entry 0 is :math:`\log\alpha`), so a Gibbs move computes no logarithm for them.
A set of c items joins a block of size m with weight :math:`\Gamma(m+c)/\Gamma(m)`
and a new block with weight :math:`\alpha\,\Gamma(c)`. The kernels read it as
:class:`~.gibbs_type.GibbsTypeParams` (``new`` = log alpha, ``join`` = log m,
``stay`` = 0: the Gibbs weights above bit for bit).
"""

import numpy as np

from pymc_partitions.kernels.priors.gibbs_type import gibbs_type, lgamma_of_sizes, lgamma_table


def make_params(alpha, n):
    """The CRP(alpha) of n items as Gibbs-type tables: V(K) = alpha^K Gamma(alpha) /
    Gamma(alpha + n), W(m) = Gamma(m)."""
    alpha = float(alpha)
    log_alpha = np.log(alpha)
    join = np.log(np.arange(n + 1, dtype=np.float64), where=np.arange(n + 1) > 0,
                  out=np.zeros(n + 1))
    log_w = lgamma_of_sizes(n)  # log Gamma(m), shared between values of alpha
    log_v = np.arange(n + 2) * log_alpha + (lgamma_table(alpha, 1)[0]
                                            - lgamma_table(alpha + n, 1)[0])
    return gibbs_type(n, join=join, stay=0.0, new=log_alpha, log_v=log_v, log_w=log_w)
