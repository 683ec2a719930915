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
