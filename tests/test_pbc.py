"""Population Based Clustering (Goswami, Liu & Wong 2005): the tempered target as a
dispatch wrapper, the mutation (§3.1) and random exchange (§3.6) kernels, and their
exactness on a temperature ladder against the enumerated targets."""

import collections
import itertools
import warnings
from math import comb

import numpy as np
import pymc as pm
import pytest
from helpers import (
    Exact,
    KernelChain,
    assert_exact,
    binary_data,
    exact_posterior,
    kernel_draws,
    sample,
)
from readme import run_snippet
from scipy.special import logsumexp

import pymc_partitions as pmp
from pymc_partitions.kernels import crossover, gibbs, mutation
from pymc_partitions.kernels.bookkeeping import log_joint_entry
from pymc_partitions.kernels.components import log_marginal, log_pred
from pymc_partitions.kernels.errors import check_item
from pymc_partitions.kernels.priors import log_prior_block, log_prior_pred
from pymc_partitions.kernels.random import new_stream
from pymc_partitions.kernels.tempering import temper, untempered
from pymc_partitions.step_methods.chain_state import copy_into
from pymc_partitions.step_methods.pbc import PBC, TemperedPopulation
from pymc_partitions.step_methods.target import PartitionModelError, PartitionTarget

N_ITEMS = 6


def bernoulli_model(n=N_ITEMS, seed=6):
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=n)
        pmp.CollapsedBetaBernoulli("y", partition=z, a=0.5, b=0.8,
                                   observed=binary_data(n, 3, seed))
    return model


def dirichlet_multinomial_model(n=N_ITEMS, seed=3):
    counts = np.random.default_rng(seed).integers(0, 5, size=(n, 4))
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=0.8, n=n)
        pmp.CollapsedDirichletMultinomial("y", z, concentration=1.5, observed=counts)
    return model


def kmeans_model(n=N_ITEMS, k=3, seed=8):
    """The k-means energy of Goswami et al. §7.3 with a fixed number of blocks."""
    rng = np.random.default_rng(seed)
    y = rng.normal(0.0, 1.0, size=(n, 2)) + np.repeat([[0.0, 0.0], [2.5, 0.0], [0.0, 2.5]],
                                                       -(-n // 3), axis=0)[:n]
    with pm.Model() as model:
        z = pmp.FixedBlocks("z", n=n, k=k)
        pmp.KMeansEnergy("y", z, temperature=2.0, observed=y)
    return model


def k_block_start(n, k):
    """Labels 0..k-1 then k-1 repeated: a partition with exactly k blocks."""
    return np.minimum(np.arange(n), k - 1).astype(np.int64)


MODELS = {
    "beta-bernoulli": (bernoulli_model, None),
    "dirichlet-multinomial": (dirichlet_multinomial_model, None),
    "kmeans-fixed-blocks": (kmeans_model, k_block_start(N_ITEMS, 3)),
}


def tempered_exact(exact, inv_t):
    """The exact target pi(z)^(1/t), normalised, from the exact pi."""
    log_p = exact.log_post * inv_t
    return Exact(exact.partitions, log_p - logsumexp(log_p))


# ------------------------------------------------------------------ 1. tempering


@pytest.mark.parametrize("name", list(MODELS))
def test_tempered_log_target_differences(name):
    """Every primitive the moves read returns 1/t times its untempered value, and so
    do log-target differences between random partitions."""
    build, start = MODELS[name]
    model = build()
    chain = KernelChain(model, start=start)
    inv_t = 0.37
    prior_t, params_t = temper(chain.prior, chain.params, inv_t)
    assert untempered(prior_t, params_t) == (chain.prior, chain.params)
    stats, data = chain.stats, chain.data
    # Primitives, dispatched from Python.
    for k in range(chain.n):
        for i in range(chain.n):
            ref = log_pred(chain.params, stats, data, i, k)
            assert log_pred(params_t, stats, data, i, k) == inv_t * ref
        assert log_marginal(params_t, stats, k) == inv_t * log_marginal(chain.params, stats, k)
    for size in range(chain.n):
        for n_blocks in range(1, chain.n):
            ref = log_prior_pred(chain.prior, size, n_blocks)
            assert log_prior_pred(prior_t, size, n_blocks) == inv_t * ref
            ref = log_prior_block(chain.prior, size, 2, n_blocks)
            assert log_prior_block(prior_t, size, 2, n_blocks) == inv_t * ref
    # Log-target differences (compiled log joint) over random partitions in the support.
    partitions = pmp.set_partitions(chain.n)
    exact = exact_posterior(model)
    rows = np.flatnonzero(np.isfinite(exact.log_post))
    rows = np.random.default_rng(1).choice(rows, size=12, replace=False)
    values = []
    for row in rows:
        chain.reload(partitions[row])
        values.append((log_joint_entry(chain.state, chain.prior, chain.params, chain.stats),
                       log_joint_entry(chain.state, prior_t, params_t, chain.stats)))
    values = np.array(values)
    assert np.all(np.isfinite(values))
    np.testing.assert_allclose(np.diff(values[:, 1]), inv_t * np.diff(values[:, 0]),
                               rtol=1e-12, atol=1e-12)
    # ... the untempered ones being the model's own log-density differences.
    np.testing.assert_allclose(np.diff(values[:, 0]), np.diff(exact.log_post[rows]),
                               rtol=1e-9, atol=1e-9)


def test_temper_validates():
    with pytest.raises(ValueError, match="inverse temperature"):
        temper(None, None, 0.0)
    with pytest.raises(ValueError, match="inverse temperature"):
        temper(None, None, np.inf)
    # A record without the inv_t field (a component written before tempering was a
    # field) is read untempered by the kernels and refused by temper, by name.
    Legacy = collections.namedtuple("Legacy", ["a"])
    with pytest.raises(TypeError, match="Legacy has no 'inv_t' field"):
        temper(Legacy(1), Legacy(2), 0.5)


def tempered_gibbs_move(inv_t):
    def move(rng, chain):
        failed = gibbs.run_sweeps(chain.stream, 1, chain.state, chain.prior._replace(inv_t=inv_t),
                                  chain.params, chain.stats, chain.data, chain.log_w, chain.order)
        check_item(failed, "tempered gibbs")
    return move


@pytest.mark.parametrize("name", ["beta-bernoulli", "kmeans-fixed-blocks"])
def test_tempered_gibbs_exact(name):
    """A Gibbs sweep on the tempered target samples p(z | y)^(1/t), t = 2."""
    build, start = MODELS[name]
    model = build()
    inv_t = 0.5
    exact = tempered_exact(exact_posterior(model), inv_t)
    assert_exact(model, exact=exact, sampler=lambda: kernel_draws(
        model, tempered_gibbs_move(inv_t), 1500, seed=3, start=start,
        wrap_params=lambda p: p._replace(inv_t=inv_t)))


# ------------------------------------------------- 2-3. mutation and random exchange

LADDER = (4.0, 2.0, 1.0)


def population_draws(model, temperatures, draws, *, chains=4, seed=0, start=None,
                     n_mutations=N_ITEMS, q_s=0.5, exchange=True, joint=False, kind=None,
                     boltzmann=False, selection_temperature=1.0, mutation_rate=0.3):
    """(chains, draws, n) canonical labels of the coldest member of a
    TemperedPopulation after each iteration (mutation of every member, then N random
    exchanges); with ``joint``, (chains, draws, N n): every rung's canonical labels,
    hottest first, each rung's labels offset by the blocks of the rungs before it
    (a canonical labelling of the N-tuple)."""
    target = PartitionTarget(model, model.rvs_to_values[model["z"]], "test")
    values, prior, per_lik = target.params(model.initial_point())
    n = target.n
    labels = np.zeros(n, dtype=np.int64) if start is None else np.asarray(start, np.int64)
    chain = target.new_chain_state(labels, values, per_lik)
    params, _, data = target.kernel_args(chain, values, per_lik)
    n_rungs = len(temperatures)
    out = []
    for c in range(chains):
        population = TemperedPopulation(chain, temperatures)
        stream = new_stream(np.random.SeedSequence([seed, c]))
        rows = np.empty((draws, n_rungs * n if joint else n), dtype=np.int64)
        for t in range(draws):
            if kind is None or crossover.draw_uniform(stream) < mutation_rate:
                check_item(population.mutate(stream, prior, params, data, n_mutations, q_s))
            else:
                population.update_log_targets(prior, params)
                population.crossover(stream, prior, params, data, n_rungs, kind, boltzmann,
                                     selection_temperature)
            if exchange:
                population.update_log_targets(prior, params)
                population.exchange(stream, n_rungs)
            if joint:
                offset = 0
                for r in range(n_rungs):
                    canon = pmp.canonicalize(population.at_rung(r).state.labels)
                    rows[t, r * n:(r + 1) * n] = canon + offset
                    offset += canon.max() + 1
            else:
                rows[t] = pmp.canonicalize(population.coldest().state.labels)
        out.append(rows)
        if exchange and n_rungs > 1:
            assert population.exchange_proposed.sum() == draws * n_rungs
            assert 0 < population.exchange_accepted.sum() < population.exchange_proposed.sum()
        assert population.mutation_outcomes[[1, 3]].sum() > 0
        if kind is not None:
            assert population.crossover_outcomes[crossover.ACCEPTED] > 0
            assert population.crossover_outcomes[crossover.REJECTED] > 0
            assert 0 < population.crossover_changed <= population.crossover_outcomes[
                crossover.ACCEPTED]
    return np.stack(out)


@pytest.mark.parametrize(("name", "exchange"), [
    ("beta-bernoulli", False), ("beta-bernoulli", True),
    ("kmeans-fixed-blocks", False), ("kmeans-fixed-blocks", True),
    ("dirichlet-multinomial", True),
], ids=lambda v: {False: "mutation", True: "mutation+exchange"}.get(v, v))
def test_population_coldest_exact(name, exchange):
    """3-rung ladder: the coldest member samples the exact posterior, with mutation
    alone (each member its own chain) and with random exchanges."""
    build, start = MODELS[name]
    model = build()
    assert_exact(model, sampler=lambda: population_draws(
        model, LADDER, 2500, seed=11, start=start, exchange=exchange))


@pytest.mark.parametrize("name", ["beta-bernoulli", "kmeans-fixed-blocks"])
def test_population_joint_exact(name):
    """n = 4, 2 rungs (t = 3, 1): the joint distribution of the whole population (all
    pairs of partitions) is the product of the tempered targets."""
    n, temperatures = 4, (3.0, 1.0)
    if name == "beta-bernoulli":
        model, start = bernoulli_model(n=n, seed=4), None
    else:
        model, start = kmeans_model(n=n, k=2, seed=5), k_block_start(n, 2)
    exact = exact_posterior(model)
    partitions = exact.partitions
    offsets = partitions.max(axis=1) + 1
    pairs, log_p = [], []
    for a, row_a in enumerate(partitions):
        for b, row_b in enumerate(partitions):
            pairs.append(np.concatenate([row_a, row_b + offsets[a]]))
            log_p.append(exact.log_post[a] / temperatures[0] + exact.log_post[b] / temperatures[1])
    log_p = np.array(log_p)
    joint = Exact(np.array(pairs), log_p - logsumexp(log_p))
    assert_exact(model, exact=joint, sampler=lambda: population_draws(
        model, temperatures, 3000, seed=12, start=start, n_mutations=n, joint=True))


KINDS = {"two_new": crossover.TWO_NEW, "one_new": crossover.ONE_NEW,
         "scrc_same": crossover.SCRC_SAME, "scrc_random": crossover.SCRC_RANDOM}


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("kind", list(KINDS))
def test_population_coldest_exact_crossover(name, kind):
    """3-rung ladder, Algorithm 4.1 (mutation with probability 0.3, else N crossovers
    of one kind with Boltzmann "-b-b" selection; then N exchanges): the coldest
    member samples the exact posterior."""
    build, start = MODELS[name]
    model = build()
    assert_exact(model, sampler=lambda: population_draws(
        model, LADDER, 2500, seed=11, start=start, kind=KINDS[kind], boltzmann=True))


def joint_exact(exact, temperatures):
    """The product of the tempered targets over N-tuples of partitions, each tuple
    encoded as in :func:`population_draws` (``joint=True``)."""
    partitions = exact.partitions
    offsets = partitions.max(axis=1) + 1
    rows, log_p = [], []
    for combo in itertools.product(range(len(partitions)), repeat=len(temperatures)):
        offset, row = 0, []
        for a in combo:
            row.append(partitions[a] + offset)
            offset += offsets[a]
        rows.append(np.concatenate(row))
        log_p.append(sum(exact.log_post[a] / t for a, t in zip(combo, temperatures)))
    log_p = np.array(log_p)
    return Exact(np.array(rows), log_p - logsumexp(log_p))


@pytest.mark.parametrize("boltzmann", [False, True], ids=["r-r", "b-b"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_population_joint_exact_crossover(kind, boltzmann):
    """n = 4, 2 rungs (t = 3, 1), each crossover kind with mutation (rate 0.3) and
    exchanges, both selection rules (s = 1): the joint distribution of the population
    is the product of the tempered targets. (At n = 4 few crossovers change a
    partition, so this test is weak on the selection terms; the ratio test against
    enumeration below is the sharp one.)"""
    n, temperatures = 4, (3.0, 1.0)
    model = bernoulli_model(n=n, seed=4)
    joint = joint_exact(exact_posterior(model), temperatures)
    assert_exact(model, exact=joint, sampler=lambda: population_draws(
        model, temperatures, 3000, seed=12, n_mutations=n, joint=True, kind=KINDS[kind],
        boltzmann=boltzmann))


def enumerate_crossover(kind, boltzmann, inv_s, labels, log_pi):
    """``{population: probability}`` of the outcomes of one crossover of ``kind`` from
    the population ``labels`` (per rung, slot labels), by enumerating every random
    choice of §3.3-3.5 as the paper states them (an independent transcription: no
    cancellation assumed). ``log_pi``: per rung, the log target up to a constant.
    Keys: tuples of per-rung label tuples."""
    n_rungs = len(labels)
    lw = np.asarray(log_pi, dtype=float) * inv_s
    out = {}

    def pick(r, skip=None):
        rungs = [q for q in range(n_rungs) if q != skip]
        return np.exp(lw[r] - logsumexp(lw[rungs])) if boltzmann else 1.0 / len(rungs)

    def add(new, p):
        key = tuple(tuple(int(v) for v in row) for row in new)
        out[key] = out.get(key, 0.0) + p

    def table(a, b):
        cells = {}
        for h, (k, l) in enumerate(zip(a, b)):
            cells.setdefault((int(k), int(l)), []).append(h)
        cols = {}
        for k, l in sorted(cells):
            cols.setdefault(k, []).append(l)
        return cells, cols, [k for k in cols if len(cols[k]) >= 2]

    if kind == crossover.TWO_NEW:
        for i, j in itertools.permutations(range(n_rungs), 2):
            cells, cols, u = table(labels[i], labels[j])
            if len(u) < 2:
                continue
            for k1, k2 in itertools.permutations(u, 2):
                for l1 in cols[k1]:
                    v2 = [l for l in cols[k2] if l != l1]
                    for l2 in v2:
                        p = pick(i) * pick(j, i) / (len(u) * (len(u) - 1)) / len(cols[k1])
                        new = [row.copy() for row in labels]
                        for h in cells[k1, l1]:
                            new[i][h], new[j][h] = k2, l2
                        for h in cells[k2, l2]:
                            new[i][h], new[j][h] = k1, l1
                        add(new, p / len(v2))
        return out
    for i1 in range(n_rungs):
        neighbours = [q for q in (i1 - 1, i1 + 1) if 0 <= q < n_rungs]
        for i2 in neighbours:
            for parent, child in ((i1, i2), (i2, i1)):
                if boltzmann:
                    p3 = np.exp(lw[parent] - np.logaddexp(lw[i1], lw[i2]))
                else:
                    p3 = 0.5
                p_sel = pick(i1) / len(neighbours) * p3
                cells, cols, u = table(labels[parent], labels[child])
                for k1 in u:
                    v = cols[k1]
                    for l1, l2 in itertools.permutations(v, 2):
                        p_kl = p_sel / len(u) / (len(v) * (len(v) - 1))
                        cell1, cell2 = cells[k1, l1], cells[k1, l2]
                        big_h = cell1 + cell2
                        if kind == crossover.ONE_NEW:
                            options = [(cell2, 1.0)]  # H_1 (to l1) = the other cell
                        elif kind == crossover.SCRC_SAME:
                            options = [(h1, 1.0 / comb(len(big_h), len(cell1)))
                                       for h1 in itertools.combinations(big_h, len(cell1))]
                        else:
                            options = [(h1, 1.0 / ((len(big_h) - 1) * comb(len(big_h), size)))
                                       for size in range(1, len(big_h))
                                       for h1 in itertools.combinations(big_h, size)]
                        for h1, p_h in options:
                            new = [row.copy() for row in labels]
                            for h in big_h:
                                new[child][h] = l1 if h in h1 else l2
                            add(new, p_kl * p_h)
    return out


@pytest.mark.parametrize("boltzmann", [False, True], ids=["r-r", "b-b"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_crossover_ratio_against_enumeration(kind, boltzmann):
    """Each crossover's log ratio equals sum_r (1/t_r) log(pi(y_r)/pi(x_r)) + log T(y,
    x) - log T(x, y), T by enumerating every selection, (k, l) choice and
    reallocation (:func:`enumerate_crossover`), pi from the model: 3 rungs, so the
    middle rung's child has two possible parents (eq. 8)."""
    kind = KINDS[kind]
    model = bernoulli_model(n=5, seed=2)
    exact = exact_posterior(model)
    chain = KernelChain(model)
    target, values, per_lik = chain.target, chain.values, chain.per_lik
    params, _, data = target.kernel_args(
        target.new_chain_state(np.zeros(5, dtype=np.int64), values, per_lik), values, per_lik)
    temperatures, inv_s = (4.0, 2.0, 1.0), 1.0 / 0.7
    population = TemperedPopulation(
        target.new_chain_state(np.zeros(5, dtype=np.int64), values, per_lik), temperatures)
    rng = np.random.default_rng(kind)

    def log_pi(rows):
        return [exact.log_post[exact.codes(pmp.canonicalize(row))] for row in rows]

    checked = 0
    for trial in range(200):
        for member, row in zip(population.members, rng.choice(len(exact.partitions), 3)):
            copy_into(member, target.new_chain_state(exact.partitions[row], values, per_lik))
        population.member_of_rung[:] = rng.permutation(3)
        population.update_log_targets(chain.prior, params)
        x = [population.at_rung(r).state.labels.copy() for r in range(3)]
        outcome, log_ratio = population.crossover_once(new_stream([kind, trial]), chain.prior,
                                                       params, data, kind, boltzmann, inv_s)
        y = [population.at_rung(r).state.labels.copy() for r in range(3)]
        if outcome != crossover.ACCEPTED or all(np.array_equal(a, b) for a, b in zip(x, y)):
            continue
        key = [tuple(tuple(int(v) for v in row) for row in z) for z in (x, y)]
        fwd = enumerate_crossover(kind, boltzmann, inv_s, x, log_pi(x))[key[1]]
        rev = enumerate_crossover(kind, boltzmann, inv_s, y, log_pi(y))[key[0]]
        ref = sum((b - a) / t for a, b, t in zip(log_pi(x), log_pi(y), temperatures))
        ref += np.log(rev) - np.log(fwd)
        assert abs(log_ratio - ref) < 1e-9, (x, y, log_ratio, ref)
        # ... and the kernel kept each member's log target current.
        population_log = population.log_targets.copy()
        population.update_log_targets(chain.prior, params)
        np.testing.assert_allclose(population_log, population.log_targets, rtol=1e-12)
        checked += 1
    assert checked >= 15, checked


def test_mutation_ratio_against_enumeration():
    """Each §3.1 ratio equals f(y)/f(x) T(y, x)/T(x, y) computed independently: the
    proposal probabilities by enumerating the moves' cases, f from the model."""
    model = bernoulli_model(n=5, seed=2)
    exact = exact_posterior(model)
    chain = KernelChain(model)
    prior_t, params_t = temper(chain.prior, chain.params, 0.5)
    q_s = 0.3
    rng = np.random.default_rng(0)
    for row in rng.choice(len(exact.partitions), size=20, replace=False):
        x = exact.partitions[row]
        for j in range(5):
            chain.reload(x)
            stream = new_stream([int(row), j])
            outcome, log_ratio = mutation.mutation_entry(stream, chain.state, prior_t, params_t,
                                                         chain.stats, chain.data, j, q_s)
            accepted = outcome in (mutation.SPLIT_ACCEPTED, mutation.MERGE_ACCEPTED)
            y = chain.labels()
            if not accepted:
                continue  # the proposal is not observable after a rejection
            assert not np.array_equal(x, y)
            ref = 0.5 * (exact.log_post[exact.codes(y)] - exact.log_post[row])
            ref += np.log(proposal_probability(y, x, j, q_s))
            ref -= np.log(proposal_probability(x, y, j, q_s))
            assert abs(log_ratio - ref) < 1e-9, (x, y, j, log_ratio, ref)


def proposal_probability(x, y, j, q_s):
    """T(x, y) of §3.1 for item j, by the cases of the move (an independent
    transcription: blocks as sets)."""
    blocks = [set(np.flatnonzero(x == k)) for k in range(x.max() + 1)]
    k0 = next(b for b in blocks if j in b)
    big_k = len(blocks)
    options = {}  # proposal (canonical tuple) -> probability

    def add(z, p):
        key = tuple(pmp.canonicalize(z))
        options[key] = options.get(key, 0.0) + p

    def split():
        z = x.copy()
        z[j] = x.max() + 1
        return z

    def merges():
        for b in blocks:
            if b is not k0:
                z = x.copy()
                z[j] = x[next(iter(b))]
                yield z

    if len(k0) == 1:
        for z in merges():
            add(z, 1.0 / (big_k - 1))
    elif big_k == 1:
        add(split(), 1.0)
    else:
        add(split(), q_s)
        for z in merges():
            add(z, (1 - q_s) / (big_k - 1))
    return options.get(tuple(pmp.canonicalize(y)), 0.0)


# ------------------------------------------------------------------ 4. pmp PBC step


@pytest.mark.parametrize(("kind", "selection"), [("one_new", "boltzmann"),
                                                  ("two_new", "random")])
def test_pbc_step_exact(kind, selection):
    """pm.sample with the PBC step (Algorithm 4.1: mutation with probability 0.3, else
    N crossovers; N exchanges; 3 rungs): the trace (the coldest member) is exact; the
    stats count every member's mutations, the crossovers and the exchanges per
    adjacent pair of rungs."""
    model = bernoulli_model()
    step = PBC([model["z"]], model=model, temperatures=LADDER, n_mutations=N_ITEMS,
               crossover=kind, selection=selection)
    _, idata = assert_exact(model, draws=2500, seed=13, step=[step])
    stats = idata.sample_stats
    mutated = stats["mutated"].values.astype(bool)
    assert 0.2 < mutated.mean() < 0.4  # p_m = 0.3
    mutations = (stats["split_proposed"] + stats["merge_proposed"]).values
    assert int(mutations.max()) <= len(LADDER) * N_ITEMS
    assert np.all(mutations[~mutated] == 0)
    assert int(stats["split_accepted"].sum()) > 0 and int(stats["merge_accepted"].sum()) > 0
    crossed = stats["crossover_proposed"].values
    accepted_x = stats["crossover_accepted"].values
    assert np.all(crossed[mutated] == 0) and np.all(crossed <= len(LADDER))
    assert 0 < accepted_x.sum() < crossed.sum() and np.all(accepted_x <= crossed)
    changed = stats["crossover_changed"].values
    assert 0 < changed.sum() and np.all(changed <= accepted_x)
    proposed = np.asarray(stats["exchange_proposed"].values, dtype=np.int64)
    accepted = np.asarray(stats["exchange_accepted"].values, dtype=np.int64)
    assert proposed.shape == (4, 2500, len(LADDER) - 1)
    proposed, accepted = proposed.reshape(-1, 2), accepted.reshape(-1, 2)
    assert np.all(proposed.sum(axis=1) == len(LADDER))
    assert np.all(accepted <= proposed) and 0 < accepted.sum() < proposed.sum()
    np.testing.assert_allclose(stats["log_target"], stats["log_joint"] / LADDER[-1])
    # Sampling mode (tau_min = 1): the best log joint is tracked, no partition kept.
    best = stats["best_log_joint"].values
    assert np.all(np.diff(best, axis=1) >= 0) and np.all(best >= stats["log_joint"].values)
    assert all(np.asarray(b).size == 0 for b in stats["best_partition"].values.ravel())


def test_pbc_optimisation_mode():
    """tau_min < 1 (the §7.3 k-means problem, FixedBlocks + KMeansEnergy): the step
    reports the best partition any member visited and its log joint; on a small
    problem it is the mode."""
    model = kmeans_model()
    exact = exact_posterior(model)
    step = PBC([model["z"]], model=model, temperatures=(4.0, 2.0, 0.5), n_mutations=N_ITEMS,
               crossover="scrc_random", mode="optimise")
    idata = sample(model, draws=150, tune=0, chains=1, seed=4, step=[step],
                   initvals=[{"z": k_block_start(N_ITEMS, 3)}])
    stats = idata.sample_stats
    best = np.asarray(stats["best_partition"].values[0, -1], dtype=np.int64)
    assert np.array_equal(best, exact.partitions[np.argmax(exact.log_post)])
    chain = KernelChain(model, start=best)
    log_joint = log_joint_entry(chain.state, chain.prior, chain.params, chain.stats)
    assert stats["best_log_joint"].values[0, -1] == pytest.approx(log_joint, rel=1e-12)
    assert stats["best_log_joint"].values[0, -1] >= stats["log_joint"].values.max()


# ------------------------------------------- issue 34: what t_N samples is asked for by name


def test_pbc_coldest_rung_must_match_mode():
    """Issue 34, item 2: temperatures=[8, 4, 2] sampled the posterior raised to 1/2
    without a word. Sampling (the default mode) needs t_N = 1; t_N < 1 is
    optimisation and any other t_N a tempered target, each only by name; the
    message names 'temperatures' and 'mode' and says what to do."""
    model = bernoulli_model()
    z = model["z"]
    with pytest.raises(ValueError, match=r"'temperatures'.*t_N = 2.*1/2.*mode='tempered'"):
        PBC([z], model=model, temperatures=[8.0, 4.0, 2.0])
    with pytest.raises(ValueError, match=r"'mode' = 'sample'.*'temperatures'.*mode='optimise'"):
        PBC([z], model=model, temperatures=[4.0, 2.0, 0.5])
    with pytest.raises(ValueError, match=r"'mode' = 'optimise'.*t_N < 1"):
        PBC([z], model=model, temperatures=[8.0, 4.0, 2.0], mode="optimise")
    assert PBC([z], model=model, temperatures=LADDER).mode == "sample"
    assert PBC([z], model=model, temperatures=[4.0, 2.0, 0.5], mode="optimise").optimising
    tempered = PBC([z], model=model, temperatures=[8.0, 4.0, 2.0], mode="tempered")
    assert not tempered.optimising
    # pbc_ladder agrees: tau_min = 1 when sampling, below 1 (given) when optimising.
    with pytest.raises(ValueError, match=r"'mode' = 'sample'.*'tau_min'"):
        pmp.pbc_ladder([z], model=model, tau_min=0.5)
    with pytest.raises(ValueError, match=r"'mode' = 'optimise' needs 'tau_min'"):
        pmp.pbc_ladder([z], model=model, mode="optimise")


def test_pbc_tempered_mode_exact():
    """mode="tempered" with t_N = 2: the trace samples pi^(1/2) exactly (the target
    [8, 4, 2] gave silently before it had to be asked for)."""
    model = bernoulli_model()
    exact = tempered_exact(exact_posterior(model), 0.5)
    step = PBC([model["z"]], model=model, temperatures=(8.0, 4.0, 2.0), mode="tempered",
               crossover="two_new", selection="random")
    _, idata = assert_exact(model, exact=exact, draws=1500, seed=5, step=[step])
    assert all(np.asarray(b).size == 0
               for b in idata.sample_stats["best_partition"].values.ravel())


def test_pbc_default_mutations_are_a_sweep():
    """Issue 34, item 5: a mutation iteration mutates every member n times by default
    (one sweep's worth, n uniform items), not once."""
    model = bernoulli_model()
    step = PBC([model["z"]], model=model, temperatures=LADDER, mutation_rate=1.0)
    assert step.n_mutations == N_ITEMS
    idata = sample(model, draws=5, tune=0, chains=1, seed=2, step=[step])
    stats = idata.sample_stats
    mutations = (stats["split_proposed"] + stats["merge_proposed"]).values
    assert np.all(mutations == len(LADDER) * N_ITEMS)


def within_ss(x, labels):
    """The k-means objective W: the within-block sum of squares."""
    return sum(float(((x[labels == k] - x[labels == k].mean(axis=0)) ** 2).sum())
               for k in np.unique(labels))


def lloyd_best(x, k, starts, seed):
    """The best W of ``starts`` runs of Lloyd's k-means from k random points."""
    rng = np.random.default_rng(seed)
    best = np.inf
    for _ in range(starts):
        centres = x[rng.choice(len(x), size=k, replace=False)]
        for _ in range(100):
            labels = np.argmin(((x[:, None, :] - centres[None]) ** 2).sum(axis=2), axis=1)
            new = np.array([x[labels == j].mean(axis=0) if np.any(labels == j) else centres[j]
                            for j in range(k)])
            if np.allclose(new, centres):
                break
            centres = new
        best = min(best, within_ss(x, labels))
    return best


def test_pbc_optimise_defaults_reach_kmeans():
    """Issue 34, item 5 (context): optimisation mode with the defaults (k-means energy,
    FixedBlocks k = 4, n = 160, 20 rungs 60 -> 0.5, 300 iterations) ended about 40
    times above the best of 20 k-means runs with one mutation per member; a sweep's
    worth per member reaches it."""
    x, _ = pmp.datasets.pbc_normal(n_per_component=40, n_components=4, seed=3)
    with pm.Model() as model:
        z = pmp.FixedBlocks("z", n=x.shape[0], k=4)
        pmp.KMeansEnergy("y", z, temperature=1.0, observed=x)
    step = PBC([model["z"]], model=model, temperatures=np.geomspace(60.0, 0.5, 20),
               mode="optimise")
    idata = sample(model, draws=300, tune=0, chains=1, seed=0, step=[step])
    best = np.asarray(idata.sample_stats["best_partition"].values[0, -1], dtype=np.int64)
    assert within_ss(x, best) <= 1.001 * lloyd_best(x, 4, 20, seed=0)


def three_groups_model():
    """The README's PBC model: 60 points in three groups (Goswami et al.'s §7.3.2
    generator), CRP + CollapsedNormal at the generating hyperparameters."""
    y, _ = pmp.datasets.pbc_normal(n_per_component=20, n_components=3, seed=1)
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=len(y))
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=np.sqrt(30.0), sigma=1.0, observed=y)
    return model


def test_pbc_ladder_meets_its_band():
    """Issue 34, item 5: the §4 ladder on 60 points in three groups had 7 of 26
    neighbouring pairs below its own 60 % band (down to Â = 0.15) and said nothing.
    Now every pair is in the band (the grid refined where it was too coarse), and a
    ladder that cannot be is reported with a LadderWarning naming the pairs."""
    model = three_groups_model()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        temperatures, acceptances = pmp.pbc_ladder(model=model, tau_max=20.0, seed=1)
    assert temperatures[0] == 20.0 and temperatures[-1] == 1.0
    assert np.all(acceptances >= 0.6), acceptances
    assert not [w for w in caught if issubclass(w.category, pmp.LadderWarning)]
    with pytest.warns(pmp.LadderWarning, match=r"below the band's 0.6.*\(1\.\d+, 1\.\d+\): 0\."):
        _, acceptances = pmp.pbc_ladder(model=model, tau_max=20.0, seed=1, max_refinements=0)
    assert np.any(acceptances < 0.6)


def test_readme_pbc_snippet():
    """The README's "Tempered populations (PBC)" block, run verbatim: it defines its
    model, its ladder meets the band, and it converges (R-hat <= 1.05 on the number
    of blocks and the largest block's share) to what plain Gibbs gives on the same
    model. Issue 34, item 5: the snippet did not define its model, and on this model
    the old defaults (one mutation per member, the unrefined ladder) gave K = 6.5 with
    R-hat 1.4 where Gibbs gives 3.6."""
    import arviz as az

    namespace = run_snippet("Tempered populations (PBC)")
    idata, model = namespace["idata"], namespace["model"]
    assert np.all(namespace["acceptances"] >= 0.6)
    names = ["z_n_clusters", "z_largest_cluster_frac"]
    rhat = az.rhat(idata, var_names=names)
    assert all(float(rhat[v]) <= 1.05 for v in names), rhat
    gibbs = sample(model, draws=1000, chains=2, seed=3, step=[pmp.Gibbs([model["z"]], model=model)])
    for v, tol in zip(names, (0.15, 0.02)):
        pbc_mean = float(idata.posterior[v].mean())
        gibbs_mean = float(gibbs.posterior[v].mean())
        assert abs(pbc_mean - gibbs_mean) < tol, (v, pbc_mean, gibbs_mean)


def test_pbc_cores_match():
    """cores=2 gives the same draws as cores=1 for the same seed (independent
    populations per chain, streams from the chains' seeds)."""
    model = bernoulli_model()
    runs = []
    for cores in (1, 2):
        step = PBC([model["z"]], model=model, temperatures=LADDER, crossover="two_new")
        idata = sample(model, draws=40, tune=10, chains=2, seed=21, step=[step], cores=cores)
        runs.append((idata.posterior["z"].values, idata.sample_stats["log_joint"].values,
                     idata.sample_stats["crossover_accepted"].values))
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)


def test_pbc_ladder_recipe():
    """§4's ladder: two preliminary runs, neighbours' estimated exchange acceptance
    (eq. 12) at least 60 %, and the estimates agree with eq. (12) computed exactly
    by enumeration."""
    model = bernoulli_model(n=5, seed=2)
    exact = exact_posterior(model)
    temperatures, acceptances = pmp.pbc_ladder([model["z"]], model=model, tau_min=1.0,
                                               draws=400, grid_size=25, seed=3,
                                               max_temperature=200.0)
    assert temperatures[-1] == pytest.approx(1.0) and np.all(np.diff(temperatures) < 0)
    assert len(temperatures) >= 2 and acceptances.shape == (len(temperatures) - 1,)
    assert np.all(acceptances[:-1] >= 0.6) and np.all(acceptances <= 1.0)
    log_pi = exact.log_post[np.isfinite(exact.log_post)]
    for (t_i, t_j), a_hat in zip(itertools.pairwise(temperatures), acceptances):
        f_i = np.exp(log_pi / t_i - logsumexp(log_pi / t_i))
        f_j = np.exp(log_pi / t_j - logsumexp(log_pi / t_j))
        log_r = (1 / t_i - 1 / t_j) * np.subtract.outer(log_pi, log_pi)  # [y, x]: x at i
        exact_a = np.sum(np.outer(f_j, f_i) * np.exp(np.minimum(log_r, 0.0)))
        assert abs(a_hat - exact_a) < 0.06, (t_i, t_j, a_hat, exact_a)
    # A given tau_max skips the first run and tops the ladder.
    temperatures, _ = pmp.pbc_ladder([model["z"]], model=model, tau_max=6.0, draws=100,
                                     grid_size=10, seed=3)
    assert temperatures[0] == pytest.approx(6.0) and temperatures[-1] == pytest.approx(1.0)


def test_pbc_refuses_free_hyperparameter():
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        z = pmp.CRP("z", alpha=alpha, n=5)
        pmp.CollapsedBetaBernoulli("y", partition=z, a=1.0, b=1.0, observed=binary_data(5, 3, 1))
    with pytest.raises(PartitionModelError, match=r"alpha.*tempered targets.*fixed"):
        PBC([z], model=model, temperatures=LADDER)


@pytest.mark.parametrize("temperatures", [None, (), (1.0, 2.0), (2.0, 2.0), (2.0, -1.0),
                                          (np.inf, 1.0), [[2.0, 1.0]]])
def test_pbc_ladder_validation(temperatures):
    model = bernoulli_model()
    with pytest.raises(ValueError, match="temperatures|temperature"):
        PBC([model["z"]], model=model, temperatures=temperatures)


@pytest.mark.parametrize("kwargs", [
    {"split_probability": 0.0}, {"split_probability": 1.0}, {"n_mutations": 0},
    {"crossover": "one-new"}, {"crossover": None}, {"selection": "best"},
    {"selection_temperature": 0.0}, {"selection_temperature": np.inf},
    {"mutation_rate": 0.0}, {"mutation_rate": 1.5}, {"mutation_rate": "0.3"},
    {"mode": "optimize"}, {"mode": None}, {"mode": "optimise"},
], ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()))
def test_pbc_option_validation(kwargs):
    model = bernoulli_model()
    with pytest.raises((ValueError, TypeError), match=next(iter(kwargs))):
        PBC([model["z"]], model=model, temperatures=LADDER, **kwargs)


@pytest.mark.parametrize("kwargs", [
    {"tau_min": 0.0}, {"tau_max": 0.5}, {"acceptance": (0.7, 0.6)}, {"acceptance": 0.6},
    {"grid_size": 1}, {"draws": 1}, {"burn": 500}, {"hot_fraction": 0.0},
    {"tau_min": 0.5}, {"mode": "optimize"}, {"max_refinements": -1},
    {"mode": "optimise", "tau_min": 1.0},
], ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()))
def test_pbc_ladder_helper_validation(kwargs):
    model = bernoulli_model()
    with pytest.raises((ValueError, TypeError), match=next(iter(kwargs))):
        pmp.pbc_ladder([model["z"]], model=model, **kwargs)


def test_pbc_exported():
    """pmp.PBC is public but chosen with step=, never assigned by pm.sample."""
    assert pmp.PBC is PBC and "PBC" in pmp.__all__ and "pbc_ladder" in pmp.__all__
    assert PBC not in pm.step_methods.STEP_METHODS


def test_same_partition():
    """The 'changed' count of accepted crossovers rests on this partition equality."""
    maps = np.zeros((2, 5), dtype=np.int64)
    same = [([0, 0, 1, 2, 1], [3, 3, 0, 4, 0]), ([0, 1, 2, 3, 4], [4, 3, 2, 1, 0])]
    differ = [([0, 0, 1, 2, 1], [0, 0, 1, 1, 1]), ([0, 0, 1, 2, 1], [0, 1, 1, 2, 1]),
              ([0, 0, 0, 0, 0], [0, 0, 0, 0, 1])]
    for x, y in same:
        assert crossover.same_partition(np.array(x), np.array(y), *maps)
    for x, y in differ:
        assert not crossover.same_partition(np.array(x), np.array(y), *maps)
        assert not crossover.same_partition(np.array(y), np.array(x), *maps)
