"""pmp.Gibbs against the exact posterior over all set partitions (DESIGN §6) for the
Normal-Inverse-Gamma, Poisson-Gamma and Dirichlet-multinomial likelihoods and the
k-means energy; one conjugate hyperparameter per family sampled by NUTS."""

import json

import numpy as np
import pymc as pm
from helpers import assert_exact, data_file, two_groups

import pymc_partitions as pmp
from pymc_partitions.kernels import assign_labels, new_state, summarise
from pymc_partitions.kernels.priors import crp

MOTIFS = "motifs/jaspar2014_core_width8_counts.json"


def load_motifs():
    """The JASPAR 2014 width-8 count matrices as an (n, 8, 4) array (positions x
    A, C, G, T; the file stores 4 x 8) and their matrix ids."""
    records = json.loads(data_file(MOTIFS).read_text())
    counts = np.array([np.asarray(r["counts"], dtype=float).T for r in records])
    return counts, [r["matrix_id"] for r in records]


def counts_data(n, d, seed):
    rng = np.random.default_rng(seed)
    rates = rng.gamma(2.0, 2.0, size=(2, d))
    return rng.poisson(rates[rng.integers(0, 2, n)]).astype(float)


def matrices_data(n, p, c, seed):
    rng = np.random.default_rng(seed)
    theta = rng.dirichlet(np.full(c, 1.0), size=(2, p))
    z = rng.integers(0, 2, n)
    return np.array([[rng.multinomial(4, theta[z[i], q]) for q in range(p)] for i in range(n)],
                    dtype=float)


def exact_test(n, build, draws, seed, grids=None):
    """pmp.Gibbs on CRP(1) and the likelihood ``build(z)`` adds; a free
    hyperparameter (``pm.sample`` assigns it to pmp.HyperSlice) is integrated out by
    quadrature on ``grids``."""
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=n)
        build(z)
    assert_exact(model, draws=draws, seed=seed, grids=grids)


# ---------------------------------------------------------------- Normal-Inverse-Gamma


def test_nig_fixed_hyperparameters_vector():
    Y = two_groups(6, 2, seed=1)
    exact_test(
        6,
        lambda z: pmp.CollapsedNormalInverseGamma(
            "y", z, mu0=[0.0, 0.5], kappa0=[0.5, 1.0], a0=[2.0, 1.5], b0=[1.0, 2.0], observed=Y
        ),
        draws=3000,
        seed=1,
    )


def test_nig_b0_free_by_hyper_slice():
    Y = two_groups(5, 2, seed=2)

    def build(z):
        b0 = pm.Gamma("b0", 2.0, 1.0)
        return b0, pmp.CollapsedNormalInverseGamma("y", z, mu0=0.0, kappa0=0.5, a0=2.0, b0=b0,
                                                    observed=Y)

    exact_test(5, build, draws=2000, seed=2, grids={"b0_log__": np.linspace(-9.0, 5.0, 400)})


# ---------------------------------------------------------------- Poisson-Gamma


def test_poisson_gamma_fixed_hyperparameters_vector():
    Y = counts_data(6, 3, seed=3)
    exact_test(
        6,
        lambda z: pmp.CollapsedPoissonGamma("y", z, a=[1.0, 2.0, 0.5], b=[0.5, 1.0, 0.3], observed=Y),
        draws=3000,
        seed=3,
    )


def test_poisson_gamma_b_free_by_hyper_slice():
    Y = counts_data(5, 2, seed=4)

    def build(z):
        b = pm.Gamma("b", 2.0, 2.0)
        return b, pmp.CollapsedPoissonGamma("y", z, a=2.0, b=b, observed=Y)

    exact_test(5, build, draws=2000, seed=4, grids={"b_log__": np.linspace(-9.0, 5.0, 400)})


# ---------------------------------------------------------------- Dirichlet-multinomial


def test_dirichlet_multinomial_fixed_concentration_matrix():
    Y = matrices_data(6, 2, 3, seed=5)
    conc = np.array([[0.5, 1.0, 2.0], [1.0, 1.0, 0.3]])
    exact_test(
        6,
        lambda z: pmp.CollapsedDirichletMultinomial("y", z, concentration=conc, observed=Y),
        draws=3000,
        seed=5,
    )


def test_dirichlet_multinomial_concentration_free_by_hyper_slice():
    Y = matrices_data(5, 2, 4, seed=6)

    def build(z):
        c = pm.Gamma("c", 2.0, 2.0)
        return c, pmp.CollapsedDirichletMultinomial("y", z, concentration=c, observed=Y)

    exact_test(5, build, draws=2000, seed=6, grids={"c_log__": np.linspace(-9.0, 5.0, 400)})


MOTIF_IDS = ["MA0031.1", "MA0032.1", "MA0033.1", "MA0157.1", "MA0561.1", "MA0562.1"]


def test_dirichlet_multinomial_real_motifs():
    """JASPAR 2014 width-8 motifs (8 x 4 count matrices, Goswami et al. §7.2 set-up
    with c = 2): the kernel's log joint equals the model's on all 90 motifs, and
    pmp.Gibbs on six of them (FOXD1, FOXC1, FOXL1, FOXO3, PIF4, PIF5) matches the
    exact posterior."""
    counts, ids = load_motifs()
    n = counts.shape[0]
    assert counts.shape[1:] == (8, 4)
    with pm.Model() as model:
        z = pmp.CRP("z", alpha=1.0, n=n)
        pmp.CollapsedDirichletMultinomial("y", z, concentration=2.0, observed=counts)
    logp = model.compile_logp(jacobian=False)
    op = pmp.CollapsedDirichletMultinomial.rv_op
    data = op.kernel_data(counts)
    params = op.kernel_params([np.full((8, 4), 2.0)], n)
    rng = np.random.default_rng(0)
    for _ in range(3):
        labels = pmp.canonicalize(rng.integers(0, 12, n))
        stats, state = op.alloc_stats(n, data, params), new_state(n)
        assign_labels(state, params, stats, data, labels)
        canon = np.empty(n, dtype=np.int64)
        _, _, kernel = summarise(state, crp.make_params(1.0, n), params, stats, canon,
                                 np.empty(n, dtype=np.int64))
        ref = float(logp({"z": labels}))
        assert abs(kernel - ref) <= 1e-8 * abs(ref)
    sel = [ids.index(m) for m in MOTIF_IDS]
    exact_test(
        6,
        lambda z: pmp.CollapsedDirichletMultinomial("y", z, concentration=2.0, observed=counts[sel]),
        draws=3000,
        seed=7,
    )


# ---------------------------------------------------------------- k-means energy


def test_kmeans_energy_fixed_temperature():
    Y = two_groups(6, 2, seed=8)
    exact_test(6, lambda z: pmp.KMeansEnergy("y", z, temperature=2.0, observed=Y), draws=3000, seed=8)
