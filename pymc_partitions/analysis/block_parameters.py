r"""Block parameters and posterior predictive densities for conjugate collapsed likelihoods.

A collapsed likelihood integrates each block's parameters out, so the posterior
holds partitions and hyperparameters but no block parameters. For conjugate
likelihoods they are cheap to recover afterwards: given a stored partition and the
stored hyperparameters, each block's parameters have a closed-form posterior.

- :func:`sample_block_parameters` draws, for every stored draw, each block's
  parameters from that posterior and adds them to the ``InferenceData`` as a new
  group (``block_parameters``). Together with the stored draw they are an exact
  draw from the joint posterior of (partition, hyperparameters, block parameters).
- :func:`posterior_predictive_density` estimates the log posterior predictive
  density of new observations (Nguyen et al. 2022, App. M, eq. 17):

  .. math::

      p(x_{new} \mid x_{1:n}) \approx \frac1S \sum_{s=1}^S \Big[
      \sum_{k=1}^{K_s} w_k^{(s)}\, p(x_{new} \mid x_{B_k^{(s)}}, \eta^{(s)})
      + w_{new}^{(s)}\, p(x_{new} \mid \eta^{(s)}) \Big]

  with :math:`B_k^{(s)}` the blocks of draw s, :math:`\eta^{(s)}` its
  hyperparameters and :math:`w^{(s)}` the partition prior's prediction rule (CRP:
  :math:`n_k/(n+\alpha)` and :math:`\alpha/(n+\alpha)`).

``pm.sample_posterior_predictive`` uses the same ``block_posterior_draw`` for its
replicates (see :class:`~pymc_partitions.distributions.CollapsedLikelihood`).

Both are generic over likelihood ops: the mathematics of a likelihood lives on its
op (:meth:`~pymc_partitions.distributions.CollapsedLikelihoodRV.block_posterior_draw`,
:meth:`~pymc_partitions.distributions.CollapsedLikelihoodRV.block_log_predictive`)
and of a prior on its op
(:meth:`~pymc_partitions.distributions.PartitionPriorRV.predictive_log_weights`); a
model whose likelihood or prior lacks them gets an error naming it.

Hyperparameter values of each draw are the model's hyperparameter expressions
evaluated at that draw's free variables in the posterior (constants stay constant).
"""

import numpy as np
import pymc as pm
import pytensor
import xarray as xr
from scipy.special import logsumexp

from pymc_partitions import versions
from pymc_partitions.analysis._draws import posterior_of
from pymc_partitions.versions import ancestors
from pymc_partitions.distributions.collapsed import CollapsedLikelihoodRV, observed_data
from pymc_partitions.distributions.mallows import GeneralizedMallowsRV
from pymc_partitions.distributions.partition import PartitionPriorRV
from pymc_partitions.distributions.validation import seed_arg
from pymc_partitions.partitions import as_array, as_labels, canonicalize

GROUP = "block_parameters"


# ----------------------------------------------------------------------------- model reading
def _model_arg(model, owner):
    """The ``model`` argument: a ``pm.Model``, or None for the model in context."""
    if model is None:
        try:
            return pm.modelcontext(None)
        except TypeError:
            raise TypeError(
                f"{owner}: 'model' is required: pass the pm.Model that produced the trace "
                f"(or call inside its context)."
            ) from None
    if not isinstance(model, pm.Model):
        raise TypeError(f"{owner}: 'model' must be a pm.Model, got {type(model).__name__}.")
    return model


def _observed_of(model, op_type):
    """The observed variables of ``model`` whose op is an ``op_type``, each once: PyMC
    5's sample_posterior_predictive appends the observed variables to
    model.observed_RVs again on every call (when the trace has observed data)."""
    found = []
    for rv in model.observed_RVs:
        is_of_type = rv.owner is not None and isinstance(rv.owner.op, op_type)
        if is_of_type and not any(rv is other for other in found):
            found.append(rv)
    return found


def _collapsed_likelihoods(model):
    return _observed_of(model, CollapsedLikelihoodRV)


def _overrides(op, base, method):
    return getattr(type(op), method) is not getattr(base, method)


def _require(op, base, method, who, what):
    if not _overrides(op, base, method):
        raise NotImplementedError(
            f"{who} ({type(op).__name__}) does not implement {method}: {what} is available only "
            f"for likelihoods and priors that define it (e.g. pmp.CollapsedNormal, "
            f"pmp.CollapsedBetaBernoulli, pmp.CRP)."
        )


class _HyperReader:
    """Evaluates hyperparameter expressions at each posterior draw.

    Compiled once from the free variables the expressions depend on (the posterior
    stores them on their natural scale) to the expressions' values.
    """

    def __init__(self, model, exprs, posterior, owner):
        free = list(model.free_RVs)
        needed = set(ancestors(exprs, blockers=free))
        self.inputs = [rv for rv in free if rv in needed]
        missing = [rv.name for rv in self.inputs if rv.name not in posterior]
        if missing:
            raise ValueError(
                f"{owner}: the posterior has no draws of {missing}, which the hyperparameters "
                f"depend on; sample them (do not drop them with var_names in pm.sample)."
            )
        self.fn = pytensor.function(self.inputs, list(exprs), on_unused_input="ignore")
        self.values = [np.asarray(posterior[rv.name].values) for rv in self.inputs]
        self.dtypes = [rv.type.dtype for rv in self.inputs]
        self._const = None if self.inputs else [np.asarray(v, dtype=np.float64) for v in self.fn()]

    def __call__(self, c, d):
        if self._const is not None:
            return self._const
        args = [np.asarray(v[c, d], dtype=t) for v, t in zip(self.values, self.dtypes)]
        return [np.asarray(v, dtype=np.float64) for v in self.fn(*args)]


def _observed(lik, model):
    # The current observed data (a pm.Data container is read now, validated).
    return np.asarray(observed_data(lik, model.rvs_to_values[lik]))


def _blocks(labels):
    """Canonical blocks of one label vector: list of member index arrays, sizes."""
    labels = canonicalize(labels)
    order = np.argsort(labels, kind="stable")
    sizes = np.bincount(labels)
    return np.split(order, np.cumsum(sizes)[:-1]), sizes


def _partition_draws(posterior, z, owner):
    if z.name not in posterior:
        raise ValueError(f"{owner}: the posterior has no draws of partition '{z.name}'.")
    labels = np.asarray(posterior[z.name].values)
    return labels.reshape(labels.shape[0], labels.shape[1], -1)


# ----------------------------------------------------------------------------- block parameters
def draw_block_parameters(op, rng, labels, data, hypers):
    """Block parameters for a sequence of partitions (numpy core of
    :func:`sample_block_parameters`).

    op : a collapsed likelihood op with ``block_posterior_draw``;
    labels : (S, n) int label vectors; data : the observed rows (n, ...);
    hypers : callable ``s -> list of hyperparameter values`` or one list for all s.
    Returns ``{name: (S, K_max, *shape) float64}`` with block k of draw s the k-th
    block in canonical order and NaN for k >= K_s, and the (S, K_max) int64 block
    sizes (0 for k >= K_s).
    """
    labels = np.asarray(labels)
    blocks = [_blocks(row) for row in labels]
    k_max = max(sizes.size for _, sizes in blocks)
    out, block_size = {}, np.zeros((labels.shape[0], k_max), dtype=np.int64)
    for s, (members, sizes) in enumerate(blocks):
        h = hypers(s) if callable(hypers) else hypers
        block_size[s, : sizes.size] = sizes
        for k, idx in enumerate(members):
            for name, value in op.block_posterior_draw(rng, data[idx], h).items():
                value = np.asarray(value, dtype=np.float64)
                if name not in out:
                    out[name] = np.full((labels.shape[0], k_max) + value.shape, np.nan)
                out[name][s, k] = value
    return out, block_size


#: MallowsGibbs' per-draw statistics that hold the explicit cluster parameters.
MALLOWS_STATS = ("mallows_sigma", "mallows_theta")


def mallows_block_variables(idata, posterior, lik, owner):
    """The recorded (sigma_c, theta_c) of a GeneralizedMallows likelihood ``lik`` as
    block-parameter variables (no new draws: :class:`~pymc_partitions.MallowsGibbs`
    samples them jointly with the partition and reports them per draw in
    ``sample_stats``). Returns ``{name: DataArray}``; the arrays are views of the
    statistics (no copy), cut to the largest number of blocks of any draw."""
    z = lik.owner.op.dist_params(lik.owner)[0]
    try:
        stats = versions.group_dataset(idata, "sample_stats")
    except (KeyError, AttributeError):
        stats = None
    missing = [m for m in MALLOWS_STATS if stats is None or m not in stats]
    if missing:
        raise ValueError(
            f"{owner}: the sample_stats of idata have no {missing}: the block parameters of "
            f"a GeneralizedMallows likelihood are the sampler's own draws, recorded by "
            f"pmp.MallowsGibbs (the step pm.sample assigns to its partition '{z.name}'). "
            f"Sample with it and keep its sample_stats."
        )
    labels = _partition_draws(posterior, z, owner)
    n_chain, n_draw = labels.shape[:2]
    counts = [np.bincount(canonicalize(row)) for row in labels.reshape(n_chain * n_draw, -1)]
    k_all = np.array([c.size for c in counts])
    sizes_flat = np.zeros((k_all.size, int(k_all.max())), dtype=np.int64)
    for row, c in zip(sizes_flat, counts):
        row[: c.size] = c
    sigma = stats["mallows_sigma"].values  # (chain, draw, K_rep, n) int16
    theta = stats["mallows_theta"].values  # (chain, draw, K_rep, T) float32
    k_rep = sigma.shape[2]
    k = min(int(k_all.max()), k_rep)
    if int(k_all.max()) > k_rep:
        import warnings

        warnings.warn(
            f"{owner}: some draws have up to {int(k_all.max())} blocks but MallowsGibbs "
            f"reported the parameters of the first {k_rep} only (its "
            f"'max_reported_clusters'); blocks beyond are left out.",
            UserWarning, stacklevel=3,
        )
    block_dim, rank_dim, stage_dim = f"{z.name}_block", f"{lik.name}_rank", f"{lik.name}_stage"
    coords = {rank_dim: np.arange(1, sigma.shape[3] + 1),
              stage_dim: np.arange(1, theta.shape[3] + 1)}
    return {
        f"{lik.name}_sigma": xr.DataArray(
            sigma[:, :, :k], dims=("chain", "draw", block_dim, rank_dim),
            coords={rank_dim: coords[rank_dim]},
            attrs={"description": "central permutation of the block: sigma[..., r] = the "
                                  "item (0-based) at rank r; -1 beyond a draw's blocks"}),
        f"{lik.name}_theta": xr.DataArray(
            theta[:, :, :k], dims=("chain", "draw", block_dim, stage_dim),
            coords={stage_dim: coords[stage_dim]},
            attrs={"description": "dispersion theta_j of stage j; NaN beyond a draw's "
                                  "blocks"}),
        f"{z.name}_block_size": xr.DataArray(
            sizes_flat[:, :k].reshape(n_chain, n_draw, k), dims=("chain", "draw", block_dim)),
    }


def sample_block_parameters(idata, model, var_names=None, seed=None, group=GROUP, partition=None):
    """Draw each block's parameters from their conjugate posterior, for every stored draw.

    For each stored draw (chain c, draw d) and each collapsed likelihood observed on a
    partition, each block's parameters are drawn given that draw's partition and
    hyperparameters (``op.block_posterior_draw``), so every (c, d) is a joint
    posterior draw of partition, hyperparameters and block parameters.

    A :class:`~pymc_partitions.GeneralizedMallows` likelihood has no conjugate
    posterior to draw from: its block parameters are explicit state of
    :class:`~pymc_partitions.MallowsGibbs`, drawn jointly with the partition and
    recorded per draw in ``sample_stats`` (``mallows_sigma``, ``mallows_theta``). They
    are put in the group as they are (no new draws; ``seed`` is unused for them):
    ``y_sigma`` (chain, draw, z_block, y_rank) int16, the item (0-based) at each rank
    of the block's central permutation, -1 beyond a draw's blocks; ``y_theta`` (chain,
    draw, z_block, y_stage) float32, theta_j per stage j = 1..T (coordinates 1-based),
    NaN beyond; and ``z_block_size``. The arrays are views of the statistics (no
    copy: N = 5000 rankings, n = 20, 64 reported blocks cost 7 KB per draw in all).
    Blocks beyond the step's ``max_reported_clusters`` are left out with a warning.
    ``partition`` is refused for it (the parameters belong to each draw's partition).

    Parameters
    ----------
    idata : InferenceData or DataTree
        ``pm.sample`` output with the partition and the free hyperparameters in its
        posterior.
    model : pm.Model
        The model that produced it (None: the model in context).
    var_names : str or list of str, optional
        Names of the collapsed likelihoods to use (default: all in the model).
    seed : int or numpy Generator, optional
    group : str, default ``"block_parameters"``
        Name of the group added (replaced if present).
    partition : array_like of n labels, or an object with ``.labels``, optional
        Use this one partition (e.g. a point estimate, ``pmp.point_estimate(...)``) in
        place of each draw's partition: block k is then the same block in every draw,
        and the draws are of its blocks' parameters given that partition, the data
        and each draw's hyperparameters. (The hyperparameter draws themselves come
        from the full posterior, not from the posterior given this partition; with
        constant hyperparameters the result is exactly the posterior given it.)

    Returns
    -------
    The same ``idata``, with the new group holding, for likelihood ``y`` on
    partition ``z``, a variable ``y_{param}`` per block parameter (CollapsedNormal:
    ``y_mu``; CollapsedBetaBernoulli: ``y_theta``) with dims
    ``(chain, draw, z_block, y_{param}_dim_0, ...)``, and ``z_block_size``
    ``(chain, draw, z_block)`` int64. Block k of a draw is the block with canonical
    label k (the block of the k-th item to open a new block); the ``z_block`` axis has
    the largest number of blocks over all draws, and entries beyond a draw's own
    number of blocks are NaN (sizes 0). Block indices are labels, so they switch
    between draws: summaries across draws are meaningful per draw or after fixing
    a partition (e.g. a point estimate), not per raw block index.
    """
    owner = "sample_block_parameters"
    rng = np.random.default_rng(seed_arg("seed", seed, owner))
    posterior = posterior_of(idata, owner, allow_dataset=False, allow_multitrace=False)
    model = _model_arg(model, owner)
    if not isinstance(group, str) or not group:
        raise TypeError(f"{owner}: 'group' must be a group name (a non-empty str), got {group!r}.")
    liks = _collapsed_likelihoods(model)
    gms = _observed_of(model, GeneralizedMallowsRV)
    if var_names is not None:
        if isinstance(var_names, str):
            var_names = [var_names]  # one name, as ArviZ accepts
        if not all(isinstance(v, str) for v in var_names):
            raise TypeError(f"{owner}: 'var_names' must be a list of names, got {var_names!r}.")
        names = {lik.name for lik in liks + gms}
        unknown = [v for v in var_names if v not in names]
        if unknown:
            raise ValueError(
                f"{owner}: 'var_names' {unknown} are not collapsed likelihoods of "
                f"the model; choose from {sorted(names)}."
            )
        liks = [lik for lik in liks if lik.name in var_names]
        gms = [lik for lik in gms if lik.name in var_names]
    if not liks and not gms:
        raise ValueError("sample_block_parameters: the model has no collapsed likelihood.")
    if gms and partition is not None:
        raise ValueError(
            f"{owner}: 'partition' cannot be used with the GeneralizedMallows likelihood "
            f"'{gms[0].name}': its block parameters are the sampler's draws for each draw's "
            f"own partition, not draws given another one. Leave 'partition' out (or select "
            f"the collapsed likelihoods with 'var_names')."
        )
    for lik in liks:
        _require(lik.owner.op, CollapsedLikelihoodRV, "block_posterior_draw",
                 f"likelihood '{lik.name}'", "sampling block parameters")

    n_chain, n_draw = posterior.sizes["chain"], posterior.sizes["draw"]
    variables = {}
    for lik in gms:
        variables.update(mallows_block_variables(
            idata, posterior, lik, f"sample_block_parameters ('{lik.name}')"))
    for lik in liks:
        op = lik.owner.op
        z = op.dist_params(lik.owner)[0]
        owner = f"sample_block_parameters ('{lik.name}')"
        labels = _partition_draws(posterior, z, owner).reshape(n_chain * n_draw, -1)
        if partition is not None:
            fixed = as_labels(getattr(partition, "labels", partition), "partition", owner)
            if fixed.shape != labels.shape[1:]:
                raise ValueError(
                    f"{owner}: 'partition' must hold n = {labels.shape[1]} labels, got shape "
                    f"{fixed.shape}."
                )
            labels = np.broadcast_to(canonicalize(fixed), labels.shape)
        reader = _HyperReader(model, op.hyper_params(lik.owner), posterior, owner)
        values, sizes = draw_block_parameters(
            op, rng, labels, _observed(lik, model), lambda s: reader(*divmod(s, n_draw))
        )
        block_dim = f"{z.name}_block"
        for name, arr in values.items():
            arr = arr.reshape((n_chain, n_draw) + arr.shape[1:])
            extra = [f"{lik.name}_{name}_dim_{i}" for i in range(arr.ndim - 3)]
            variables[f"{lik.name}_{name}"] = xr.DataArray(
                arr, dims=("chain", "draw", block_dim, *extra)
            )
        size_name = f"{z.name}_block_size"
        new_sizes = sizes.reshape(n_chain, n_draw, -1)
        if size_name in variables and variables[size_name].shape[-1] != new_sizes.shape[-1]:
            raise AssertionError("block sizes differ between likelihoods of one partition")
        variables[size_name] = xr.DataArray(new_sizes, dims=("chain", "draw", block_dim))
    dataset = xr.Dataset(
        variables, coords={"chain": posterior["chain"].values, "draw": posterior["draw"].values}
    )
    dataset.attrs["description"] = (
        "Block parameters drawn from their conjugate posterior given each stored partition "
        "and hyperparameters (GeneralizedMallows: the sampler's own draws, as recorded); "
        "block k = canonical label k; NaN (sigma: -1) beyond a draw's blocks."
    )
    return versions.add_group(idata, group, dataset)


# ----------------------------------------------------------------------------- predictive
def _new_rows(x_new, data, owner):
    x = as_array(x_new, "x_new", owner, "an array of new observations")
    if x.dtype.kind not in "iufb":
        raise TypeError(f"{owner}: 'x_new' must hold numbers, got dtype {x.dtype}.")
    x = x.astype(np.float64)
    row_ndim = data.ndim - 1
    if data.ndim == 2 and data.shape[1] == 1 and x.ndim == 1:
        x = x[:, None]  # D = 1: a vector of new scalar observations
    elif x.ndim == row_ndim:
        x = x[None]  # one new observation
    if x.ndim != data.ndim or x.shape[1:] != data.shape[1:]:
        raise ValueError(
            f"{owner}: 'x_new' must hold new observations shaped like the observed rows "
            f"{data.shape[1:]} (an array (r, {', '.join(map(str, data.shape[1:]))}) or one row), "
            f"got shape {np.shape(x_new)}."
        )
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{owner}: 'x_new' must be finite.")
    return x


def log_predictive_of_partition(op, prior_op, labels, data, x, prior_values, hypers):
    """log p(x | partition, data) for each new row of ``x``, shape (r,): the blocks'
    posterior predictives (``op.block_log_predictive``) and the new-block prior
    predictive, weighted by the prior's prediction rule
    (``prior_op.predictive_log_weights``; App. M eq. 17). ``labels`` (n,) label
    the rows of ``data``; ``prior_values``, ``hypers``: hyperparameter values."""
    members, sizes = _blocks(labels)
    log_w = prior_op.predictive_log_weights(prior_values, sizes)
    terms = [op.block_log_predictive(x, data[idx], hypers) for idx in members]
    terms.append(op.block_log_predictive(x, data[:0], hypers))
    return logsumexp(np.stack(terms) + log_w[:, None], axis=0)


def posterior_predictive_density(idata, model, x_new, var_name=None, combine=True):
    """Log posterior predictive density of new observations (Nguyen et al. 2022, App. M).

    For each stored draw: the mixture over the draw's blocks of each block's
    posterior predictive (``op.block_log_predictive``), weighted by the partition
    prior's prediction rule (``prior_op.predictive_log_weights``; CRP: n_k/(n+alpha)),
    plus the new-block prior predictive (CRP weight alpha/(n+alpha)); then the
    average over draws (log-mean-exp).

    Parameters
    ----------
    idata, model : the ``pm.sample`` output and its model (None: the model in context).
    x_new : array_like
        New observations shaped like the observed rows: (r, D), or one row (D,); for
        D = 1 a vector of r values. Each is scored on its own (one new item at a time).
    var_name : str, optional
        The collapsed likelihood whose observations ``x_new`` are (required if the
        model has several). With several likelihoods on one partition this is the
        marginal predictive of that likelihood's part of a new item.
    combine : bool, default True
        Return the average over draws, shape (r,); False returns each draw's log
        predictive, shape (chain, draw, r).
    """
    owner = "posterior_predictive_density"
    posterior = posterior_of(idata, owner, allow_dataset=False)
    model = _model_arg(model, owner)
    liks = _collapsed_likelihoods(model)
    if var_name is not None and not isinstance(var_name, str):
        raise TypeError(f"{owner}: 'var_name' must be a likelihood's name, got {var_name!r}.")
    if var_name is None:
        if len(liks) != 1:
            raise ValueError(
                f"{owner}: the model has {len(liks)} collapsed likelihoods "
                f"{[lik.name for lik in liks]}; pass var_name= to choose one."
            )
        lik = liks[0]
    else:
        match = [lik for lik in liks if lik.name == var_name]
        if not match:
            raise ValueError(
                f"{owner}: 'var_name' = {var_name!r} is not a collapsed likelihood of the model; "
                f"choose from {[lik.name for lik in liks]}."
            )
        lik = match[0]
    op = lik.owner.op
    _require(op, CollapsedLikelihoodRV, "block_log_predictive", f"likelihood '{lik.name}'",
             "the posterior predictive density")
    z = op.dist_params(lik.owner)[0]
    prior_op = z.owner.op
    _require(prior_op, PartitionPriorRV, "predictive_log_weights", f"partition prior of '{z.name}'",
             "the posterior predictive density")

    data = _observed(lik, model)
    x = _new_rows(x_new, data, owner)
    n_chain, n_draw = posterior.sizes["chain"], posterior.sizes["draw"]
    labels = _partition_draws(posterior, z, owner)
    prior_exprs = list(prior_op.dist_params(z.owner)[:-1])
    lik_exprs = list(op.hyper_params(lik.owner))
    reader = _HyperReader(model, prior_exprs + lik_exprs, posterior, owner)
    n_prior = len(prior_exprs)
    out = np.empty((n_chain, n_draw, x.shape[0]))
    for c in range(n_chain):
        for d in range(n_draw):
            values = reader(c, d)
            prior_values, hypers = values[:n_prior], values[n_prior:]
            out[c, d] = log_predictive_of_partition(op, prior_op, labels[c, d], data, x,
                                                    prior_values, hypers)
    if not combine:
        return out
    flat = out.reshape(-1, x.shape[0])
    return logsumexp(flat, axis=0) - np.log(flat.shape[0])


__all__ = [
    "draw_block_parameters",
    "log_predictive_of_partition",
    "posterior_predictive_density",
    "sample_block_parameters",
]
