"""Network preparation as Herlau et al. (2016) prepare their benchmark networks.

Herlau, Mørup, Schmidt & Teh, *Adaptive Reconfiguration Moves for MCMC inference
in Dirichlet Process Mixtures*, §3.3: "All networks were prepared by symmetrizing
adding the transpose, thresholding at 0 and removing diagonal elements. To
downsample a network from n to m vertices we sort the vertices according to the
degree and label index (in descending order) and retain the m first elements."
Their Tables 3-5 and Figure 6a name a network by that fraction m / n (the
"scale": NIPS 1, 0.9, 0.8; Hagmann 0.4, 0.3, 0.2; USAir 0.9, 0.8, 0.7).
"""

from typing import NamedTuple

import numpy as np

try:  # scipy.sparse is optional input, never required
    import scipy.sparse as _sparse
except ImportError:  # pragma: no cover - scipy is a dependency
    _sparse = None


class PreparedNetwork(NamedTuple):
    """A prepared network.

    adjacency : (m, m) int64
        Symmetric 0/1 adjacency of the retained vertices, zero diagonal; row r is
        vertex ``vertices[r]`` of the input.
    vertices : (m,) int64
        The retained vertices' indices in the input, ascending.
    degrees : (n,) int64
        Every input vertex's degree in the prepared full network (before the
        downsampling), the key the vertices were ranked by.
    """

    adjacency: np.ndarray
    vertices: np.ndarray
    degrees: np.ndarray


def prepare_network(adjacency, scale=1.0, threshold=0.0):
    r"""Symmetrise, threshold, drop self-loops and downsample a network (Herlau et al. §3.3).

    1. :math:`W = A + A^\top` (symmetrise by adding the transpose);
    2. an edge i-j where :math:`W_{ij} > \text{threshold}` (0, as in the paper);
    3. the diagonal removed;
    4. downsampling to :math:`m = \operatorname{round}(\text{scale} \cdot n)` vertices:
       the vertices sorted by (degree in the prepared network, index), both
       descending, and the first m retained. The retained vertices keep their
       input order in the output (ascending index); degrees within the retained
       subnetwork are generally smaller than the ranking degrees.

    Parameters
    ----------
    adjacency : (n, n) array_like or scipy.sparse matrix
        Weighted or 0/1, directed or not; NaN is refused.
    scale : float in (0, 1], default 1.0
        The fraction of vertices kept (the paper's "scale"). ``round`` is
        Python's (half to even); at least one vertex is kept.
    threshold : float, default 0.0
        Edge where the symmetrised weight exceeds it.

    Returns
    -------
    PreparedNetwork
        ``(adjacency (m, m) int64, vertices (m,) int64, degrees (n,) int64)``.

    Examples
    --------
    >>> import numpy as np
    >>> import pymc_partitions as pmp
    >>> A = np.array([[0, 2, 0, 0], [0, 0, 1, 0], [0, 0, 0, 0], [1, 0, 0, 5]])
    >>> net = pmp.datasets.prepare_network(A, scale=0.75)
    >>> net.degrees.tolist(), net.vertices.tolist()
    ([2, 2, 1, 1], [0, 1, 3])
    >>> net.adjacency.tolist()
    [[0, 1, 1], [1, 0, 0], [1, 0, 0]]

    Reference: Herlau, T., Mørup, M., Schmidt, M. N. and Teh, Y. W., *Adaptive
    Reconfiguration Moves for MCMC inference in Dirichlet Process Mixtures*, §3.3.
    """
    if _sparse is not None and _sparse.issparse(adjacency):
        adjacency = adjacency.toarray()
    a = np.asarray(adjacency)
    if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape[0] == 0:
        raise ValueError(f"prepare_network: 'adjacency' must be a non-empty square (n, n) "
                         f"matrix; got shape {a.shape}.")
    if not (np.issubdtype(a.dtype, np.number) or a.dtype == bool):
        raise TypeError(f"prepare_network: 'adjacency' must be numeric; got dtype {a.dtype}.")
    a = a.astype(np.float64)
    if np.isnan(a).any():
        raise ValueError("prepare_network: 'adjacency' contains NaN; give 0 for no edge.")
    try:
        scale = float(scale)
        threshold = float(threshold)
    except (TypeError, ValueError):
        raise TypeError("prepare_network: 'scale' and 'threshold' must be numbers.") from None
    if not 0.0 < scale <= 1.0:
        raise ValueError(f"prepare_network: 'scale' is the fraction of vertices kept, in "
                         f"(0, 1]; got {scale}.")
    n = a.shape[0]
    edges = (a + a.T) > threshold  # step 1-2: symmetrise by adding the transpose, threshold
    np.fill_diagonal(edges, False)  # step 3
    degrees = edges.sum(axis=1).astype(np.int64)
    m = max(1, round(scale * n))
    # Step 4: degree, then index, both descending; np.lexsort's last key is the primary.
    index = np.arange(n, dtype=np.int64)
    ranked = np.lexsort((-index, -degrees))
    vertices = np.sort(ranked[:m]).astype(np.int64)
    kept = edges[np.ix_(vertices, vertices)].astype(np.int64)
    return PreparedNetwork(kept, vertices, degrees)
