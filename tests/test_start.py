"""Starting partitions (README "Starting partitions and divergences").

The default start is the one-block partition (the priors' ``support_point``);
``initval="prior"`` gives each chain a draw from the prior, seeded by the chain's
seed. These tests pin the documented behaviour; they are not regression tests of a
defect (the one-block start was measured not to trap pmp.Gibbs, see the README).
"""

import numpy as np
import pymc as pm
from pymc.initial_point import make_initial_point_fns_per_chain

import pymc_partitions as pmp


def _starts(initval, seeds):
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        kwargs = {} if initval is None else {"initval": initval}
        pmp.CRP("z", alpha=alpha, n=30, **kwargs)
    fns = make_initial_point_fns_per_chain(model=model, overrides=None, chains=len(seeds))
    return [fn(seed)["z"] for fn, seed in zip(fns, seeds)]


def test_default_start_is_one_block():
    for z in _starts(None, [1, 2, 3]):
        assert np.array_equal(z, np.zeros(30, dtype=np.int64))


def test_initval_prior_gives_dispersed_canonical_starts_reproducible_per_seed():
    seeds = [11, 12, 13, 14]
    starts = _starts("prior", seeds)
    assert len({tuple(z) for z in starts}) == 4  # four different partitions
    for z in starts:
        assert np.array_equal(pmp.canonicalize(z), z) and z.max() >= 1
    again = _starts("prior", seeds)  # a new model, the same seeds: the same starts
    assert all(np.array_equal(a, b) for a, b in zip(starts, again))


def test_default_start_draws_nothing_from_any_partition_prior(monkeypatch):
    """The one-block (or balanced, or DSatur) start is built from the parameters only:
    PyMC compiles the initial point in FAST_COMPILE mode, where a ``support_point``
    reading the variable (``pt.zeros_like(rv)``) runs a forward draw and throws it
    away, O(n K) and 35-56 s for a CRP at n = 10^6 (issue 33). Every prior's
    ``rng_fn`` is made to fail; the starts must not call it, and ``initval="prior"``
    must (the control that the spy sees draws)."""
    from pymc_partitions.distributions import coloring, partition, priors

    classes = [partition.CRPRV, priors.PitmanYorRV, priors.FixedBlocksRV, priors.MFMRV,
               coloring.ProperColoringRV]
    calls = []
    for cls in classes:
        def spy(c, *args, **kwargs):
            calls.append(c.__name__)
            raise AssertionError(f"{c.__name__}.rng_fn called while building the start")
        monkeypatch.setattr(cls, "rng_fn", classmethod(spy))

    def model(initval=None):
        kw = {} if initval is None else {"initval": initval}
        with pm.Model() as m:
            pmp.CRP("a", alpha=pm.Gamma("alpha", 1.0, 1.0), n=6, **kw)
            pmp.PitmanYor("b", alpha=1.0, d=0.5, n=5, **kw)
            pmp.FixedBlocks("c", n=7, k=3, **kw)
            pmp.MFM("d", n=5, **kw)
            pmp.ProperColoring("e", graph=np.array([[0, 1], [1, 2]]), q=3, n=4, **kw)
        return m

    point = model().initial_point()
    assert calls == []
    assert [point[k].tolist() for k in "abcde"] == [
        [0] * 6, [0] * 5, [0, 1, 2, 0, 1, 2, 0], [0] * 5, [0, 1, 0, 1]]
    fns = make_initial_point_fns_per_chain(model=model(), overrides=None, chains=1)
    assert fns[0](1)["a"].tolist() == [0] * 6 and calls == []
    # batches of .dist keep their shapes
    from pymc.distributions.distribution import support_point

    assert support_point(pmp.CRP.dist(alpha=[1.0, 2.0], n=4)).eval().shape == (2, 4)
    assert support_point(pmp.FixedBlocks.dist(n=5, k=2, size=3)).eval().tolist() == \
        [[0, 1, 0, 1, 0]] * 3
    assert support_point(pmp.MFM.dist(n=3, size=(2, 2))).eval().shape == (2, 2, 3)
    # control: a prior start does draw
    with np.testing.assert_raises(AssertionError):
        model("prior").initial_point()
    assert calls
