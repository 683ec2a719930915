"""The one kernel-state type (``step_methods/chain_state.py``): copying and restoring a
chain's whole partition state (labels, every component's statistics and bookkeeping,
the scratch permutation) is exact for every likelihood and prior, and a copy evolves
independently of its source."""

import itertools

import numpy as np
import pymc as pm
import pytest
from helpers import binary_data, two_groups

import pymc_partitions as pmp
from pymc_partitions.kernels import gibbs
from pymc_partitions.kernels.random import new_stream
from pymc_partitions.step_methods.chain_state import (
    _leaves,
    _parts,
    clone,
    copy_into,
    label_dtype,
    snapshot,
)
from pymc_partitions.step_methods.target import PartitionTarget

N = 10
EYE = np.eye(2)
REAL = two_groups(N, 2, seed=4)
BINARY = binary_data(N, 3, seed=5)
COUNTS = np.random.default_rng(6).poisson(2.0, size=(N, 2)).astype(float)
COUNTS3 = np.random.default_rng(7).multinomial(4, [0.3, 0.3, 0.4], size=(N, 2)).astype(float)
_upper = np.triu(np.random.default_rng(8).random((N, N)) < 0.4, 1)
ADJ = (_upper | _upper.T).astype(float)
RING = np.array([[i, (i + 1) % N] for i in range(N)] + [[0, 5], [2, 7]])

# Every likelihood (with the CRP), every other prior (with a Normal likelihood),
# the colouring constraint alone and with a likelihood, and two likelihoods on one
# partition (the Pair record).
LIKELIHOODS = {  # name: (class, observed, hyperparameters)
    "normal": (pmp.CollapsedNormal, REAL, {"mu0": 0.0, "tau": 2.0, "sigma": 1.0}),
    "beta-bernoulli": (pmp.CollapsedBetaBernoulli, BINARY, {"a": 0.5, "b": 0.8}),
    "poisson-gamma": (pmp.CollapsedPoissonGamma, COUNTS, {"a": 1.5, "b": 0.5}),
    "normal-inverse-gamma": (pmp.CollapsedNormalInverseGamma, REAL, {}),
    "mv-normal": (pmp.CollapsedMvNormal, REAL, {"mu0": np.zeros(2), "Sigma0": 4 * EYE,
                                                "Sigma": EYE}),
    "niw": (pmp.CollapsedNIW, REAL, {"nu0": 4.0, "Psi0": EYE}),
    "dirichlet-multinomial": (pmp.CollapsedDirichletMultinomial, COUNTS3,
                              {"concentration": 0.7}),
    "irm": (pmp.IRM, ADJ, {}),
    "kmeans-energy": (pmp.KMeansEnergy, REAL, {}),
}
PRIORS = {
    "pitman-yor": lambda: pmp.PitmanYor("z", alpha=1.0, d=0.3, n=N),
    "fixed-blocks": lambda: pmp.FixedBlocks("z", n=N, k=3),
    "mfm": lambda: pmp.MFM("z", n=N),
}


def _build(prior, likelihoods):
    with pm.Model() as model:
        z = prior()
        for k, name in enumerate(likelihoods):
            cls, observed, hypers = LIKELIHOODS[name]
            cls(f"y{k}", z, observed=observed, **hypers)
    return model


def _crp():
    return pmp.CRP("z", alpha=1.0, n=N)


TARGETS = {f"crp+{name}": (lambda name=name: _build(_crp, [name])) for name in LIKELIHOODS}
TARGETS.update({f"{name}+normal": (lambda p=p: _build(p, ["normal"]))
                for name, p in PRIORS.items()})
TARGETS["coloring"] = lambda: _build(lambda: pmp.ProperColoring("z", RING, q=5, n=N), [])
TARGETS["coloring+normal"] = lambda: _build(lambda: pmp.ProperColoring("z", RING, q=5, n=N),
                                            ["normal"])
TARGETS["crp+normal+beta-bernoulli"] = lambda: _build(_crp, ["normal", "beta-bernoulli"])


class Chains:
    """Kernel states of one model's partition at its initial point."""

    def __init__(self, model):
        self.target = PartitionTarget(model, model.rvs_to_values[model["z"]], "test")
        self.values, self.prior, self.per_lik = self.target.params(model.initial_point())
        self.start = np.asarray(model.initial_point()["z"], dtype=np.int64)

    def new(self):
        chain = self.target.new_chain_state(self.start, self.values, self.per_lik)
        self.params, _, self.data = self.target.kernel_args(chain, self.values, self.per_lik)
        return chain

    def sweeps(self, chain, stream, count):
        failed = gibbs.run_sweeps(stream, count, chain.state, self.prior, self.params,
                                  chain.stats, self.data, chain.log_w, chain.order)
        assert failed == -1


def all_arrays(chain):
    return _leaves(_parts(chain), [])


def assert_identical(a, b, what):
    """Bit-identical owned arrays, the same hyperparameter values."""
    assert len(a.owned) == len(b.owned) and a.owned
    for k, (x, y) in enumerate(zip(a.owned, b.owned)):
        assert x.shape == y.shape and x.dtype == y.dtype, (what, k)
        assert x.tobytes() == y.tobytes(), f"{what}: owned array {k} differs"
    assert a.hyper_values is b.hyper_values, what


def assert_independent(a, b, shared):
    """No array of ``a`` shares memory with one of ``b``, except the observed data
    (``shared``: the very same read-only objects in both)."""
    shared_ids = {id(x) for x in _leaves(tuple(shared), [])}
    for x, y in itertools.product(all_arrays(a), all_arrays(b)):
        if np.shares_memory(x, y):
            assert x is y and id(x) in shared_ids, "a copy shares an array with its source"


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_copy_restore_and_independence(name):
    """Copy a state (``clone``, and ``copy_into`` preallocated storage), mutate the
    original with Gibbs sweeps, restore it: bit-identical arrays and the same draws
    afterwards as an untouched copy given the same stream; no shared arrays."""
    chains = Chains(TARGETS[name]())
    original = chains.new()
    chains.sweeps(original, new_stream(1), 3)  # a non-trivial partition and permutation
    data = chains.target.data

    copied = clone(original)
    spare = chains.new()  # preallocated storage, different contents
    copy_into(spare, original)
    for other in (copied, spare):
        assert_identical(other, original, "copy")
        assert_independent(other, original, data)
    assert_independent(copied, spare, data)
    data_before = [x.copy() for x in _leaves(tuple(data), [])]

    saved = chains.new()
    copy_into(saved, original)
    chains.sweeps(original, new_stream(2), 5)  # mutate the original
    assert any(x.tobytes() != y.tobytes() for x, y in zip(original.owned, saved.owned))
    assert_identical(copied, saved, "a copy after its source was mutated")  # independent
    assert_identical(spare, saved, "a copy after its source was mutated")
    copy_into(original, saved)  # restore
    assert_identical(original, saved, "restored")

    # The same stream from the restored state and from the untouched copy.
    chains.sweeps(original, new_stream(3), 4)
    chains.sweeps(copied, new_stream(3), 4)
    assert_identical(original, copied, "after the same draws")
    assert np.array_equal(snapshot(original), snapshot(copied))
    assert all(np.array_equal(x, y) for x, y in zip(data_before, _leaves(tuple(data), [])))


def test_snapshot_gives_compact_canonical_labels():
    chains = Chains(TARGETS["crp+normal"]())
    chain = chains.new()
    chains.sweeps(chain, new_stream(5), 4)
    before = [x.copy() for x in chain.owned if x is not chain.scratch]
    labels = snapshot(chain)
    assert labels.dtype == np.int16
    assert np.array_equal(labels, pmp.canonicalize(chain.state.labels))
    assert all(np.array_equal(x, y) for x, y in
               zip(before, [x for x in chain.owned if x is not chain.scratch]))
    history = np.full((3, N), -7, dtype=np.int32)
    snapshot(chain, out=history[1])
    assert np.array_equal(history[1], labels) and np.all(history[[0, 2]] == -7)
    for bad in (np.empty(N - 1, np.int16), np.empty(N, np.float64), np.empty((2, N), np.int16)):
        with pytest.raises(ValueError, match="'out'"):
            snapshot(chain, out=bad)


def test_label_dtype_is_the_smallest_that_holds_the_labels():
    assert label_dtype(2) == np.int16
    assert label_dtype(32768) == np.int16  # labels 0..32767
    assert label_dtype(32769) == np.int32
    assert label_dtype(2**31) == np.int32
    assert label_dtype(2**31 + 1) == np.int64


def test_copy_between_different_targets_is_refused():
    a = Chains(TARGETS["crp+normal"]()).new()
    b = Chains(TARGETS["crp+beta-bernoulli"]()).new()
    with pytest.raises(ValueError, match="one target"):
        copy_into(a, b)
