r"""Generalized Mallows mixtures (Meilă & Chen 2010): input checks and the exact marginal.

**Orderings.** Top-t orderings of n items are an (N, w) int64 array, w <= n (w = n
unless ``n_items`` is given): row i lists the items voter i ranks, best first, as
0-based item indices, followed by the padding value :data:`PAD` (-1) after its
t_i >= 1 ranked positions. A complete ranking has t = n (or t = n - 1: the last item
is then implied; both give the same likelihood). :func:`validate_orderings` checks
this and names the offending row; :mod:`pymc_partitions.datasets` converts the APA
data (rank representation, PLMIX's 1-based orderings with 0 = unranked) to it.

**Model.** One cluster's rankings are i.i.d. GM(pi | sigma, theta)
(:mod:`pymc_partitions.kernels.mallows`), and (sigma, theta) have the conjugate prior
of Meilă & Bao (2008), uniform over sigma:

.. math::

    P_0(\sigma, \theta \mid \nu, r) \propto
    \exp\Big(-\nu \sum_{j=1}^{T} \big(\theta_j r_j + \ln \psi_{n-j}(\theta_j)\big)\Big),
    \qquad \theta_j > 0,

with ``nu > 0`` and ``r_j > 0`` (the prior is proper exactly then), T the number of
stages of the longest ranking (min(t_max, n - 1)). Integrating theta_j out gives
the paper's eq. 14 function (:func:`log_beta_tilde`),

.. math::

    \tilde B(a, b, m) = \int_0^\infty e^{-\theta a}\, \psi_m(\theta)^{-(b-1)}\, d\theta
                      = \int_0^1 u^{a-1} \Big(\sum_{k=0}^{m} u^k\Big)^{-(b-1)} du,

so that, with S_j(sigma) the sum of the cluster's codes V_j and N_j the number of
its rankings with at least j stages,

.. math::

    p(\pi_{1:N} \mid \nu, r) = \frac{1}{n!} \sum_\sigma \prod_{j=1}^{T}
    \frac{\tilde B(\nu r_j + S_j(\sigma),\ \nu + N_j + 1,\ n - j)}
         {\tilde B(\nu r_j,\ \nu + 1,\ n - j)}

(:func:`exact_log_marginal`). The sum over sigma has n! terms: it is computed for
n <= :data:`MAX_EXACT_ITEMS` only, and is the test oracle of the samplers. For one
ranking of length t it equals (n - t)!/n! (Lemma 1; :func:`lemma1_log_marginal`).

The oracle functions are plain numpy/scipy (no numba): independent of the kernels.
The PyMC observed node is :class:`GeneralizedMallows` (end of the module); its
sampler is :class:`~pymc_partitions.MallowsGibbs`.
"""

import functools
import itertools
import math

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.graph.basic import Apply, Constant, Variable
from pytensor.graph.op import Op
from pytensor.tensor.random.op import RandomVariable
from scipy.special import logsumexp

from pymc_partitions.distributions.validation import constant_value
from pymc_partitions.kernels import mallows_beta
from pymc_partitions.partitions import as_array

#: Padding value after the t ranked positions of a top-t ordering (as in the kernels).
PAD = -1
#: Largest number of items for which :func:`exact_log_marginal` enumerates sigma
#: (7! = 5040 permutations).
MAX_EXACT_ITEMS = 7

_WHAT = ("an (N, n) integer array of top-t orderings: 0-based item indices, best first, "
         f"padded with {PAD} after the ranked positions")


def validate_orderings(observed, owner="GeneralizedMallows", n_items=None):
    """Check top-t orderings and return ``(orderings, lengths, n)``.

    observed : (N, w) array of integers (floats holding whole numbers are accepted):
        row i ranks t_i >= 1 distinct items ``0 .. n-1``, best first, then :data:`PAD`.
    n_items : the number of items n (default: w, the number of columns; w <= n).

    Returns orderings (N, w) int64 (a new array), lengths (N,) int64, and n (int).
    Errors (ValueError / TypeError) name ``observed``, the row and the position and
    say what to do: an empty row (t = 0), an index out of range, a ranked position
    after an unranked one, a repeated item.
    """
    data = as_array(observed, "observed", owner, _WHAT)
    if data.dtype == bool:
        raise TypeError(f"{owner}: 'observed' must be {_WHAT}; got a boolean array.")
    if data.dtype.kind not in "iuf":
        raise TypeError(f"{owner}: 'observed' must be {_WHAT}; got dtype {data.dtype}.")
    if data.ndim == 1:
        raise ValueError(
            f"{owner}: 'observed' must be {_WHAT}; got a 1-D array of shape {data.shape}. "
            f"For a single ranking pass it as one row: observed[None, :]."
        )
    if data.ndim != 2 or data.shape[0] == 0 or data.shape[1] == 0:
        raise ValueError(f"{owner}: 'observed' must be {_WHAT}; got shape {data.shape}.")
    if data.dtype.kind == "f":
        bad = ~np.isfinite(data) | (data != np.round(data))
        if bad.any():
            i, p = np.argwhere(bad)[0]
            raise ValueError(
                f"{owner}: 'observed' must hold integer item indices; row {i}, position {p} "
                f"holds {float(data[i, p])!r}."
            )
    orderings = data.astype(np.int64)
    width = orderings.shape[1]
    if n_items is None:
        n = width
    else:
        from pymc_partitions.distributions.validation import integer_arg

        n = integer_arg("n_items", n_items, owner, minimum=1)
        if width > n:
            raise ValueError(
                f"{owner}: 'observed' has {width} columns but n_items = {n}; a ranking lists "
                f"at most n items. Pass n_items >= {width} or drop the padding columns."
            )
    if n < 2:
        raise ValueError(f"{owner}: rankings need at least 2 items, got n = {n}.")
    out_of_range = (orderings < PAD) | (orderings >= n)
    if out_of_range.any():
        i, p = np.argwhere(out_of_range)[0]
        raise ValueError(
            f"{owner}: 'observed' row {i}, position {p} holds item {orderings[i, p]}, out of "
            f"range: items are 0..{n - 1} (0-based) and {PAD} marks unranked positions. "
            f"1-based data: subtract 1 (and map its 'unranked' code to {PAD})."
        )
    ranked = orderings != PAD
    lengths = ranked.sum(axis=1).astype(np.int64)
    empty = lengths == 0
    if empty.any():
        i = int(np.argmax(empty))
        raise ValueError(
            f"{owner}: 'observed' row {i} ranks no item (t = 0). Every ranking must rank "
            f"at least one item; drop empty rows."
        )
    gap = ranked[:, 1:] & ~ranked[:, :-1]
    if gap.any():
        i, p = np.argwhere(gap)[0]
        raise ValueError(
            f"{owner}: 'observed' row {i} ranks item {orderings[i, p + 1]} at position "
            f"{p + 1} after the unranked position {p} ({PAD}). Put the ranked items first, "
            f"best first, and the padding {PAD} after them."
        )
    srt = np.sort(orderings, axis=1)
    repeated = (srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] != PAD)
    if repeated.any():
        i = int(np.argmax(repeated.any(axis=1)))
        item = int(srt[i, 1:][repeated[i]][0])
        where = np.flatnonzero(orderings[i] == item).tolist()
        raise ValueError(
            f"{owner}: 'observed' row {i} ranks item {item} more than once (positions "
            f"{where}). A ranking lists distinct items; ties are not supported."
        )
    return orderings, lengths, n


def n_stages(lengths, n):
    """T = min(longest t, n - 1): the number of dispersion parameters theta_j."""
    return int(min(int(np.max(lengths)), n - 1))


def check_nu(nu, owner="GeneralizedMallows"):
    """nu as a float > 0 (a constant; a random variable is refused with a clear error)."""
    value = _constant(nu, "nu", owner)
    if value.ndim != 0:
        raise ValueError(f"{owner}: 'nu' must be one positive number, got shape {value.shape}.")
    v = float(value)
    if not np.isfinite(v) or v <= 0:
        raise ValueError(
            f"{owner}: 'nu' must be a positive finite number (the prior's strength, "
            f"like a number of pseudo-rankings), got {v!r}."
        )
    return v


def check_r(r, stages, n, owner="GeneralizedMallows"):
    """r as a (T,) float64 array of positive values.

    Accepted: a scalar (the same r_j for every stage), a vector of length T =
    ``stages`` (one per stage of the longest ranking) or of length n - 1 (one per
    possible stage; entries beyond T are unused).
    """
    value = _constant(r, "r", owner).astype(np.float64)
    if value.ndim == 0:
        value = np.full(stages, float(value))
    elif value.ndim != 1 or value.shape[0] not in (stages, n - 1):
        allowed = f"{stages}" if stages == n - 1 else f"{stages} or n - 1 = {n - 1}"
        raise ValueError(
            f"{owner}: 'r' must be a scalar or a vector of length {allowed} (one value "
            f"per stage j = 1..T of the rankings, T = min(longest t, n - 1)); got shape "
            f"{value.shape}."
        )
    value = value[:stages]
    if not np.all(np.isfinite(value)) or np.any(value <= 0):
        j = int(np.flatnonzero(~np.isfinite(value) | (value <= 0))[0])
        raise ValueError(
            f"{owner}: 'r' must be positive and finite (the prior on theta_j is proper "
            f"only for nu * r_j > 0); r[{j}] = {float(value[j])!r}."
        )
    return value


def _constant(x, name, owner):
    if isinstance(x, bool | np.bool_) or x is None or isinstance(x, str | bytes):
        raise TypeError(f"{owner}: '{name}' must be a number or an array of numbers, got {x!r}.")
    value = constant_value(x)
    if value is None:
        raise ValueError(
            f"{owner}: '{name}' must be a constant (a number or array), not a random or "
            f"symbolic variable: the Generalized Mallows samplers hold nu and r fixed."
        )
    value = np.asarray(value)
    if value.dtype.kind not in "iuf":
        raise TypeError(f"{owner}: '{name}' must be real numbers, got dtype {value.dtype}.")
    return value


# ------------------------------------------------------------------ eq. 14
@functools.lru_cache(maxsize=65536)
def log_beta_tilde(a, b, m):
    """log of the paper's eq. 14, B~(a, b, m) = int_0^inf e^{-theta a}
    psi_m(theta)^{-(b-1)} d theta, for a > 0, b >= 1, an int m >= 0.

    Gauss-Legendre quadrature on nodes adapted to the log-concave integrand
    (:func:`pymc_partitions.kernels.mallows_beta.log_beta_tilde_quad`; relative
    error ~1e-13 against QUADPACK where QUADPACK is reliable). QUADPACK's QAWS on
    the u = e^{-theta} form was used before: it silently loses the peak when a and b
    are large (log B~(150, 200, 30): -230.90 instead of -240.32) and returns 0 at
    (300, 1000, 6), sizes a cluster of a few hundred rankings reaches. m = 0 gives
    1/a; m -> infinity gives the Beta function B(a, b).
    """
    a, b, m = float(a), float(b), int(m)
    if m == 0:
        return -math.log(a)
    out = np.empty(1)
    gl_x, gl_w = _gauss_legendre()
    node_theta, node_logw = np.empty(mallows_beta.MAX_NODES), np.empty(mallows_beta.MAX_NODES)
    mallows_beta.beta_tilde_batch(np.array([a]), np.array([b]), np.array([m], dtype=np.int64),
                                  gl_x, gl_w, node_theta, node_logw, out)
    return float(out[0])


@functools.cache
def _gauss_legendre():
    return np.polynomial.legendre.leggauss(mallows_beta.GL_NODES)


def lemma1_log_marginal(length, n):
    """log of Lemma 1's marginal (n - t)!/n! of one top-t ordering (t = ``length``),
    the probability a new cluster gives a ranking (uniform prior on sigma)."""
    return math.lgamma(n - length + 1.0) - math.lgamma(n + 1.0)


def all_permutations(n):
    """All n! permutations of 0..n-1 as an (n!, n) int64 array (lexicographic)."""
    return np.array(list(itertools.permutations(range(n))), dtype=np.int64).reshape(-1, n)


def stage_sums_all_sigma(orderings, lengths, n, stages):
    """S_j(sigma) for every permutation sigma: an (n!, T) int64 array (rows in the
    order of :func:`all_permutations`), by the O(n^2)-per-code definition of V_j
    (independent of the numba kernels)."""
    perms = all_permutations(n)
    pos = np.argsort(perms, axis=1)  # pos[s, item]
    out = np.zeros((perms.shape[0], stages), dtype=np.int64)
    for row, t in zip(orderings, lengths):
        for j in range(min(int(t), stages)):
            earlier = row[:j]
            others = np.setdiff1d(np.arange(n), np.append(earlier, row[j]))
            out[:, j] += (pos[:, others] < pos[:, [row[j]]]).sum(axis=1)
    return out


def exact_log_marginal(observed, nu, r, n_items=None):
    """log p(orderings | nu, r) of rankings that all belong to one cluster: sigma
    summed over all n! permutations (uniform prior), each theta_j integrated by
    quadrature (eq. 14; module docstring). Plain numpy/scipy; the test oracle.

    observed : (N, w) top-t orderings (:func:`validate_orderings`); nu > 0; r > 0
    (:func:`check_r`); n_items as there. Raises a ValueError for n > 7
    (:data:`MAX_EXACT_ITEMS`): the sum has n! terms.
    """
    orderings, lengths, n = validate_orderings(observed, "exact_log_marginal", n_items)
    if n > MAX_EXACT_ITEMS:
        raise ValueError(
            f"exact_log_marginal: the exact marginal enumerates all n! central "
            f"permutations and is computed for n <= {MAX_EXACT_ITEMS} items only; got n = "
            f"{n} ({math.factorial(n)} permutations). The samplers do not need it."
        )
    nu = check_nu(nu, "exact_log_marginal")
    stages = n_stages(lengths, n)
    r = check_r(r, stages, n, "exact_log_marginal")
    sums = stage_sums_all_sigma(orderings, lengths, n, stages)
    at_least = np.array([(np.minimum(lengths, n - 1) > j).sum() for j in range(stages)])
    total = np.zeros(sums.shape[0])
    for j in range(stages):
        m = n - 1 - j  # psi_{n-j} with the paper's 1-based j
        prior = log_beta_tilde(nu * r[j], nu + 1.0, m)
        values, inverse = np.unique(sums[:, j], return_inverse=True)
        logs = np.array([log_beta_tilde(nu * r[j] + s, nu + at_least[j] + 1.0, m)
                         for s in values])
        total += logs[inverse.ravel()] - prior
    return float(logsumexp(total) - math.lgamma(n + 1.0))


def exact_log_marginal_partition(observed, labels, nu, r, n_items=None):
    """Sum over the blocks of ``labels`` (N,) of :func:`exact_log_marginal`: the log
    likelihood of a partition of the rankings, clusters independent given (nu, r).
    Each block uses r's first min(its longest t, n - 1) entries."""
    orderings, lengths, n = validate_orderings(observed, "exact_log_marginal_partition",
                                               n_items)
    labels = np.asarray(labels)
    stages = n_stages(lengths, n)
    r = check_r(r, stages, n, "exact_log_marginal_partition")
    total = 0.0
    for k in np.unique(labels):
        rows = labels == k
        block_stages = n_stages(lengths[rows], n)
        total += exact_log_marginal(orderings[rows], nu, r[:block_stages], n_items=n)
    return total


# ------------------------------------------------------------------ the PyMC observed node

#: Entries kept by the exact-marginal op's memo (canonical partition -> value).
_MEMO_SIZE = 4096


class GeneralizedMallowsMarginal(Op):
    """PyTensor op: log p(orderings | partition, nu, r), the sum over blocks of
    :func:`exact_log_marginal` (exact; n <= :data:`MAX_EXACT_ITEMS` items).

    Inputs ``(orderings (N, w) int64, labels (N,) int64, nu (), r (T,), n_items ())``;
    output a float64 scalar. Values are memoised on the canonical partition (NUTS
    evaluates the model's log density many times at one partition). For more
    items it raises a ValueError saying why (the n! central permutations)."""

    __props__ = ("var_name",)

    def __init__(self, var_name="GeneralizedMallows"):
        self.var_name = var_name
        self._memo = {}

    def make_node(self, orderings, labels, nu, r, n_items):
        inputs = [pt.as_tensor_variable(v) for v in (orderings, labels, nu, r, n_items)]
        return Apply(self, inputs, [pt.dscalar()])

    def perform(self, node, inputs, outputs):
        orderings, labels, nu, r, n_items = inputs
        n = int(n_items)
        if n > MAX_EXACT_ITEMS:
            raise ValueError(
                f"GeneralizedMallows '{self.var_name}': the model's log density of the "
                f"rankings is the exact marginal over each cluster's (sigma, theta), a sum "
                f"over all n! central permutations; it is computed for n <= "
                f"{MAX_EXACT_ITEMS} items only, and this model has n = {n} "
                f"({math.factorial(n)} permutations). pmp.MallowsGibbs samples the model "
                f"without it; avoid what evaluates the model's log density "
                f"(pm.compute_log_likelihood, model.point_logps, model.compile_logp). NUTS on "
                f"other variables leaves this term out (it does not depend on them)."
            )
        from pymc_partitions.partitions import canonicalize

        canon = canonicalize(np.asarray(labels))
        key = (canon.tobytes(), np.asarray(orderings).tobytes(), float(nu),
               np.asarray(r).tobytes())
        value = self._memo.get(key)
        if value is None:
            value = exact_log_marginal_partition(np.asarray(orderings), canon, float(nu),
                                                 np.asarray(r), n_items=n)
            if len(self._memo) >= _MEMO_SIZE:
                self._memo.clear()
            self._memo[key] = value
        outputs[0][0] = np.asarray(value, dtype=np.float64)

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_memo"] = {}
        return state


class GeneralizedMallowsRV(RandomVariable):
    """Op of :class:`GeneralizedMallows`: inputs ``(partition (N,), nu (), r (T,),
    n_items (), observed (N, w))``; the observed orderings are the last input (the
    value's shape), as for the collapsed likelihoods."""

    name = "generalized_mallows"
    signature = "(n),(),(t),(),(n,w)->(n,w)"
    dtype = "int64"
    _print_name = ("GeneralizedMallows", "\\operatorname{GeneralizedMallows}")

    #: The likelihood protocol read by generic code (``step_methods.target``): the
    #: block parameters (sigma_c, theta_c) are not integrated out but held per slot
    #: in the kernel state beside the sufficient statistics (DESIGN §8), so only a
    #: step whose kernels carry them (``explicit_step``) can move the partition.
    explicit_block_parameters = True
    explicit_step = "MallowsGibbs"

    @classmethod
    def rng_fn(cls, rng, *args):
        raise NotImplementedError(
            "GeneralizedMallows: forward draws (prior / posterior predictive rankings) are "
            "not implemented yet."
        )

    def partition_of(self, node):
        """The partition variable this node observes (its first input)."""
        return self.dist_params(node)[0]

    def hyper_params(self, node):
        """Hyperparameter expressions read by the kernels: none (nu and r are checked
        constants, read once by :meth:`kernel_data`), so no hyperparameter step reads
        this term."""
        return []

    def kernel_data(self, rv):
        """The explicit component's constant inputs, a
        :class:`~pymc_partitions.kernels.mallows_gibbs.MallowsData` record
        (orderings (N, w) int64, lengths (N,) int64, n_items, nu, r (T,) float64)."""
        from pymc_partitions.kernels.mallows_gibbs import MallowsData

        return MallowsData(*generalized_mallows_setup(rv))

    def pointwise_logp_unavailable(self, names):
        r"""The error for a request of pointwise log-likelihoods (``az.loo``) of the
        variables ``names``: this op has none. Generic code
        (:mod:`pymc_partitions.analysis.loo`, and through it ``pm.sample``'s
        ``idata_kwargs={"log_likelihood": ...}`` check) asks the op, not its class.

        Why: the GM likelihood does not factorise over rankings once the cluster
        parameters are integrated out, and its model log density is one joint term
        per draw (ArviZ would read it as one data point: issue 34 measured elpd
        -233.6 from "1 data point"). The per-ranking leave-one-out term
        :math:`\log p(\pi_i \mid \pi_{-i}, z_{-i}, \nu, r) = \log \sum_k p(z_i = k
        \mid z_{-i})\, m(\pi_{k} \cup \pi_i) / m(\pi_k)` needs two exact marginals m
        per cluster, each a sum over the n! central permutations (Meilă & Chen 2010,
        eq. 15), so N K n! stage sums per draw: exact only for n <= 7, and then 2.5
        million per draw at N = 100, K = 5, n = 7. Conditioning on the sampler's
        explicit (sigma_c, theta_c) instead would be cheap but is not the predictive
        of a left-out ranking (the parameters were fitted with it), so it is not
        offered either."""
        names = list(names)
        quoted = ", ".join(f"'{v}'" for v in names)
        return ValueError(
            f"GeneralizedMallows {quoted}: no pointwise log-likelihood for az.loo / "
            f"az.compare. The Generalized Mallows likelihood does not factorise over "
            f"rankings: its log density is one joint term per draw (which az.loo would take "
            f"for a single data point), and the per-ranking leave-one-out terms "
            f"log p(pi_i | pi_-i, z_-i, nu, r) are not implemented (each needs exact "
            f"marginals, sums over the n! central permutations per cluster and draw). Leave "
            f"{quoted} out: do not pass idata_kwargs={{'log_likelihood': True}} to pm.sample, "
            f"and give pm.compute_log_likelihood / pmp.compute_log_likelihood var_names "
            f"without it."
        )

    def logp_unavailable(self, node):
        """Why the log density of this node cannot be evaluated (None if it can): the
        exact marginal sums over n! central permutations, done for n <= 7 items.
        The hook ``pymc_partitions.hooks.gradient_logp`` leaves such a term out of the
        log density of a
        gradient step (NUTS) whose variables it does not depend on."""
        n_items = constant_value(self.dist_params(node)[3])
        if n_items is None or int(n_items) <= MAX_EXACT_ITEMS:
            return None
        return (f"GeneralizedMallows: the exact marginal over (sigma, theta) is computed for "
                f"n <= {MAX_EXACT_ITEMS} items, and this one has n = {int(n_items)}")


generalized_mallows = GeneralizedMallowsRV()


class GeneralizedMallows(pm.Discrete):
    r"""Top-t rankings from a Dirichlet-process mixture of Generalized Mallows models
    (Meilă & Chen 2010), observed on a partition of the rankings.

    Each block c of ``partition`` has a central permutation sigma_c and dispersions
    theta_c = (theta_1..theta_T); its rankings are i.i.d. GM(pi | sigma_c, theta_c)
    (:mod:`pymc_partitions.kernels.mallows`), and (sigma_c, theta_c) ~ P0(. | nu, r),
    the conjugate prior, uniform over sigma (module docstring). The block parameters
    are *not* integrated out by the samplers: :class:`~pymc_partitions.MallowsGibbs`
    holds them as explicit state and reports them per draw.

    Parameters
    ----------
    partition : TensorVariable
        A ``pmp.CRP`` partition of the N rankings.
    nu : float > 0
        Prior strength (a constant).
    r : float or array of floats > 0
        Prior parameters r_j: a scalar, or one per stage (length T = min(longest t,
        n - 1), or n - 1). Constants.
    observed : (N, w) int array
        Top-t orderings: 0-based item indices, best first, padded with :data:`PAD`
        (-1) after the t ranked items (:func:`validate_orderings`; errors name the
        row). A constant array (``pm.Data`` is not supported).
    n_items : int, optional
        Number of items n (default: w, the number of columns).

    The model's log density of the rankings (what ``model.logp`` evaluates) is the
    exact marginal given the partition, the sum over blocks of
    :func:`exact_log_marginal` (sigma summed over its n! values, theta by
    quadrature): available for n <= :data:`MAX_EXACT_ITEMS` items, otherwise a
    ValueError at evaluation saying why. It is the oracle of the tests;
    ``pm.sample`` does not need it: the CRP concentration goes to
    ``pmp.EscobarWest`` / ``pmp.HyperSlice`` by default, which do not read it, and
    NUTS on it (``step=[pm.NUTS([alpha])]``) uses the model's log density without
    this term when n > 7 (it does not depend on alpha, so NUTS's draws are those of
    the full model; its ``lp`` and ``energy`` statistics omit the term, and a
    warning says so: the hook ``pymc_partitions.hooks.gradient_logp``).
    """

    rv_op = generalized_mallows

    def __new__(cls, name, partition, nu, r, observed=None, n_items=None, **kwargs):
        from pymc_partitions.distributions.collapsed import check_partition

        owner = f"GeneralizedMallows '{name}'"
        if observed is None:
            raise ValueError(f"{owner}: 'observed' is required (the top-t orderings); forward "
                             f"draws of rankings are not implemented.")
        if isinstance(observed, Variable) and not isinstance(observed, Constant):
            raise TypeError(f"{owner}: 'observed' must be a constant array of orderings "
                            f"(pm.Data is not supported), got {observed!r}.")
        if isinstance(observed, Constant):
            observed = observed.data
        orderings, lengths, n = validate_orderings(observed, owner, n_items)
        check_partition(partition, orderings.shape[0], owner)
        nu_value = check_nu(nu, owner)
        r_value = check_r(r, n_stages(lengths, n), n, owner)
        data = pt.constant(orderings, name=name)
        return super().__new__(cls, name, partition, nu_value, r_value, n, data,
                               observed=data, **kwargs)

    @classmethod
    def dist(cls, partition, nu, r, n_items, data, **kwargs):
        return super().dist(
            [partition, pt.as_tensor_variable(np.float64(nu)),
             pt.as_tensor_variable(np.asarray(r, dtype=np.float64)),
             pt.as_tensor_variable(np.int64(n_items)), data], **kwargs)

    def logp(value, partition, nu, r, n_items, _observed):
        name = getattr(_observed, "name", None) or "GeneralizedMallows"
        return GeneralizedMallowsMarginal(name)(value, partition, nu, r, n_items)


def generalized_mallows_setup(rv):
    """``(orderings, lengths, n, nu, r)`` of a GeneralizedMallows variable ``rv`` (from
    its op's constant inputs)."""
    _, nu, r, n_items, data = rv.owner.op.dist_params(rv.owner)
    values = [constant_value(v) for v in (nu, r, n_items, data)]
    if any(v is None for v in values):
        raise ValueError(f"GeneralizedMallows '{rv.name}': nu, r, n_items and the orderings "
                         f"must be constants.")
    nu, r, n_items, data = values
    orderings, lengths, n = validate_orderings(data, f"GeneralizedMallows '{rv.name}'",
                                               int(n_items))
    return orderings, lengths, n, float(nu), np.asarray(r, dtype=np.float64)
