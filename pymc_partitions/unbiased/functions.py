r"""Functions h of a partition for the unbiased estimator (Nguyen et al. 2022, App. B, App. M).

An h maps the canonical labels of one partition, an (n,) int64 vector, to a number or
an array of numbers; the estimator (:func:`pymc_partitions.unbiased_estimate`)
averages it over coupled chains. Built-ins:

- :data:`lcp`: largest-cluster proportion, the size of the largest block / n (App. B);
- :data:`n_blocks`: the number of blocks;
- :func:`co_clustering` ``(a, b)``: CC(a, b), 1.0 when items a and b (0-based) share a
  block, else 0.0 (App. B);
- :func:`predictive_density` ``(model, x_new)``: the posterior predictive density at new
  points given the partition (App. M, eq. 17), a vector over ``x_new``.

Any Python callable of the labels is accepted as h too (scalar or array valued; the
same shape for every partition). Built-ins are :class:`PartitionFunction` objects: they
also evaluate a whole stack of partitions at once (``h.evaluate(labels)`` with labels
(S, n)), which is how the estimator calls them. A user's function can be given that
speed by wrapping it: ``PartitionFunction(fn, batch=vectorised_fn)``. A plain callable
is called once per *distinct* partition among the draws the estimator needs (canonical
labels: equal partitions have equal label vectors), not once per draw.

This module imports NumPy only (PyTensor when :func:`predictive_density` reads a
model): an h is evaluated in the runners' worker processes, which unpickle it and so
import the module it was defined in.
"""

import numpy as np

from pymc_partitions.arguments import integer_arg

LOG_2PI = np.log(2.0 * np.pi)


class PartitionFunction:
    """A function h of a partition's canonical labels, for :func:`unbiased_estimate`.

    Parameters
    ----------
    fn : callable, optional
        ``fn(labels)`` with labels an (n,) int64 vector -> a number or an array (the
        same shape for every partition). Optional when ``batch`` is given.
    batch : callable, optional
        ``batch(labels)`` with labels (S, n) int64 -> (S, *shape): the same values for
        S partitions at once (vectorised). Optional when ``fn`` is given.
    name : str, optional
        Name used in reports and the result's dataset (default: ``fn.__name__``).
    dims, coords : optional
        Names of the output's axes and their coordinates (e.g. the points of a
        predictive density), used by :meth:`UnbiasedEstimate.to_dataset`.
    """

    def __init__(self, fn=None, *, batch=None, name=None, dims=None, coords=None):
        if fn is None and batch is None:
            raise TypeError("PartitionFunction: pass 'fn' (one partition) or 'batch' (a stack).")
        for arg, value in (("fn", fn), ("batch", batch)):
            if value is not None and not callable(value):
                raise TypeError(f"PartitionFunction: '{arg}' must be callable, got {value!r}.")
        self.fn = fn
        self.batch = batch
        self.name = name or getattr(fn if fn is not None else batch, "__name__", "h")
        self.dims = tuple(dims) if dims is not None else None
        self.coords = dict(coords) if coords is not None else {}

    def __call__(self, labels):
        """h of one partition: ``labels`` (n,) -> a float or an array."""
        labels = np.asarray(labels, dtype=np.int64)
        if self.fn is not None:
            return self.fn(labels)
        out = np.asarray(self.batch(labels[None]))[0]
        return float(out) if out.ndim == 0 else out

    def evaluate(self, labels):
        """h of a stack of partitions: ``labels`` (S, n) int64 -> (S, *shape) float64."""
        return evaluate(self, labels)

    def __repr__(self):
        return f"PartitionFunction({self.name})"


def _check_output(value, shape, where):
    """One partition's h value as a float64 array, checked against ``shape`` (None:
    the first one)."""
    arr = np.asarray(value)
    if arr.dtype.kind not in "biuf":
        raise TypeError(
            f"unbiased_estimate: 'h' must return numbers (a number or an array of numbers), "
            f"got {type(value).__name__} of dtype {arr.dtype} for {where}."
        )
    arr = arr.astype(np.float64)
    if shape is not None and arr.shape != shape:
        raise ValueError(
            f"unbiased_estimate: 'h' must return the same shape for every partition; it "
            f"returned shape {shape} before and {arr.shape} for {where}."
        )
    return arr


def evaluate(h, labels):
    """``h`` at each of ``labels`` (S, n) int64: (S, *shape) float64.

    A :class:`PartitionFunction` with ``batch`` is called once on the stack; any other
    callable once per distinct row (canonical labels: equal partitions, equal rows).
    Non-numeric values, shapes that change between partitions and non-finite values
    raise an error naming ``h``.
    """
    labels = np.ascontiguousarray(labels, dtype=np.int64)
    if labels.ndim != 2:
        raise ValueError(f"evaluate: 'labels' must be (S, n) label vectors, got {labels.shape}.")
    if isinstance(h, PartitionFunction) and h.batch is not None:
        out = np.asarray(h.batch(labels))
        if out.shape[:1] != labels.shape[:1]:
            raise ValueError(
                f"unbiased_estimate: 'h' ({h.name}) batch returned shape {out.shape} for "
                f"{labels.shape[0]} partitions; it must return (S, *shape)."
            )
        out = _check_output(out, None, f"{labels.shape[0]} partitions")
    else:
        if labels.shape[0] == 0:
            raise ValueError("evaluate: no partitions to evaluate h at.")
        unique, inverse = np.unique(labels, axis=0, return_inverse=True)
        values, shape = [], None
        for row in unique:
            value = _check_output(h(row), shape, f"the partition {row.tolist()}")
            shape = value.shape
            values.append(value)
        out = np.stack(values)[np.reshape(inverse, -1)]
    if not np.all(np.isfinite(out)):
        bad = np.flatnonzero(~np.isfinite(out.reshape(out.shape[0], -1)).all(axis=1))[0]
        raise ValueError(
            f"unbiased_estimate: 'h' returned a non-finite value (NaN or inf) for the "
            f"partition {labels[bad].tolist()}; h must be finite on every partition."
        )
    return out


# ----------------------------------------------------------------------------- built-ins
def _block_sizes(labels):
    """Block sizes of each row of ``labels`` (S, n) with labels in [0, n): (S, n) int64
    (zero-padded; canonical labels put the K blocks first)."""
    s, n = labels.shape
    if labels.size and (labels.min() < 0 or labels.max() >= n):
        raise ValueError(
            f"labels must be canonical partition labels in [0, n = {n}) (as a trace holds "
            f"them; pmp.canonicalize converts others); got values in "
            f"[{labels.min()}, {labels.max()}]."
        )
    keys = (np.arange(s, dtype=np.int64)[:, None] * n + labels).reshape(-1)
    return np.bincount(keys, minlength=s * n).reshape(s, n)


def _lcp(labels):
    return _block_sizes(labels).max(axis=1) / labels.shape[1]


def _n_blocks(labels):
    return np.count_nonzero(_block_sizes(labels), axis=1).astype(np.float64)


lcp = PartitionFunction(batch=_lcp, name="lcp")
lcp.__doc__ = """Largest-cluster proportion: size of the largest block / n (Nguyen et al.
2022, App. B, "LCP"). ``lcp(labels)`` for one partition."""

n_blocks = PartitionFunction(batch=_n_blocks, name="n_blocks")
n_blocks.__doc__ = "Number of blocks of the partition. ``n_blocks(labels)`` for one partition."


def co_clustering(a, b):
    """CC(a, b): the function of a partition equal to 1.0 when items ``a`` and ``b``
    (0-based indices) are in the same block and 0.0 otherwise (Nguyen et al. 2022,
    App. B); its posterior mean is the co-clustering probability."""
    owner = "co_clustering"
    a = integer_arg("a", a, owner, minimum=0)
    b = integer_arg("b", b, owner, minimum=0)
    if a == b:
        raise ValueError(f"{owner}: 'a' and 'b' must be two distinct items, got a = b = {a}.")

    def batch(labels):
        n = labels.shape[1]
        for arg, item in (("a", a), ("b", b)):
            if item >= n:
                raise ValueError(
                    f"{owner}: '{arg}' = {item} is not an item of the partition (items are "
                    f"0..{n - 1})."
                )
        return (labels[:, a] == labels[:, b]).astype(np.float64)

    return PartitionFunction(batch=batch, name=f"cc_{a}_{b}")


# ----------------------------------------------------------------------------- predictive density
def _constant_values(model, exprs, what, owner):
    """Values of hyperparameter expressions that must be constants (a fixed target)."""
    import pytensor

    from pymc_partitions.versions import ancestors

    free = list(model.free_RVs)
    needed = set(ancestors(list(exprs), blockers=free))
    depends = [rv.name for rv in free if rv in needed]
    if depends:
        raise ValueError(
            f"{owner}: in 'model', {what} depend(s) on the free variable(s) {depends}; the "
            f"unbiased estimator targets one fixed posterior over partitions, so the "
            f"hyperparameters must be constants (numbers or pm.Data), as pmp.CoupledGibbs "
            f"requires."
        )
    # Evaluated once: the Python linker (FAST_COMPILE) avoids loading PyTensor's C
    # module cache (seconds, for a few numbers).
    fn = pytensor.function([], list(exprs), mode="FAST_COMPILE")
    return [np.asarray(v, dtype=np.float64) for v in fn()]


def _normal_density(labels, data, x, mu0, tau, sigma, alpha, chunk=1024):
    """Posterior predictive density of the CollapsedNormal / CRP mixture at ``x`` for
    each partition, vectorised (App. M eq. 17 with the CRP prediction rule).

    labels : (S, N) canonical labels; data : (N, D); x : (G, D); mu0, tau, sigma : (D,);
    alpha : float. Returns (S, G): sum_k n_k/(N+alpha) N(x; m_k, v_k + sigma^2) +
    alpha/(N+alpha) N(x; mu0, tau^2 + sigma^2), per dimension independent, with
    m_k, v_k the posterior mean and variance of block k's mean.
    """
    s_total, n = labels.shape
    out = np.empty((s_total, x.shape[0]))
    prior_prec = 1.0 / tau**2
    noise_prec = 1.0 / sigma**2
    for start in range(0, s_total, chunk):
        lab = labels[start:start + chunk]
        s = lab.shape[0]
        k_max = int(lab.max()) + 1
        keys = (np.arange(s, dtype=np.int64)[:, None] * k_max + lab).reshape(-1)
        counts = np.bincount(keys, minlength=s * k_max).reshape(s, k_max).astype(np.float64)
        sums = np.stack(
            [np.bincount(keys, weights=np.tile(data[:, d], s), minlength=s * k_max)
             for d in range(data.shape[1])], axis=-1).reshape(s, k_max, -1)
        prec = prior_prec + counts[..., None] * noise_prec          # (s, K, D)
        mean = (mu0 * prior_prec + sums * noise_prec) / prec
        var = 1.0 / prec + sigma**2
        r = x[None, None, :, :] - mean[:, :, None, :]               # (s, K, G, D)
        log_pdf = -0.5 * np.sum(LOG_2PI + np.log(var)[:, :, None, :] + r**2
                                / var[:, :, None, :], axis=-1)
        dens = np.einsum("sk,skg->sg", counts, np.exp(log_pdf))
        v0 = tau**2 + sigma**2
        prior = np.exp(-0.5 * np.sum(LOG_2PI + np.log(v0) + (x - mu0) ** 2 / v0, axis=-1))
        out[start:start + s] = (dens + alpha * prior[None, :]) / (n + alpha)
    return out


def predictive_density(model=None, x_new=None, var_name=None):
    r"""h = the posterior predictive density of a new observation given the partition
    (Nguyen et al. 2022, App. M, eq. 17), at the points ``x_new``.

    For a partition with blocks B_1..B_K of the N observations,

    .. math::

        h(\pi)(x) = \sum_k w_k\, p(x \mid x_{B_k}) + w_{new}\, p(x),

    each block's posterior predictive weighted by the partition prior's prediction
    rule (CRP: :math:`w_k = n_k/(N+\alpha)`, :math:`w_{new} = \alpha/(N+\alpha)`) plus
    the prior predictive of a new block. Its posterior mean is the posterior
    predictive density p(x | data), so ``unbiased_estimate(idata, "z",
    predictive_density(model, grid), ...)`` estimates that density on the grid
    without bias. Values are densities (not logs).

    Parameters
    ----------
    model : pm.Model
        The model (None: the model in context). Its hyperparameters and the prior's
        must be constants: the estimator targets one fixed posterior.
    x_new : array_like
        Points shaped like the observed rows: (G, D), one row (D,), or for D = 1 a
        vector of G values (a grid).
    var_name : str, optional
        The collapsed likelihood whose observations ``x_new`` are (required if the
        model has several), as in :func:`pymc_partitions.posterior_predictive_density`.

    The Gaussian DP mixture of the paper (``pmp.CollapsedNormal`` on a ``pmp.CRP``
    partition) is evaluated vectorised over partitions and blocks; any other
    likelihood and prior that define a closed-form block predictive and a prediction
    rule (``block_log_predictive``, ``predictive_log_weights``) through those methods,
    one distinct partition at a time. Others are refused with an error naming them.
    Returns a :class:`PartitionFunction` with values of shape (G,) (dimension
    ``x_new``; for D = 1 its coordinate is the grid).
    """
    from pymc_partitions.analysis.block_parameters import (
        _collapsed_likelihoods,
        _model_arg,
        _new_rows,
        _observed,
        _require,
        log_predictive_of_partition,
    )
    from pymc_partitions.distributions.collapsed import CollapsedLikelihoodRV, CollapsedNormalRV
    from pymc_partitions.distributions.partition import CRPRV, PartitionPriorRV

    owner = "predictive_density"
    model = _model_arg(model, owner)
    liks = _collapsed_likelihoods(model)
    if var_name is not None and not isinstance(var_name, str):
        raise TypeError(f"{owner}: 'var_name' must be a likelihood's name, got {var_name!r}.")
    names = [lik.name for lik in liks]
    if var_name is None:
        if len(liks) != 1:
            raise ValueError(
                f"{owner}: the model has {len(liks)} collapsed likelihoods {names}; pass "
                f"var_name= to choose one."
            )
        lik = liks[0]
    else:
        if var_name not in names:
            raise ValueError(
                f"{owner}: 'var_name' = {var_name!r} is not a collapsed likelihood of the "
                f"model; choose from {names}."
            )
        lik = liks[names.index(var_name)]
    op = lik.owner.op
    _require(op, CollapsedLikelihoodRV, "block_log_predictive", f"likelihood '{lik.name}'",
             "the predictive density")
    z = op.dist_params(lik.owner)[0]
    prior_op = z.owner.op
    _require(prior_op, PartitionPriorRV, "predictive_log_weights",
             f"partition prior of '{z.name}'", "the predictive density")
    if x_new is None:
        raise TypeError(f"{owner}: 'x_new' is required (the points to evaluate the density at).")
    data = _observed(lik, model)
    x = _new_rows(x_new, data, owner)
    prior_values = _constant_values(model, prior_op.dist_params(z.owner)[:-1],
                                    f"the prior hyperparameters of '{z.name}'", owner)
    hypers = _constant_values(model, op.hyper_params(lik.owner),
                              f"the hyperparameters of '{lik.name}'", owner)
    n = data.shape[0]
    lik_name = lik.name  # not the variable: h is sent to worker processes without PyTensor

    def check(labels):
        if labels.shape[1] != n:
            raise ValueError(
                f"{owner}: the partition has {labels.shape[1]} items but '{lik_name}' has "
                f"{n} observations."
            )

    if isinstance(op, CollapsedNormalRV) and isinstance(prior_op, CRPRV):
        rows = data.reshape(n, -1)
        xs = x.reshape(x.shape[0], -1)
        mu0, tau, sigma = (np.broadcast_to(v, (rows.shape[1],)) for v in hypers)
        alpha = float(prior_values[0])

        def batch(labels):
            check(labels)
            return _normal_density(labels, rows, xs, mu0, tau, sigma, alpha)

        fn = None
    else:
        def fn(labels):
            labels = np.asarray(labels)
            check(labels[None])
            return np.exp(log_predictive_of_partition(op, prior_op, labels, data, x,
                                                      prior_values, hypers))

        batch = None
    grid = {"x_new": x[:, 0]} if x.ndim == 2 and x.shape[1] == 1 else {}
    return PartitionFunction(fn, batch=batch, name=f"{lik.name}_predictive_density",
                             dims=("x_new",), coords=grid)


__all__ = ["PartitionFunction", "co_clustering", "evaluate", "lcp", "n_blocks",
           "predictive_density"]
