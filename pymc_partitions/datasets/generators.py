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
  posterior predictive);
- Meilă & Chen (2010), *Dirichlet process mixtures of Generalized Mallows models*,
  §6 (Figure 6: four sets of top-t rankings from 10 GM clusters).

Rankings come as top-t *orderings*: (N, t) int64, 0-based item indices, best first
(the observed form of ``pmp.GeneralizedMallows``).
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


# ------------------------------------------------------------------ rankings
# Meilă & Chen (2010) §6, Figure 6's table: (t, theta*_j for stages j = 1..t), n = 20.
MEILA_CHEN_DATASETS = {
    1: (10, lambda j: np.ones_like(j, dtype=np.float64)),
    2: (19, lambda j: np.ones_like(j, dtype=np.float64)),
    3: (10, lambda j: 1.5 - (j - 1) * 0.1),
    4: (19, lambda j: 1.5 - (j - 1) * 0.05),
}


def generalized_mallows_orderings(sigma, theta, length, size, seed=None):
    r"""Top-``length`` orderings drawn from the Generalized Mallows model GM(sigma, theta).

    The stagewise construction (Fligner & Verducci 1986; Meilă & Chen 2010, §2): the
    codes V_1, ..., V_t are independent with

    .. math:: P(V_j = v) = e^{-\theta_j v} / \psi_{n-j}(\theta_j), \quad v = 0, \ldots, n - j,

    and stage j ranks the item at 0-based position V_j among the items of ``sigma``
    not ranked yet.

    Parameters
    ----------
    sigma : (n,) int array, the central permutation (items best first).
    theta : (length,) float array of dispersions theta_j > 0 (0 is allowed: uniform).
    length : int, t <= n, the number of ranked positions.
    size : int, the number of orderings.
    seed : int, numpy Generator or None.

    Returns
    -------
    orderings : (size, length) int64, 0-based items, best first.
    """
    owner = "generalized_mallows_orderings"
    sigma = as_array(sigma, "sigma", owner, "a permutation of 0..n-1").astype(np.int64)
    n = sigma.size
    if sigma.ndim != 1 or not np.array_equal(np.sort(sigma), np.arange(n)):
        raise ValueError(f"{owner}: 'sigma' must be a permutation of 0..n-1, got {sigma!r}.")
    length = integer_arg("length", length, owner, minimum=1)
    if length > n:
        raise ValueError(f"{owner}: 'length' must be at most n = {n}, got {length}.")
    size = integer_arg("size", size, owner, minimum=0)
    theta = as_array(theta, "theta", owner, f"{length} non-negative dispersions")
    theta = theta.astype(np.float64)
    if theta.shape != (length,) or not np.all(np.isfinite(theta) & (theta >= 0)):
        raise ValueError(f"{owner}: 'theta' must hold {length} finite non-negative dispersions "
                         f"(one per ranked stage), got {theta!r}.")
    rng = np.random.default_rng(seed_arg("seed", seed, owner))
    codes = np.empty((size, length), dtype=np.int64)
    for j in range(length):  # V_j by inverse CDF on 0..n-1-j (0-based stage j)
        weights = np.exp(-theta[j] * np.arange(n - j))
        cdf = np.cumsum(weights / weights.sum())
        codes[:, j] = np.minimum(np.searchsorted(cdf, rng.random(size), side="right"), n - j - 1)
    out = np.empty((size, length), dtype=np.int64)
    for i in range(size):
        rest = list(sigma)
        for j in range(length):
            out[i, j] = rest.pop(codes[i, j])
    return out


def _mallows_posterior_centre(rng, orderings, theta, n, steps):
    """A draw from P(sigma | theta, orderings) for complete orderings and one theta:
    proportional to exp(-theta * sum_i d_K(pi_i, sigma)) (uniform prior; psi does not
    depend on sigma). Metropolis chain on adjacent transpositions from the orderings'
    first ordering; swapping (a, b) at positions k, k+1 of sigma changes the total
    Kendall distance by W[a, b] - W[b, a], W[a, b] = orderings with a before b."""
    pos = np.argsort(orderings, axis=1)
    W = (pos[:, :, None] < pos[:, None, :]).sum(axis=0)
    sigma = orderings[0].copy()
    ks = rng.integers(0, n - 1, steps)
    logu = np.log(rng.random(steps))
    for k, lu in zip(ks, logu):
        a, b = sigma[k], sigma[k + 1]
        if lu < -theta * (W[a, b] - W[b, a]):
            sigma[k], sigma[k + 1] = b, a
    return sigma


def meila_chen_rankings(dataset=1, n_per_cluster=500, n_clusters=10, n_items=20, seed=None):
    """The synthetic rankings of Meilă & Chen (2010, §6, Figure 6).

    ``n_clusters`` clusters of ``n_per_cluster`` top-t orderings of ``n_items`` items
    (paper: 10 x 500, N = 5000, n = 20), cluster c drawn from GM(sigma*_c, theta*)
    (:func:`generalized_mallows_orderings`) with t and theta* by data set:

    ====  ===  ==============================
    set   t    theta*_j, j = 1..t
    ====  ===  ==============================
    1     10   1
    2     19   1
    3     10   1.5 - (j - 1) * 0.1
    4     19   1.5 - (j - 1) * 0.05
    ====  ===  ==============================

    "Each sigma* is drawn from the conjugate posterior of sigma, conditioned on 100
    permutations drawn randomly from a GM with theta = 0.7". The paper does not say
    around which permutation those 100 are drawn. Here (a choice): around a uniformly
    random permutation, drawn afresh for each cluster, and sigma*_c is drawn from
    P(sigma | theta = 0.7, the 100 complete permutations) by 20 000 steps of a
    Metropolis chain on adjacent transpositions (the posterior is sharply peaked, so
    sigma*_c lies within a few transpositions of the permutations' consensus). A common
    permutation for all clusters would make the 10 centres nearly equal (that posterior
    puts all its mass within a few transpositions of it) and the clusters
    unidentifiable, which the small VI distances of Figure 6 (its axis reaches 1e-4)
    rule out.

    Returns
    -------
    orderings : (n_clusters * n_per_cluster, t) int64, clusters contiguous
    labels : (N,) int64, the true clusters
    centres : (n_clusters, n_items) int64, sigma*_c (items best first)
    theta : (t,) float64, theta*
    """
    owner = "meila_chen_rankings"
    if not isinstance(dataset, int | np.integer) or int(dataset) not in MEILA_CHEN_DATASETS:
        raise ValueError(f"{owner}: 'dataset' must be 1, 2, 3 or 4 (Figure 6's data sets), "
                         f"got {dataset!r}.")
    n_per_cluster = integer_arg("n_per_cluster", n_per_cluster, owner, minimum=1)
    n_clusters = integer_arg("n_clusters", n_clusters, owner, minimum=1)
    n_items = integer_arg("n_items", n_items, owner, minimum=2)
    length, theta_of = MEILA_CHEN_DATASETS[int(dataset)]
    length = min(length, n_items - 1)
    theta = theta_of(np.arange(1, length + 1))
    rng = np.random.default_rng(seed_arg("seed", seed, owner))
    centres = np.empty((n_clusters, n_items), dtype=np.int64)
    for c in range(n_clusters):
        perms = generalized_mallows_orderings(rng.permutation(n_items), np.full(n_items, 0.7),
                                              n_items, 100, rng)
        centres[c] = _mallows_posterior_centre(rng, perms, 0.7, n_items, 20_000)
    orderings = np.concatenate([
        generalized_mallows_orderings(centre, theta, length, n_per_cluster, rng)
        for centre in centres])
    return orderings, _labels(n_per_cluster, n_clusters), centres, theta


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
    "MEILA_CHEN_DATASETS",
    "NGUYEN_CENTRES",
    "edges_from_adjacency",
    "erdos_renyi_graph",
    "generalized_mallows_orderings",
    "jain_neal_bernoulli",
    "jain_neal_probabilities",
    "meila_chen_rankings",
    "nguyen_gmm_1d",
    "nguyen_synthetic",
    "pbc_bernoulli",
    "pbc_normal",
    "planted_partition",
    "random_regular_graph",
]
