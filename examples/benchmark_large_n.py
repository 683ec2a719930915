"""Large N: pmp.SubClusters beside Gibbs, PyMC's default steps, scikit-learn and bmcc.

Run:  python examples/benchmark_large_n.py                  # the issue's must-show set
      python examples/benchmark_large_n.py --full           # N = 10^3 ... 10^5, D = 2, 10
      python examples/benchmark_large_n.py --million        # N = 10^6, D = 1, SubClusters
      python examples/benchmark_large_n.py --landscape      # why two-way splits stall there
      python examples/benchmark_large_n.py --sizes 10000 --dims 2 --regimes separated \\
          --methods subclusters sklearn

Data: ten Gaussian clusters in D dimensions, unit noise, centred and scaled by one
standard deviation for all columns (the model's sigma is shared by the columns;
scaling each column apart makes the within-cluster spreads differ, which a shared
sigma answers by splitting clusters); "separated":
centres uniform in [-20, 20]^D at least 8 noise sd apart; "overlapping": in [-6, 6]^D
at least 2.5 sd apart. Every method starts from one block and runs ``--iterations``
(default 100) iterations, one chain, in this process (numba threads = the machine's
cores; the first run of a kernel on a machine compiles it, later runs load it from
the disk cache, so run the script twice for warm figures).

Methods (a method missing from the environment is skipped with how to install it):

- ``subclusters``: ``pm.sample(step=[pmp.SubClusters([z, sigma])])``, alpha ~ Gamma(1, 1)
  (EscobarWest) and sigma ~ HalfNormal(1) free: the issue's must-show model;
- ``subclusters-z``: ``pmp.SubClusters([z])`` alone, sigma left to HyperSlice (no
  joint moves; for comparison);
- ``default``: ``pm.sample()``'s own steps for the same model (Gibbs, EscobarWest,
  HyperSlice);
- ``gibbs``: ``pmp.Gibbs`` with alpha = 1 and sigma at the true within-cluster sd
  (fixed hyperparameters, as the issue's first table row);
- ``sklearn``: ``sklearn.mixture.BayesianGaussianMixture`` (truncated DP, 30
  components, full covariances, variational), one EM iteration per ``fit`` call with
  ``warm_start`` so its path can be scored (``pip install scikit-learn``);
- ``bmcc``: bmcc's collapsed Gibbs (C; Normal-Wishart components, DPM with alpha = 1),
  ``pip install wheel && CFLAGS=-fcommon pip install --no-deps --no-build-isolation
  bmcc`` (it needs numpy at build time and predates GCC 10's -fno-common default).

Columns: wall seconds of the iterations (scoring excluded), ARI against the truth
(sklearn's adjusted_rand_score, else pmp.adjusted_rand_index) at the end, blocks
holding >= 1 % of the items, seconds to first reach 95 % of the run's best ARI, and
seconds to first reach ARI >= 0.8 ("-": never).

DPMMSubClusters (Julia; Chang & Fisher's sampler, multi-process), as quoted in the
issue from its documentation: N = 10^4 x 2-D, 100 iterations in about 0.6 s; 10^5
ImageNet features x 128-D in 475 s. Different machines and models (NIW components):
quoted for scale, not measured here.
"""

import argparse
import resource
import time
import warnings

import numpy as np
import pymc as pm

import pymc_partitions as pmp

try:
    from sklearn.metrics import adjusted_rand_score as ari
except ImportError:  # pragma: no cover - depends on the environment
    ari = pmp.adjusted_rand_index

REGIMES = {"separated": (20.0, 8.0), "overlapping": (6.0, 2.5)}
METHODS = ("subclusters", "subclusters-z", "default", "gibbs", "sklearn", "bmcc")


def gaussians(n, d=2, regime="separated", n_clusters=10, seed=0):
    """(n, d) standardised points of ``n_clusters`` clusters with unit noise, and their
    labels: centres uniform in [-L, L]^d, redrawn until every two are >= g noise sd
    apart ((L, g) = ``REGIMES[regime]``; for d = 1, L >= 0.75 g n_clusters)."""
    half, gap = REGIMES[regime]
    if d == 1:
        half = max(half, 0.75 * gap * n_clusters)  # room for the gaps on a line
    rng = np.random.default_rng(seed)
    while True:
        centres = rng.uniform(-half, half, size=(n_clusters, d))
        gaps = np.linalg.norm(centres[:, None] - centres[None], axis=-1)
        if np.min(gaps[np.triu_indices(n_clusters, 1)]) >= gap:
            break
    truth = rng.integers(0, n_clusters, n)
    y = centres[truth] + rng.normal(size=(n, d))
    return (y - y.mean(0)) / y.std(), truth  # one scale: the model's sigma is shared


def model_for(y, sigma=None, alpha=None):
    """alpha ~ Gamma(1, 1) and sigma ~ HalfNormal(1) unless given; CollapsedNormal with
    mu0 = 0, tau = 1."""
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 1.0, 1.0) if alpha is None else alpha
        z = pmp.CRP("z", alpha=alpha, n=y.shape[0])
        sigma = pm.HalfNormal("sigma", 1.0) if sigma is None else sigma
        pmp.CollapsedNormal("y", partition=z, mu0=np.zeros(y.shape[1]), tau=1.0, sigma=sigma,
                            observed=y)
    return model


def run_pymc(y, method, iterations, within):
    """Labels after each iteration ((iterations, n)) and each iteration's end time
    (seconds from the first iteration's estimated start)."""
    model = model_for(y) if method != "gibbs" else model_for(y, sigma=within, alpha=1.0)
    marks = []
    with model:
        if method == "subclusters":
            step = [pmp.SubClusters([model["z"], model["sigma"]])]
        elif method == "subclusters-z":
            step = [pmp.SubClusters([model["z"]])]
        elif method == "gibbs":
            step = [pmp.Gibbs([model["z"]])]
        else:
            step = None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = pm.sample(draws=iterations, tune=0, chains=1, cores=1, step=step,
                              random_seed=1, progressbar=False,
                              compute_convergence_checks=False,
                              callback=lambda trace, draw: marks.append(time.perf_counter()))
    marks = np.array(marks)
    first = marks[0] - (marks[1] - marks[0]) if marks.size > 1 else marks[0]
    extra = ""
    if method.startswith("subclusters"):
        s = idata.sample_stats
        moves = (("joint splits", "joint_split"), ("joint merges", "joint_merge"),
                 ("k-way splits", "multiway_split"), ("k-way merges", "multiway_merge"),
                 ("splits", "split"), ("merges", "merge"))
        extra = ", ".join(f"{label} {int(s[f'{key}_accepted'].sum())}/"
                          f"{int(s[f'{key}_proposed'].sum())}" for label, key in moves)
    return idata.posterior["z"].values[0], marks - first, extra


def run_sklearn(y, iterations):
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.mixture import BayesianGaussianMixture

    bgm = BayesianGaussianMixture(
        n_components=30, weight_concentration_prior_type="dirichlet_process",
        covariance_type="full", max_iter=1, warm_start=True, random_state=1, init_params="kmeans")
    labels, marks, clock = [], [], 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for _ in range(iterations):
            start = time.perf_counter()
            bgm.fit(y)
            clock += time.perf_counter() - start
            marks.append(clock)
            labels.append(bgm.predict(y))  # scoring: not timed
    return np.array(labels), np.array(marks), "variational, 30 components, k-means init"


def run_bmcc(y, iterations):
    import bmcc

    model = bmcc.GibbsMixtureModel(
        data=np.ascontiguousarray(y), component_model=bmcc.NormalWishart(df=y.shape[1]),
        mixture_model=bmcc.DPM(alpha=1.0, use_eb=False),
        assignments=np.zeros(y.shape[0], dtype=np.uint16), thinning=1)
    labels, marks, clock = [], [], 0.0
    for _ in range(iterations):
        start = time.perf_counter()
        model.iter()
        clock += time.perf_counter() - start
        marks.append(clock)
        labels.append(model.assignments.astype(np.int64))
    return np.array(labels), np.array(marks), "Normal-Wishart, DPM(alpha = 1)"


def available(method):
    try:
        if method == "sklearn":
            import sklearn  # noqa: F401
        elif method == "bmcc":
            import bmcc  # noqa: F401
    except ImportError:
        return False
    return True


def score(labels, marks, truth):
    """(ARI at the end, blocks >= 1 %, seconds to 95 % of the best ARI, seconds to
    ARI >= 0.8 or None)."""
    aris = np.array([ari(truth, z) for z in labels])
    best = aris.max()
    to95 = marks[int(np.argmax(aris >= 0.95 * best))]
    hit = np.flatnonzero(aris >= 0.8)
    sizes = np.bincount(labels[-1])
    return aris[-1], int(np.sum(sizes >= 0.01 * labels.shape[1])), to95, \
        (marks[hit[0]] if hit.size else None)


def oracle_ari(y, truth):
    """ARI of assigning each point to the nearest of the clusters' centres (equal
    weights, shared isotropic noise: the Bayes classifier given the generating
    parameters; centres estimated by the clusters' means, exact to O(1/sqrt(n/10)))."""
    centres = np.stack([y[truth == k].mean(0) for k in range(truth.max() + 1)])
    nearest, rows = np.empty_like(truth), 100_000  # (rows, K, d) distances at a time
    for start in range(0, len(y), rows):
        chunk = y[start:start + rows]
        nearest[start:start + rows] = np.argmin(
            ((chunk[:, None, :] - centres[None]) ** 2).sum(-1), axis=1)
    return ari(truth, nearest)


def log_posterior_at_best_sigma(logp, labels):
    """max over sigma of the model's own log density at partition ``labels`` (``logp``:
    ``model.compile_logp(jacobian=False)`` of :func:`model_for` with alpha fixed, so
    log p(z) + log p(sigma) + log p(y | z, sigma) on sigma's own scale); and that
    sigma."""
    from scipy.optimize import minimize_scalar

    best = minimize_scalar(lambda log_sigma: -logp({"z": labels, "sigma_log__": log_sigma}),
                           bounds=(-8.0, 2.0), method="bounded")
    return -best.fun, float(np.exp(best.x))


def landscape(n=1_000_000):
    """Why two-way splits leave the one block on ten clusters on a line: the log
    posterior (sigma at its best) of splits of the one block along the true gaps,
    against the one block."""
    y, truth = gaussians(n, 1, "separated")
    logp = model_for(y, alpha=1.0).compile_logp(jacobian=False)
    one, sigma_one = log_posterior_at_best_sigma(logp, np.zeros(n, dtype=np.int64))
    order = np.argsort([y[truth == c, 0].mean() for c in range(10)])
    rank = np.argsort(order)[truth]  # each item's cluster's place on the line
    print(f"N = {n}, D = 1, ten separated clusters: log posterior at the best sigma, minus "
          f"the one block's ({one:,.0f} at sigma {sigma_one:.3f})")
    print("| partition | blocks | gain (nats) | best sigma |\n|---|---|---|---|")
    rows = [(f"cut after cluster {c} of 10", rank >= c) for c in range(1, 10)]
    rows += [(f"{k} even runs of clusters", np.searchsorted(
        np.cumsum([len(g) for g in np.array_split(np.arange(10), k)]), rank, side="right"))
        for k in (3, 4, 5)]
    rows.append(("the truth", truth))
    for name, labels in rows:
        value, sigma = log_posterior_at_best_sigma(logp, pmp.canonicalize(labels))
        print(f"| {name} | {len(np.unique(labels))} | {value - one:+,.0f} | {sigma:.3f} |")


def bench(n, d, regime, methods, iterations):
    y, truth = gaussians(n, d, regime)
    within = float(np.mean(np.std(y[truth == 0], axis=0)))
    print(f"\nN = {n}, D = {d}, {regime}, 10 clusters, {iterations} iterations, one chain "
          f"from one block (true within-cluster sd {within:.3f} standardised)")
    print(f"ceiling: ARI {oracle_ari(y, truth):.3f} for the nearest-true-centre rule (the "
          f"Bayes classifier with the generating parameters); no clustering of these data "
          f"can be expected to do better")
    print(f"| {'method':<12} | {'wall s':>7} | {'ARI':>5} | {'blocks>=1%':>10} | "
          f"{'to 95% best s':>13} | {'to ARI 0.8 s':>12} | notes")
    print(f"|{'-' * 14}|{'-' * 9}|{'-' * 7}|{'-' * 12}|{'-' * 15}|{'-' * 14}|------")
    for method in methods:
        if not available(method):
            print(f"| {method:<12} | not installed (see the module docstring)")
            continue
        if method == "sklearn":
            labels, marks, extra = run_sklearn(y, iterations)
        elif method == "bmcc":
            labels, marks, extra = run_bmcc(y, iterations)
        else:
            labels, marks, extra = run_pymc(y, method, iterations, within)
        final, blocks, to95, to08 = score(labels, marks, truth)
        print(f"| {method:<12} | {marks[-1]:7.1f} | {final:5.3f} | {blocks:10d} | "
              f"{to95:13.1f} | {'-' if to08 is None else f'{to08:.1f}':>12} | {extra}",
              flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--dims", type=int, nargs="+", default=[2])
    parser.add_argument("--regimes", nargs="+", default=list(REGIMES), choices=list(REGIMES))
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--full", action="store_true",
                        help="N = 10^3, 10^4, 10^5 x D = 2, 10 x both regimes")
    parser.add_argument("--million", action="store_true",
                        help="N = 10^6, D = 1, separated, SubClusters only (memory printed)")
    parser.add_argument("--landscape", action="store_true",
                        help="N = 10^6, D = 1: the posterior's gain of splits of the one "
                             "block (why k-way joint moves are needed there)")
    args = parser.parse_args()
    if args.landscape:
        landscape()
        return
    import numba

    print(f"numba threads: {numba.get_num_threads()}")
    if args.million:
        bench(1_000_000, 1, "separated", ["subclusters"], args.iterations)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
        print(f"peak resident memory of this process: {peak:.2f} GiB "
              f"(the trace: {args.iterations} draws x 10^6 int64 labels = "
              f"{args.iterations * 8e6 / 2**30:.2f} GiB)")
        return
    sizes, dims = ([1_000, 10_000, 100_000], [2, 10]) if args.full else (args.sizes, args.dims)
    for n in sizes:
        for d in dims:
            for regime in args.regimes:
                bench(n, d, regime, args.methods, args.iterations)


if __name__ == "__main__":
    main()
