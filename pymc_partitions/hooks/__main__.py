"""``python -m pymc_partitions.hooks``: print the fingerprints of the running PyMC /
PyTensor for every hook (see :func:`pymc_partitions.hooks.print_fingerprints`)."""

from pymc_partitions.hooks import print_fingerprints

print_fingerprints()
