r"""Relational likelihoods: a partition of the nodes of a network.

:class:`IRM` is the Infinite Relational Model (Kemp et al. 2006) for a symmetric
binary network, as Herlau et al. (2016, §3.2) use it: block-pair edge
probabilities Beta(a, b), integrated out. Its numba component is
:mod:`pymc_partitions.kernels.components.irm`; the PyTensor log density below is
what NUTS differentiates for ``a`` and ``b`` and the test oracle for the kernel.
"""

import numpy as np
import pytensor.tensor as pt
import scipy.sparse as sp
from pymc.distributions.dist_math import check_parameters
from pytensor.compile.sharedvalue import SharedVariable

from pymc_partitions.distributions.collapsed import CollapsedLikelihood, CollapsedLikelihoodRV
from pymc_partitions.distributions.statistics import edge_counts
from pymc_partitions.distributions.validation import number_arg, observed_value
from pymc_partitions.kernels.components import irm as irm_kernel
from pymc_partitions.partitions import as_array


def adjacency_matrix(observed, owner, *, symmetrize=False, threshold=None, drop_diagonal=False):
    """The observed network as a dense (n, n) float64 0/1 symmetric matrix, zero diagonal.

    ``observed``: a dense array, a scipy.sparse matrix, or ``pm.Data``. Without
    options the input must already be such a matrix; each violation raises a
    ValueError naming ``observed`` and the option that fixes it. The options are
    applied in this order:

    1. ``threshold`` (float): an edge wherever the weight is > ``threshold``;
    2. ``symmetrize`` (bool): an edge between i and j if either A_ij or A_ji is one;
    3. ``drop_diagonal`` (bool): self-loops set to 0 (the IRM does not model them).

    With ``threshold=0``, ``symmetrize=True``, ``drop_diagonal=True`` and
    non-negative weights this is the preparation of Herlau et al. (2016, §3.3):
    "symmetrizing adding the transpose, thresholding at 0 and removing diagonal
    elements".
    """
    for name, flag in (("symmetrize", symmetrize), ("drop_diagonal", drop_diagonal)):
        if not isinstance(flag, bool | np.bool_):
            raise TypeError(f"{owner}: '{name}' must be True or False, got {flag!r}.")
    if threshold is not None:
        threshold = number_arg("threshold", threshold, owner)
    what = "the (n, n) adjacency: an array, a scipy.sparse matrix or pm.Data"
    data = observed_value(observed, owner, what)
    if sp.issparse(data):
        if data.ndim != 2 or data.shape[0] != data.shape[1]:
            raise ValueError(
                f"{owner}: 'observed' must be a square (n, n) adjacency matrix; got shape "
                f"{data.shape}."
            )
        if not np.all(np.isfinite(data.data)):
            raise ValueError(
                f"{owner}: 'observed' contains NaN or inf. The IRM needs every node pair "
                f"observed: remove or impute those entries."
            )
        data = data.toarray()
    data = as_array(data, "observed", owner, what)
    if data.ndim != 2 or data.shape[0] != data.shape[1]:
        raise ValueError(
            f"{owner}: 'observed' must be a square (n, n) adjacency matrix; got shape "
            f"{data.shape}."
        )
    if data.shape[0] == 0:
        raise ValueError(f"{owner}: 'observed' is empty (shape {data.shape}).")
    if data.dtype.kind not in "iufb":
        raise ValueError(f"{owner}: 'observed' must hold real numbers, got dtype {data.dtype}.")
    data = data.astype(np.float64)  # a copy: the options below never touch the input
    if not np.all(np.isfinite(data)):
        bad = np.argwhere(~np.isfinite(data))[0]
        raise ValueError(
            f"{owner}: 'observed' contains NaN or inf (first at ({bad[0]}, {bad[1]})). The IRM "
            f"needs every node pair observed: remove or impute those entries."
        )
    if threshold is not None:
        data = (data > threshold).astype(np.float64)
    elif not np.all((data == 0) | (data == 1)):
        bad = np.argwhere((data != 0) & (data != 1))[0]
        raise ValueError(
            f"{owner}: 'observed' must be a 0/1 adjacency matrix; found the weight "
            f"{data[bad[0], bad[1]]!r} at ({bad[0]}, {bad[1]}). For a weighted network pass "
            f"threshold=t to keep the edges with weight > t (Herlau et al. use t = 0)."
        )
    if symmetrize:
        data = np.maximum(data, data.T)
    elif not np.array_equal(data, data.T):
        bad = np.argwhere(data != data.T)[0]
        raise ValueError(
            f"{owner}: 'observed' must be symmetric (an undirected network); A[{bad[0]}, "
            f"{bad[1]}] = {data[bad[0], bad[1]]!r} but A[{bad[1]}, {bad[0]}] = "
            f"{data[bad[1], bad[0]]!r}. Pass symmetrize=True to put an edge wherever A_ij or "
            f"A_ji is one."
        )
    if drop_diagonal:
        np.fill_diagonal(data, 0.0)
    elif np.any(np.diagonal(data) != 0):
        bad = int(np.flatnonzero(np.diagonal(data))[0])
        raise ValueError(
            f"{owner}: 'observed' has a non-zero diagonal (first at node {bad}); the IRM has no "
            f"self-loops. Pass drop_diagonal=True to ignore the diagonal."
        )
    return data


def _irm_block_counts(adjacency, labels):
    """Block sizes m (K,), edge counts E (K, K) and pair counts P (K, K), numpy."""
    labels = np.asarray(labels, dtype=np.int64)
    k = int(labels.max()) + 1
    m = np.bincount(labels, minlength=k).astype(np.float64)
    rows, cols = np.nonzero(np.triu(adjacency, 1))
    counts = np.zeros((k, k))
    np.add.at(counts, (labels[rows], labels[cols]), 1.0)
    edges = counts + counts.T - np.diag(np.diagonal(counts))
    pairs = np.outer(m, m) - np.diag(m * (m + 1) / 2)
    return m, edges, pairs


class IRMRV(CollapsedLikelihoodRV):
    """Op of :class:`IRM`: inputs (partition (n,), a (), b ()), output the (n, n) adjacency."""

    name = "irm"
    signature = "(n),(),(),(r,s)->(n,n)"
    dtype = "floatX"
    _print_name = ("IRM", "\\operatorname{IRM}")
    hyper_names = ("a", "b")
    positive = ("a", "b")
    binary = True
    kernel = irm_kernel

    def kernel_data(self, observed):
        return irm_kernel.make_data(observed)

    def alloc_stats(self, n, data, params):
        return irm_kernel.alloc_stats(n, params)

    @classmethod
    def prior_rng_fn(cls, rng, partition, a, b, size):
        partition = np.asarray(partition)
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        n = partition.shape[-1]
        if size is not None:
            batch = tuple(size)
        else:
            batch = np.broadcast_shapes(partition.shape[:-1], a.shape, b.shape)
        z = np.broadcast_to(partition, batch + (n,))
        a, b = np.broadcast_to(a, batch), np.broadcast_to(b, batch)
        out = np.empty(batch + (n, n))
        for idx in np.ndindex(*batch):
            out[idx] = _draw_network(rng, z[idx], a[idx], b[idx])
        return out

    def block_pair_posterior_draw(self, rng, labels, adjacency, hypers):
        """Draw the block-pair edge probabilities from their posterior given a partition.

        labels : (n,) int, canonical (blocks 0..K-1); adjacency : (n, n) 0/1 as
        observed; hypers : [a, b]. Returns ``{"eta": (K, K) symmetric}`` with
        eta_kl ~ Beta(a + E_kl, b + P_kl - E_kl) independently over k <= l.
        """
        a, b = (float(np.asarray(h).reshape(())) for h in hypers)
        _, edges, pairs = _irm_block_counts(np.asarray(adjacency), labels)
        eta = rng.beta(a + edges, b + pairs - edges)
        return {"eta": np.triu(eta) + np.triu(eta, 1).T}

    def replicate_one(self, rng, z, hypers, observed):
        """A replicate network given the partition ``z``: block-pair probabilities
        from their posterior given the observed adjacency
        (:meth:`block_pair_posterior_draw`), then edges (no self-loops)."""
        z = np.asarray(z, dtype=np.int64)
        if observed.shape[0] != z.shape[0]:
            raise ValueError(
                f"IRM: the observed adjacency has {observed.shape[0]} nodes but the partition "
                f"has n = {z.shape[0]} items; posterior predictive draws need the same nodes."
            )
        labels = np.unique(z, return_inverse=True)[1].reshape(-1)
        eta = self.block_pair_posterior_draw(rng, labels, observed, hypers)["eta"]
        return _network_from(rng, labels, eta)

    def block_posterior_draw(self, rng, rows, hypers):
        raise NotImplementedError(
            "IRM parameters belong to pairs of blocks, not to blocks: use "
            "block_pair_posterior_draw(rng, labels, adjacency, hypers)."
        )


def _draw_network(rng, z, a, b):
    k = int(z.max()) + 1
    eta = rng.beta(a, b, size=(k, k))
    eta = np.triu(eta) + np.triu(eta, 1).T
    return _network_from(rng, z, eta)


def _network_from(rng, z, eta):
    """A symmetric 0/1 network without self-loops, edge i~j with probability
    eta[z_i, z_j]."""
    n = z.shape[0]
    upper = np.triu(rng.random((n, n)) < eta[z][:, z], 1)
    return (upper | upper.T).astype(np.float64)


irm = IRMRV()


class IRM(CollapsedLikelihood):
    r"""Infinite Relational Model of a symmetric binary network (Kemp et al. 2006;
    Herlau et al. 2016, §3.2), block-pair edge probabilities integrated out.

    .. math::

        \eta_{kl} \sim \mathrm{Beta}(a, b)\ \ (k \le l), \qquad
        A_{ij} \mid z \sim \mathrm{Bernoulli}(\eta_{z_i z_j})\ \ (i < j)

    with no self-loops. The log density is
    :math:`\sum_{k \le l} \log B(a + E_{kl}, b + P_{kl} - E_{kl}) - \log B(a, b)`, with
    :math:`E_{kl}` the edges between blocks k and l (within, for k = l) and
    :math:`P_{kl}` the node pairs (:math:`m_k m_l`, or :math:`m_k(m_k-1)/2`).

    Parameters
    ----------
    partition : TensorVariable
        A partition variable (e.g. :class:`~pymc_partitions.CRP`) over the n nodes.
    a, b : tensor_like of float
        Beta hyperparameters, scalars > 0: constants or random variables (NUTS
        samples them).
    observed : array_like (n, n), scipy.sparse matrix or pm.Data
        The adjacency matrix: symmetric, 0/1, zero diagonal, no NaN. Anything else
        raises a ValueError that names the option fixing it.
    threshold : float, optional
        Read a weighted network: an edge wherever the weight is > ``threshold``.
    symmetrize : bool, default False
        Put an edge between i and j if A_ij or A_ji is one (directed input).
    drop_diagonal : bool, default False
        Ignore the diagonal (self-loops are not part of the model).

    The options apply in the order threshold, symmetrize, drop_diagonal;
    ``threshold=0, symmetrize=True, drop_diagonal=True`` is the preparation of
    Herlau et al. §3.3 for non-negative weights (USAir, Hagmann).

    Notes
    -----
    Memory: the model holds the adjacency as a dense (n, n) float64 array (a sparse
    input is densified) and each chain's kernel state an (n, n) int64 edge-count
    matrix: 16 n^2 bytes in all, 16 MB at n = 1000, 400 MB at n = 5000.

    Cost of the PyTensor log density (NUTS on a, b evaluates it and its gradient at
    every leapfrog step): the edge list is a constant of the graph when the observed
    data are, so one evaluation costs O(n_edges + n) segment sums plus
    O(K_max^2) log-gamma evaluations, K_max = largest label + 1 (the number of
    blocks for canonical labels). With ``pm.Data`` (or a symbolic value) the edges
    are found by a O(n^2) scan per evaluation.

    Forward draws draw eta for every block pair and the symmetric adjacency given
    it: under ``pm.sample_posterior_predictive`` eta from its posterior given the
    partition and the observed network (:meth:`IRMRV.block_pair_posterior_draw`),
    in prior draws (or with ``predictive="mixed"``) from Beta(a, b) (see
    :class:`~pymc_partitions.distributions.collapsed.CollapsedLikelihood`). With
    ``pm.Data`` the preparation options are refused (``pm.set_data`` would pass new
    values unprepared): store a prepared adjacency.
    """

    rv_op = irm
    hyper_defaults = {"a": 1.0, "b": 1.0}

    def __new__(cls, name, partition, *args, observed=None, threshold=None,
                symmetrize=False, drop_diagonal=False, **kwargs):
        owner = f"{cls.__name__} '{name}'"
        if isinstance(observed, SharedVariable):
            if threshold is not None or symmetrize or drop_diagonal:
                raise ValueError(
                    f"{owner}: threshold=, symmetrize= and drop_diagonal= prepare a fixed "
                    f"array; 'observed' is a pm.Data container, whose new values pm.set_data "
                    f"would pass unprepared. Prepare the adjacency first "
                    f"(pymc_partitions.distributions.relational.adjacency_matrix(A, owner, "
                    f"threshold=..., symmetrize=..., drop_diagonal=...)) and store that in pm.Data."
                )
            return super().__new__(cls, name, partition, *args, observed=observed, **kwargs)
        adjacency = adjacency_matrix(
            observed, owner, symmetrize=symmetrize, threshold=threshold,
            drop_diagonal=drop_diagonal,
        )
        return super().__new__(cls, name, partition, *args, observed=adjacency, **kwargs)

    @classmethod
    def check_observed(cls, observed, owner):
        return adjacency_matrix(observed, owner)

    @classmethod
    def hyper_tensors(cls, hypers, data, owner):
        return [_scalar_hyper(h, v, owner) for h, v in hypers.items()]

    @classmethod
    def dist(cls, partition, *hypers, **kwargs):
        named = cls._bind_hypers(hypers, kwargs, cls.__name__)
        scalars = [_scalar_hyper(h, v, cls.__name__) for h, v in named.items()]
        return cls._rv_dist([partition, *scalars], **kwargs)

    def logp(value, partition, a, b, _observed):
        # Block sizes and edge counts between and within blocks, memoised on the
        # labels and data (the edge list read once per data value; O(K^2) per NUTS
        # step: pymc_partitions.distributions.statistics); ``ok`` also checks a
        # symmetric 0/1 matrix with zero diagonal.
        ok, m, edges = edge_counts(partition, value)
        pairs = pt.outer(m, m) - pt.diag(m * (m + 1) / 2)
        per_pair = (
            pt.gammaln(a + edges)
            + pt.gammaln(b + pairs - edges)
            - pt.gammaln(a + b + pairs)
            - (pt.gammaln(a) + pt.gammaln(b) - pt.gammaln(a + b))
        )
        # Sum over k <= l of a symmetric matrix.
        logp = 0.5 * (pt.sum(per_pair) + pt.sum(pt.diagonal(per_pair)))
        logp = pt.switch(ok, logp, -np.inf)
        return check_parameters(logp, a > 0, b > 0, msg="a > 0, b > 0")


def _scalar_hyper(name, value, owner):
    var = pt.as_tensor_variable(value)
    if var.ndim != 0:
        raise ValueError(
            f"{owner}: '{name}' must be a scalar (one Beta prior shared by all block pairs), "
            f"got {var.ndim} dimensions."
        )
    return var.astype("float64")


__all__ = ["IRM", "IRMRV", "adjacency_matrix"]
