"""The changes the plugin makes to PyMC / PyTensor (:mod:`pymc_partitions.hooks`).

Each fingerprinted hook is checked against the fingerprints (signature and source hash)
recorded for the running PyMC / PyTensor version: an unrecorded version or a changed
function fails here with a message naming what to re-check (at install the same
condition leaves the hook out with a warning, tested below in fresh processes). Public
hooks (documented mechanisms) are checked by behaviour.
"""

import importlib
import inspect
import re
import subprocess
import sys
import warnings

import numpy as np
import pymc as pm
import pytest

import pymc_partitions as pmp
from pymc_partitions import hooks
from pymc_partitions.distributions.model_terms import random_variable_names
from pymc_partitions.hooks import _hook
from pymc_partitions.hooks.object_mode_warnings import quiet_object_mode_warnings
from pymc_partitions.step_methods.assignment import assigning_model

pmp.Gibbs  # the API, and with it the hooks, loads on the first use of a public name

FINGERPRINTED = [h for h in hooks.HOOKS if not h.public]
WRAPPERS = [h for h in hooks.HOOKS if h.wrap is not None]
HOW = "python -m pymc_partitions.hooks"


def _hook_id(hook):
    return hook.name


def test_every_hook_is_installed_on_this_stack():
    assert hooks.installed() == [h.name for h in hooks.HOOKS], hooks.STATUS


@pytest.mark.parametrize("hook", FINGERPRINTED, ids=_hook_id)
def test_hooked_functions_match_the_reviewed_versions(hook):
    version = _hook.package_version(hook.package)
    recorded = _hook.recorded_fingerprints(hook)
    if recorded is None:
        pytest.fail(
            f"{hook.package} {version} is not recorded for hook '{hook.name}' "
            f"(recorded: {sorted(hook.fingerprints)}). Review the hook against this version's "
            f"{', '.join(hook.relies_on)}: {hook.why} Then record it: run {HOW} and paste "
            f"the output into the fingerprints in pymc_partitions/hooks/{hook.name}.py."
        )
    assert set(recorded) == set(hook.relies_on), (
        f"hook '{hook.name}': fingerprints recorded for {sorted(recorded)} but the "
        f"hook relies on {sorted(hook.relies_on)}; re-record with {HOW}."
    )
    changed = _hook.mismatches(hook)
    assert not changed, (
        f"{hook.package} {version} changed what hook '{hook.name}' relies on:\n  "
        + "\n  ".join(changed)
        + f"\nRe-check: {hook.why}\nIf the hook still holds (or after fixing it), record "
        f"the new fingerprints: {HOW}."
    )


@pytest.mark.parametrize("hook", WRAPPERS, ids=_hook_id)
def test_wrappers_are_installed_once_everywhere_pymc_calls_them(hook):
    # PyMC's function: relies_on[0], unwrapped if the hook rebinds that very name.
    original = inspect.unwrap(
        _hook.resolve(hook.relies_on[0]), stop=lambda f: not hasattr(f, "__pmp_patch__")
    )
    for target in hook.targets:
        bound = _hook.resolve(target)
        assert getattr(bound, "__pmp_patch__", None) == hook.name, target
        assert bound.__wrapped__ is original, target
    hooks.install([hook.name])  # a second install wraps PyMC's function again, once
    for target in hook.targets:
        assert _hook.resolve(target).__wrapped__ is original, target


@pytest.mark.parametrize("hook", WRAPPERS, ids=_hook_id)
def test_every_caller_of_a_wrapped_function_is_fingerprinted(hook):
    """A new call site of the rebound name in PyMC's module must be reviewed too."""
    for target in hook.targets:
        module_name, _, attr = target.partition(":")
        module = importlib.import_module(module_name)
        callers = {
            f"{module_name}:{name}"
            for name, obj in vars(module).items()
            if inspect.isfunction(obj)
            and obj.__module__ == module_name
            and re.search(rf"\b{attr}\(", inspect.getsource(obj))
        }
        missing = callers - set(hook.relies_on)
        assert not missing, (
            f"hook '{hook.name}': {sorted(missing)} call {attr} and are not in "
            f"relies_on; review them and add them with their fingerprints."
        )


def test_install_refuses_a_changed_function_with_a_warning_and_changes_nothing(monkeypatch):
    """In this process: PyMC's ``assign_step_methods`` replaced by an edited copy (a
    new PyMC release): the fingerprint differs, install warns (naming the version, the
    hook, the function and what is lost) and leaves PyMC's name bound as it is."""
    from pymc.sampling import mcmc

    hook = next(h for h in hooks.HOOKS if h.name == "step_assignment_checks")
    wrapped = mcmc.assign_step_methods

    def assign_step_methods(model, step=None, methods=None):  # "PyMC 6.x+1"
        return wrapped(model, step, methods)

    monkeypatch.setattr(mcmc, "assign_step_methods", assign_step_methods)
    with pytest.warns(hooks.HookNotInstalledWarning) as seen:
        ok = _hook.install(hook)
    assert ok is False
    assert mcmc.assign_step_methods is assign_step_methods  # nothing installed over it
    [message] = [str(w.message) for w in seen]
    assert f"hook 'step_assignment_checks' is not installed with PyMC {pm.__version__}" \
        in message, message
    assert "pymc.sampling.mcmc:assign_step_methods: source changed" in message, message
    assert "Without it: a partition given to a PyMC step" in message, message


def test_install_on_an_unrecorded_version_warns(monkeypatch):
    hook = next(h for h in hooks.HOOKS if h.name == "object_mode_warnings")
    import pytensor

    monkeypatch.setattr(pytensor, "__version__", "9.1.0")
    with pytest.warns(hooks.HookNotInstalledWarning,
                      match=r"hook 'object_mode_warnings' is not installed with PyTensor "
                            r"9\.1\.0: this version was not reviewed for the hook "
                            r"\(reviewed: 2\.38, 3\.3\)\. Without it: PyTensor's numba"):
        assert _hook.install(hook) is False


def test_a_hook_that_fails_to_install_gives_the_warning_not_a_traceback():
    def install():
        raise AttributeError("module 'pymc' has no attribute 'step_methods'")

    broken = _hook.Hook(name="broken", why="a test", without="nothing in this test.",
                        install=install, public=True)
    with pytest.warns(hooks.HookNotInstalledWarning,
                      match=r"hook 'broken' is not installed with PyMC .*: installing it "
                            r"failed \(AttributeError: module 'pymc' has no attribute "
                            r"'step_methods'\)\. Without it: nothing in this test\."):
        assert _hook.install(broken) is False


def _run(code, path, timeout=600):
    """Run ``code`` as the script ``path`` (a file: the fingerprints read its source)."""
    path.write_text(code)
    out = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                         timeout=timeout)
    assert out.returncode == 0, out.stderr
    return out


# The package loaded (the hooks installed) with its warnings recorded in ``seen``.
_IMPORT_RECORDING_WARNINGS = """
import pymc_partitions as pmp
from pymc_partitions.hooks import HookNotInstalledWarning
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter('always')
    pmp.CRP
from pymc_partitions import hooks
"""


# A small model and run that every hook takes part in (partition, hyperparameter step,
# convergence checks, initvals, log-likelihood request, trace-size check, NUTS).
_SAMPLE = """
import numpy as np, pymc as pm
with pm.Model() as model:
    alpha = pm.Gamma("alpha", 2.0, 2.0)
    z = pmp.CRP("z", alpha=alpha, n=6)
    sigma = pm.HalfNormal("sigma", 1.0)
    pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=1.0, sigma=sigma,
                        observed=np.array([-2.0, -2.1, -1.9, 2.0, 2.1, 1.9]))
    idata = pm.sample(draws=30, tune=20, chains=2, cores=1, random_seed=1,
                      progressbar=False, initvals={"z": np.zeros(6, dtype=int)},
                      idata_kwargs={"log_likelihood": True})
print("SAMPLED", idata["posterior"]["z"].shape)
"""


def test_a_hook_whose_fingerprint_does_not_match_is_left_out_and_sample_works(tmp_path):
    """Fresh process, PyMC's ``run_convergence_checks`` replaced before the package loads
    (a PyMC whose function changed): one HookNotInstalledWarning naming PyMC's version,
    the hook and what is lost, no traceback; PyMC's function stays unwrapped, every
    other hook is installed, and ``pm.sample`` runs to the end."""
    out = _run(
        "import warnings\n"
        "warnings.simplefilter('always')\n"
        "import pymc.stats.convergence as conv, pymc.sampling.mcmc as mcmc\n"
        "original = conv.run_convergence_checks\n"
        "def run_convergence_checks(idata, model):  # a changed PyMC function\n"
        "    return original(idata, model)\n"
        "conv.run_convergence_checks = run_convergence_checks\n"
        + _IMPORT_RECORDING_WARNINGS +
        "for w in seen:\n"
        "    if issubclass(w.category, HookNotInstalledWarning):\n"
        "        print('WARNING', w.message)\n"
        "print('UNWRAPPED', not hasattr(mcmc.run_convergence_checks, '__pmp_patch__'))\n"
        "print('NOT_INSTALLED', [n for n, ok in hooks.STATUS.items() if not ok])\n"
        + _SAMPLE,
        tmp_path / "changed_pymc.py",
    )
    lines = out.stdout.splitlines()
    warned = [line for line in lines if line.startswith("WARNING")]
    assert len(warned) == 1, out.stdout
    assert f"hook 'convergence_checks' is not installed with PyMC {pm.__version__}" \
        in warned[0], warned
    assert "pymc.stats.convergence:run_convergence_checks: source changed" in warned[0]
    assert "Without it: pm.sample's R-hat/ESS checks read the raw partition labels" \
        in warned[0]
    assert "UNWRAPPED True" in lines
    assert "NOT_INSTALLED ['convergence_checks']" in lines
    assert "SAMPLED (2, 30, 6)" in lines, out.stdout
    assert "Traceback" not in out.stderr, out.stderr


def test_an_unreviewed_pymc_installs_no_pymc_hook_and_sample_works(tmp_path):
    """Fresh process claiming an unrecorded PyMC version: every PyMC hook is left out
    with one warning each, the public ones (step registry, numba dispatch) and the
    PyTensor ones are installed, and ``pm.sample`` still runs (our steps are assigned
    through the public registry)."""
    out = _run(
        "import warnings\n"
        "import pymc\n"
        "pymc.__version__ = '99.0.0'\n"
        + _IMPORT_RECORDING_WARNINGS +
        "print('WARNED', sorted(str(w.message).split(\"'\")[1] for w in seen\n"
        "      if issubclass(w.category, HookNotInstalledWarning)))\n"
        "print('INSTALLED', hooks.installed())\n"
        + _SAMPLE,
        tmp_path / "unreviewed_pymc.py",
    )
    lines = out.stdout.splitlines()
    pymc_hooks = sorted(h.name for h in FINGERPRINTED if h.package == "pymc")
    assert f"WARNED {pymc_hooks}" in lines, out.stdout
    assert ("INSTALLED ['numba_block_statistics', 'step_registry', "
            "'object_mode_warnings']") in lines, out.stdout
    assert "SAMPLED (2, 30, 6)" in lines, out.stdout
    assert "Traceback" not in out.stderr, out.stderr


def test_unknown_hook_name_is_refused():
    with pytest.raises(ValueError, match=r"names: no hook called \['nope'\]"):
        hooks.install(["nope"])


def test_print_fingerprints_prints_what_is_recorded(capsys):
    hooks.print_fingerprints()
    text = capsys.readouterr().out
    for hook in FINGERPRINTED:
        recorded = _hook.recorded_fingerprints(hook)
        for name, value in recorded.items():
            assert f"{name!r}: {value!r}," in text, (hook.name, name)


def test_step_registration_assigns_partitions_to_gibbs():
    """The public hook (``STEP_METHODS``) by behaviour: PyMC's own assignment picks
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
    assert assigning_model() is None  # reset after the call, no model in context


def test_object_mode_filter_matches_pytensors_message_for_every_op():
    """The warnings hook silences PyTensor's object-mode notice for each of our ops
    (the names are found from the distributions modules) and nothing else."""
    from pytensor.link.numba.dispatch.basic import generate_fallback_impl

    names = random_variable_names()
    assert {"crp_rv", "collapsed_normal_rv", "irm_rv", "proper_coloring_rv"} <= set(names)
    node = pmp.CRP.dist(alpha=1.0, n=4).owner
    with warnings.catch_warnings(record=True) as raw:
        warnings.resetwarnings()
        warnings.simplefilter("always")
        generate_fallback_impl(node.op, node)
    [message] = [str(w.message) for w in raw if "object mode" in str(w.message)]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        quiet_object_mode_warnings(names)
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
