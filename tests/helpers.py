"""Exact-enumeration machinery for the tests (DESIGN §6).

The exact posterior over all set partitions of a small n is computed from the
model's own compiled PyTensor log density; hyperparameters that NUTS samples are
integrated out by quadrature on the log scale. Sampler output is compared with it
in total variation, against a bound derived from the run's effective sample size.
"""

import arviz as az
import numpy as np
import pymc as pm
from scipy.special import logsumexp

import pymc_partitions as pmp


def partition_index(partitions):
    """Map from a canonical label tuple to its row in ``partitions``."""
    return {tuple(row): idx for idx, row in enumerate(partitions)}


def log_terms(model, vars, points):
    """Compiled ``model.logp(vars=vars)`` (with Jacobians) at each point dict.

    Compiled once, called with positional inputs."""
    inputs = model.value_vars
    fn = model.compile_fn(
        model.logp(vars=vars, jacobian=True, sum=True),
        inputs=inputs,
        point_fn=False,
        on_unused_input="ignore",
    )
    names = [v.name for v in inputs]
    return np.array([float(fn(*[p[k] for k in names])) for p in points])


def integrate_log_scale(model, vars, value_name, partitions, z_name, grid):
    """log of the integral over a positive hyperparameter of exp(logp(vars)) for every
    partition, by the trapezoid rule on its log-transformed value grid."""
    base = model.initial_point()
    pts = []
    for labels in partitions:
        for u in grid:
            p = dict(base)
            p[z_name] = labels
            p[value_name] = np.asarray(u, dtype=base[value_name].dtype)
            pts.append(p)
    vals = log_terms(model, vars, pts).reshape(len(partitions), len(grid))
    # Trapezoid weights, in log space.
    w = np.full(grid.shape[0], np.log(grid[1] - grid[0]))
    w[[0, -1]] += np.log(0.5)
    return logsumexp(vals + w, axis=1)


def exact_log_posterior(model, z_name, terms):
    """Normalised log posterior over all partitions from a sum of log terms."""
    total = np.sum(terms, axis=0)
    return total - logsumexp(total)


def terms_over_partitions(model, vars, partitions, z_name):
    """``model.logp(vars=vars)`` at every partition, other values at the initial point."""
    base = model.initial_point()
    pts = []
    for labels in partitions:
        p = dict(base)
        p[z_name] = labels
        pts.append(p)
    return log_terms(model, vars, pts)


def fixed_hyper_log_posterior(model, z_name, partitions):
    """Exact log p(z | y) when z is the model's only free variable."""
    terms = terms_over_partitions(model, model.free_RVs + model.observed_RVs, partitions, z_name)
    return exact_log_posterior(model, z_name, [terms])


def draws_of(idata, name):
    post = idata["posterior"][name]
    return np.asarray(post.values)  # (chain, draw, n)


def tv_test(idata, z_name, partitions, log_post, delta=1e-4):
    """Total-variation distance between the sampled and exact posteriors and its bound.

    The bound is that of an iid sample whose size is the run's smallest effective
    sample size M over several scalar functions of the draws (exact log posterior
    of the draw, number of blocks, indicator of the modal partition):

        E TV <= 1/2 sum_s sqrt(p_s (1 - p_s) / M)         (Jensen)
        P(TV - E TV >= t) <= exp(-2 M t^2)                 (McDiarmid)

    so TV <= 1/2 sum_s sqrt(p_s (1 - p_s) / M) + sqrt(log(1/delta) / (2 M)) with
    probability >= 1 - delta under a correct sampler.
    """
    draws = draws_of(idata, z_name)
    index = partition_index(partitions)
    codes = np.array([[index[tuple(d)] for d in chain] for chain in draws])
    p = np.exp(log_post)
    freq = np.bincount(codes.ravel(), minlength=len(partitions)) / codes.size
    tv = 0.5 * np.abs(freq - p).sum()
    mode = np.argmax(p)
    scalars = [log_post[codes], draws.max(axis=-1).astype(float), (codes == mode).astype(float)]
    ess = min(float(az.ess(s)) for s in scalars)
    bound = 0.5 * np.sqrt(p * (1 - p) / ess).sum() + np.sqrt(np.log(1 / delta) / (2 * ess))
    return tv, bound, ess


def sample(model, draws, chains=4, seed=0, step=None, **kwargs):
    with model:
        return pm.sample(
            draws=draws,
            tune=kwargs.pop("tune", 200),
            chains=chains,
            cores=kwargs.pop("cores", 1),
            step=step,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
            **kwargs,
        )


__all__ = ["pmp"]
