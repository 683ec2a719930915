"""Generators for the synthetic experiments of the papers pymc-partitions implements.

Every generator takes ``seed`` (an int, a ``numpy.random.Generator`` or None; passed
to ``numpy.random.default_rng``, so a Generator is used as is and advanced) and
returns numpy arrays: clustering data come as ``(X, labels)`` with ``labels`` the
true canonical block labels (int64, label 0 for item 0's block, new labels in
order of first appearance); graphs for colouring come as a symmetric 0/1 int64
adjacency matrix with zero diagonal.

Papers (texts in the project's ``papers/`` folder):

- Jain & Neal (2004), *A split-merge MCMC procedure for the Dirichlet process
  mixture model*, §5 (Examples 1-3: Bernoulli mixtures, d = 6, 15, 18);
- Herlau, Mørup, Schmidt & Teh (2016), *Adaptive reconfiguration moves ...*, §3.1
  and Table 1 (the same mixtures, d = 6, 8, 10);
- Goswami, Liu & Wong (2005), *Evolutionary Monte Carlo methods for clustering*,
  §7.1 (Bernoulli-Beta, m = 15, Table 1) and §7.3 (Normal clustering);
- Nguyen, Trippe & Broderick (2022), *Many processors, little time*, App. G.3
  ('synthetic'), App. L (Erdős–Rényi colourings), App. M.1 (1-D mixture for the
  posterior predictive).
"""

from __future__ import annotations

import numpy as np

from pymc_partitions.distributions.validation import integer_arg, number_arg, seed_arg
from pymc_partitions.partitions import as_array, canonicalize

# Jain & Neal (2004) §5 / Herlau et al. (2016) Table 1 / Goswami et al. (2005) Table 1:
# p(attribute h = 1 | component k) for h = 1..5; attributes 6, 7, ... copy column 5.
JAIN_NEAL_TABLE = np.array(
    [
        [0.95, 0.95, 0.95, 0.95, 0.95],
        [0.05, 0.05, 0.05, 0.05, 0.95],
        [0.95, 0.05, 0.05, 0.95, 0.95],
        [0.05, 0.05, 0.05, 0.05, 0.05],
        [0.95, 0.95, 0.95, 0.95, 0.05],
    ]
)


def _labels(n_per_component, n_components):
    return np.repeat(np.arange(n_components, dtype=np.int64), n_per_component)


def jain_neal_probabilities(d=6):
    """The (5, d) table of attribute probabilities of the Jain–Neal Bernoulli mixtures.

    Columns 1-5 are :data:`JAIN_NEAL_TABLE`; columns 6..d repeat column 5 ("the last
    column is simply copied", Herlau et al. 2016, Table 1; Goswami et al. 2005,
    Table 1: "columns h = 5 through h = 15 are the same").
    """
    d = integer_arg("d", d, "jain_neal_probabilities", minimum=5)
    return np.concatenate([JAIN_NEAL_TABLE, np.repeat(JAIN_NEAL_TABLE[:, 4:5], d - 5, axis=1)], 1)


def jain_neal_bernoulli(d=6, n_per_component=20, seed=None):
    """Bernoulli mixture data of Jain & Neal (2004, §5) and Herlau et al. (2016, §3.1).

    Five components with ``n_per_component`` items each (20: n = 100, as in both
    papers), item i of component k having attribute h with probability
    ``jain_neal_probabilities(d)[k, h]``. The papers' examples: Jain & Neal Examples
    1, 2, 3 have d = 6, 15, 18; Herlau et al. Examples 1, 2, 3 have d = 6, 8, 10;
    Goswami et al. §7.1 has d = 15 (:func:`pbc_bernoulli`). Their model:
    CRP(alpha = 1) with Beta(1, 1) priors (``pmp.CollapsedBetaBernoulli`` with a = b = 1).

    Returns
    -------
    X : (5 * n_per_component, d) int64 of 0/1
    labels : (5 * n_per_component,) int64, items of component k contiguous.
    """
    owner = "jain_neal_bernoulli"
    d = integer_arg("d", d, owner, minimum=5)
    n_per_component = integer_arg("n_per_component", n_per_component, owner, minimum=1)
    rng = np.random.default_rng(seed_arg("seed", seed, owner))
    probs = jain_neal_probabilities(d)
    labels = _labels(n_per_component, 5)
    X = (rng.random((labels.size, probs.shape[1])) < probs[labels]).astype(np.int64)
    return X, labels


def pbc_bernoulli(seed=None):
    """Goswami, Liu & Wong (2005, §7.1): the Jain–Neal Bernoulli mixture with m = 15
    attributes and 20 items from each of the 5 components (d = 100 data points in
    their notation). Same as ``jain_neal_bernoulli(15, 20, seed)``."""
    return jain_neal_bernoulli(15, 20, seed)


def pbc_normal(n_per_component=40, n_components=5, dim=2, tau2=30.0, sigma2=1.0, seed=None):
    """Normal clustering data of Goswami, Liu & Wong (2005, §7.3).

    Centres theta_k ~ Normal(0, tau2 I) for k = 1..5, then 40 items
    y ~ Normal(theta_k, sigma2 I) per centre, in m = 2 dimensions (n = 200), with
    tau2 = 30, sigma2 = 1 (``pmp.CollapsedNormal`` with mu0 = 0, tau = sqrt(30),
    sigma = 1 is the model of their §7.3.2).

    Returns ``X`` (n_components * n_per_component, dim) float64 and ``labels``
    (int64, contiguous blocks).
    """
    owner = "pbc_normal"
    n_per_component = integer_arg("n_per_component", n_per_component, owner, minimum=1)
    n_components = integer_arg("n_components", n_components, owner, minimum=1)
    dim = integer_arg("dim", dim, owner, minimum=1)
    tau2 = number_arg("tau2", tau2, owner, low=0.0, low_open=True)
    sigma2 = number_arg("sigma2", sigma2, owner, low=0.0, low_open=True)
    rng = np.random.default_rng(seed_arg("seed", seed, owner))
    centres = rng.normal(0.0, np.sqrt(tau2), size=(n_components, dim))
    labels = _labels(n_per_component, n_components)
    X = centres[labels] + rng.normal(0.0, np.sqrt(sigma2), size=(labels.size, dim))
    return X, labels


NGUYEN_CENTRES = np.array([[-0.8, -0.8], [-0.8, 0.8], [0.8, -0.8], [0.8, 0.8]])


def nguyen_synthetic(n=300, seed=None):
    """The 'synthetic' data of Nguyen et al. (2022, App. G.3).

    Four equally likely components in 2-D centred at (+-0.8, +-0.8), isotropic noise
    sd 0.5; n = 300. Their target: CRP(alpha = 0.2), mu0 = 0, Sigma0 = 0.75 I,
    Sigma1 = 0.7 I (``tau = sqrt(0.75)``, ``sigma = sqrt(0.7)``).

    Returns ``X`` (n, 2) float64 and the canonical ``labels`` (n,) int64 of the
    components drawn.
    """
    n = integer_arg("n", n, "nguyen_synthetic", minimum=1)
    rng = np.random.default_rng(seed_arg("seed", seed, "nguyen_synthetic"))
    comp = rng.integers(0, 4, n)
    X = NGUYEN_CENTRES[comp] + rng.normal(0.0, 0.5, size=(n, 2))
    return X, canonicalize(comp)


def nguyen_gmm_1d(n=100, n_components=10, sigma=2.0, mean_sd=10.0, seed=None):
    """1-D mixture of Nguyen et al. (2022, App. M.1) for posterior predictive densities.

    Weights ~ Dirichlet(1, ..., 1) over 10 components, means ~ Normal(0, 10^2),
    observations ~ Normal(mean, 2^2). Their target: CRP(alpha = 1), mu0 = 0,
    Sigma0 = 3, Sigma1 = 2 (variances).

    Returns ``x`` (n,) float64, canonical ``labels`` (n,) int64, and ``truth``, a dict
    with ``weights`` (10,), ``means`` (10,) and ``sigma`` (to evaluate the true density).
    """
    owner = "nguyen_gmm_1d"
    n = integer_arg("n", n, owner, minimum=1)
    n_components = integer_arg("n_components", n_components, owner, minimum=1)
    sigma = number_arg("sigma", sigma, owner, low=0.0, low_open=True)
    mean_sd = number_arg("mean_sd", mean_sd, owner, low=0.0, low_open=True)
    rng = np.random.default_rng(seed_arg("seed", seed, owner))
    weights = rng.dirichlet(np.ones(n_components))
    means = rng.normal(0.0, mean_sd, size=n_components)
    comp = rng.choice(n_components, size=n, p=weights)
    x = means[comp] + rng.normal(0.0, sigma, size=n)
    return x, canonicalize(comp), {"weights": weights, "means": means, "sigma": float(sigma)}


# ------------------------------------------------------------------ graphs
def planted_partition(sizes, p_in, p_out, seed=None):
    """Planted-partition (stochastic block) network with equal within/between densities.

    Items are split into contiguous blocks of the given ``sizes``; each pair i < j is
    an edge independently with probability ``p_in`` if i and j share a block, else
    ``p_out``. The data type of the Infinite Relational Model of Herlau et al. (2016,
    §3.2).

    Returns ``A`` (n, n) int64 symmetric 0/1 with zero diagonal and ``labels`` (n,) int64.
    """
    owner = "planted_partition"
    what = "a list of positive integer block sizes"
    arr = as_array(sizes, "sizes", owner, what)
    if arr.ndim != 1 or arr.size == 0 or arr.dtype.kind not in "iuf" or not np.all(
        np.isfinite(arr) & (arr == np.round(arr)) & (arr >= 1)
    ):
        raise ValueError(f"{owner}: 'sizes' must be {what}, got {sizes!r}.")
    sizes = arr.astype(np.int64)
    p_in = number_arg("p_in", p_in, owner, low=0.0, high=1.0)
    p_out = number_arg("p_out", p_out, owner, low=0.0, high=1.0)
    rng = np.random.default_rng(seed_arg("seed", seed, owner))
    labels = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)
    prob = np.where(labels[:, None] == labels[None, :], p_in, p_out)
    upper = np.triu(rng.random(prob.shape) < prob, k=1)
    A = (upper | upper.T).astype(np.int64)
    return A, labels


def erdos_renyi_graph(n, p, seed=None):
    """Erdős–Rényi G(n, p): each pair an edge independently with probability p.

    Nguyen et al. (2022, App. L, Fig. 19) colour G(25, 0.2) and G(30, 0.2) with 6
    colours. Returns ``A`` (n, n) int64 symmetric 0/1 with zero diagonal.
    """
    n = integer_arg("n", n, "erdos_renyi_graph", minimum=1)
    p = number_arg("p", p, "erdos_renyi_graph", low=0.0, high=1.0)
    rng = np.random.default_rng(seed_arg("seed", seed, "erdos_renyi_graph"))
    upper = np.triu(rng.random((n, n)) < p, k=1)
    return (upper | upper.T).astype(np.int64)


def random_regular_graph(n, k, seed=None, max_tries=100_000):
    """A uniformly random simple k-regular graph on n nodes (pairing model with rejection).

    Bollobás's pairing (configuration) model: give each node k half-edges, pair all
    n k half-edges by a uniformly random perfect matching, and reject the draw if it
    has a loop or a repeated edge. Conditioned on being simple, the pairing is
    uniform over simple k-regular graphs, so accepted draws are exactly uniform.
    The acceptance probability tends to exp((1 - k^2) / 4) (about 1/42 for k = 4),
    so this is meant for the small k of colouring experiments (Nguyen et al. 2022,
    App. G.3 'k-regular', k = 4); after ``max_tries`` rejections it raises.

    Returns ``A`` (n, n) int64 symmetric 0/1 with zero diagonal, every row summing to k.
    """
    owner = "random_regular_graph"
    n = integer_arg("n", n, owner, minimum=1)
    k = integer_arg("k", k, owner, minimum=0)
    max_tries = integer_arg("max_tries", max_tries, owner, minimum=1)
    if k >= n or (n * k) % 2:
        raise ValueError(
            f"{owner}: need 0 <= k < n and n * k even, got n = {n}, k = {k}."
        )
    rng = np.random.default_rng(seed_arg("seed", seed, owner))
    stubs = np.repeat(np.arange(n, dtype=np.int64), k)
    for _ in range(max_tries):
        pairs = rng.permutation(stubs).reshape(-1, 2)
        i, j = pairs.min(axis=1), pairs.max(axis=1)
        if np.any(i == j):
            continue
        codes = i * n + j
        if np.unique(codes).size != codes.size:
            continue
        A = np.zeros((n, n), dtype=np.int64)
        A[i, j] = 1
        A[j, i] = 1
        return A
    raise RuntimeError(
        f"random_regular_graph: no simple {k}-regular graph on {n} nodes in {max_tries} "
        f"pairings; the pairing model is for small k (acceptance ~ exp((1 - k^2)/4))."
    )


def edges_from_adjacency(A):
    """Edge list (m, 2) int64 with i < j of a symmetric 0/1 adjacency matrix."""
    A = as_array(A, "A", "edges_from_adjacency", "a square (n, n) adjacency matrix")
    if A.ndim != 2 or A.shape[0] != A.shape[1] or A.dtype.kind not in "iufb":
        raise ValueError(
            f"edges_from_adjacency: 'A' must be a square (n, n) numeric adjacency matrix, got "
            f"shape {A.shape} and dtype {A.dtype}."
        )
    i, j = np.nonzero(np.triu(A, k=1))
    return np.stack([i, j], axis=1).astype(np.int64)


__all__ = [
    "JAIN_NEAL_TABLE",
    "NGUYEN_CENTRES",
    "edges_from_adjacency",
    "erdos_renyi_graph",
    "jain_neal_bernoulli",
    "jain_neal_probabilities",
    "nguyen_gmm_1d",
    "nguyen_synthetic",
    "pbc_bernoulli",
    "pbc_normal",
    "planted_partition",
    "random_regular_graph",
]
