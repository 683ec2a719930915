"""Quick start: cluster generated 2-D data with a CRP mixture, no download needed.

Run:  python examples/quickstart.py [path/to/similarity.png]

A Dirichlet-process (CRP) mixture of Normals with the block means integrated out:
pmp.Gibbs samples the partition, pmp.EscobarWest the concentration alpha and
pmp.HyperSlice the noise scale sigma (pm.sample assigns all three by itself). Then the posterior over partitions is summarised:

1. convergence on label-invariant statistics (az.summary);
2. the partition minimising the posterior expected variation of information
   (pmp.point_estimate, SALSO search) with its 95 % credible ball
   (pmp.credible_ball, Wade & Ghahramani 2018);
3. the posterior similarity matrix, saved as a PNG ordered by the estimate's blocks.
"""

import sys

import arviz as az
import matplotlib
import numpy as np
import pymc as pm

import pymc_partitions as pmp

matplotlib.use("Agg")


def generate(n=300, seed=1):
    """Three well-separated 2-D Gaussian clusters of unit spread."""
    rng = np.random.default_rng(seed)
    centres = np.array([[-4.0, 0.0], [0.0, 4.0], [4.0, 0.0]])
    truth = rng.integers(0, 3, n)
    return centres[truth] + rng.normal(size=(n, 2)), pmp.canonicalize(truth)


def describe(labels):
    """Number of blocks and block sizes, largest first."""
    sizes = np.sort(np.bincount(labels))[::-1]
    return f"{len(sizes)} blocks of sizes {sizes.tolist()}"


def main(png="quickstart_similarity.png"):
    Y, truth = generate()
    n = len(Y)
    with pm.Model():
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        z = pmp.CRP("z", alpha=alpha, n=n)
        sigma = pm.HalfNormal("sigma", 2.0)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=5.0, sigma=sigma, observed=Y)
        idata = pm.sample(draws=1000, tune=500, chains=4, random_seed=7, progressbar=False)

    # Which items go together: the posterior similarity (co-clustering) matrix.
    psm = pmp.similarity_matrix(idata, var_name="z")
    # Best single clustering: minimise the posterior expected VI (SALSO search).
    est = pmp.point_estimate(idata, var_name="z", loss="VI", seed=1)
    # Label-invariant statistics, as posterior variables: co-clustering indicators
    # of items 0 and 1 and of the least certain pair (similarity nearest 1/2), VI
    # of each draw to the estimate, and the three largest block fractions.
    doubt = np.abs(psm - 0.5) + np.tril(np.ones_like(psm))  # pairs i < j only
    i, j = (int(v) for v in np.unravel_index(np.argmin(doubt), psm.shape))
    pmp.add_partition_statistics(idata, "z", pairs=[(0, 1), (i, j)], reference=est, n_fractions=3)
    names = ["alpha", "sigma", "z_n_clusters", "z_largest_cluster_frac", "z_entropy",
             "z_together_0_1", f"z_together_{i}_{j}", "z_vi_to_reference",
             "z_block_frac"]  # fmt: skip
    with np.printoptions(linewidth=120):
        print(az.summary(idata, var_names=names, kind="all").to_string())

    ball = pmp.credible_ball(idata, est, var_name="z", loss="VI", level=0.95)
    print(f"\npoint estimate (min. expected VI, {est.method}): {describe(est.labels)}")
    print(f"  posterior expected VI: {est.expected_loss:.4f} bits")
    print(f"  vs the generating partition: VI = "
          f"{pmp.variation_of_information(est.labels, truth):.4f} bits, "
          f"adjusted Rand = {pmp.adjusted_rand_index(est.labels, truth):.4f}")
    print(f"95% credible ball: VI radius {ball.radius:.4f} bits")
    for title, bound, dist in (
        ("upper vertical bound", ball.upper_vertical, ball.upper_vertical_distance),
        ("lower vertical bound", ball.lower_vertical, ball.lower_vertical_distance),
        ("horizontal bound", ball.horizontal, ball.horizontal_distance),
    ):
        tied = f" ({len(bound)} tied)" if len(bound) > 1 else ""
        print(f"  {title}: {describe(bound[0])}, VI {dist:.4f}{tied}")

    ax = pmp.plots.plot_similarity_matrix(psm, order=est.labels)
    ax.set_title(f"posterior similarity, n = {n}, ordered by the VI estimate")
    ax.figure.savefig(png, dpi=100, bbox_inches="tight")
    print(f"\nsimilarity matrix saved to {png}")


if __name__ == "__main__":
    main(*sys.argv[1:2])
