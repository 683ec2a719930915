"""Quick start: cluster generated 2-D data with a CRP mixture, no download needed.

Run:  python examples/quickstart.py

A Dirichlet-process (CRP) mixture of Normals with the block means integrated out:
NUTS samples the concentration alpha and the noise scale sigma, pmp.Gibbs samples
the partition. Convergence is judged on label-invariant statistics of the
partition, which pmp.CRP adds to the posterior.
"""

import arviz as az
import numpy as np
import pymc as pm

import pymc_partitions as pmp


def generate(n=300, seed=1):
    """Three well-separated 2-D Gaussian clusters of unit spread."""
    rng = np.random.default_rng(seed)
    centres = np.array([[-4.0, 0.0], [0.0, 4.0], [4.0, 0.0]])
    truth = rng.integers(0, 3, n)
    return centres[truth] + rng.normal(size=(n, 2)), pmp.canonicalize(truth)


def main():
    Y, truth = generate()
    with pm.Model():
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        z = pmp.CRP("z", alpha=alpha, n=len(Y))
        sigma = pm.HalfNormal("sigma", 2.0)
        pmp.CollapsedNormal("y", partition=z, mu0=0.0, tau=5.0, sigma=sigma, observed=Y)
        idata = pm.sample(draws=1000, tune=500, chains=4, random_seed=7, progressbar=False)

    print(az.summary(idata, var_names=["alpha", "sigma", "z_n_clusters",
                                       "z_largest_cluster_frac", "z_entropy"]))
    z = np.asarray(idata["posterior"]["z"].values).reshape(-1, len(Y))
    k, counts = np.unique(z.max(axis=1) + 1, return_counts=True)
    print("\nposterior of the number of blocks:")
    for kk, c in zip(k, counts):
        print(f"  K = {kk}: {c / len(z):.3f}")
    same = (truth[:, None] == truth[None, :])
    agree = np.mean([(row[:, None] == row[None, :]) == same for row in z[::50]])
    print(f"\nco-clustering agreement with the generating partition: {agree:.4f}")


if __name__ == "__main__":
    main()
