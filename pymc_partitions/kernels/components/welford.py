r"""Centred running statistics of a block (Welford 1962), shared by components.

Per slot k and dimension d a component keeps the block's mean
:math:`\bar x_{kd}` and centred sum of squares :math:`M_{kd} = \sum_{i \in k}
(x_{id} - \bar x_{kd})^2`. Adding or removing one item updates both in O(D)
without the cancellation of :math:`\sum x^2 - (\sum x)^2/m` (which loses every
digit when a block's spread is small against its mean):

.. math::

    \text{add: } \bar x' = \bar x + (x - \bar x)/m', \quad
    M' = M + (x - \bar x)(x - \bar x'); \qquad
    \text{remove: } \bar x' = \bar x - (x - \bar x)/m', \quad
    M' = M - (x - \bar x')(x - \bar x)

with :math:`m'` the new size. An emptied slot is reset to exact zeros and a block
of one item gets :math:`M = 0` exactly, so no rounding residue accumulates there.
"""

from pymc_partitions.kernels._jit import primitive


@primitive
def welford_add(mean, m2, x, i, k, m_new):
    """Item i (row of x, (N, D) float64) joins slot k, whose size is now ``m_new``.

    mean, m2 : (n_slots, D) float64, updated in place.
    """
    for d in range(x.shape[1]):
        delta = x[i, d] - mean[k, d]
        mean[k, d] += delta / m_new
        m2[k, d] += delta * (x[i, d] - mean[k, d])


@primitive
def welford_remove(mean, m2, x, i, k, m_new):
    """Item i leaves slot k, whose size is now ``m_new`` (may be 0)."""
    if m_new == 0:
        for d in range(x.shape[1]):
            mean[k, d] = 0.0
            m2[k, d] = 0.0
        return
    for d in range(x.shape[1]):
        delta = x[i, d] - mean[k, d]
        mean[k, d] -= delta / m_new
        if m_new == 1:
            m2[k, d] = 0.0
        else:
            m2[k, d] = max(m2[k, d] - delta * (x[i, d] - mean[k, d]), 0.0)
