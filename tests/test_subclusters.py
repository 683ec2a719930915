"""pmp.SubClusters (Chang & Fisher 2013, exact form): exactness against all set
partitions (Beta-Bernoulli; Normal D = 2; alpha free; Pitman-Yor), a negative control
(the merge's Hastings term dropped) that the harness must fail, thread-independence
and refusals."""

import numpy as np
import pymc as pm
import pytest
from helpers import (KernelChain, alpha_free_bernoulli_model, assert_exact, binary_data,
                     exact_posterior, judge, kernel_draws)

import pymc_partitions as pmp
from pymc_partitions.kernels import subclusters
from pymc_partitions.kernels.components import beta_bernoulli
from pymc_partitions.kernels.components.explicit import explicit_width
from pymc_partitions.step_methods.target import PartitionModelError

HARD = False  # the negative control's launch: sampled sub-labels
ALPHA_GRID = {"alpha_log__": np.linspace(-25.0, 7.0, 1200)}


def bernoulli_model(n=6, seed=6, alpha=1.0, prior="crp"):
    with pm.Model() as model:
        if prior == "pitman_yor":
            z = pmp.PitmanYor("z", alpha=0.5, d=0.4, n=n)
        else:
            z = pmp.CRP("z", alpha=alpha, n=n)
        pmp.CollapsedBetaBernoulli("y", partition=z, a=0.5, b=0.8,
                                   observed=binary_data(n, 3, seed))
    return model


def normal_model(n=6, seed=2):
    rng = np.random.default_rng(seed)
    y = np.concatenate([rng.normal(-2, 1, (n // 2, 2)), rng.normal(2, 1, (n - n // 2, 2))])
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=0.7, n=n)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=2.0, sigma=1.0, observed=y)
    return model


def check_exact(model, draws, seed, grids=None, **kwargs):
    """assert_exact of the sub-cluster moves alone (no Gibbs sweeps)."""
    kwargs.setdefault("n_gibbs_sweeps", 0)
    step = pmp.SubClusters([model["z"]], model=model, **kwargs)
    return assert_exact(model, draws=draws, seed=seed, step=[step], grids=grids)[1]


@pytest.mark.parametrize(
    "kwargs",
    [{"n_proposals": 2, "n_launch": 2}, {"n_launch": 0},
     {"n_proposals": 2, "n_launch": 2, "launch": "sampled"}],
    ids=["launch2", "launch0-auto", "sampled"])
def test_beta_bernoulli_exact(kwargs):
    idata = check_exact(bernoulli_model(), 3000, 6, **kwargs)
    stats = idata.sample_stats
    assert int(stats["split_accepted"].sum()) > 0 and int(stats["merge_accepted"].sum()) > 0


def test_normal_exact():
    check_exact(normal_model(), 3000, 3, n_proposals=2, n_launch=2)


def test_alpha_free_exact():
    """alpha ~ Gamma(1, 1) free: pm.sample assigns it to pmp.EscobarWest."""
    model = alpha_free_bernoulli_model()
    check_exact(model, 5000, 21, ALPHA_GRID, n_proposals=3, n_launch=2)


def test_pitman_yor_exact():
    check_exact(bernoulli_model(prior="pitman_yor"), 4000, 61, n_proposals=3, n_launch=2)


# ------------------------------------------------------------------ negative control


def subclusters_move(drop_merge_hastings):
    """One iteration of the package's kernel: the parallel label update (the entry
    with no proposals), then two split/merge proposals through
    ``subclusters_proposal_entry``. With ``drop_merge_hastings`` a merge is decided
    on the collapsed target ratio alone (the merge's Hastings term, the launch's
    reverse-split probability and the selection ratio, dropped): the kernel's
    decision is overridden where the two differ (the kernel's merges with a finite
    Hastings term already decide on the target alone)."""
    work = None
    outcomes = np.zeros(subclusters.N_OUTCOMES, dtype=np.int64)

    def move(rng, chain):
        nonlocal work
        if work is None:
            sub = beta_bernoulli.alloc_stats(2, chain.data[0].shape[1], chain.params)
            work = subclusters.work_arrays(chain.n, explicit_width(chain.params), sub)
        assert subclusters.subclusters_iteration(
            chain.stream, 0, 2, HARD, chain.state, chain.prior, chain.params, chain.stats,
            chain.data, work, outcomes) == 0
        for _ in range(2):
            before = chain.labels()
            outcome, target, hastings, log_u = subclusters.subclusters_proposal_entry(
                chain.stream, 2, HARD, chain.state, chain.prior, chain.params, chain.stats,
                chain.data, work)
            if not drop_merge_hastings or outcome < subclusters.MERGE_REJECTED_:
                continue
            if outcome == subclusters.MERGE_ACCEPTED_ and not log_u < target:
                chain.reload(before)
            elif outcome == subclusters.MERGE_REJECTED_ and log_u < target:
                chain.reload(pmp.canonicalize(merged_labels(before, work)))

    return move


def merged_labels(before, work):
    """``before`` with the blocks of the last proposal's items i and j united."""
    i, j = int(work[14][1]), int(work[14][2])
    merged = before.copy()
    merged[merged == before[j]] = before[i]
    return merged


def test_merge_without_hastings_term_is_caught():
    """The merge's Hastings term is the log probability (0 or -inf) that the launch
    on the union reproduces the two blocks; dropping it accepts merges that have no
    reverse split: merges become too frequent and K too small."""
    model = bernoulli_model(alpha=1.0)
    exact = exact_posterior(model)
    good = judge(exact, kernel_draws(model, subclusters_move(False), 2500, seed=3))
    assert good.passed, good.row()
    bad = judge(exact, kernel_draws(model, subclusters_move(True), 2500, seed=3))
    assert not bad.passed, bad.row()


# ------------------------------------------------------------------ threads, refusals


def test_same_draws_whatever_the_number_of_threads():
    import subprocess
    import sys

    script = (
        "import sys; sys.path.insert(0, 'tests');"
        "import numpy as np, numba; from helpers import KernelChain;"
        "from test_subclusters import normal_model;"
        "from pymc_partitions.kernels import subclusters;"
        "from pymc_partitions.kernels.components import normal;"
        "from pymc_partitions.kernels.components.explicit import explicit_width;"
        "m = normal_model(6000, seed=5); c = KernelChain(m, seed=1);"
        "w = subclusters.work_arrays(c.n, explicit_width(c.params),"
        " normal.alloc_stats(2, 2, c.params));"
        "o = np.zeros(subclusters.N_OUTCOMES, dtype=np.int64);"
        "[subclusters.subclusters_iteration(c.stream, 3, 3, False, c.state, c.prior, c.params,"
        " c.stats, c.data, w, o) for _ in range(5)];"
        "print(numba.get_num_threads(), ''.join(map(str, c.labels())))"
    )
    outs = []
    for threads in ("1", "2"):
        env = dict(__import__("os").environ, NUMBA_NUM_THREADS=threads)
        run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                             text=True, check=True)
        outs.append(run.stdout.split())
    assert outs[0][0] == "1" and outs[1][0] == "2"
    assert outs[0][1] == outs[1][1]


def test_refuses_unsupported_prior_and_likelihood():
    n = 5
    with pm.Model() as model:
        z = pmp.MFM("z", n=n, gamma=0.8, k_prior=np.full(n, 1.0 / n))
        pmp.CollapsedBetaBernoulli("y", partition=z, a=1.0, b=1.0, observed=binary_data(n, 3, 1))
    with pytest.raises(PartitionModelError, match="prior .* not supported.*pmp.Gibbs"):
        pmp.SubClusters([model["z"]], model=model)
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=n)
        pmp.KMeansEnergy("y", partition=z, temperature=1.0,
                         observed=np.arange(n * 2.0).reshape(n, 2) % 3)
    with pytest.raises(PartitionModelError, match="no explicit-parameter draws.*pmp.Gibbs"):
        pmp.SubClusters([model["z"]], model=model)


@pytest.mark.parametrize("kwargs, match", [({"n_launch": -1}, "n_launch"),
                                           ({"n_proposals": "many"}, "n_proposals"),
                                           ({"launch": "soft"}, "launch"),
                                           ({"ways": 2}, "ways"), ({"ways": -1}, "ways"),
                                           ({"n_multiway": 1.5}, "n_multiway")])
def test_invalid_settings(kwargs, match):
    model = bernoulli_model()
    with pytest.raises((TypeError, ValueError), match=match):
        pmp.SubClusters([model["z"]], model=model, **kwargs)


# ------------------------------------------------------------------ joint moves with sigma

SIGMA_GRID = {"sigma_log__": np.linspace(-7.0, 3.0, 1500)}


def sigma_model(n=6, seed=4):
    rng = np.random.default_rng(seed)
    y = np.concatenate([rng.normal(-1.5, 0.5, (n // 2, 2)), rng.normal(1.5, 0.5, (n - n // 2, 2))])
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=0.8, n=n)
        sigma = pm.HalfNormal("sigma", 1.0)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=2.0, sigma=sigma, observed=y)
    return model


def sigma_chain(model=None, draws=4000, seed=7):
    """``assert_exact``'s arguments for pmp.SubClusters([z, sigma]) with the joint moves
    doing all the work on z: one two-way and two three-way joint proposals per
    iteration (no split/merge at fixed sigma, no Gibbs sweeps). One chain checks both
    kinds: each negative control below breaks one of them."""
    model = sigma_model() if model is None else model
    step = pmp.SubClusters([model["z"], model["sigma"]], model=model, n_proposals=0,
                           n_joint=1, ways=3, n_multiway=2, n_launch=2, n_gibbs_sweeps=0)
    return dict(model=model, draws=draws, seed=seed, step=[step], grids=SIGMA_GRID)


def test_joint_sigma_exact():
    """z and sigma free, from SubClusters([z, sigma])'s joint moves alone: z's marginal
    is exact, and two-way and three-way joint splits and merges are all accepted."""
    idata = assert_exact(**sigma_chain())[1]
    stats = idata.sample_stats
    for kind in ("joint_split", "joint_merge", "multiway_split", "multiway_merge"):
        assert int(stats[f"{kind}_accepted"].sum()) > 0, kind


def test_joint_merge_without_reverse_split_is_caught(monkeypatch):
    """Dropping step 4 (a two-way merge needs its reverse split) accepts merges with no
    reverse move: too few blocks, which the harness must catch."""
    from pymc_partitions.step_methods.subclusters import JointHyperparameter

    monkeypatch.setattr(JointHyperparameter, "reverse_split_exists",
                        staticmethod(lambda labels, j, items, sub: True))
    with pytest.raises(AssertionError):
        assert_exact(**sigma_chain())


def test_multiway_merge_without_reverse_split_is_caught(monkeypatch):
    """Dropping the k-way merge's reverse check accepts merges of three blocks that no
    split proposes: too few blocks, which the harness must catch."""
    from pymc_partitions.step_methods.subclusters import JointHyperparameter

    monkeypatch.setattr(JointHyperparameter, "multiway_reverse_exists",
                        staticmethod(lambda blocks, sub, member_labels: True))
    with pytest.raises(AssertionError):
        assert_exact(**sigma_chain())


def test_joint_moves_read_set_data_at_chain_start():
    """pm.set_data after the step is built: a chain's k-way launches run on the new
    values, and the chain finds the new grouping (items 0-9 with 30-39; the posterior
    also visits singletons now and then, so pairs are averaged)."""
    rng = np.random.default_rng(3)
    two = np.r_[rng.normal(-3.0, 0.3, 20), rng.normal(3.0, 0.3, 20)]
    new = np.r_[two[:10], two[20:], two[10:20]][:, None]  # 0-9 and 30-39: one group
    with pm.Model() as model:
        d = pm.Data("d", two[:, None])
        z = pmp.CRP("z", alpha=1.0, n=40)
        sigma = pm.HalfNormal("sigma", 1.0)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=5.0, sigma=sigma, observed=d)
        step = pmp.SubClusters([z, sigma], ways=3)
        pm.set_data({"d": new})
    step.start_chain(np.random.default_rng(0))
    np.testing.assert_array_equal(step._joint.points, new)
    with model:
        idata = pm.sample(30, tune=10, chains=1, step=[step], random_seed=2, progressbar=False,
                          compute_convergence_checks=False)
    z_draws = idata.posterior["z"].values[0]
    group_a, group_b = np.r_[0:10, 30:40], np.arange(10, 30)
    within = z_draws[:, group_a, None] == z_draws[:, None, group_a]
    across = z_draws[:, group_a, None] == z_draws[:, None, group_b]
    assert within.mean() > 0.8  # the old values would split 0-9 from 30-39
    assert across.mean() < 0.05  # and join 0-9 with 10-19


def test_kmeans_launch_is_deterministic_and_keeps_the_seeds():
    from pymc_partitions.step_methods.subclusters import kmeans_launch

    rng = np.random.default_rng(0)
    points = np.concatenate([rng.normal(c, 0.1, (50, 1)) for c in (-3.0, 0.0, 3.0)])
    seeds = np.array([10, 60, 140])
    sub = kmeans_launch(points, seeds, 5)
    np.testing.assert_array_equal(sub, np.repeat([0, 1, 2], 50))
    # seeds in one cluster: the launch still keeps each seed's sub-label, and repeats
    seeds = np.array([3, 7, 120])
    first = kmeans_launch(points, seeds, 5)
    np.testing.assert_array_equal(first[seeds], [0, 1, 2])
    np.testing.assert_array_equal(first, kmeans_launch(points.copy(), seeds.copy(), 5))


def test_joint_refuses_prior_hyperparameter_and_two_hyperparameters():
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        z = pmp.CRP("z", alpha=alpha, n=4)
        sigma = pm.HalfNormal("sigma", 1.0)
        tau = pm.HalfNormal("tau", 1.0)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=tau, sigma=sigma,
                            observed=np.zeros((4, 1)))
    with pytest.raises(PartitionModelError, match="alpha"):
        pmp.SubClusters([z, alpha], model=model)
    with pytest.raises(ValueError, match="one likelihood hyperparameter"):
        pmp.SubClusters([z, sigma, tau], model=model)


def test_readme_large_n_snippet():
    """The README's SubClusters([z, sigma]) block: from one block it finds the three
    groups within 30 iterations (three blocks of >= 1 % of the points; the posterior
    keeps a few tiny blocks beside them now and then)."""
    from readme import run_snippet

    namespace = run_snippet("Large N (sub-cluster sampler)")
    sizes = np.bincount(namespace["idata"].posterior["z"].values[0, -1])
    assert int(np.sum(sizes >= 0.01 * sizes.sum())) == 3
    stats = namespace["idata"].sample_stats
    assert int(stats["joint_split_accepted"].sum()) >= 2
