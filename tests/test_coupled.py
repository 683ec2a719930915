"""Coupled chains (Nguyen, Trippe & Broderick 2022): each chain of a coupled pair is an
exact sampler, the pair's bookkeeping is right, met pairs stay met, and the lag-1
estimator built on the pairs is unbiased where single chains are not."""

import numpy as np
import pymc as pm
import pytest
from helpers import binary_data, exact_posterior, judge, normal_model

import pymc_partitions as pmp
from pymc_partitions.versions import group_dataset
from pymc_partitions.kernels import coupled_gibbs as cg
from pymc_partitions.kernels import coupled_split_merge as csm
from pymc_partitions.kernels import split_merge, summarise
from pymc_partitions.kernels.couplings import COMMON_RNG, HAMMING, MAXIMAL, OT, VI
from pymc_partitions.kernels.random import new_stream
from pymc_partitions.kernels.transport import new_workspace
from pymc_partitions.step_methods.target import PartitionModelError, PartitionTarget
from pymc_partitions.step_methods.coupled_pair import CoupledPair

COUPLINGS = {"ot": (OT, HAMMING), "ot-vi": (OT, VI), "maximal": (MAXIMAL, HAMMING),
             "common_rng": (COMMON_RNG, HAMMING)}
SM = {"n_proposals": 1, "n_restricted_scans": 2, "proposal": split_merge.RESTRICTED_GIBBS}


# ---------------------------------------------------------------------- models (n <= 7)
def bernoulli_model(n=6, seed=6):
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=n)
        pmp.CollapsedBetaBernoulli("y", partition=z, a=0.5, b=0.8,
                                   observed=binary_data(n, 3, seed))
    return model


def coloring_model():
    # A 6-cycle with one chord, 3 colours: several proper partitions, none dominant.
    edges = np.array([[0, 1], [1, 2], [2, 3], [3, 4], [4, 5], [5, 0], [0, 3]])
    with pm.Model() as model:
        pmp.ProperColoring("z", edges, q=3, n=6)
    return model


MODELS = {"beta-bernoulli": bernoulli_model, "normal-d2": normal_model,
          "coloring": coloring_model}


class RawPair:
    """Two kernel states of one target driven by the coupled kernels directly (no
    meeting shortcut), so the coupling itself is exercised at every sweep."""

    def __init__(self, model, seed, capacity=4):
        self.target = PartitionTarget(model, model.rvs_to_values[model["z"]], "test")
        self.values, self.prior, self.per_lik = self.target.params(model.initial_point())
        self.n = self.target.n
        self.stream = new_stream(seed)
        self.scratch = cg.new_scratch(self.n, capacity)
        self.workspace = new_workspace(self.n + 1, self.n + 1, max_edges=self.n)
        self.members = np.empty(self.n, dtype=np.int64)
        self.origin = np.empty(self.n, dtype=np.int64)
        self.outcomes = np.zeros(4, dtype=np.int64)

    def load(self, x_labels, y_labels):
        t = self.target
        self.x = t.new_chain_state(np.asarray(x_labels, np.int64), self.values, self.per_lik)
        self.y = t.new_chain_state(np.asarray(y_labels, np.int64), self.values, self.per_lik)
        self.params, _, self.data = t.kernel_args(self.x, self.values, self.per_lik)
        while cg.load_pair(self.x.state, self.y.state, self.scratch) == cg.NEEDS_CAPACITY:
            self.scratch = cg.grown(self.scratch, 2 * self.scratch.overlap.shape[0])

    def sweep(self, coupling, metric, eta=1e-5, split_merge=None, shuffled=True):
        x, y = self.x, self.y
        if split_merge is not None:
            while self.scratch.overlap.shape[0] < self.n + 1:
                self.scratch = cg.grown(self.scratch, 2 * self.scratch.overlap.shape[0])
            assert csm.coupled_split_merge_updates(
                self.stream, split_merge["n_proposals"], split_merge["n_restricted_scans"],
                split_merge["proposal"], x.state, y.state, self.prior, self.params, x.stats,
                y.stats, self.data, self.members, self.origin, self.outcomes, self.scratch,
            ) == cg.DONE
        while True:
            status = cg.coupled_gibbs_sweep(self.stream, x.state, y.state, self.prior,
                                            self.params, x.stats, y.stats, self.data, coupling,
                                            metric, eta, shuffled, self.scratch, self.workspace)
            if status != cg.NEEDS_CAPACITY:
                break
            self.scratch = cg.grown(self.scratch, 2 * self.scratch.overlap.shape[0])
        assert status == cg.DONE

    def distance_from_labels(self):
        a = self.x.state.labels[:, None] == self.x.state.labels[None]
        b = self.y.state.labels[:, None] == self.y.state.labels[None]
        return int((a != b).sum())

    def overlap_from_labels(self):
        x, y = self.x.state, self.y.state
        table = np.zeros((x.counts[0], y.counts[0]), dtype=np.int64)
        np.add.at(table, (x.where[x.labels], y.where[y.labels]), 1)
        return table


# ---------------------------------------------------------------------- each chain is exact
@pytest.mark.parametrize(
    "model_name, coupling, moves",
    [(m, c, moves) for m in MODELS for c in COUPLINGS for moves in ("gibbs", "split-merge")]
    + [(m, "ot", "gibbs-systematic") for m in MODELS],
)
def test_each_chain_of_a_coupled_pair_is_exact(model_name, coupling, moves):
    """X and Y draws of coupled moves both match the exact posterior.

    X runs its own chain. Y is refreshed, at random half of the sweeps, with an
    independent draw from the exact posterior, so the two chains differ at most
    sweeps and the coupling of two different partitions is exercised (a coupled pair
    left alone meets within a few sweeps at this n). X's transition is P whatever Y
    is; Y after each coupled sweep is P applied to a draw of the target; both are
    judged against enumeration by the shared harness."""
    model = MODELS[model_name]()
    exact = exact_posterior(model)
    code, metric = COUPLINGS[coupling]
    sm = SM if moves == "split-merge" else None
    chains, draws = 4, 3000
    rng = np.random.default_rng(11)
    out_x = np.empty((chains, draws, exact.partitions.shape[1]), dtype=np.int64)
    out_y = np.empty_like(out_x)
    p = exact.p
    for c in range(chains):
        pair = RawPair(model, seed=[11, c])
        start = model.initial_point()["z"]
        pair.load(start, exact.partitions[rng.choice(len(p), p=p)])
        for t in range(draws):
            if rng.random() < 0.5:
                pair.load(pair.x.state.labels.copy(), exact.partitions[rng.choice(len(p), p=p)])
            pair.sweep(code, metric, split_merge=sm, shuffled=moves != "gibbs-systematic")
            out_x[c, t] = pair.x.state.labels
            out_y[c, t] = pair.y.state.labels
    for name, out in (("X", out_x), ("Y", out_y)):
        label = f"{model_name} {coupling} {moves} {name}"
        verdict = judge(exact, pmp.canonicalize(out), label=label)
        assert verdict.passed, verdict.row()


# ---------------------------------------------------------------------- bookkeeping
@pytest.mark.parametrize("coupling", list(COUPLINGS))
def test_overlap_table_and_distance_are_maintained_exactly(coupling):
    """After every sweep (and split-merge updates), the incrementally maintained
    intersection counts and d(X, Y) of eq. 5 equal their values recomputed from the
    labels, through blocks opening and closing in both chains."""
    model = normal_model(n=7, seed=3, spread=1.0, alpha=2.0)
    code, metric = COUPLINGS[coupling]
    pair = RawPair(model, seed=5, capacity=2)
    rng = np.random.default_rng(5)
    pair.load(np.zeros(7, np.int64), np.arange(7))
    seen_distances = set()
    for t in range(400):
        if t % 7 == 0:  # new, unrelated Y partitions
            pair.load(pair.x.state.labels.copy(), rng.integers(0, 7, 7))
        pair.sweep(code, metric, split_merge=SM if t % 2 else None)
        k_x, k_y = pair.x.state.counts[0], pair.y.state.counts[0]
        table = pair.scratch.overlap
        assert np.array_equal(table[:k_x, :k_y], pair.overlap_from_labels())
        assert not table[k_x:].any() and not table[:, k_y:].any()
        assert pair.scratch.info[cg.DISTANCE] == pair.distance_from_labels()
        seen_distances.add(int(pair.scratch.info[cg.DISTANCE]))
    assert len(seen_distances) > 3  # the chains did differ, by various amounts


def test_equal_partitions_with_different_histories_stay_equal_under_ot():
    """psi^OT(X, X) is the diagonal (eq. 6): two equal partitions stored in different
    slots, with different block creation orders, make the same move at every item
    (nugget 0), for a thousand sweeps."""
    model = bernoulli_model(n=7, seed=1)
    pair = RawPair(model, seed=3)
    labels = np.array([0, 0, 1, 2, 1, 2, 3])
    pair.load(labels, (labels + 2) % 4 * 2)  # same partition, other slots and order
    moved = 0
    for _ in range(1000):
        before = pmp.canonicalize(pair.x.state.labels.copy())
        pair.sweep(OT, HAMMING, eta=0.0)
        after = pmp.canonicalize(pair.x.state.labels)
        assert np.array_equal(after, pmp.canonicalize(pair.y.state.labels))
        assert pair.scratch.info[cg.DISTANCE] == 0
        moved += not np.array_equal(before, after)
    assert moved > 100  # X itself kept moving


@pytest.mark.parametrize("coupling, scan", [("ot", "random"), ("maximal", "random"),
                                            ("common_rng", "random"), ("ot", "systematic")])
def test_met_pairs_stay_met(coupling, scan):
    """Driver: once X_t = Y_{t-1} the pair never separates (thousands of moves), the
    reported distance is 0 and Y's reported labels are X's; X keeps moving."""
    model = normal_model()
    target = PartitionTarget(model, model.rvs_to_values[model["z"]], "test")
    values, prior, per_lik = target.params(model.initial_point())
    pair = CoupledPair(target, values, prior, per_lik, coupling=coupling, scan=scan,
                       stream=new_stream(4))
    pair.start(np.zeros(6, np.int64), np.arange(6))
    while not pair.met:
        pair.advance()
        assert pair.t < 1000
    tau, distinct = pair.tau, set()
    for _ in range(3000):
        pair.advance()
        x, y, _ = pair.summaries()
        assert pair.tau == tau and pair.distance == 0 and np.array_equal(x, y)
        distinct.add(x.tobytes())
    assert len(distinct) > 5


# ---------------------------------------------------------------------- unbiasedness
def lcp(labels):
    return np.bincount(labels).max() / labels.shape[0]


def co_clustered(a, b):
    return lambda labels: float(labels[a] == labels[b])


def exact_expectation(exact, h):
    return float(sum(p * h(part) for p, part in zip(exact.p, exact.partitions)))


def pair_estimates(model, coupling, metric, n_pairs, burn_in, m, hs, seed):
    """H_{l:m} of each h (``pmp.unbiased.pair_estimate``, lag 1) for ``n_pairs`` pairs
    started at one block, beside the plain single-chain average of h over sweeps l..m
    of X."""
    target = PartitionTarget(model, model.rvs_to_values[model["z"]], "test")
    values, prior, per_lik = target.params(model.initial_point())
    n = target.n
    est = np.zeros((n_pairs, len(hs)))
    plain = np.zeros((n_pairs, len(hs)))
    taus = np.zeros(n_pairs, dtype=np.int64)
    ss = np.random.SeedSequence(seed)
    for r, child in enumerate(ss.spawn(n_pairs)):
        pair = CoupledPair(target, values, prior, per_lik, coupling=coupling, metric=metric,
                           stream=new_stream(child))
        pair.start(np.zeros(n, np.int64), np.zeros(n, np.int64))
        hx, hy = [np.full(len(hs), np.nan)], []  # h(X_0) is not needed (l >= 1)
        while True:
            x, y, _ = pair.summaries()
            hx.append([h(x) for h in hs])  # X_t
            hy.append([h(y) for h in hs])  # Y_{t-1}
            if pair.met and pair.t >= m:
                break
            pair.advance()
        hx, hy = np.array(hx), np.array(hy)
        est[r] = pmp.unbiased.pair_estimate(hx, hy, pair.tau, burn_in, m).value
        plain[r] = hx[burn_in : m + 1].mean(axis=0)
        taus[r] = pair.tau
    return est, plain, taus


@pytest.mark.parametrize("coupling", ["ot", "ot-vi", "maximal", "common_rng"])
def test_lag_one_estimator_is_unbiased_where_single_chains_are_biased(coupling):
    """Exact E[h] by enumeration; pairs started far from stationarity (one block, data
    in two clear groups), l = 1, m = 3. The mean of 10,000 H_{l:m} is within 3 SE of
    the truth for LCP and CC(0, 1); the plain average over sweeps l..m of the same X
    chains is off by more than 5 SE (the test has power)."""
    model = normal_model(n=6, seed=2, spread=2.5, alpha=0.5)
    exact = exact_posterior(model)
    hs = [lcp, co_clustered(0, 1)]
    truth = np.array([exact_expectation(exact, h) for h in hs])
    code, metric = {"ot": ("ot", "hamming"), "ot-vi": ("ot", "vi"),
                    "maximal": ("maximal", "hamming"),
                    "common_rng": ("common_rng", "hamming")}[coupling]
    est, plain, taus = pair_estimates(model, code, metric, 10_000, 1, 3, hs, seed=21)
    se = est.std(axis=0, ddof=1) / np.sqrt(len(est))
    z = (est.mean(axis=0) - truth) / se
    se_plain = plain.std(axis=0, ddof=1) / np.sqrt(len(plain))
    z_plain = (plain.mean(axis=0) - truth) / se_plain
    print(coupling, "truth", truth, "H", est.mean(axis=0), "z", z, "plain z", z_plain,
          "tau median", np.median(taus))
    assert np.all(np.abs(z) < 3), z
    assert np.all(np.abs(z_plain) > 5), z_plain


# ---------------------------------------------------------------------- the PyMC step
def test_step_records_the_pair_and_is_reproducible_across_cores():
    model = normal_model()
    with model:
        runs = [pm.sample(tune=0, draws=15, chains=3, cores=cores, random_seed=3,
                          step=[pmp.CoupledGibbs([model["z"]], start="prior")],
                          progressbar=False, compute_convergence_checks=False)
                for cores in (1, 2)]
    stats = [group_dataset(r, "sample_stats") for r in runs]
    posts = [group_dataset(r, "posterior") for r in runs]
    assert np.array_equal(posts[0]["z"].values, posts[1]["z"].values)
    assert np.array_equal(stats[0]["coupled_labels"].values, stats[1]["coupled_labels"].values)
    s = stats[0]
    assert s["coupled_labels"].shape == (3, 15, 6)
    assert np.array_equal(s["sweep"].values, np.tile(np.arange(1, 16), (3, 1)))
    for c in range(3):
        tau = s["meeting_sweep"].values[c]
        met = tau >= 0
        assert met.any()  # n = 6 pairs meet within a few sweeps
        first = np.argmax(met)
        assert np.all(tau[first:] == s["sweep"].values[c, first])  # tau, fixed once met
        dist = s["coupling_distance"].values[c]
        assert np.all(dist[first:] == 0) and np.all(dist[:first] > 0)
        x, y = posts[0]["z"].values[c], s["coupled_labels"].values[c]
        assert np.array_equal(x[first:], y[first:])
        assert not np.array_equal(x[:first], y[:first]) or first == 0


def test_step_refuses_a_target_with_free_hyperparameters():
    with pm.Model():
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        z = pmp.CRP("z", alpha=alpha, n=6)
        pmp.CollapsedBetaBernoulli("y", partition=z, observed=binary_data(6, 3, 0))
        with pytest.raises(PartitionModelError, match=r"free variable\(s\) \['alpha'\]"):
            pmp.CoupledGibbs([z])


# ---------------------------------------------------------------------- every target
def _every_target():
    from test_compile_all_likelihoods import LIKELIHOODS, build_model

    targets = {name: (lambda name=name: build_model(name, 2, (), False)) for name in LIKELIHOODS}
    y = binary_data(8, 3, 1)

    def with_prior(make_prior):
        def build():
            with pm.Model() as model:
                z = make_prior()
                pmp.CollapsedBetaBernoulli("y", partition=z, observed=y)
            return model
        return build

    targets["PitmanYor"] = with_prior(lambda: pmp.PitmanYor("z", alpha=1.0, d=0.3, n=8))
    targets["MFM"] = with_prior(lambda: pmp.MFM("z", n=8, gamma=1.0))
    targets["FixedBlocks"] = with_prior(lambda: pmp.FixedBlocks("z", n=8, k=3))
    targets["ProperColoring"] = coloring_model
    return targets


EVERY_TARGET = _every_target()


@pytest.mark.parametrize("name", list(EVERY_TARGET))
def test_coupled_sweeps_run_on_every_target(name):
    """The coupled kernels are generic over (component, prior): every collapsed
    likelihood, the IRM, every prior and the colouring constraint compile and run, with
    the intersection table and d(X, Y) exact after every sweep and both chains in the
    prior's support (their log joints finite). Exactness itself is the same code path
    as the three models above; coupled split-merge updates are the single-chain
    ``split_merge_update`` run on each chain with one (i, j) and key, exercised on the
    three models above, so only the Gibbs sweep is compiled here (CI time)."""
    model = EVERY_TARGET[name]()
    pair = RawPair(model, seed=2)
    x0 = model.initial_point()["z"]
    y0 = pm.draw(model["z"], random_seed=3)
    pair.load(x0, y0)
    for _ in range(30):
        pair.sweep(OT, HAMMING)
        k_x, k_y = pair.x.state.counts[0], pair.y.state.counts[0]
        assert np.array_equal(pair.scratch.overlap[:k_x, :k_y], pair.overlap_from_labels())
        assert pair.scratch.info[cg.DISTANCE] == pair.distance_from_labels()
        for chain in (pair.x, pair.y):
            _, _, log_joint = summarise(chain.state, pair.prior, pair.params, chain.stats,
                                        chain.labels, chain.scratch)
            assert np.isfinite(log_joint)
