"""The changes the plugin makes to PyMC / PyTensor at import (``compat.PATCHES``).

Each non-public entry is checked against the fingerprints (signature and source hash)
recorded for the running PyMC / PyTensor version: an unrecorded version or a changed
function fails with a message naming what to re-check. Public entries (documented
mechanisms) are checked by behaviour.
"""

import importlib
import inspect
import re
import warnings

import numpy as np
import pymc as pm
import pytest

import pymc_partitions as pmp
from pymc_partitions import compat

pmp.Gibbs  # the API, and with it the patches, loads on the first use of a public name

FINGERPRINTED = [p for p in compat.PATCHES if not p.public]
WRAPPERS = [p for p in compat.PATCHES if p.wrap is not None]


def _entry_id(patch):
    return patch.name


@pytest.mark.parametrize("patch", FINGERPRINTED, ids=_entry_id)
def test_patched_functions_match_the_reviewed_versions(patch):
    version = compat.package_version(patch.package)
    recorded = compat.recorded_fingerprints(patch)
    how = ('python -c "from pymc_partitions import compat; compat.print_fingerprints()"')
    if recorded is None:
        pytest.fail(
            f"{patch.package} {version} is not recorded for compat patch '{patch.name}' "
            f"(recorded: {sorted(patch.fingerprints)}). Review the patch against this version's "
            f"{', '.join(patch.relies_on)}: {patch.why} Then record it: run {how} and paste "
            f"the output into the entry's fingerprints in pymc_partitions/compat.py."
        )
    assert set(recorded) == set(patch.relies_on), (
        f"compat patch '{patch.name}': fingerprints recorded for {sorted(recorded)} but the "
        f"entry relies on {sorted(patch.relies_on)}; re-record with {how}."
    )
    changed = []
    for name in patch.relies_on:
        signature, digest = compat.fingerprint(name)
        want = recorded[name]
        want_sig, want_digest = want if isinstance(want, tuple) else (None, want)
        if want_sig is not None and signature != want_sig:
            changed.append(f"{name}: signature {want_sig} -> {signature}")
        elif digest != want_digest:
            changed.append(f"{name}: source changed (hash {want_digest} -> {digest})")
    assert not changed, (
        f"{patch.package} {version} changed what compat patch '{patch.name}' relies on:\n  "
        + "\n  ".join(changed)
        + f"\nRe-check: {patch.why}\nIf the patch still holds (or after fixing it), record "
        f"the new fingerprints: {how}."
    )


@pytest.mark.parametrize("patch", WRAPPERS, ids=_entry_id)
def test_wrappers_are_installed_once_everywhere_pymc_calls_them(patch):
    # PyMC's function: relies_on[0], unwrapped if the entry rebinds that very name.
    original = inspect.unwrap(
        compat._resolve(patch.relies_on[0]), stop=lambda f: not hasattr(f, "__pmp_patch__")
    )
    for target in patch.targets:
        bound = compat._resolve(target)
        assert getattr(bound, "__pmp_patch__", None) == patch.name, target
        assert bound.__wrapped__ is original, target
    compat.install_patches([patch.name])  # a second install wraps PyMC's function again, once
    for target in patch.targets:
        assert compat._resolve(target).__wrapped__ is original, target


@pytest.mark.parametrize("patch", WRAPPERS, ids=_entry_id)
def test_every_caller_of_a_wrapped_function_is_fingerprinted(patch):
    """A new call site of the rebound name in PyMC's module must be reviewed too."""
    for target in patch.targets:
        module_name, _, attr = target.partition(":")
        module = importlib.import_module(module_name)
        callers = {
            f"{module_name}:{name}"
            for name, obj in vars(module).items()
            if inspect.isfunction(obj)
            and obj.__module__ == module_name
            and re.search(rf"\b{attr}\(", inspect.getsource(obj))
        }
        missing = callers - set(patch.relies_on)
        assert not missing, (
            f"compat patch '{patch.name}': {sorted(missing)} call {attr} and are not in "
            f"relies_on; review them and add them with their fingerprints."
        )


def test_step_registration_assigns_partitions_to_gibbs():
    """The public entry (``STEP_METHODS``) by behaviour: PyMC's own assignment picks
    pmp.Gibbs for a partition, pmp.EscobarWest for a Gamma concentration read by the
    CRP alone, and NUTS for a variable with other children; the model reaches the
    steps' ``competence`` through the step_assignment_checks wrapper."""
    from pymc.sampling.mcmc import assign_step_methods

    for step in (pmp.Gibbs, pmp.EscobarWest, pmp.HyperSlice):
        assert step in pm.step_methods.STEP_METHODS
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        pmp.CRP("z", alpha=alpha, n=4)
    _, selected = assign_step_methods(model)
    by_name = {cls.__name__: sorted(v.name for v in value_vars) for cls, value_vars in
               selected.items()}
    assert by_name == {"Gibbs": ["z"], "EscobarWest": ["alpha_log__"]}, by_name
    with model:
        pm.Normal("w", alpha, 1.0, observed=[0.5])
    _, selected = assign_step_methods(model)
    by_name = {cls.__name__: sorted(v.name for v in value_vars) for cls, value_vars in
               selected.items()}
    assert by_name == {"Gibbs": ["z"], "NUTS": ["alpha_log__"]}, by_name
    assert compat.assigning_model() is None  # reset after the call, no model in context


def test_object_mode_filter_matches_pytensors_message_for_every_op():
    """The warnings entry silences PyTensor's object-mode notice for each of our ops
    (the names are found from the distributions modules) and nothing else."""
    from pytensor.link.numba.dispatch.basic import generate_fallback_impl

    names = compat.our_random_variable_names()
    assert {"crp_rv", "collapsed_normal_rv", "irm_rv", "proper_coloring_rv"} <= set(names)
    node = pmp.CRP.dist(alpha=1.0, n=4).owner
    with warnings.catch_warnings(record=True) as raw:
        warnings.resetwarnings()
        warnings.simplefilter("always")
        generate_fallback_impl(node.op, node)
    [message] = [str(w.message) for w in raw if "object mode" in str(w.message)]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        compat.quiet_object_mode_warnings(names)
        generate_fallback_impl(node.op, node)
        warnings.warn(message.replace("crp_rv", "other_rv"), UserWarning)
    texts = [str(w.message) for w in seen]
    assert not any(t.startswith("Numba will use object mode to run crp_rv") for t in texts), texts
    assert any(t.startswith("Numba will use object mode to run other_rv") for t in texts), texts


def test_initval_check_sees_keyword_and_positional_arguments():
    """The initval wrapper reads ``model`` / ``overrides`` from the bound signature."""
    from pymc.sampling import mcmc

    with pm.Model() as model:
        pmp.CRP("z", alpha=1.0, n=4)
    wrapped = mcmc.make_initial_point_fns_per_chain
    with pytest.raises(ValueError, match=r"initvals\['z'\] must be a vector of n = 4 labels"):
        wrapped(model=model, overrides={"z": np.zeros(3, dtype=int)}, chains=1)
    fns = wrapped(model=model, overrides={"z": np.array([0, 1, 1, 0])}, chains=1)
    assert np.array_equal(fns[0](0)["z"], [0, 1, 1, 0])
    # PyMC's strategy strings pass through to PyMC.
    fns = wrapped(model=model, overrides=[{"z": "prior"}, None], chains=2)
    assert fns[0](3)["z"].shape == (4,)
