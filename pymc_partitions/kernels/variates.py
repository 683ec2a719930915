"""Continuous random variates drawn from a kernel stream (:mod:`.random`).

The conjugate draws of block parameters (:mod:`.components.explicit`) and of block
weights (:mod:`.subclusters`) need standard normal, gamma and beta variates inside
compiled kernels, from the chain's explicit stream (numba's global generator is never
used, see :mod:`.random`). Every function takes ``stream``, the (4,) uint64 state,
advanced in place.

- :func:`std_normal`: the Box-Muller transform (Box & Muller 1958), one of the pair;
- :func:`gamma`: Marsaglia & Tsang (2000), "A simple method for generating gamma
  variables", ACM TOMS 26(3), for shape >= 1; shape < 1 by their boost
  ``G(a) = G(a + 1) U^(1/a)`` (same paper, §3.1), computed on the log scale
  (:func:`log_gamma_variate`) so that tiny shapes do not underflow to 0;
- :func:`beta`: two gammas;
- :func:`bartlett_factor`: the Bartlett decomposition of a Wishart matrix (Bartlett
  1933; e.g. Anderson 2003, *An Introduction to Multivariate Statistical Analysis*,
  §7.2, Cor. 7.2.1): with A lower triangular, A_aa = sqrt(chi^2_{nu - a}) (a = 0..D-1)
  and A_ab ~ N(0, 1) below the diagonal, all independent, A A^T ~ Wishart(I, nu),
  and for V = C C^T, C A A^T C^T ~ Wishart(V, nu). (chi^2_k = 2 Gamma(k/2, 1).)
"""

import math

from pymc_partitions.kernels._jit import primitive
from pymc_partitions.kernels.random import uniform


@primitive
def std_normal(stream):
    """A standard normal variate (Box-Muller; the cosine of the pair)."""
    u1 = 1.0 - uniform(stream)  # (0, 1]
    u2 = uniform(stream)
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


@primitive
def _log_gamma_ge1(stream, shape):
    # Marsaglia & Tsang (2000), §2 (shape >= 1): log of the variate.
    d = shape - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        x = std_normal(stream)
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        u = 1.0 - uniform(stream)
        if math.log(u) < 0.5 * x * x + d - d * v + d * math.log(v):
            return math.log(d) + math.log(v)


@primitive
def log_gamma_variate(stream, shape):
    """log of a Gamma(shape, 1) variate, shape > 0 (the boost for shape < 1)."""
    if shape >= 1.0:
        return _log_gamma_ge1(stream, shape)
    u = 1.0 - uniform(stream)
    return _log_gamma_ge1(stream, shape + 1.0) + math.log(u) / shape


@primitive
def gamma(stream, shape):
    """A Gamma(shape, 1) variate, shape > 0."""
    return math.exp(log_gamma_variate(stream, shape))


@primitive
def beta(stream, a, b):
    """A Beta(a, b) variate, a, b > 0 (ratio of gammas on the log scale)."""
    la = log_gamma_variate(stream, a)
    lb = log_gamma_variate(stream, b)
    top = max(la, lb)
    ea, eb = math.exp(la - top), math.exp(lb - top)
    return ea / (ea + eb)


@primitive
def log_beta_pair(stream, a, b):
    """``(log p, log(1 - p))`` of p ~ Beta(a, b), accurate near 0 and 1."""
    la = log_gamma_variate(stream, a)
    lb = log_gamma_variate(stream, b)
    top = max(la, lb)
    log_total = top + math.log(math.exp(la - top) + math.exp(lb - top))
    return la - log_total, lb - log_total


@primitive
def bartlett_factor(stream, nu, d, out, row, offset):
    """Bartlett factor A (D = ``d``) of a Wishart(I_D, nu) matrix A A^T, nu > D - 1,
    written lower triangular into row ``row`` of the 2-d float64 array ``out``: A[a, b]
    at ``out[row, offset + a * d + b]`` (zeros above the diagonal). Returns
    sum_a log A_aa (= log det(A A^T) / 2). Draw order: row by row, each row's
    normals then its diagonal entry."""
    log_det = 0.0
    for a in range(d):
        base = offset + a * d
        for b in range(a):
            out[row, base + b] = std_normal(stream)
        log_chi2 = math.log(2.0) + log_gamma_variate(stream, 0.5 * (nu - a))
        out[row, base + a] = math.exp(0.5 * log_chi2)
        log_det += 0.5 * log_chi2
        for b in range(a + 1, d):
            out[row, base + b] = 0.0
    return log_det


__all__ = ["bartlett_factor", "beta", "gamma", "log_beta_pair", "log_gamma_variate",
           "std_normal"]
