"""Loaders for the real data sets of the papers pymc-partitions implements.

Every loader has the form ``load_x(data_dir=None, download=True, ...)`` and returns
a :class:`Dataset` record: ``data`` (the arrays, in the form its docstring states),
``target`` (true labels when the data set has them, else None), ``description``,
``source``, ``licence``, the ``paths`` it read, and ``extra`` (further arrays such as
names or edge lists).

Where the files are
-------------------
The data directory is, in order: the ``data_dir`` argument; the environment
variable ``PMP_DATA_DIR``; ``$XDG_CACHE_HOME/pymc-partitions`` (default
``~/.cache/pymc-partitions``). Its layout is the one of the project's shared data
folder (``uci/``, ``coupling/``, ``networks/``, ``rankings/``, ``motifs/``), so
``PMP_DATA_DIR=/path/to/shared/data`` reads an existing copy as is.

A file that is not there is downloaded from its publisher (``download=True``) to a
temporary file in the same folder, checked against the SHA-256 prefix and size
recorded in :data:`FILES`, and then renamed into place: a partial or corrupted
download is never left under the final name, and a checksum mismatch raises
:class:`ChecksumError`. The octahedron edge list is generated locally (it is
networkx's ``octahedral_graph()``; no download). Files that are *derived* from an
archive or an R package (Hagmann, APA, JASPAR) have no direct URL: they are not
downloaded, and a missing one raises :class:`DataNotFoundError` naming its
provenance. Every missing file that cannot be fetched raises
:class:`DataNotFoundError` (a :class:`FileNotFoundError`) saying which file, where
it was looked for and how to fix it.
"""

from __future__ import annotations

import csv
import hashlib
import http.client
import json
import os
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ENV_VAR = "PMP_DATA_DIR"


class DataNotFoundError(FileNotFoundError):
    """A data file is missing and could not be downloaded (or downloading is off)."""


class ChecksumError(ValueError):
    """A data file's size or SHA-256 prefix differs from the recorded one."""


@dataclass(frozen=True)
class FileInfo:
    """One data file: path relative to the data directory, SHA-256 prefix, size in
    bytes, download URLs (tried in order; empty if derived), and provenance."""

    path: str
    sha256: str
    size: int
    urls: tuple = ()
    source: str = ""
    licence: str = ""
    derived: str = ""  # how the file was made, when it has no direct URL


_RAW = "https://raw.githubusercontent.com/"
_TINNGUYEN = (
    _RAW + "tinnguyen96/partition-coupling/" "420a37986e5dee08f6fe57d86b219a7e1f6a30f8/data/"
)

FILES = {
    "seeds_uci": FileInfo(
        "uci/seeds_dataset.txt", "1f3f83c0d8485ae9", 9300,
        urls=(
            "https://archive.ics.uci.edu/ml/machine-learning-databases/00236/seeds_dataset.txt",
            _RAW + "AdamStelmaszczyk/edami/484c1cc/seeds_dataset.txt",
        ),
        source="UCI Machine Learning Repository, 'seeds' (Charytanowicz et al. 2010)",
        licence="CC BY 4.0",
    ),
    "seed_csv": FileInfo(
        "coupling/seed.csv", "924b0485ae965363", 28841, urls=(_TINNGUYEN + "seed.csv",),
        source="github tinnguyen96/partition-coupling data/seed.csv (Nguyen et al. 2022)",
        licence="MIT",
    ),
    "gene": FileInfo(
        "coupling/gene.csv", "2470bc0394bc2da1", 123706, urls=(_TINNGUYEN + "gene.csv",),
        source="github tinnguyen96/partition-coupling data/gene.csv (Zeisel et al. 2015 subset)",
        licence="MIT",
    ),
    "octahedron": FileInfo(
        "coupling/kregular_6nodes_4regular_octahedron.edgelist", "d6db0e20888eb7a6", 48,
        source="networkx octahedral_graph() (generated locally)", licence="-",
        derived="generated: the octahedron, edges i < j in lexicographic order",
    ),
    "nips234": FileInfo(
        "networks/NIPS234.csv", "5af097c49008b051", 109512,
        urls=(_RAW + "adiehl96/Network-Science-Datasets/HEAD/NIPS/NIPS.csv",),
        source="github adiehl96/Network-Science-Datasets NIPS/NIPS.csv", licence="MIT",
    ),
    "usair97": FileInfo(
        "networks/USAir97.net", "4983d16960fc3b0e", 80769,
        urls=(
            _RAW + "bavla/widespread/" "e99a92db36d4a2b474280462a754291c8fd6a7d1/data/USAir97.net",
        ),
        source="github bavla/widespread data/USAir97.net (Pajek, V. Batagelj)", licence="GPL-3",
    ),
    "hagmann": FileInfo(
        "networks/hagmann998_edges_derived.csv", "a53456323cca0f53", 298478,
        source="github the-virtual-brain/tvb-data connectivity_998.zip (Hagmann et al. 2008)",
        licence="GPL-3",
        derived="edge list (i < j, weight) of the max-symmetrised weights of tvb-data's "
        "connectivity_998.zip",
    ),
    "apa_ranks": FileInfo(
        "rankings/apa1980_diaconis_5738x5_ranks.csv", "9e11ca1f264f0e02", 57430,
        source="CRAN package Rankcluster, data set APA (Diaconis 1988)", licence="GPL >= 2",
        derived="Rankcluster's APA$data written as CSV; its rows are orderings (best "
        "first) despite the header rank_of_A..E (see load_apa_rankings)",
    ),
    "apa_top": FileInfo(
        "rankings/apa1980_plmix_15449x5_top_orderings.csv", "2732dc402fcf7b02", 154525,
        source="CRAN package PLMIX, data set d_apa", licence="GPL >= 2",
        derived="PLMIX's d_apa top orderings, written as CSV",
    ),
    "jaspar_json": FileInfo(
        "motifs/jaspar2014_core_width8_counts.json", "6b072f95931fd268", 18973,
        source="JASPAR 2014 CORE (from the pyjaspar 4.0.0 wheel)", licence="CC BY 4.0",
        derived="all JASPAR 2014 CORE count matrices of width 8, written as JSON",
    ),
    "jaspar_tsv": FileInfo(
        "motifs/jaspar2014_core_width8_counts.tsv", "1ad7e3999e40106a", 15918,
        source="JASPAR 2014 CORE (from the pyjaspar 4.0.0 wheel)", licence="CC BY 4.0",
        derived="all JASPAR 2014 CORE count matrices of width 8, written as TSV",
    ),
}


@dataclass
class Dataset:
    """A loaded data set (arrays and where they came from)."""

    name: str
    data: np.ndarray
    target: np.ndarray | None
    description: str
    source: str
    licence: str
    paths: tuple = ()
    extra: dict = field(default_factory=dict)

    def __repr__(self):
        shape = getattr(self.data, "shape", None)
        return f"Dataset({self.name!r}, data shape {shape}, source: {self.source})"


# ------------------------------------------------------------------ data directory
def default_cache_dir():
    """``$XDG_CACHE_HOME/pymc-partitions``, by default ``~/.cache/pymc-partitions``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pymc-partitions"


def get_data_dir(data_dir=None):
    """The data directory: ``data_dir`` > ``$PMP_DATA_DIR`` > :func:`default_cache_dir`."""
    if data_dir is not None:
        return Path(data_dir).expanduser()
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser()
    return default_cache_dir()


def file_digest(path):
    """(SHA-256 hex digest, size in bytes) of a file."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest(), os.path.getsize(path)


def verify(path, info):
    """Raise :class:`ChecksumError` unless ``path`` matches ``info``'s size and SHA-256 prefix."""
    digest, size = file_digest(path)
    if size != info.size or not digest.startswith(info.sha256):
        raise ChecksumError(
            f"{path}: size {size} bytes, sha256 {digest[:16]}...; expected {info.size} bytes, "
            f"sha256 {info.sha256}.... The file is not the published {info.path}: delete it "
            f"to download it again, or point {ENV_VAR} at a verified copy."
        )


def fetch_file(key, data_dir=None, download=True):
    """Path of data file ``key`` (a key of :data:`FILES`), downloading it if needed.

    Raises :class:`DataNotFoundError` if the file is missing and cannot be fetched,
    :class:`ChecksumError` if a downloaded file does not match its checksum.
    """
    info = FILES[key]
    root = get_data_dir(data_dir)
    path = root / info.path
    if path.is_file():
        verify(path, info)  # cheap (< 0.3 MB); a stale or edited copy must not load silently
        return path
    how_to_fix = (
        f"Set the environment variable {ENV_VAR} to a directory holding '{info.path}' "
        f"(e.g. the project's shared data folder) or pass data_dir=."
    )
    if key == "octahedron":  # generated, not downloaded
        if not download:
            raise DataNotFoundError(
                f"Data file '{info.path}' not found in {root} and download=False. {how_to_fix}"
            )
        _write_verified(path, info, _octahedron_text().encode())
        return path
    if not info.urls:
        raise DataNotFoundError(
            f"Data file '{info.path}' not found in {root}. It is derived ({info.derived}; source: "
            f"{info.source}) and has no direct download. {how_to_fix}"
        )
    if not download:
        raise DataNotFoundError(
            f"Data file '{info.path}' not found in {root} and download=False. {how_to_fix} "
            f"Or pass download=True to fetch it from {info.urls[0]}."
        )
    errors, mismatch = [], None
    for url in info.urls:  # the publisher first, then mirrors
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                payload = response.read()
        except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as exc:
            errors.append(f"{url}: {exc}")
            continue
        try:
            _write_verified(path, info, payload)
        except ChecksumError as exc:
            mismatch = ChecksumError(f"downloaded from {url}: {exc}")
            continue
        return path
    if mismatch is not None:
        raise mismatch
    raise DataNotFoundError(
        f"Data file '{info.path}' not found in {root}, and downloading it failed "
        f"({'; '.join(errors)}). {how_to_fix}"
    )


def _write_verified(path, info, payload):
    """Write ``payload`` to a temporary file next to ``path``, verify it, rename it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
        verify(tmp, info)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _octahedron_text():
    # networkx.octahedral_graph(): K6 minus the perfect matching {0-5, 1-4, 2-3}.
    missing = {(0, 5), (1, 4), (2, 3)}
    return "".join(f"{i} {j}\n" for i in range(6) for j in range(i + 1, 6) if (i, j) not in missing)


def _record(key, name, data, target, description, paths, **extra):
    info = FILES[key]
    return Dataset(name, data, target, description, info.source, info.licence, tuple(paths), extra)


def _edges_to_adjacency(edges, n):
    a = np.zeros((n, n), dtype=np.int64)
    a[edges[:, 0], edges[:, 1]] = 1
    a[edges[:, 1], edges[:, 0]] = 1
    return a


# ------------------------------------------------------------------ clustering data
SEEDS_FEATURES = (
    "area", "perimeter", "compactness", "kernel_length", "kernel_width",
    "asymmetry_coefficient", "groove_length",
)
SEEDS_VARIETIES = ("Kama", "Rosa", "Canadian")


def load_seeds(data_dir=None, download=True, standardised=False):
    """Wheat seed kernels (Charytanowicz et al. 2010; Nguyen et al. 2022, App. G.3 'seed').

    Returns a :class:`Dataset` with ``data`` (210, 7) float64 (area, perimeter,
    compactness, kernel length, kernel width, asymmetry coefficient, groove length)
    and ``target`` (210,) int64 in {0, 1, 2} (varieties Kama, Rosa, Canadian; the UCI
    class minus one), 70 each.

    ``standardised=False`` reads the UCI file (``uci/seeds_dataset.txt``: 8
    whitespace-separated columns, stray double tabs). ``standardised=True`` reads
    Nguyen et al.'s ``coupling/seed.csv`` (each column standardised, ddof = 0: the
    data exactly as in their experiments); the target still comes from the UCI file
    (same row order).
    """
    uci = fetch_file("seeds_uci", data_dir, download)
    raw = np.loadtxt(uci)  # splits on any whitespace
    if raw.shape != (210, 8):
        raise ValueError(f"{uci}: expected 210 x 8 values, got {raw.shape}.")
    target = raw[:, 7].astype(np.int64) - 1
    paths = [uci]
    if standardised:
        csv_path = fetch_file("seed_csv", data_dir, download)
        data = np.loadtxt(csv_path, delimiter=",", skiprows=1)
        paths.append(csv_path)
        key, desc = "seed_csv", "seeds, each feature standardised (Nguyen et al. 2022 seed.csv)"
    else:
        data = raw[:, :7].copy()
        key, desc = "seeds_uci", "seeds (UCI), raw features"
    return _record(key, "seeds", data, target, desc, paths,
                   feature_names=SEEDS_FEATURES, target_names=SEEDS_VARIETIES)


def load_gene(data_dir=None, download=True):
    """Single-cell RNA-seq (Zeisel et al. 2015) as in Nguyen et al. (2022, App. G.3 'gene').

    ``data`` (200, 50) float64: 200 cells, the 50 most variable genes, log-transformed
    and standardised. No ``target``.
    """
    path = fetch_file("gene", data_dir, download)
    with open(path) as f:
        names = tuple(f.readline().strip().split(","))
    data = np.loadtxt(path, delimiter=",", skiprows=1)
    return _record("gene", "gene", data, None,
                   "200 cells x 50 most variable genes, log and standardised", [path],
                   feature_names=names)


# ------------------------------------------------------------------ graphs
def load_octahedron(data_dir=None, download=True):
    """The octahedron: the only 4-regular graph on 6 nodes (Nguyen et al. 2022, App. G.3
    'k-regular'; 96 proper 4-colourings).

    ``data`` (6, 6) int64 symmetric 0/1 adjacency; ``extra['edges']`` (12, 2) int64
    with i < j. A missing file is generated, not downloaded.
    """
    path = fetch_file("octahedron", data_dir, download)
    edges = np.loadtxt(path, dtype=np.int64, ndmin=2)
    return _record("octahedron", "octahedron", _edges_to_adjacency(edges, 6), None,
                   "4-regular graph on 6 nodes (octahedron)", [path], edges=edges)


def load_nips234(data_dir=None, download=True):
    """NIPS co-authorship network of 234 authors (Herlau et al. 2016 'NIPS').

    ``data`` (234, 234) int64 symmetric 0/1 adjacency with zero diagonal (598 edges).
    """
    path = fetch_file("nips234", data_dir, download)
    a = np.loadtxt(path, delimiter=",", dtype=np.int64)
    return _record("nips234", "nips234", a, None, "NIPS co-authorship, 234 authors", [path])


def _read_pajek(path):
    names, arcs = [], []
    section = None
    with open(path, encoding="latin-1") as f:
        for line in f:
            s = line.strip()
            if not s or s.startswith("%"):
                continue
            if s.startswith("*"):
                section = s.split()[0].lower()
                continue
            if section == "*vertices":
                first, rest = s.split(None, 1)
                names.append(rest.split('"')[1] if '"' in rest else rest.split()[0])
            elif section in ("*arcs", "*edges"):
                parts = s.split()
                w = float(parts[2]) if len(parts) > 2 else 1.0
                arcs.append((int(parts[0]) - 1, int(parts[1]) - 1, w, section == "*arcs"))
    return names, arcs


def load_usair97(data_dir=None, download=True, threshold=0.0, symmetrise=True, weighted=False):
    """US air transport network 1997, 332 airports (Herlau et al. 2016 'USAir').

    The Pajek file has 2126 weighted edges. ``data`` is (332, 332): with
    ``weighted=False`` (default) int64 0/1 adjacency with an edge where the weight
    exceeds ``threshold`` (0: every listed edge, as in the paper); with
    ``weighted=True`` float64 weights (0 where no edge). ``symmetrise=True`` makes it
    symmetric (an edge i-j if either direction is listed, weight the larger);
    ``symmetrise=False`` keeps each edge as listed, i to j. ``extra['names']``: the
    airport names.
    """
    path = fetch_file("usair97", data_dir, download)
    names, arcs = _read_pajek(path)
    n = len(names)
    w = np.zeros((n, n), dtype=np.float64)
    for i, j, weight, _ in arcs:
        w[i, j] = max(w[i, j], weight)
    if symmetrise:
        w = np.maximum(w, w.T)
    data = w if weighted else (w > threshold).astype(np.int64)
    return _record("usair97", "usair97", data, None, "US airports 1997 (Pajek)", [path],
                   names=tuple(names), threshold=threshold, symmetrise=symmetrise)


def load_hagmann(data_dir=None, download=True, threshold=0.0, symmetrise=True, weighted=False):
    """Human cortical connectivity, 998 regions (Hagmann et al. 2008; Herlau et al. 2016).

    The file is an edge list (i < j, max-symmetrised weight) of 17,865 edges over
    n = 998 regions, 9 of them isolated (the paper reports n = 988 after its own,
    unknown, preprocessing). ``data`` (998, 998): int64 0/1 adjacency with an edge
    where the weight exceeds ``threshold`` (``weighted=False``) or float64 weights;
    ``symmetrise=True`` fills both triangles, ``False`` only i < j.
    ``extra['edges']`` (17865, 2) int64 and ``extra['weights']`` (17865,) float64.
    Not downloadable (derived from tvb-data's ``connectivity_998.zip``).
    """
    path = fetch_file("hagmann", data_dir, download)
    table = np.loadtxt(path, delimiter=",", skiprows=1)
    edges, weights = table[:, :2].astype(np.int64), table[:, 2]
    n = 998
    w = np.zeros((n, n), dtype=np.float64)
    w[edges[:, 0], edges[:, 1]] = weights
    if symmetrise:
        w = np.maximum(w, w.T)
    data = w if weighted else (w > threshold).astype(np.int64)
    return _record("hagmann", "hagmann", data, None, "Hagmann connectome, 998 regions", [path],
                   edges=edges, weights=weights)


# ------------------------------------------------------------------ rankings
APA_CANDIDATES = ("A", "B", "C", "D", "E")


#: Padding after the ranked positions of a top-t ordering in the 0-based ordering
#: representation (``pymc_partitions.distributions.mallows.PAD``).
ORDERING_PAD = -1


def ranks_to_orderings(ranks):
    """Complete rankings from the *rank* representation to 0-based orderings.

    ranks : (N, n) integers, ``ranks[v, c]`` the rank (1 = best) voter v gives item c;
    each row a permutation of 1..n. Returns (N, n) int64 ``orderings`` with
    ``orderings[v, r]`` the item (0-based) voter v ranks at position r + 1: the form
    the Generalized Mallows likelihood takes. A row that is not a permutation of
    1..n raises a ValueError naming it.
    """
    ranks = np.asarray(ranks)
    if ranks.ndim != 2 or ranks.dtype.kind not in "iu":
        raise ValueError(f"ranks_to_orderings: 'ranks' must be an (N, n) integer array, got "
                         f"shape {ranks.shape} and dtype {ranks.dtype}.")
    n = ranks.shape[1]
    bad = ~np.all(np.sort(ranks, axis=1) == np.arange(1, n + 1), axis=1)
    if bad.any():
        v = int(np.argmax(bad))
        raise ValueError(f"ranks_to_orderings: row {v} ({ranks[v].tolist()}) is not a "
                         f"permutation of the ranks 1..{n}.")
    return np.argsort(ranks, axis=1, kind="stable").astype(np.int64)


def top_orderings_to_orderings(top):
    """Top-t orderings from PLMIX's representation (1-based items, 0 = unranked) to
    0-based items padded with -1 (:data:`ORDERING_PAD`).

    top : (N, n) integers, ``top[v, r]`` the item (1..n) voter v puts at position
    r + 1, 0 where unranked (after the ranked positions). Returns (N, n) int64.
    Values outside 0..n raise a ValueError naming the row; the rest of the checks
    (repeats, gaps, empty rows) are the likelihood's.
    """
    top = np.asarray(top)
    if top.ndim != 2 or top.dtype.kind not in "iu":
        raise ValueError(f"top_orderings_to_orderings: 'top' must be an (N, n) integer array, "
                         f"got shape {top.shape} and dtype {top.dtype}.")
    bad = (top < 0) | (top > top.shape[1])
    if bad.any():
        v, r = np.argwhere(bad)[0]
        raise ValueError(f"top_orderings_to_orderings: row {v}, position {r} holds {top[v, r]}; "
                         f"PLMIX orderings hold items 1..{top.shape[1]} and 0 for unranked.")
    return np.where(top == 0, ORDERING_PAD, top - 1).astype(np.int64)


def load_apa_rankings(data_dir=None, download=True, as_orderings=False):
    """APA 1980 presidential election, complete rankings (Diaconis 1988; Rankcluster ``APA``).

    ``data`` (5738, 5) int64 in the *rank* representation: ``data[v, c]`` is the rank
    (1 = best) voter v gives candidate c (0-based column c is Diaconis's candidate
    c + 1). With ``as_orderings=True``, ``data`` is instead in the 0-based ordering
    representation of the Generalized Mallows likelihood (``data[v, r]`` the
    candidate, 0..4, at position r + 1) and ``extra['lengths']`` (5738,) int64 holds
    5 for each voter. Not downloadable (derived from an R package).

    **The file's rows are orderings, not ranks.** The CSV is Rankcluster's
    ``APA$data``; its header (``rank_of_A`` ...) and Rankcluster's documentation
    ("ranking representation") call the rows ranks, but each row lists the
    candidates best first (candidate at position 1, 2, ...), and this loader reads
    them so. The evidence (checked against the packages' .rda files, 2026):

    * Rankcluster's own ``APA$frequency``, documented as orderings, expands row for
      row into ``APA$data`` with no conversion: both hold the same representation.
    * PLMIX ``d_apa`` (documented as orderings: "candidates from the most-liked
      (Rank_1) ..."): its 5738 complete ballots equal these rows read as orderings,
      count for count over all 120 permutations; read as ranks they do not.
    * ConsRank ``APAred`` (rank representation: columns are candidates) is exactly
      the inverse permutation of every row here, and ConsRank ``APAFULL`` (ranks,
      NA = unranked) equals PLMIX ``d_apa`` converted to ranks for all 15449
      ballots: two packages in two representations agree with each other and with
      this file only when its rows are orderings.
    * The published outcome: candidate 3 won the election (PLMIX's documentation;
      the APA used the Hare system). The Hare count (single transferable vote) of
      these rows as orderings elects candidate 3, who also has the most first
      choices (1609 of 5738, 28%); read as ranks it would elect candidate 2 (most
      first choices 1519). The count over all 15449 PLMIX ballots elects 3 too.

    (StatMethRank's ``APA`` lists each candidate's value as 6 minus the rank implied
    here, i.e. 5 = most preferred, although its documentation says lower is better:
    a third, inconsistent transcription; it is not used.)
    """
    path = fetch_file("apa_ranks", data_dir, download)
    rows = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.int64)
    # Each row is an ordering (candidates 1..5, best first); the inverse permutation
    # of an ordering is its ranks, so ranks_to_orderings (argsort, with its check
    # that every row is a permutation of 1..5) gives the 0-based ranks.
    ranks = ranks_to_orderings(rows) + 1
    extra = {"candidates": APA_CANDIDATES}
    data = ranks
    description = "APA 1980 election, 5738 complete rankings of 5 candidates (ranks)"
    if as_orderings:
        data = rows - 1
        extra["lengths"] = np.full(data.shape[0], data.shape[1], dtype=np.int64)
        description = "APA 1980 election, 5738 complete rankings of 5 candidates (0-based orderings)"
    return _record("apa_ranks", "apa_rankings", data, None, description, [path], **extra)


def load_apa_top_orderings(data_dir=None, download=True, as_orderings=False):
    """APA 1980 presidential election, top-t orderings (PLMIX ``d_apa``; Meilă & Chen 2010).

    ``data`` (15449, 5) int64 in the *ordering* representation: ``data[v, r]`` is the
    candidate (1..5) voter v puts at position r + 1, 0 where unranked; lengths t = 1,
    2, 3, 5 (5141, 2462, 2108, 5738 voters). ``extra['lengths']`` (15449,) int64.
    With ``as_orderings=True``, candidates are 0-based (0..4) and unranked positions
    hold -1 (:func:`top_orderings_to_orderings`): the form the Generalized Mallows
    likelihood takes. Not downloadable (derived from an R package).
    """
    path = fetch_file("apa_top", data_dir, download)
    data = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.int64)
    lengths = (data > 0).sum(axis=1)
    description = "APA 1980 election, 15449 top-t orderings of 5 candidates (0 = unranked)"
    if as_orderings:
        data = top_orderings_to_orderings(data)
        description = ("APA 1980 election, 15449 top-t orderings of 5 candidates (0-based, "
                       "-1 = unranked)")
    return _record("apa_top", "apa_top_orderings", data, None, description, [path],
                   lengths=lengths, candidates=APA_CANDIDATES)


# ------------------------------------------------------------------ motifs
JASPAR_BASES = ("A", "C", "G", "T")


def load_jaspar_motifs(data_dir=None, download=True, format="json"):
    """JASPAR 2014 CORE count matrices of width 8: a stand-in for the 90 motifs of
    Goswami et al. (2005, §7.2), which are not public.

    ``data`` (90, 4, 8) int64 counts (bases A, C, G, T x positions);
    ``extra['matrix_id']``, ``extra['names']``, ``extra['tax_group']``: tuples of 90
    strings. ``format`` ``"json"`` or ``"tsv"`` selects the file read (same content).
    Not downloadable (derived from the pyjaspar wheel).
    """
    if format == "json":
        path = fetch_file("jaspar_json", data_dir, download)
        with open(path) as f:
            records = json.load(f)
        ids = tuple(r["matrix_id"] for r in records)
        names = tuple(r["name"] for r in records)
        tax = tuple(r["tax_group"] for r in records)
        counts = np.array([r["counts"] for r in records], dtype=np.int64)
        key = "jaspar_json"
    elif format == "tsv":
        path = fetch_file("jaspar_tsv", data_dir, download)
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f, delimiter="\t"))
        ids, names, tax, mats = [], [], [], []
        for row in rows:
            if not ids or ids[-1] != row["matrix_id"]:
                ids.append(row["matrix_id"])
                names.append(row["name"])
                tax.append(row["tax_group"])
                mats.append({})
            mats[-1][row["base"]] = [int(row[f"pos{p}"]) for p in range(1, 9)]
        counts = np.array([[m[b] for b in JASPAR_BASES] for m in mats], dtype=np.int64)
        ids, names, tax = tuple(ids), tuple(names), tuple(tax)
        key = "jaspar_tsv"
    else:
        raise ValueError(f"load_jaspar_motifs: format must be 'json' or 'tsv', got {format!r}.")
    return _record(key, "jaspar_motifs", counts, None,
                   "JASPAR 2014 CORE count matrices of width 8 (A, C, G, T x 8)", [path],
                   matrix_id=ids, names=names, tax_group=tax, bases=JASPAR_BASES)


__all__ = [
    "FILES",
    "ChecksumError",
    "DataNotFoundError",
    "Dataset",
    "default_cache_dir",
    "fetch_file",
    "get_data_dir",
    "load_apa_rankings",
    "load_apa_top_orderings",
    "load_gene",
    "load_hagmann",
    "load_jaspar_motifs",
    "load_nips234",
    "load_octahedron",
    "load_seeds",
    "load_usair97",
    "ranks_to_orderings",
    "top_orderings_to_orderings",
    "verify",
]
