r"""Pointwise log-likelihoods for leave-one-out cross-validation of partition models.

A collapsed likelihood does not factorise over items: integrating the block
parameters out couples every item of a block (and, for a relational model, every
node). Its PyTensor log density is one joint term per draw, which is what NUTS
needs but not what PSIS-LOO needs. For a non-factorised model the pointwise term
is the *leave-one-out predictive* of each item given all the others and the
parameters (Bürkner, Gabry & Vehtari 2021, "Efficient leave-one-out
cross-validation for Bayesian non-factorized normal and Student-t models",
Comput. Stat. 36, §2, eqs. 5-7): its reciprocal is the importance ratio from the
posterior to the leave-one-out posterior. Here the parameters are the partition
and the hyperparameters, and item i's own label :math:`z_i` is a latent variable of
that item alone, so it is integrated out with the prior's prediction rule (the
"integrated" importance sampling of Vehtari et al. 2016, JMLR 17, §3; the marginal
rather than conditional likelihood of Merkle, Furr & Rabe-Hesketh 2019,
Psychometrika 84). For draw s, with :math:`\theta` the hyperparameters,

.. math::

    \log p(y_i \mid y_{-i}, z_{-i}, \theta)
      = \log \sum_k p(z_i = k \mid z_{-i})\, p(y_i \mid y_{-i}, z_i = k, \theta),

over the blocks k of :math:`z_{-i}` and a new block, where
:math:`p(y_i \mid y_{-i}, z, \theta) = p(y \mid z, \theta) / p(y_{-i} \mid z_{-i},
\theta)` is the component's predictive of i into block k with i taken out (its
``log_pred``). Then :math:`p(z_{-i}, \theta \mid y_{-i}) \propto p(z_{-i}, \theta
\mid y) / p(y_i \mid y_{-i}, z_{-i}, \theta)` exactly, so ``az.loo`` and
``az.compare`` on these values estimate :math:`\sum_i \log p(y_i \mid y_{-i})`, with
the usual Pareto-k diagnostics. Conditioning on :math:`z_i` too would also be
unbiased but heavy-tailed: under the posterior i sits in its block, under the
leave-one-out posterior :math:`z_i` follows the prior rule, and the few draws that
put i in a poorly fitting block dominate. On 8 points in two groups with 6,000
draws (``tests/test_loo.py``), elpd_loo from these terms is within 0.002 of the
exact value; conditioned on :math:`z_i` it is 1.29 (ArviZ 0.x) or 0.24 (ArviZ 1.x)
off, with Pareto k up to 2.35.

Pareto k with few distinct partitions: the ratios of a discrete posterior take few
distinct values, and the generalised Pareto fit to their tail is then ill-posed. In
that same test ArviZ reports k up to 0.87 (ArviZ 0.x) or 1.06 and three NaN
(ArviZ 1.x) although the estimate is accurate; the ratios are bounded (i can always
open a new block), so the variance is finite. For small n, check against more
draws rather than trusting k alone. ArviZ's ``p_loo`` (lppd minus elpd_loo, lppd
from the same terms) is not the effective number of parameters of a factorised
model: compare models by elpd_loo.

What "an item" is, per likelihood:

- mixture likelihoods (``CollapsedNormal``, ``CollapsedBetaBernoulli``, ``CollapsedNIW``,
  ``CollapsedDirichletMultinomial``, ...): one row of the observed data (all its
  features, positions, ...);
- ``pmp.IRM``: one node, i.e. its row and column of the adjacency (its edges to
  every other node): leave-one-node-out, "how well is a new node's neighbourhood
  predicted". Every edge appears in two nodes' terms. Leave-one-dyad-out
  (predicting one missing edge) is a different question and is not provided;
- several likelihoods on one partition (mixed data types): one variable each. The
  term of ``y`` leaves out :math:`y_i` only: the other likelihoods' data, item i's
  included, stay observed and weigh i's blocks, :math:`p(z_i = k \mid z_{-i}, x)
  \propto p(z_i = k \mid z_{-i})\, p(x_i \mid x_{-i}, z_i = k)`, as
  ``az.loo(idata, var_name="y")`` means for a factorised model;
- a prior's support constraint (``pmp.ProperColoring``) is part of the prediction
  rule: blocks holding a neighbour of i get weight 0;
- ``pmp.KMeansEnergy`` is a Gibbs energy, not normalised over the data: it has no
  predictive density, so LOO is not defined for it. It is refused when asked for by
  name and left out with a warning otherwise; as another component on the same
  partition it still weighs i's blocks (it is part of the posterior of z).

Cost: one pass over the draws with the numba kernel
:func:`pymc_partitions.kernels.loo.loo_log_preds`, a Gibbs sweep's worth of
component primitives per distinct draw, on sufficient statistics. Hyperparameters
come from the partition steps' own reading of the model
(:class:`~pymc_partitions.step_methods.target.PartitionTarget`) evaluated at each
draw; runs of draws with equal hyperparameters share one kernel call.
"""

import warnings

import numpy as np
import pymc as pm
import xarray as xr
from pymc.model.transform.conditioning import remove_value_transforms

from pymc_partitions import versions
from pymc_partitions.analysis._draws import is_multitrace, multitrace_refusal
from pymc_partitions.analysis.block_parameters import _collapsed_likelihoods
from pymc_partitions.distributions import ColoringMixingWarning
from pymc_partitions.kernels.components import Pair, combine
from pymc_partitions.kernels.loo import EMPTY, NOTHING, loo_log_preds
from pymc_partitions.kernels.state import new_state
from pymc_partitions.step_methods.target import PartitionTarget

GROUP = "log_likelihood"
WHO = "pmp.compute_log_likelihood"


def unavailable_pointwise(model, names=None):
    """``{op: [names]}``: the observed variables of ``model`` among ``names`` (None: all
    observed) whose op has no pointwise log-likelihood (it declares
    ``pointwise_logp_unavailable(names)``, returning the error to raise; e.g.
    :class:`~pymc_partitions.GeneralizedMallows`, which says why)."""
    if names is not None:
        names = [names] if isinstance(names, str) else list(names)
    found = {}
    for rv in model.observed_RVs:
        op = getattr(rv.owner, "op", None)
        if not hasattr(op, "pointwise_logp_unavailable"):
            continue
        if names is None or rv.name in names:
            found.setdefault(op, [])
            if rv.name not in found[op]:
                found[op].append(rv.name)
    return found


def check_log_likelihood_request(model, var_names=None):
    """Raise the op's error if the log-likelihoods asked for (``var_names``; None:
    every observed variable) include a variable without pointwise terms
    (:func:`unavailable_pointwise`). Called by both entries and, before sampling, by
    ``pm.sample(idata_kwargs={"log_likelihood": ...})`` (the hook
    :mod:`pymc_partitions.hooks.sample_checks`)."""
    for op, names in unavailable_pointwise(model, var_names).items():
        raise op.pointwise_logp_unavailable(names)


def compute_log_likelihood(idata, model=None, *, var_names=None, extend_inferencedata=True,
                           sample_dims=("chain", "draw")):
    r"""Pointwise leave-one-out log-likelihoods of the collapsed likelihoods, for ``az.loo``.

    For each collapsed likelihood ``y`` observed on a partition and each posterior
    draw, computes :math:`\log p(y_i \mid y_{-i}, z_{-i}, \theta)` for every item i,
    item i's label integrated out (see the module docstring: the non-factorised LOO
    of Bürkner, Gabry & Vehtari 2021), and writes it as ``log_likelihood[y]`` with
    dims ``(*sample_dims, item)``. The
    item dimension is the observed variable's first dimension (its name from
    ``dims=``, else ``{y}_dim_0``). ``az.loo(idata, var_name="y")`` and
    ``az.compare`` then estimate the expected log predictive density of one left-out
    item.

    ``pm.compute_log_likelihood`` and ``pm.sample(idata_kwargs={"log_likelihood":
    True})`` give these same values for collapsed likelihoods once
    ``pymc_partitions`` is imported (the hook :mod:`pymc_partitions.hooks.log_likelihood`).

    Parameters
    ----------
    idata : InferenceData or DataTree
        ``pm.sample`` output whose posterior holds the partition and the free
        variables the hyperparameters depend on.
    model : pm.Model, optional
        The model (default: the model of the enclosing ``with`` block).
    var_names : list of str, optional
        Collapsed likelihoods to compute (default: all of them except Gibbs energies,
        which are left out with a warning).
    extend_inferencedata : bool, default True
        Add the variables to ``idata``'s ``log_likelihood`` group (created if absent;
        other variables there are kept) and return ``idata``; if False, return the
        ``xarray.Dataset``.
    sample_dims : sequence of str, default ("chain", "draw")
        The posterior's sample dimensions.

    Returns
    -------
    ``idata`` (extended in place) or an ``xarray.Dataset``.
    """
    if is_multitrace(idata):
        raise multitrace_refusal(WHO)
    model = pm.modelcontext(model)
    dataset = pointwise_dataset(idata, model, var_names, sample_dims, explicit=var_names is not None)
    if not extend_inferencedata:
        return dataset
    if _has_group(idata, GROUP):
        dataset = versions.group_dataset(idata, GROUP).drop_vars(
            list(dataset.data_vars), errors="ignore"
        ).merge(dataset)
    return versions.add_group(idata, GROUP, dataset)


def pointwise_dataset(idata, model, var_names, sample_dims, explicit):
    """The ``xarray.Dataset`` of :func:`compute_log_likelihood` (not attached).

    ``explicit``: the names were asked for (a Gibbs energy among them is an error);
    otherwise energies are left out with a warning.
    """
    sample_dims = tuple(sample_dims)
    check_log_likelihood_request(model, var_names)
    umodel = remove_value_transforms(model)  # the posterior holds untransformed values
    liks = {rv.name: rv for rv in _collapsed_likelihoods(umodel)}
    if var_names is None:
        names = list(liks)
    else:
        names = [var_names] if isinstance(var_names, str) else list(var_names)
        unknown = [v for v in names if v not in liks]
        if unknown:
            raise ValueError(
                f"{WHO}: var_names {unknown} are not collapsed likelihoods of the model; choose "
                f"from {sorted(liks)} (pm.compute_log_likelihood handles the other observed "
                f"variables)."
            )
    energies = [v for v in names if not getattr(liks[v].owner.op, "normalised", True)]
    if energies:
        message = (
            f"{WHO}: {energies} are Gibbs energies (pmp.KMeansEnergy), not likelihoods: they "
            f"are not normalised over the data, so there is no predictive density and "
            f"leave-one-out is not defined for them."
        )
        if explicit:
            raise ValueError(message + " Leave them out of var_names.")
        warnings.warn(message + " Left out of the log_likelihood group.", UserWarning,
                      stacklevel=3)
        names = [v for v in names if v not in energies]
    if not names:
        raise ValueError(
            f"{WHO}: the model has no collapsed likelihood for which leave-one-out is defined "
            f"(pmp.CollapsedNormal, pmp.IRM, ...)."
        )
    posterior = versions.posterior_dataset(idata)
    missing = [d for d in sample_dims if d not in posterior.dims]
    if missing:
        raise ValueError(
            f"{WHO}: sample_dims {list(sample_dims)} must be dimensions of the posterior; "
            f"{missing} are not (it has {list(posterior.dims)})."
        )
    by_partition = {}
    for name in names:
        rv = liks[name]
        by_partition.setdefault(rv.owner.op.dist_params(rv.owner)[0], []).append(rv)
    variables = {}
    for z, rvs in by_partition.items():
        variables.update(_partition_terms(umodel, z, rvs, posterior, sample_dims))
    coords = {d: posterior[d].values for d in sample_dims if d in posterior.coords}
    return xr.Dataset(variables, coords=coords)


def _partition_terms(umodel, z, rvs, posterior, sample_dims):
    """``{name: DataArray}`` of the terms of the likelihoods ``rvs`` observed on ``z``."""
    with warnings.catch_warnings():
        # About mixing of the samplers, not about these terms.
        warnings.simplefilter("ignore", ColoringMixingWarning)
        target = PartitionTarget(umodel, umodel.rvs_to_values[z], WHO)
    n = target.n
    labels = _draws(posterior, z.name, sample_dims, f"{WHO}: partition '{z.name}'")
    shape = labels.shape[:-1]
    if (not np.issubdtype(labels.dtype, np.integer) or labels.shape[-1] != n
            or labels.size and (labels.min() < 0 or labels.max() >= n)):
        raise ValueError(
            f"{WHO}: the posterior draws of partition '{z.name}' must be integer labels in "
            f"[0, {n}) of n = {n} items (as pm.sample stores them); got dtype {labels.dtype}, "
            f"shape {labels.shape[len(sample_dims):]}"
            + (f", range [{labels.min()}, {labels.max()}]." if labels.size else ".")
        )
    labels = np.ascontiguousarray(labels.reshape(-1, n), dtype=np.int64)
    inputs = [
        _draws(posterior, name, sample_dims,
               f"{WHO}: the hyperparameters depend on '{name}', which").reshape(
            labels.shape[0], *posterior[name].shape[len(sample_dims):]
        ).astype(var.type.dtype, copy=False)
        for name, var in zip(target.input_names, target.input_vars)
    ]
    # Components of the target: a prior's support constraint (if any) first, then the
    # likelihoods. For likelihood y, "rest" is every other component (they stay
    # observed and weigh i's blocks) and the kernel gets Pair(rest, y).
    first = 0 if target.constraint is None else 1
    which = [first + target.likelihoods.index(rv) for rv in rvs]
    out = [np.empty(labels.shape) for _ in rvs]
    work = [None] * len(rvs)  # (state, stats) per likelihood, reused across runs
    log_w, log_v = np.empty(n + 1), np.empty(n + 1)
    start, run_values, run = 0, None, None
    for s in range(labels.shape[0] + 1):
        if s < labels.shape[0]:
            values, prior_params, per_lik = target.params(
                {name: v[s, ...] for name, v in zip(target.input_names, inputs)}
            )
            if run_values is not None and _equal(values, run_values):
                continue
        if run_values is not None:  # draws start..s-1 share hyperparameters
            for j, pos in enumerate(which):
                params, data = _pair(target, run[1], pos)
                if work[j] is None:
                    work[j] = (new_state(n), _alloc(target, run[1], pos))
                loo_log_preds(work[j][0], run[0], params, work[j][1], data, labels[start:s],
                              out[j][start:s], log_w, log_v)
        if s < labels.shape[0]:
            start, run_values, run = s, values, (prior_params, per_lik)
    result = {}
    for rv, values in zip(rvs, out):
        dims = umodel.named_vars_to_dims.get(rv.name)
        item = dims[0] if dims else f"{rv.name}_dim_0"
        coords = {d: posterior[d].values for d in sample_dims if d in posterior.coords}
        if umodel.coords.get(item) is not None:
            coords[item] = np.asarray(umodel.coords[item])
        result[rv.name] = xr.DataArray(
            values.reshape(*shape, n), dims=(*sample_dims, item), coords=coords
        )
    return result


def _pair(target, per_lik, pos):
    """``(Pair(rest, component pos), (rest data, data))`` over the target's components."""
    others = [j for j in range(len(per_lik)) if j != pos]
    if others:
        rest, _, rest_data = combine([per_lik[j] for j in others], [None] * len(others),
                                     [target.data[j] for j in others])
    else:
        rest, rest_data = NOTHING, EMPTY
    return Pair(rest, per_lik[pos]), (rest_data, target.data[pos])


def _alloc(target, per_lik, pos):
    """Empty statistics ``(rest stats, stats)`` matching :func:`_pair`."""
    first = 0 if target.constraint is None else 1
    stats = [target.constraint.alloc(target.n)] if first else []
    stats += [
        lik.owner.op.alloc_stats(target.n, d, p)
        for lik, d, p in zip(target.likelihoods, target.data[first:], per_lik[first:])
    ]
    others = [j for j in range(len(per_lik)) if j != pos]
    if not others:
        return (EMPTY, stats[pos])
    rest = combine([per_lik[j] for j in others], [stats[j] for j in others],
                   [target.data[j] for j in others])[1]
    return (rest, stats[pos])


def _draws(posterior, name, sample_dims, owner):
    if name not in posterior:
        raise ValueError(
            f"{owner} has no draws in the posterior; sample it (do not drop it with var_names "
            f"in pm.sample)."
        )
    da = posterior[name]
    return np.asarray(da.transpose(*sample_dims, ...).values)


def _equal(values, other):
    return len(values) == len(other) and all(
        a.shape == b.shape and np.array_equal(a, b) for a, b in zip(values, other)
    )


def _has_group(idata, name):
    try:
        idata[name]
    except (KeyError, AttributeError):
        return False
    return True


# ----------------------------------------------------------------------------- PyMC hook
def pymc_compute_log_likelihood(original, idata, *, var_names=None, extend_inferencedata=True,
                                model=None, sample_dims=("chain", "draw"), **kwargs):
    """``pm.compute_log_likelihood`` with pointwise terms for collapsed likelihoods.

    ``original`` is PyMC's function; it computes the other observed variables. The
    collapsed likelihoods get :func:`compute_log_likelihood`'s leave-one-out
    conditionals in place of PyMC's single joint term per draw (with which
    ``az.loo`` would run and mean nothing); Gibbs energies are left out with a
    warning. Installed by the hook :mod:`pymc_partitions.hooks.log_likelihood`.
    """
    model = pm.modelcontext(model)
    check_log_likelihood_request(model, var_names)
    ours = {rv.name for rv in _collapsed_likelihoods(model)}
    names = [rv.name for rv in model.observed_RVs] if var_names is None else (
        [var_names] if isinstance(var_names, str) else list(var_names))
    asked = [v for v in names if v in ours]
    if not asked:
        return original(idata, var_names=var_names, extend_inferencedata=extend_inferencedata,
                        model=model, sample_dims=sample_dims, **kwargs)
    theirs = [v for v in names if v not in ours]
    parts = []
    if theirs:
        parts.append(original(idata, var_names=theirs, extend_inferencedata=False, model=model,
                              sample_dims=sample_dims, **kwargs))
    energies = [v for v in asked if not getattr(model[v].owner.op, "normalised", True)]
    if energies:
        warnings.warn(
            f"pm.compute_log_likelihood: {energies} are Gibbs energies (pmp.KMeansEnergy), not "
            f"likelihoods; leave-one-out is not defined for them, so they are left out of the "
            f"log_likelihood group.", UserWarning, stacklevel=3,
        )
    asked = [v for v in asked if v not in energies]
    if asked:
        parts.append(pointwise_dataset(idata, model, asked, sample_dims, explicit=True))
    dataset = xr.merge(parts) if parts else xr.Dataset()
    if not extend_inferencedata:
        return dataset
    if dataset.data_vars:
        versions.add_group(idata, GROUP, dataset)
    return idata


__all__ = ["compute_log_likelihood"]
