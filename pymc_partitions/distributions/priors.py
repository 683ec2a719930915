"""Partition priors beyond the CRP: Pitman-Yor, a fixed number of blocks, and the
mixture of finite mixtures (DESIGN §2).

Each is a :class:`~pymc_partitions.distributions.partition.PartitionPriorRV` op
(so ``pm.sample`` assigns :class:`pymc_partitions.Gibbs` to it) paired with a
:class:`~pymc_partitions.distributions.partition.PartitionPrior` distribution
whose PyTensor log probability is differentiable in the continuous
hyperparameters (what NUTS uses when other terms read them;
:class:`pymc_partitions.HyperSlice` updates them by default) and is the test oracle of the numba prior in
:mod:`pymc_partitions.kernels.priors`. Values are canonical label vectors;
forward draws are exact.
"""

import math

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.dist_math import check_parameters
from scipy.special import gammaln

from pymc_partitions.distributions.partition import (
    PartitionPrior,
    PartitionPriorRV,
    batched_draws,
    block_sizes,
    labels_in_range,
    scalar_n,
    start_value,
    urn_labels,
)
from pymc_partitions.distributions.validation import (
    constant_integer,
    constant_value,
    hyper_input,
)
from pymc_partitions.kernels.priors import fixed_blocks as fixed_kernel
from pymc_partitions.kernels.priors import mfm as mfm_kernel
from pymc_partitions.kernels.priors import pitman_yor as py_kernel
from pymc_partitions.partitions import canonicalize


def constant_n(n, owner):
    """The number of items as a Python int (a positive integer constant)."""
    return constant_integer("n", n, owner, minimum=1)


def float_input(x):
    """A float64 tensor; constants folded to a float64 constant."""
    value = constant_value(x)
    if value is not None:
        return pt.as_tensor_variable(np.asarray(value, dtype=np.float64))
    return pt.as_tensor_variable(x).astype("float64")


def size_stats(labels):
    """(sizes as float (n,), occupied mask, number of blocks K) of a label vector."""
    n_items = labels.shape[-1]
    sizes = block_sizes(pt.clip(labels, 0, n_items - 1), n_items)
    occupied = sizes > 0
    return sizes, occupied, pt.sum(occupied)


def pitman_yor_draw(rng, alpha, d, n):
    """One Pitman-Yor partition, exactly, with O(n) NumPy gathers.

    Sequential seating: item i (0-based, i >= 1) with K blocks among the earlier items
    opens a new block with probability (alpha + K d) / (i + alpha) and joins block k
    with probability (n_k - d) / (i + alpha) (Pitman 2006, eq. 3.6). Whether each item
    opens a block depends on K only, so those indicators are drawn first (a scalar
    loop over pre-drawn uniforms); then, as n_k - d = (n_k - 1) + (1 - d), a joining
    item copies the block of an earlier item that did not open one, chosen uniformly
    (i - K of them), with probability (i - K) / (i - K d), and otherwise joins one of
    the K blocks uniformly (:func:`~.partition.urn_labels` resolves the copies). With
    d = 0 this is the CRP's urn. Canonical labels."""
    u = rng.random(n)
    new = np.zeros(n, dtype=bool)
    new[0] = True
    k = 1
    for i in range(1, n):  # O(n) scalar steps: K decides the next probability
        if u[i] * (i + alpha) < alpha + k * d:
            new[i] = True
            k += 1
    blocks_before = np.cumsum(new) - new  # K_i
    i = np.arange(n)
    joined_before = i - blocks_before  # earlier items that joined a block: i - K_i
    copy = rng.random(n) * (i - blocks_before * d) < joined_before
    joiners = np.flatnonzero(~new)
    pick = np.minimum((rng.random(n) * joined_before).astype(np.int64),
                      np.maximum(joined_before - 1, 0))
    parent = joiners[np.minimum(pick, max(joiners.shape[0] - 1, 0))] if joiners.size else i
    block = np.minimum((rng.random(n) * blocks_before).astype(np.int64),
                       np.maximum(blocks_before - 1, 0))
    return urn_labels(new, np.where(copy, parent, i), np.where(copy | new, -1, block))


class _SizeOnlyRV(PartitionPriorRV):
    """Shared support shape: ``(n,)`` from the value of the last input."""

    dtype = "int64"

    def _supp_shape_from_params(self, dist_params, param_shapes=None):
        n = dist_params[-1]
        return (n if n.ndim == 0 else n.flatten()[0],)


# --------------------------------------------------------------------------------------
# Pitman-Yor
# --------------------------------------------------------------------------------------


class PitmanYorRV(_SizeOnlyRV):
    """Random partition of n items under the Pitman-Yor (two-parameter) process."""

    name = "pitman_yor"
    signature = "(),(),()->(n)"
    _print_name = ("PitmanYor", "\\operatorname{PitmanYor}")
    hyper_names = ("alpha", "d")

    def check_hyper_values(self, values, owner):
        alpha, d = (float(np.asarray(v)) for v in values)
        if not (np.isfinite(alpha) and np.isfinite(d) and 0.0 <= d < 1.0 and alpha > -d):
            raise ValueError(
                f"{owner}: Pitman-Yor needs 0 <= d < 1 and alpha > -d, got alpha = {alpha!r}, "
                f"d = {d!r}. Give d a prior on [0, 1) and alpha one that keeps alpha > -d "
                f"(e.g. alpha ~ pm.Gamma)."
            )

    def kernel_prior_params(self, values, n):
        return py_kernel.make_params(float(values[0]), float(values[1]), n)

    def log_prior_from_sizes(self, values, sizes, n):
        """sum_{i<K} log(alpha + i d) - log (alpha+1)_{n-1} + sum_k log (1-d)_{n_k - 1}
        (the two-parameter Ewens-Pitman formula, as :func:`pitman_yor_logp`) from the
        (K,) block sizes; -inf outside the support."""
        alpha, d = float(values[0]), float(values[1])
        if not (np.isfinite(alpha) and np.isfinite(d) and 0.0 <= d < 1.0 and alpha > -d):
            return -np.inf
        sizes = np.asarray(sizes, dtype=np.float64)
        K = sizes.shape[0]
        log_v = float(np.log(alpha + d * np.arange(1, K)).sum()) if K > 1 else 0.0
        return (log_v + math.lgamma(alpha + 1.0) - math.lgamma(alpha + n)
                + float((gammaln(sizes - d) - math.lgamma(1.0 - d)).sum()))

    @classmethod
    def rng_fn(cls, rng, alpha, d, n, size):
        return batched_draws(
            lambda n, a, dd: pitman_yor_draw(rng, float(a), float(dd), n), n, size, alpha, d
        )


pitman_yor = PitmanYorRV()


def pitman_yor_logp(labels, alpha, d, n):
    r"""Pitman-Yor log probability of the partition the labels encode:

    .. math:: \sum_{i=1}^{K-1}\log(\alpha + i d) - \log(\alpha+1)_{n-1}
        + \sum_k [\log\Gamma(n_k - d) - \log\Gamma(1 - d)]
    """
    n_items = labels.shape[-1]
    sizes, occupied, K = size_stats(labels)
    i = pt.arange(1, n_items).astype("float64")
    log_v = pt.sum(pt.log(pt.switch(pt.lt(i, K), alpha + i * d, 1.0)))
    log_w = pt.sum(
        pt.switch(occupied, pt.gammaln(pt.switch(occupied, sizes, 1.0) - d) - pt.gammaln(1.0 - d), 0.0)
    )
    logp = log_v - pt.gammaln(alpha + n_items) + pt.gammaln(alpha + 1.0) + log_w
    valid = labels_in_range(labels, n_items) & pt.eq(n_items, n)
    return pt.switch(valid, logp, -np.inf)


class PitmanYor(PartitionPrior):
    r"""Pitman-Yor (two-parameter Chinese restaurant) process: a random partition of
    ``n`` items.

    .. math::

        p(z \mid \alpha, d) = \frac{\prod_{i=1}^{K-1} (\alpha + i d)}{(\alpha + 1)_{n-1}}
        \prod_{k=1}^{K} (1 - d)_{n_k - 1}

    (Pitman 1995; :math:`(x)_m` the rising factorial). An item joins a block of
    size m with weight m - d and opens a new block with weight
    :math:`\alpha + K d`. ``d = 0`` is the CRP; larger d gives more, smaller blocks
    (the number of blocks grows like :math:`n^d`).

    Parameters
    ----------
    alpha : tensor_like of float
        Strength, alpha > -d. May be a random variable (:class:`~pymc_partitions.HyperSlice`
        by default; NUTS when other terms read it: the log probability is differentiable).
    d : tensor_like of float
        Discount, 0 <= d < 1. May be a random variable (e.g. ``pm.Beta``).
    n : int
        Number of items (a constant).
    summaries : bool, default True
        Add ``{name}_n_clusters``, ``{name}_largest_cluster_frac`` and
        ``{name}_entropy`` as Deterministics.

    Notes
    -----
    Canonical int64 labels; forward draws by sequential seating;
    ``support_point`` is the one-block partition; ``pm.sample`` uses
    :class:`pymc_partitions.Gibbs`.
    """

    rv_op = pitman_yor
    scalar_args = ("alpha", "d")

    @classmethod
    def dist(cls, alpha, d, n, **kwargs):
        owner = "PitmanYor"
        n = constant_n(n, owner)
        alpha, d = hyper_input("alpha", alpha, owner), hyper_input("d", d, owner)
        d_value, a_value = constant_value(d), constant_value(alpha)
        if d_value is not None and (
            d_value.ndim != 0 or not np.isfinite(d_value) or not 0.0 <= float(d_value) < 1.0
        ):
            raise ValueError(
                f"{owner}: 'd' (the discount) must be a scalar in [0, 1), got {d_value!r}. "
                f"d = 0 is the CRP."
            )
        if a_value is not None and (a_value.ndim != 0 or not np.isfinite(a_value)):
            raise ValueError(f"{owner}: 'alpha' must be a finite scalar, got {a_value!r}.")
        if a_value is not None and d_value is not None and not float(a_value) > -float(d_value):
            raise ValueError(
                f"{owner}: 'alpha' must be > -d = {-float(d_value)!r}, got {float(a_value)!r}."
            )
        return super().dist([float_input(alpha), float_input(d), pt.constant(n, dtype="int64")],
                            **kwargs)

    def support_point(rv, size, alpha, d, n):
        return start_value(size, pt.zeros((scalar_n(n),), dtype="int64"), alpha, d)

    def logp(value, alpha, d, n):
        logp = pitman_yor_logp(value, alpha, d, n)
        return check_parameters(logp, d >= 0, d < 1, alpha + d > 0, msg="0 <= d < 1, alpha > -d")


# --------------------------------------------------------------------------------------
# Fixed number of blocks
# --------------------------------------------------------------------------------------


class FixedBlocksRV(_SizeOnlyRV):
    """Uniform random partition of n items into exactly k blocks."""

    name = "fixed_blocks"
    signature = "(),()->(n)"
    _print_name = ("FixedBlocks", "\\operatorname{FixedBlocks}")
    hyper_names = ("k",)

    def kernel_prior_params(self, values, n):
        return fixed_kernel.make_params(int(np.asarray(values[0])), n)

    def check_support(self, labels, node, where):
        k = int(constant_value(node.op.dist_params(node)[0]))
        found = np.unique(labels).shape[0]
        if found != k:
            raise ValueError(
                f"{where}: the partition has {found} blocks but FixedBlocks needs exactly "
                f"k = {k}. Start from a partition with k blocks (e.g. labels i % k)."
            )

    @classmethod
    def rng_fn(cls, rng, k, n, size):
        return batched_draws(lambda n, k: fixed_blocks_draw(rng, int(k), n), n, size, k)


fixed_blocks = FixedBlocksRV()


def fixed_blocks_draw(rng, k, n):
    """A uniform partition of n items into k blocks, item by item: with j blocks
    among the first i items, item i joins each block with weight f(r, j) and opens a
    new one with weight f(r, j + 1), f(r, j) the number of ways the remaining r
    items complete the partition to k blocks (f(0, j) = 1{j = k},
    f(r, j) = j f(r-1, j) + f(r-1, j+1)). Log space; canonical labels."""
    # log_f[r, j] for r = 0..n, j = 0..k+1
    log_f = np.full((n + 1, k + 2), -np.inf)
    log_f[0, k] = 0.0
    j = np.arange(k + 2)
    with np.errstate(divide="ignore"):
        log_j = np.log(j)
    for r in range(1, n + 1):
        log_f[r, :-1] = np.logaddexp(log_j[:-1] + log_f[r - 1, :-1], log_f[r - 1, 1:])
    labels = np.empty(n, dtype=np.int64)
    n_blocks = 0
    for i in range(n):
        r = n - i - 1
        log_w = np.append(np.full(n_blocks, log_f[r, n_blocks]), log_f[r, n_blocks + 1])
        w = np.exp(log_w - log_w.max())
        c = rng.choice(n_blocks + 1, p=w / w.sum())
        if c == n_blocks:
            n_blocks += 1
        labels[i] = c
    return labels


class FixedBlocks(PartitionPrior):
    r"""Uniform random partition of ``n`` items into exactly ``k`` blocks.

    .. math:: p(z) = \frac{1\{K = k\}}{S(n, k)}

    with :math:`S(n, k)` the Stirling number of the second kind. Goswami, Liu &
    Wong (2007), §7.3 (eq. 24), restrict cluster indicators to a fixed number of
    sub-clusters this way (K-means as sampling).

    Parameters
    ----------
    n : int
        Number of items (a constant).
    k : int
        Number of blocks, 1 <= k <= n (a constant).
    summaries : bool, default True
        As for :class:`~pymc_partitions.CRP`.

    Notes
    -----
    The samplers respect the constraint: under :class:`pymc_partitions.Gibbs` an
    item may move between blocks, but an item alone in its block stays alone and no
    block opens while there are k (so single-item Gibbs mixes slowly when blocks
    are singletons; block moves such as split-merge proposals that change K are
    rejected). ``support_point`` is the balanced partition with labels ``i % k``;
    initial values must have exactly k blocks (checked, with a clear error). Forward
    draws are exact (sequential, through Stirling-number counts).
    """

    rv_op = fixed_blocks

    @classmethod
    def dist(cls, n, k, **kwargs):
        owner = "FixedBlocks"
        n = constant_n(n, owner)
        k_value = constant_integer("k", k, owner, minimum=1)
        if k_value > n:
            raise ValueError(
                f"{owner}: 'k' = {k_value} exceeds the number of items n = {n}; a partition of "
                f"n items has at most n blocks. Use k <= n."
            )
        return super().dist([pt.constant(k_value, dtype="int64"), pt.constant(n, dtype="int64")],
                            **kwargs)

    def support_point(rv, size, k, n):
        return start_value(size, pt.arange(scalar_n(n), dtype="int64") % pt.as_tensor_variable(k)[..., None])

    def logp(value, k, n):
        k_c, n_c = int(constant_value(k)), int(constant_value(n))
        _, _, K = size_stats(value)
        n_items = value.shape[-1]
        valid = labels_in_range(value, n_items) & pt.eq(n_items, n) & pt.eq(K, k)
        return pt.switch(valid, -fixed_kernel.log_stirling2(n_c, k_c), -np.inf)


# --------------------------------------------------------------------------------------
# Mixture of finite mixtures
# --------------------------------------------------------------------------------------

#: Tail mass of p_K left out when a callable k_prior is truncated.
K_PRIOR_TOL = 1e-12
#: Largest number of components a truncated k_prior may keep.
K_PRIOR_CAP = 100_000


def default_log_pk(k):
    """log p_K(k) of K ~ Geometric(0.1) on {1, 2, ...}: p_K(k) = 0.1 * 0.9^(k-1)."""
    return np.log(0.1) + (np.asarray(k, dtype=np.float64) - 1.0) * np.log(0.9)


def resolve_k_prior(k_prior, owner, tol=K_PRIOR_TOL, cap=K_PRIOR_CAP):
    """log p_K(1..kmax) as a float64 vector from an array of probabilities or a
    callable log-pmf.

    Array: p_K(1), ..., p_K(kmax), non-negative, finite, summing to 1 (within 1e-6;
    renormalised exactly). Callable ``log_pk(k)`` on {1, 2, ...} (vectorised over an
    integer array, or scalar): evaluated for k = 1, 2, ... until the remaining mass
    1 - sum_{j<=k} p_K(j) is at most ``tol`` (1e-12), then renormalised. The
    truncated prior is within total variation ``tol`` of p_K, hence so is the MFM
    partition prior it induces (a mixture over K: the data-processing inequality).
    More than ``cap`` (100000) terms is an error (too heavy a tail).
    """
    if k_prior is None:
        k_prior = default_log_pk
    if callable(k_prior):
        log_p = _eval_log_pk(k_prior, owner, tol, cap)
    else:
        p = np.asarray(k_prior, dtype=np.float64) if _is_numeric(k_prior) else None
        if p is None or p.ndim != 1 or p.shape[0] == 0:
            raise ValueError(
                f"{owner}: 'k_prior' must be a 1-D array of probabilities p_K(1..kmax) or a "
                f"callable log-pmf of K on {{1, 2, ...}}, got {k_prior!r}."
            )
        if not np.all(np.isfinite(p)) or np.any(p < 0):
            raise ValueError(
                f"{owner}: 'k_prior' must hold finite, non-negative probabilities p_K(1..kmax), "
                f"got {p!r}."
            )
        if abs(p.sum() - 1.0) > 1e-6:
            raise ValueError(
                f"{owner}: 'k_prior' probabilities p_K(1..kmax) sum to {p.sum()!r}, not 1. "
                f"Normalise them (entry j is P(K = j + 1))."
            )
        with np.errstate(divide="ignore"):
            log_p = np.log(p / p.sum())
    # Trailing zero mass adds nothing to V_n(t): drop it.
    last = int(np.flatnonzero(np.isfinite(log_p))[-1]) + 1
    return log_p[:last]


def _is_numeric(x):
    try:
        arr = np.asarray(x)
    except Exception:
        return False
    return np.issubdtype(arr.dtype, np.number) or arr.dtype == bool


def _eval_log_pk(log_pk, owner, tol, cap):
    chunks, mass, start, size = [], 0.0, 1, 256
    while start <= cap:
        ks = np.arange(start, min(start + size, cap + 1))
        try:
            vals = np.asarray(log_pk(ks), dtype=np.float64)
            if vals.shape != ks.shape:
                raise ValueError
        except Exception:
            try:
                vals = np.array([float(log_pk(int(k))) for k in ks])
            except Exception as err:
                raise ValueError(
                    f"{owner}: calling 'k_prior' (a log-pmf of K) at k = {start} failed: {err!r}."
                ) from err
        if np.any(np.isnan(vals)) or np.any(vals == np.inf):
            raise ValueError(f"{owner}: 'k_prior' returned NaN or +inf for some k in {ks[0]}..{ks[-1]}.")
        p = np.exp(vals)
        cum = mass + np.cumsum(p)
        if cum[-1] > 1.0 + 1e-8:
            raise ValueError(
                f"{owner}: 'k_prior' is not a log-pmf: its probabilities sum to {cum[-1]!r} > 1 "
                f"over k = 1..{ks[-1]}."
            )
        done = np.flatnonzero(cum >= 1.0 - tol)
        if done.size:
            chunks.append(vals[: done[0] + 1])
            log_p = np.concatenate(chunks)
            return log_p - np.log(np.exp(log_p).sum())
        chunks.append(vals)
        mass = cum[-1]
        start = ks[-1] + 1
        size *= 2
    raise ValueError(
        f"{owner}: the callable 'k_prior' leaves mass {1.0 - mass:.3g} > {tol:g} beyond "
        f"k = {cap}: too heavy a tail (or not normalised). Pass p_K as an explicit array "
        f"p_K(1..kmax) instead."
    )


class MFMRV(_SizeOnlyRV):
    """Random partition of n items under a mixture of finite mixtures."""

    name = "mfm"
    signature = "(),(k),()->(n)"
    _print_name = ("MFM", "\\operatorname{MFM}")
    hyper_names = ("gamma", "log_pk")

    def check_hyper_values(self, values, owner):
        gamma = float(np.asarray(values[0]))
        if not (np.isfinite(gamma) and gamma > 0):
            raise ValueError(
                f"{owner}: 'gamma' = {gamma!r} is outside its support (must be positive and "
                f"finite). Give it a prior with positive support, e.g. pm.Gamma."
            )

    def kernel_prior_params(self, values, n):
        return mfm_kernel.make_params(float(np.asarray(values[0])), np.asarray(values[1]), n)

    def log_prior_from_sizes(self, values, sizes, n):
        """log V_n(K) + sum_k [log Gamma(gamma + n_k) - log Gamma(gamma)] from the (K,)
        block sizes, V_n(K) summed over k = K..kmax only at the current K: O(kmax + K)
        (Miller & Harrison 2018, as :func:`mfm_logp`), not the kernel's O(n kmax) table;
        -inf outside the support."""
        gamma, log_pk = float(values[0]), np.asarray(values[1], dtype=np.float64)
        if not (np.isfinite(gamma) and gamma > 0):
            return -np.inf
        sizes = np.asarray(sizes, dtype=np.float64)
        K = sizes.shape[0]
        k = np.arange(K, log_pk.shape[0] + 1, dtype=np.float64)  # k >= K
        if k.size == 0:
            return -np.inf
        terms = (gammaln(k + 1.0) - gammaln(k - K + 1.0) + gammaln(gamma * k)
                 - gammaln(gamma * k + n) + log_pk[K - 1:])
        top = terms.max()
        if not top > -np.inf:
            return -np.inf
        # logsumexp by hand: scipy's costs ~100 µs of array-API dispatch per call.
        log_v = top + math.log(float(np.exp(terms - top).sum()))
        return log_v + float((gammaln(gamma + sizes) - math.lgamma(gamma)).sum())

    @classmethod
    def rng_fn(cls, rng, gamma, log_pk, n, size):
        log_pk = np.asarray(log_pk, dtype=np.float64)
        if log_pk.ndim > 1:
            log_pk = log_pk.reshape(-1, log_pk.shape[-1])[0]  # a constant: one vector
        p_k = np.exp(log_pk)
        p_k /= p_k.sum()
        return batched_draws(lambda n, g: mfm_draw(rng, float(g), p_k, n), n, size, gamma)


def mfm_draw(rng, gamma, p_k, n):
    """One partition from the MFM's generative definition: K ~ p_K, weights ~
    Dirichlet_K(gamma), each item's component drawn from the weights; canonical
    labels of the induced partition. (The restaurant process would need V_m(t) for
    every m <= n: new block weight gamma V_{m+1}(t+1)/V_{m+1}(t) for item m + 1.)"""
    K = int(rng.choice(p_k.shape[0], p=p_k)) + 1
    weights = rng.dirichlet(np.full(K, gamma))
    return canonicalize(rng.choice(K, size=n, p=weights))


mfm = MFMRV()


def mfm_log_vn(K, gamma, log_pk, n_items):
    r"""log V_n(K) as a PyTensor expression of gamma (logsumexp over k = 1..kmax):

    .. math:: \log \sum_{k=K}^{k_{max}} \frac{k!}{(k-K)!}
        \frac{\Gamma(\gamma k)}{\Gamma(\gamma k + n)} p_K(k)
    """
    k = pt.arange(1, log_pk.shape[0] + 1).astype("float64")
    Kf = K.astype("float64")
    terms = (
        pt.gammaln(k + 1.0)
        - pt.gammaln(pt.maximum(k - Kf, 0.0) + 1.0)
        - pt.gammaln(gamma * k + n_items)
        + pt.gammaln(gamma * k)
        + log_pk
    )
    masked = pt.switch(pt.ge(k, Kf), terms, -np.inf)
    top = pt.max(masked)
    safe_top = pt.switch(pt.isinf(top), 0.0, top)
    return safe_top + pt.log(pt.sum(pt.exp(masked - safe_top)))


def mfm_logp(labels, gamma, log_pk, n):
    r"""MFM log probability: :math:`\log V_n(K) + \sum_k [\log\Gamma(\gamma+n_k) - \log\Gamma(\gamma)]`."""
    n_items = labels.shape[-1]
    sizes, occupied, K = size_stats(labels)
    log_w = pt.sum(
        pt.switch(occupied, pt.gammaln(gamma + sizes) - pt.gammaln(gamma), 0.0)
    )
    logp = mfm_log_vn(K, gamma, log_pk, n_items) + log_w
    valid = labels_in_range(labels, n_items) & pt.eq(n_items, n)
    return pt.switch(valid, logp, -np.inf)


class MFM(PartitionPrior):
    r"""Mixture of finite mixtures: the partition of ``n`` items induced by a finite
    mixture with K ~ p_K components and symmetric Dirichlet_K(gamma) weights
    (Miller & Harrison 2018, JASA, "Mixture models with a prior on the number of
    components").

    .. math::

        p(z) = V_n(t) \prod_{c=1}^{t} \gamma^{(n_c)}, \qquad
        V_n(t) = \sum_{k=t}^{\infty} \frac{k_{(t)}}{(\gamma k)^{(n)}}\, p_K(k)

    (t blocks; :math:`x^{(m)}` rising, :math:`k_{(t)}` falling factorial). An
    item joins a block of size m with weight :math:`m + \gamma` and opens a new
    block with weight :math:`\gamma V_n(t+1)/V_n(t)`.

    Parameters
    ----------
    n : int
        Number of items (a constant).
    gamma : tensor_like of float, default 1.0
        Dirichlet concentration, > 0. May be a random variable: the log probability
        computes :math:`\log V_n(t)` as a logsumexp over the k grid, differentiable
        in gamma (NUTS when other terms read it; :class:`~pymc_partitions.HyperSlice`
        by default).
    k_prior : array_like or callable, optional
        The prior of the number of components K on {1, 2, ...}: either an array
        ``[p_K(1), ..., p_K(kmax)]`` (summing to 1) or a callable log-pmf
        ``log_pk(k)`` (vectorised over an integer array, or scalar). A callable is
        truncated at the smallest kmax whose tail mass P(K > kmax) is <= 1e-12 and
        renormalised; the partition prior used is then within total variation 1e-12
        of the exact one (truncating K is a mixture over K; data-processing
        inequality), for every gamma. More than 100000 terms is an error. Default:
        K ~ Geometric(0.1), p_K(k) = 0.1 * 0.9^(k-1), the default of Miller's
        reference implementation (BayesianMixtures.jl, ``log_pk``); a Poisson prior
        on K - 1 is e.g. ``lambda k: scipy.stats.poisson(1).logpmf(k - 1)``.
    summaries : bool, default True
        As for :class:`~pymc_partitions.CRP`.

    Notes
    -----
    log V_n(t) is tabulated for t = 0..n whenever gamma changes (O(min(n, kmax)
    kmax)). Canonical labels; forward draws from the generative definition (K,
    Dirichlet weights, allocations);
    ``support_point`` is the one-block partition; ``pm.sample`` uses
    :class:`pymc_partitions.Gibbs`.
    """

    rv_op = mfm
    scalar_args = ("gamma",)

    @classmethod
    def dist(cls, n, gamma=1.0, k_prior=None, **kwargs):
        owner = "MFM"
        n = constant_n(n, owner)
        gamma = hyper_input("gamma", gamma, owner, positive=True)
        log_pk = resolve_k_prior(k_prior, owner)
        return super().dist(
            [float_input(gamma), pt.constant(log_pk, dtype="float64"), pt.constant(n, dtype="int64")],
            **kwargs,
        )

    def support_point(rv, size, gamma, log_pk, n):
        return start_value(size, pt.zeros((scalar_n(n),), dtype="int64"), gamma, log_pk[..., 0])

    def logp(value, gamma, log_pk, n):
        return check_parameters(mfm_logp(value, gamma, log_pk, n), gamma > 0, msg="gamma > 0")


__all__ = ["MFM", "FixedBlocks", "PitmanYor", "resolve_k_prior"]
