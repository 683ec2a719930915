r"""Uniform prior over the partitions of n items with exactly k blocks.

.. math:: p(z) = \frac{1\{K = k\}}{S(n, k)}

with :math:`S(n, k)` the Stirling number of the second kind (the number of such
partitions). Goswami, Liu & Wong (2007), §7.3, eq. 24, restrict the cluster
indicators to S = 5 sub-clusters with this indicator. Gibbs type with W = 1 and
V(K) = 1{K = k}: an item may join an existing block only while the other items form
k blocks, and must open a new one when they form k - 1 (an item alone in its block
stays alone), so no Gibbs move opens or empties a block. The weights are the
absolute values of V (0 or -inf), not ratios: V(K + 1)/V(K) is 0/0 for K != k.
"""

import numpy as np

from pymc_partitions.kernels.priors.gibbs_type import gibbs_type


def log_stirling2(n, k):
    """log S(n, k), the Stirling number of the second kind, by the recursion
    S(m, j) = j S(m-1, j) + S(m-1, j-1) in log space; -inf when k > n or k < 1 <= n."""
    if k < 0 or k > n:
        return -np.inf
    row = np.full(k + 1, -np.inf)
    row[0] = 0.0  # S(0, 0) = 1
    for _ in range(n):
        new = np.full(k + 1, -np.inf)
        j = np.arange(1, k + 1)
        new[1:] = np.logaddexp(np.log(j) + row[1:], row[:-1])
        row = new
    return float(row[k])


def make_params(k, n):
    k, n = int(k), int(n)
    if not 1 <= k <= n:
        raise ValueError(f"FixedBlocks needs 1 <= k <= n; got k = {k}, n = {n}.")
    log_v = np.full(n + 2, -np.inf)  # V(K) = 1{K = k}, normalised
    log_v[k] = -log_stirling2(n, k)
    stay = np.where(np.arange(n + 2) == k, 0.0, -np.inf)
    new = np.append(stay[1:], -np.inf)  # V(K + 1)
    return gibbs_type(n, join=0.0, stay=stay, new=new, log_v=log_v, log_w=0.0)
