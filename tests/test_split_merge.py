"""pmp.SplitMerge: exactness against all set partitions, the proposal probabilities
against an independent computation from the model's log density, and its settings."""

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from helpers import REFERENCE_MODE, alpha_free_bernoulli_model, assert_exact, binary_data, sample

import pymc_partitions as pmp
from pymc_partitions.kernels import assign_labels, new_state, split_merge
from pymc_partitions.kernels.components import beta_bernoulli
from pymc_partitions.kernels.priors import crp
from pymc_partitions.kernels.random import counter_uniform


def check_exact(model, draws, seed, step_kwargs, grids=None):
    step = pmp.SplitMerge([model["z"]], model=model, **step_kwargs)
    return assert_exact(model, draws=draws, seed=seed, step=[step], grids=grids)[1]


def bernoulli_model(n, seed, alpha=1.0):
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=alpha, n=n)
        pmp.CollapsedBetaBernoulli("y", partition=z, a=0.5, b=0.8,
                                   observed=binary_data(n, 3, seed))
    return model


def normal_model(n, seed):
    rng = np.random.default_rng(seed)
    y = np.concatenate([rng.normal(-2, 1, (n // 2, 2)), rng.normal(2, 1, (n - n // 2, 2))])
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=0.7, n=n)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=2.0, sigma=1.0, observed=y)
    return model


@pytest.mark.parametrize(
    "kwargs",
    [
        {"n_gibbs_sweeps": 0, "n_proposals": 4},
        {"n_gibbs_sweeps": 0, "n_restricted_scans": 0, "n_proposals": 3},
        {"n_gibbs_sweeps": 0, "proposal": "random", "n_proposals": 3},
        {"n_gibbs_sweeps": 0, "proposal": "sequential", "n_proposals": 3},
        {"n_gibbs_sweeps": 1, "n_restricted_scans": 2},
    ],
    ids=["sm-alone", "t0-m3", "random-split", "sequential", "with-gibbs"],
)
def test_beta_bernoulli_exact(kwargs):
    idata = check_exact(bernoulli_model(6, seed=6), 4000, 6, kwargs)
    stats = idata.sample_stats
    proposed = int(stats["split_proposed"].sum() + stats["merge_proposed"].sum())
    assert proposed == stats["split_proposed"].size * kwargs.get("n_proposals", 1)


@pytest.mark.parametrize("n_gibbs_sweeps", [0, 1])
def test_normal_exact(n_gibbs_sweeps):
    check_exact(normal_model(6, seed=2), 4000, 3,
                {"n_gibbs_sweeps": n_gibbs_sweeps, "n_proposals": 4 - 3 * n_gibbs_sweeps})


ALPHA_GRID = {"alpha_log__": np.linspace(-25.0, 7.0, 1200)}


def test_alpha_free_exact():
    """alpha ~ Gamma(1, 1) free: pm.sample assigns it to pmp.EscobarWest."""
    model = alpha_free_bernoulli_model()
    check_exact(model, 3000, 21, {"n_gibbs_sweeps": 0, "n_proposals": 2}, ALPHA_GRID)


def irm_model(n, seed, density, a=1.0, b=1.0, sparse=False):
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    upper = np.triu(rng.random((n, n)) < density, 1)
    adjacency = (upper | upper.T).astype(float)
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=n)
        pmp.IRM("A", partition=z, a=a, b=b,
                observed=sp.csr_matrix(adjacency) if sparse else adjacency)
    return model


@pytest.mark.parametrize(
    "kwargs",
    [{"n_gibbs_sweeps": 0, "n_proposals": 4}, {"n_gibbs_sweeps": 1}],
    ids=["sm-alone", "with-gibbs"],
)
def test_irm_exact(kwargs):
    """The Infinite Relational Model: a relational component whose predictive terms
    couple every block, through the same primitives."""
    check_exact(irm_model(6, seed=1, density=0.5, a=0.7, b=1.3, sparse=True), 3000, 7, kwargs)


def test_irm_alpha_free_exact():
    """alpha ~ Gamma(1, 1) free: pm.sample assigns it to pmp.EscobarWest."""
    n = 5
    rng = np.random.default_rng(4)
    upper = np.triu(rng.random((n, n)) < 0.5, 1)
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        z = pmp.CRP("z", alpha=alpha, n=n)
        pmp.IRM("A", partition=z, observed=(upper | upper.T).astype(float))
    check_exact(model, 2000, 4, {"n_gibbs_sweeps": 0, "n_proposals": 2}, ALPHA_GRID)


def prior_model(kind, n=6):
    """Beta-Bernoulli data on the library's other partition priors."""
    y = binary_data(n, 3, seed=61)
    with pm.Model() as model:
        if kind == "pitman_yor":
            z = pmp.PitmanYor("z", alpha=0.5, d=0.4, n=n)
        elif kind == "mfm":
            z = pmp.MFM("z", n=n, gamma=0.8,
                        k_prior=np.array([0.3, 0.3, 0.2, 0.1, 0.05, 0.05]))
        elif kind == "fixed_blocks":
            z = pmp.FixedBlocks("z", n=n, k=3)
        else:  # a 6-cycle coloured with 4 colours (q >= max degree + 2: no frozen colouring)
            edges = np.array([[v, (v + 1) % n] for v in range(n)])
            z = pmp.ProperColoring("z", edges, q=4, n=n)
        pmp.CollapsedBetaBernoulli("y", partition=z, a=0.5, b=0.8, observed=y)
    return model


@pytest.mark.parametrize(
    "kind, kwargs",
    [
        ("pitman_yor", {"n_gibbs_sweeps": 0, "n_proposals": 4}),
        ("mfm", {"n_gibbs_sweeps": 0, "n_proposals": 4}),
        # Every split or merge changes K: all rejected, the Gibbs sweep does the work.
        ("fixed_blocks", {"n_gibbs_sweeps": 1}),
        # Proper colourings: splits and merges that break the colouring are rejected.
        ("proper_coloring", {"n_gibbs_sweeps": 1, "n_proposals": 2}),
    ],
)
def test_other_priors_exact(kind, kwargs):
    idata = check_exact(prior_model(kind), 3000, 61, kwargs)
    if kind == "fixed_blocks":
        assert int(idata.sample_stats["split_accepted"].sum()
                   + idata.sample_stats["merge_accepted"].sum()) == 0


# ----------------------------------------------------------------------------------
# Proposal probabilities against an independent computation
# ----------------------------------------------------------------------------------


class Model:
    """The model's log joint (CRP + Beta-Bernoulli) from PyTensor, and kernel objects."""

    def __init__(self, n, d, alpha, a, b, seed):
        self.x = binary_data(n, d, seed)
        self.n, self.alpha, self.a, self.b = n, alpha, a, b
        zv = pt.lvector("z")
        crp_rv = pmp.CRP.dist(alpha=alpha, n=n)
        lik = pmp.CollapsedBetaBernoulli.dist(zv, a, b, n_dims=d)
        self.log_joint = pytensor.function(
            [zv], pm.logp(crp_rv, zv) + pm.logp(lik, pt.as_tensor(self.x)).sum(),
            mode=REFERENCE_MODE,
        )
        self.prior = crp.make_params(alpha, n)
        self.params = beta_bernoulli.make_params(np.full(d, a), np.full(d, b))
        self.data = beta_bernoulli.make_data(self.x)

    def state(self, labels):
        state = new_state(self.n)
        stats = beta_bernoulli.alloc_stats(self.n, self.x.shape[1], self.params)
        assign_labels(state, self.params, stats, self.data, np.asarray(labels, dtype=np.int64))
        return state, stats

    def restricted(self, labels, h, a, b):
        """log P(h -> b) and log P(h -> a) between labels a and b, from the model."""
        za, zb = labels.copy(), labels.copy()
        za[h], zb[h] = a, b
        la, lb = self.log_joint(za), self.log_joint(zb)
        top = max(la, lb)
        total = top + np.log(np.exp(la - top) + np.exp(lb - top))
        return lb - total, la - total

    def restricted_partial(self, labels, h, a, b, pending):
        """As :meth:`restricted`, given only the allocated items: the items labelled
        ``pending`` (not yet allocated) are left out of the model altogether."""
        keep = labels != pending
        keep[h] = True
        return self._sub_model(keep).restricted(
            np.where(labels[keep] == pending, a, labels[keep]), int(np.sum(keep[:h])), a, b
        )

    def _sub_model(self, keep):
        """The same model on the items ``keep`` (the CRP over them and their rows)."""
        key = tuple(np.flatnonzero(keep))
        cache = self.__dict__.setdefault("_subs", {})
        if key not in cache:
            sub = Model.__new__(Model)
            x = self.x[keep]
            zv = pt.lvector("z")
            crp_rv = pmp.CRP.dist(alpha=self.alpha, n=x.shape[0])
            lik = pmp.CollapsedBetaBernoulli.dist(zv, self.a, self.b, n_dims=x.shape[1])
            fn = pytensor.function([zv], pm.logp(crp_rv, zv) + pm.logp(lik, pt.as_tensor(x)).sum(),
                                   mode=REFERENCE_MODE)
            sub.log_joint = lambda z, fn=fn: fn(pmp.canonicalize(z))
            cache[key] = sub
        return cache[key]


def reference_split_merge(model, labels, i, j, key, n_scans, proposal="restricted_gibbs"):
    """Jain & Neal's update (or Dahl's sequential allocation) written directly from the
    papers with model log densities: returns (log q, log MH ratio, proposal labels)."""
    n = model.n
    labels = np.asarray(labels).copy()
    a = labels[i]
    is_split = labels[i] == labels[j]
    b = labels.max() + 1 if is_split else labels[j]  # an unused label for j's new block
    S = [h for h in range(n) if h not in (i, j) and labels[h] in (labels[i], labels[j])]
    current = labels.copy()
    target = current.copy() if not is_split else None
    log_q = 0.0
    work = labels.copy()
    work[j] = b
    if proposal == "sequential":
        order = list(S)
        for pos in range(len(order) - 1, 0, -1):  # Fisher-Yates, counter-based
            other = int(counter_uniform(key, (n_scans + 3) * n + pos) * (pos + 1))
            order[pos], order[other] = order[other], order[pos]
        # S unassigned: give its items a label outside every block, then allocate.
        pending = labels.max() + 2
        work[S] = pending
        for h in order:
            # The conditional given the allocated items only: score the two options
            # with the pending items as their own block removed from the comparison
            # by the difference (they are the same in both options).
            log_pb, log_pa = model.restricted_partial(work, h, a, b, pending)
            if is_split:
                to_b = counter_uniform(key, n + h) < np.exp(log_pb)
            else:
                to_b = target[h] == b
            work[h] = b if to_b else a
            log_q += log_pb if to_b else log_pa
    else:
        for h in S:
            work[h] = b if counter_uniform(key, h) < 0.5 else a
        if proposal == "random":
            log_q = len(S) * np.log(0.5)
            if not is_split:
                work = current.copy()
        else:
            for s in range(n_scans):
                for h in S:
                    log_pb, _ = model.restricted(work, h, a, b)
                    work[h] = b if counter_uniform(key, (s + 1) * n + h) < np.exp(log_pb) else a
            for h in S:
                log_pb, log_pa = model.restricted(work, h, a, b)
                if is_split:
                    to_b = counter_uniform(key, (n_scans + 1) * n + h) < np.exp(log_pb)
                else:
                    to_b = current[h] == b
                work[h] = b if to_b else a
                log_q += log_pb if to_b else log_pa
    if is_split:
        proposal_labels = work
        ratio = model.log_joint(proposal_labels) - model.log_joint(current) - log_q
    else:
        assert np.array_equal(work, current)
        proposal_labels = current.copy()
        proposal_labels[proposal_labels == b] = a
        ratio = model.log_joint(proposal_labels) - model.log_joint(current) + log_q
    return log_q, ratio, pmp.canonicalize(proposal_labels)


PROPOSAL_CODES = {
    "restricted_gibbs": split_merge.RESTRICTED_GIBBS,
    "random": split_merge.RANDOM,
    "sequential": split_merge.SEQUENTIAL,
}


@pytest.mark.parametrize(
    "n_scans, proposal",
    [(0, "restricted_gibbs"), (1, "restricted_gibbs"), (4, "restricted_gibbs"),
     (2, "random"), (2, "sequential")],
)
def test_proposal_probabilities_equal_product_of_restricted_conditionals(n_scans, proposal):
    n = 9
    model = Model(n, 4, alpha=1.3, a=0.6, b=0.9, seed=4)
    rng = np.random.default_rng(n_scans)
    checked = {"split": 0, "merge": 0}
    for trial in range(24):
        labels = rng.integers(0, 3, n)
        i, j = rng.choice(n, 2, replace=False)
        key = int(rng.integers(2**62))
        log_q, ratio, expected_proposal = reference_split_merge(
            model, labels, i, j, key, n_scans, proposal
        )
        state, stats = model.state(labels)
        members = np.empty(n, dtype=np.int64)
        origin = np.empty(n, dtype=np.int64)
        outcome, k_log_q, k_ratio = split_merge.split_merge_entry(
            state, model.prior, model.params, stats, model.data, i, j, key, n_scans,
            PROPOSAL_CODES[proposal], members, origin,
        )
        assert k_log_q == pytest.approx(log_q, rel=1e-9, abs=1e-12)
        assert k_ratio == pytest.approx(ratio, rel=1e-9, abs=1e-9)
        accepted = outcome in (split_merge.SPLIT_ACCEPTED, split_merge.MERGE_ACCEPTED)
        u = counter_uniform(key, (n_scans + 2) * n)
        assert accepted == (np.log(u) < ratio)
        expected = expected_proposal if accepted else pmp.canonicalize(labels)
        assert np.array_equal(pmp.canonicalize(state.labels), expected)
        assert outcome in ((0, 1) if labels[i] == labels[j] else (2, 3))
        checked["split" if labels[i] == labels[j] else "merge"] += 1
    assert checked["split"] > 3 and checked["merge"] > 3


def test_common_random_numbers_drive_two_chains_alike():
    """Same (i, j, key) on two chains that agree on the blocks of i and j but are
    partitioned differently elsewhere: with a CRP prior the restricted conditionals
    and the acceptance ratio depend on those blocks only, so the counter uniforms
    (indexed by item, not by position or call order) must give both chains the same
    outcome and the same new blocks for i, j and S, and leave the rest alone."""
    n = 9
    model = Model(n, 3, alpha=1.0, a=1.0, b=1.0, seed=8)
    rng = np.random.default_rng(1)
    seen = set()
    for _ in range(40):
        first = rng.integers(0, 3, n)
        i, j = rng.choice(n, 2, replace=False)
        involved = np.isin(first, [first[i], first[j]])
        second = first.copy()  # the other items: one block, or all singletons
        second[~involved] = 10 + (np.arange(n)[~involved] if rng.random() < 0.5 else 0)
        key = int(rng.integers(2**62))
        results = []
        for labels in (first, second):
            state, stats = model.state(pmp.canonicalize(labels))
            outcome, _, log_ratio = split_merge.split_merge_entry(
                state, model.prior, model.params, stats, model.data, i, j, key, 3,
                split_merge.RESTRICTED_GIBBS,
                np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64),
            )
            after = pmp.canonicalize(state.labels)
            results.append((outcome, log_ratio, after, pmp.canonicalize(after[involved])))
            if (~involved).any():  # the other items keep their blocks
                assert np.array_equal(pmp.canonicalize(after[~involved]),
                                      pmp.canonicalize(labels[~involved]))
        assert results[0][0] == results[1][0]
        assert results[0][1] == pytest.approx(results[1][1], rel=1e-9, abs=1e-9)
        assert np.array_equal(results[0][3], results[1][3])
        seen.add(int(results[0][0]))
    assert seen >= {split_merge.SPLIT_ACCEPTED, split_merge.MERGE_ACCEPTED}


def test_counter_uniforms_are_uniform():
    u = np.array([counter_uniform(12345, c) for c in range(20000)])
    assert u.min() >= 0.0 and u.max() < 1.0
    # Kolmogorov-Smirnov against U(0, 1): the 1e-4 critical value for 20000 draws.
    u.sort()
    ks = np.max(np.abs(u - (np.arange(1, u.size + 1) / u.size)))
    assert ks < 1.95 / np.sqrt(u.size)


# ----------------------------------------------------------------------------------
# Settings, stats, defaults
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_restricted_scans": -1}, "n_restricted_scans"),
        ({"n_proposals": 0}, "n_proposals"),
        ({"n_gibbs_sweeps": -2}, "n_gibbs_sweeps"),
        ({"n_proposals": 1.5}, "n_proposals"),
        ({"proposal": "dahl"}, "proposal"),
    ],
)
def test_invalid_settings(kwargs, match):
    model = bernoulli_model(5, seed=1)
    with pytest.raises(ValueError, match=match):
        pmp.SplitMerge([model["z"]], model=model, **kwargs)


def test_one_item_is_refused():
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=1)
        pmp.CollapsedNormal("y", partition=z, observed=np.zeros((1, 1)))
    with pytest.raises(ValueError, match="at least two items"):
        pmp.SplitMerge([z], model=model)


def test_default_assignment_keeps_gibbs():
    model = bernoulli_model(5, seed=1)
    with model:
        idata = pm.sample(draws=5, tune=5, chains=1, progressbar=False,
                          compute_convergence_checks=False, random_seed=0)
    assert "split_proposed" not in idata.sample_stats


def test_stats_and_acceptance_visible_to_arviz():
    import arviz as az

    model = normal_model(6, seed=2)
    step = pmp.SplitMerge([model["z"]], model=model, n_proposals=2)
    idata = sample(model, draws=100, chains=2, seed=5, step=[step])
    stats = idata.sample_stats
    for name in ("split_proposed", "split_accepted", "merge_proposed", "merge_accepted",
                 "accept_rate", "split_merge_seconds", "gibbs_seconds"):
        assert stats[name].shape == (2, 100)
    # Both parts of every iteration ran and were timed (standardized iterations, §3.4).
    assert (stats["split_merge_seconds"] > 0).all() and (stats["gibbs_seconds"] > 0).all()
    assert (stats["split_accepted"] <= stats["split_proposed"]).all()
    assert ((stats["accept_rate"] >= 0) & (stats["accept_rate"] <= 1)).all()
    assert int(stats["split_proposed"].sum() + stats["merge_proposed"].sum()) == 400
    summary = az.summary(idata, var_names=["z_n_clusters", "z_largest_cluster_frac"])
    assert np.isfinite(summary["mean"]).all()


def test_same_draws_with_one_and_two_cores():
    """Seeding follows PyMC's per-chain generators: cores=1 and cores=2 agree, with
    alpha sampled by NUTS in the same call."""
    x = binary_data(8, 3, seed=0)

    def run(cores):
        with pm.Model() as model:
            alpha = pm.Gamma("alpha", 2.0, 2.0)
            z = pmp.CRP("z", alpha=alpha, n=8)
            pmp.CollapsedBetaBernoulli("y", partition=z, a=1.0, b=1.0, observed=x)
        return sample(model, draws=50, chains=2, seed=3, tune=20, cores=cores,
                      step=[pmp.SplitMerge([z], model=model)])

    one, two = run(1), run(2)
    assert np.array_equal(one.posterior["z"].values, two.posterior["z"].values)
    assert np.array_equal(one.sample_stats["split_accepted"].values,
                          two.sample_stats["split_accepted"].values)
