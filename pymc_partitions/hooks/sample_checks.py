"""Hook ``sample_checks``: refusals and warnings about ``pm.sample``'s arguments before
the first draw, where PyMC acts on them only after the last.

Wraps ``pymc.sampling.mcmc.sample`` (also bound as ``pymc.sampling.sample`` and
``pymc.sample``):

- ``idata_kwargs={"log_likelihood": ...}`` asking for the log-likelihood of a
  GeneralizedMallows term is refused before the first draw, with
  ``pm.compute_log_likelihood``'s message
  (:func:`pymc_partitions.analysis.loo.check_log_likelihood_request`);
- partitions whose stored labels would need more memory than is sensible get a warning
  with the size and the remedies (:func:`pymc_partitions.trace_size.check_trace_size`).

Why: PyMC reads ``idata_kwargs`` only after the last draw and has no hook that sees
``pm.sample``'s arguments before sampling.

Relies on: ``sample`` taking ``idata_kwargs``, ``model``, ``draws``, ``tune``,
``chains``, ``cores``, ``var_names``, ``trace`` and ``discard_tuned_samples`` by those
names with their meaning, and passing ``idata_kwargs['log_likelihood']`` to
``compute_log_likelihood`` as ``var_names`` (True meaning all); the other functions of
``pymc.sampling.mcmc`` that mention ``sample(`` were reviewed: none calls ``pm.sample``.
"""

import inspect

import pymc

from pymc_partitions.analysis.loo import check_log_likelihood_request
from pymc_partitions.hooks._hook import Hook
from pymc_partitions.trace_size import check_trace_size


def _wrapper(original):
    signature = inspect.signature(original)

    def sample(*args, **kwargs):
        bound = signature.bind_partial(*args, **kwargs).arguments
        idata_kwargs = bound.get("idata_kwargs")
        requested = idata_kwargs.get("log_likelihood", False) if isinstance(
            idata_kwargs, dict) else False
        if requested is not False and requested is not None:
            model = pymc.modelcontext(bound.get("model"))
            check_log_likelihood_request(model, None if requested is True else requested)
        if bound.get("trace") is None:  # PyMC's NumPy trace: say what storing costs
            defaults = signature.parameters
            get = lambda key: bound.get(key, defaults[key].default)  # noqa: E731
            try:
                model = pymc.modelcontext(bound.get("model"))
            except TypeError:  # no model: PyMC's own error follows
                return original(*args, **kwargs)
            check_trace_size(
                model, draws=get("draws"), tune=get("tune"),
                chains=get("chains"), cores=get("cores"), var_names=get("var_names"),
                discard_tuned_samples=get("discard_tuned_samples"),
            )  # fmt: skip
        return original(*args, **kwargs)

    sample.__doc__ = original.__doc__
    sample.__name__ = original.__name__
    sample.__qualname__ = original.__qualname__
    sample.__module__ = original.__module__
    return sample


HOOK = Hook(
    name="sample_checks",
    why=(
        "pm.sample(idata_kwargs={'log_likelihood': True}) on a GeneralizedMallows model "
        "sampled to the end and then stored one joint term per draw (n <= 7 items; az.loo "
        "read it as one data point) or failed (n > 7); the wrapper refuses such a request "
        "before the first draw, with pm.compute_log_likelihood's message. PyMC's sample "
        "has no hook that sees idata_kwargs before sampling. Re-check that sample takes "
        "idata_kwargs and model by those names and passes idata_kwargs['log_likelihood'] "
        "to compute_log_likelihood as var_names (True meaning all). Also warns before "
        "the first draw when the partitions' stored labels would need too much memory "
        "(pymc_partitions.trace_size; re-check draws, tune, chains, cores, var_names, "
        "trace and discard_tuned_samples keep their meaning)."
    ),
    without=(
        "idata_kwargs={'log_likelihood': True} on a GeneralizedMallows model is refused "
        "only after the last draw, and there is no warning before sampling when the stored "
        "partition labels would need too much memory."
    ),
    wrap=_wrapper,
    targets=(
        "pymc.sampling.mcmc:sample",
        "pymc.sampling:sample",
        "pymc:sample",
    ),
    # The others only mention a sample( (nutpie.sample, approx.sample, a
    # docstring): reviewed, none calls pm.sample.
    relies_on=(
        "pymc.sampling.mcmc:sample",
        "pymc.sampling.mcmc:_sample_external_nuts",
        "pymc.sampling.mcmc:init_nuts",
        "pymc.sampling.mcmc:instantiate_steppers",
    ),
    fingerprints={
        "5.28": {
            "pymc.sampling.mcmc:sample": (
                ("(draws=1000, *, tune=1000, chains=None, cores=None, random_seed=None, "
                 "progressbar=True, progressbar_theme=None, quiet=False, step=None, "
                 "var_names=None, nuts_sampler='pymc', initvals=None, init='auto', "
                 "jitter_max_retries=10, n_init=200000, trace=None, "
                 "discard_tuned_samples=True, compute_convergence_checks=True, "
                 "keep_warning_stat=False, return_inferencedata=True, idata_kwargs=None, "
                 "nuts_sampler_kwargs=None, callback=None, mp_ctx=None, blas_cores='auto', "
                 "model=None, compile_kwargs=None, **kwargs)"),
                "bf7ebf30a6f4f8e3"),
            "pymc.sampling.mcmc:_sample_external_nuts": "3f42345026c4e45e",
            "pymc.sampling.mcmc:init_nuts": "ee7de32c4a194d2b",
            "pymc.sampling.mcmc:instantiate_steppers": "979e73b766dd75fe",
        },
        "6.4": {
            "pymc.sampling.mcmc:sample": (
                ("(draws=1000, *, tune=None, chains=None, cores=None, random_seed=None, "
                 "progressbar=True, progressbar_theme=None, quiet=False, step=None, "
                 "var_names=None, nuts_sampler=None, initvals=None, init='auto', "
                 "jitter_max_retries=10, n_init=200000, trace=None, "
                 "discard_tuned_samples=True, compute_convergence_checks=True, "
                 "keep_warning_stat=False, return_inferencedata=True, idata_kwargs=None, "
                 "nuts_sampler_kwargs=None, callback=None, mp_ctx=None, blas_cores='auto', "
                 "model=None, backend=None, compile_kwargs=None, **kwargs)"),
                "05d80c2830f96cff"),
            "pymc.sampling.mcmc:_sample_external_nuts": "a28f7004929dbacb",
            "pymc.sampling.mcmc:init_nuts": "4d0a57e9d4b62722",
            "pymc.sampling.mcmc:instantiate_steppers": "1082078037af0581",
        },
    },
)
