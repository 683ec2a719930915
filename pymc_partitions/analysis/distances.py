"""Distances and similarity indices between partitions given as label vectors.

All are computed from the contingency table n_kl = |A_k ∩ B_l| of the two
partitions, with margins a_k = |A_k|, b_l = |B_l| (Meilă 2007; Hubert & Arabie
1985), in O(n) per pair by :func:`pymc_partitions.kernels.contingency.pair_sums`
(no K x K' scan). Labels may be any integers; they need not be canonical.

Each function takes ``a`` of shape (n,) or (m, n) (many draws) and ``b`` of
shape (n,) (one reference), and returns a float, or an (m,) float64 array when
``a`` is 2-D, so the distance of every posterior draw to a point estimate is one
call.

Conventions (pair counts over the n(n-1)/2 unordered pairs of distinct items):

- ``binder_loss``: the number of discordant pairs (together in one partition,
  apart in the other), sum a_k^2/2 + sum b_l^2/2 - sum n_kl^2 (Binder 1978 with
  equal costs). ``normalize=True`` divides by n(n-1)/2, giving 1 - Rand index.
- ``hamming_distance``: eq. (5) of Nguyen et al. (2022) (Mirkin & Chernyi 1970),
  d = sum |A|^2 + sum |B|^2 - 2 sum |A ∩ B|^2, the number of *ordered* discordant
  pairs, i.e. the Hamming distance between the two n x n co-clustering matrices;
  d = 2 * binder_loss. ``normalize=True`` divides by n^2 (the share of discordant
  entries of the co-clustering matrix).
- ``variation_of_information``: VI = H(A|B) + H(B|A) (Meilă 2007, eq. 16)
  = (sum a log a + sum b log b - 2 sum n log n) / n, in bits by default
  (``base=2``, as Wade & Ghahramani 2018 and the R packages mcclust.ext and
  salso); ``base=np.e`` for nats. Ranges over [0, log n].
"""

import numpy as np

from pymc_partitions.distributions.validation import number_arg
from pymc_partitions.kernels.contingency import pair_sums
from pymc_partitions.partitions import as_labels


def _labels_2d(labels, name, owner="distance"):
    arr = as_labels(labels, name, owner)
    if arr.ndim not in (1, 2) or arr.shape[-1] == 0:
        raise ValueError(
            f"{owner}: '{name}' must be a label vector of shape (n,) or an array of label "
            f"vectors of shape (draws, n) with n >= 1; got shape {arr.shape}."
        )
    return arr.reshape(-1, arr.shape[-1]), arr.ndim == 2


def compact_labels(draws):
    """Labels in [0, L) for a (m, n) int64 array, with L as small as is cheap.

    Canonical labels (as in a trace) are already in [0, n) and pass unchanged;
    other labels are renumbered through one ``np.unique`` over the whole array.
    Returns ``(labels, L)``.
    """
    n = draws.shape[1]
    lo, hi = int(draws.min()), int(draws.max())
    if lo >= 0 and hi < max(n, 1):
        return np.ascontiguousarray(draws), hi + 1
    values, inverse = np.unique(draws, return_inverse=True)
    return inverse.reshape(draws.shape).astype(np.int64), values.shape[0]


def contingency_sums(a, b, owner="distance"):
    """The six contingency sums of each row of ``a`` against ``b``.

    Returns ``(sums, n, is_batch)`` with ``sums`` of shape (m, 6):
    [sum a^2, sum b^2, sum n_kl^2, sum a log a, sum b log b, sum n_kl log n_kl]
    (natural logarithms).
    """
    draws, batch = _labels_2d(a, "a", owner)
    ref, ref_batch = _labels_2d(b, "b", owner)
    if ref_batch:
        raise ValueError(
            f"{owner}: 'b' must be one label vector of shape (n,); got shape {np.shape(b)}."
        )
    ref = ref[0]
    if ref.shape[0] != draws.shape[1]:
        raise ValueError(
            f"{owner}: 'a' and 'b' must label the same number of items: {draws.shape[1]} != "
            f"{ref.shape[0]}."
        )
    draws, ka = compact_labels(draws)
    ref, kb = compact_labels(ref[None, :])
    ref = ref[0]
    table = np.zeros((ka, kb), dtype=np.int64)
    out = np.empty((draws.shape[0], 6))
    pair_sums(draws, ref, table, np.zeros(ka, np.int64), np.zeros(kb, np.int64), out)
    return out, draws.shape[1], batch


def _result(values, batch):
    return values if batch else float(values[0])


def binder_loss(a, b, normalize=False):
    """Number of discordant item pairs between partitions ``a`` and ``b``.

    a : (n,) or (m, n) integer labels; b : (n,) integer labels.
    Binder's loss with equal costs: pairs together in one partition and apart in
    the other, sum_k a_k^2/2 + sum_l b_l^2/2 - sum_kl n_kl^2. ``normalize=True``
    divides by n(n-1)/2 (then it equals 1 - :func:`rand_index`).
    """
    sums, n, batch = contingency_sums(a, b, "binder_loss")
    value = 0.5 * (sums[:, 0] + sums[:, 1]) - sums[:, 2]
    if normalize:
        value = value / (n * (n - 1) / 2) if n > 1 else np.zeros_like(value)
    return _result(value, batch)


def hamming_distance(a, b, normalize=False):
    """Mirkin–Chernyi / Hamming distance of Nguyen et al. (2022), eq. (5).

    d(a, b) = sum_k |A_k|^2 + sum_l |B_l|^2 - 2 sum_kl |A_k ∩ B_l|^2, the number of
    ordered pairs (i, j) on which the co-clustering matrices of a and b differ
    (= 2 * :func:`binder_loss`). ``normalize=True`` divides by n^2.
    """
    sums, n, batch = contingency_sums(a, b, "hamming_distance")
    value = sums[:, 0] + sums[:, 1] - 2.0 * sums[:, 2]
    if normalize:
        value = value / float(n * n)
    return _result(value, batch)


def rand_index(a, b):
    """Rand (1971) index: share of the n(n-1)/2 item pairs on which a and b agree."""
    sums, n, batch = contingency_sums(a, b, "rand_index")
    if n < 2:
        return _result(np.ones(sums.shape[0]), batch)
    discordant = 0.5 * (sums[:, 0] + sums[:, 1]) - sums[:, 2]
    return _result(1.0 - discordant / (n * (n - 1) / 2), batch)


def adjusted_rand_index(a, b):
    """Adjusted Rand index of Hubert & Arabie (1985); 1 for equal partitions.

    Written in the pair-confusion form (as scikit-learn's ``adjusted_rand_score``):
    with tp = pairs together in both, fp/fn together in one only, tn apart in both,
    ARI = 2 (tp tn - fn fp) / ((tp + fn)(fn + tn) + (tp + fp)(fp + tn)), and 1 when
    there is no discordant pair (this covers the 0/0 cases: both one block, both
    all singletons, n = 1).
    """
    sums, n, batch = contingency_sums(a, b, "adjusted_rand_index")
    together_a = 0.5 * (sums[:, 0] - n)
    together_b = 0.5 * (sums[:, 1] - n)
    tp = 0.5 * (sums[:, 2] - n)
    fp = together_a - tp
    fn = together_b - tp
    tn = n * (n - 1) / 2 - tp - fp - fn
    denom = (tp + fn) * (fn + tn) + (tp + fp) * (fp + tn)
    agree = (fp == 0) & (fn == 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.where(agree, 1.0, 2.0 * (tp * tn - fn * fp) / np.where(agree, 1.0, denom))
    return _result(value, batch)


def variation_of_information(a, b, base=2.0):
    """Variation of information (Meilă 2007, eq. 16), VI = H(A|B) + H(B|A).

    VI = (sum_k a_k log a_k + sum_l b_l log b_l - 2 sum_kl n_kl log n_kl) / n, in
    units of log ``base`` (bits by default).
    """
    base = number_arg("base", base, "variation_of_information", low=1, low_open=True)
    sums, n, batch = contingency_sums(a, b, "variation_of_information")
    value = (sums[:, 3] + sums[:, 4] - 2.0 * sums[:, 5]) / n / np.log(base)
    return _result(np.maximum(value, 0.0), batch)


DISTANCES = {
    "vi": variation_of_information,
    "binder": binder_loss,
}


def distance_function(name, arg="loss", owner=None):
    """The distance named ``name`` ("vi" or "binder", any case); errors name the
    argument ``arg`` of function ``owner``."""
    key = name.lower() if isinstance(name, str) else None
    if key not in DISTANCES:
        where = f"{owner}: " if owner else ""
        raise ValueError(f"{where}'{arg}' = {name!r} is not a known distance: use 'VI' or 'binder'.")
    return DISTANCES[key]
