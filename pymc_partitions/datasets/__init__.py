"""Data sets: generators for the papers' synthetic experiments and loaders for the
real data sets (``pmp.datasets``).

Generators (:mod:`.generators`) need nothing but numpy. Loaders (:mod:`.loaders`)
read a data directory (argument > ``$PMP_DATA_DIR`` > ``~/.cache/pymc-partitions``)
and download missing files from their publisher when they can.
:func:`prepare_network` prepares and downsamples networks as Herlau et al. (2016, §3.3) do.
"""

from pymc_partitions.datasets.generators import (
    JAIN_NEAL_TABLE,
    edges_from_adjacency,
    erdos_renyi_graph,
    generalized_mallows_orderings,
    jain_neal_bernoulli,
    jain_neal_probabilities,
    meila_chen_rankings,
    nguyen_gmm_1d,
    nguyen_synthetic,
    pbc_bernoulli,
    pbc_normal,
    planted_partition,
    random_regular_graph,
)
from pymc_partitions.datasets.loaders import (
    FILES,
    ChecksumError,
    DataNotFoundError,
    Dataset,
    fetch_file,
    get_data_dir,
    load_apa_rankings,
    load_apa_top_orderings,
    load_gene,
    load_hagmann,
    load_jaspar_motifs,
    load_nips234,
    load_octahedron,
    load_seeds,
    load_usair97,
    ranks_to_orderings,
    top_orderings_to_orderings,
)
from pymc_partitions.datasets.networks import PreparedNetwork, prepare_network

__all__ = [
    "FILES",
    "JAIN_NEAL_TABLE",
    "ChecksumError",
    "DataNotFoundError",
    "Dataset",
    "PreparedNetwork",
    "edges_from_adjacency",
    "erdos_renyi_graph",
    "fetch_file",
    "generalized_mallows_orderings",
    "get_data_dir",
    "jain_neal_bernoulli",
    "jain_neal_probabilities",
    "load_apa_rankings",
    "load_apa_top_orderings",
    "load_gene",
    "load_hagmann",
    "load_jaspar_motifs",
    "load_nips234",
    "load_octahedron",
    "load_seeds",
    "load_usair97",
    "meila_chen_rankings",
    "nguyen_gmm_1d",
    "nguyen_synthetic",
    "pbc_bernoulli",
    "pbc_normal",
    "planted_partition",
    "prepare_network",
    "random_regular_graph",
    "ranks_to_orderings",
    "top_orderings_to_orderings",
]
