"""Gibbs energies over partitions for fixed data: targets that are not likelihoods."""

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.dist_math import check_parameters
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant
from pytensor.tensor.random.op import RandomVariable

from pymc_partitions.distributions.collapsed import (
    CollapsedLikelihood,
    CollapsedLikelihoodRV,
)
from pymc_partitions.versions import ancestors
from pymc_partitions.distributions.statistics import normal_moments
from pymc_partitions.kernels.components import kmeans_energy as km_kernel


def _is_fixed(value):
    """True if ``value`` is a number, an array, or a graph of constants and data
    containers (no random variable and no free symbolic input)."""
    for var in ancestors([pt.as_tensor_variable(value)]):
        if var.owner is None and not isinstance(var, Constant | SharedVariable):
            return False
        if var.owner is not None and isinstance(var.owner.op, RandomVariable):
            return False
    return True


class KMeansEnergyRV(CollapsedLikelihoodRV):
    name = "kmeans_energy"
    signature = "(n),(d),(r,s)->(n,d)"
    dtype = "floatX"
    _print_name = ("KMeansEnergy", "\\operatorname{KMeansEnergy}")
    hyper_names = ("temperature",)
    positive = ("temperature",)
    kernel = km_kernel
    # Not normalised over the data: no predictive density, so no leave-one-out terms
    # (pmp.compute_log_likelihood refuses it).
    normalised = False

    def rng_fn(self, rng, partition, *args):
        raise NotImplementedError(
            "KMeansEnergy is a Gibbs energy over partitions for fixed data, not a "
            "probability distribution of the data: exp(-W(z)/T) is not normalised in y "
            "(it is constant along translations of a block), so there is nothing to draw "
            "'observed' from. Prior and posterior predictive draws are not defined for it; "
            "leave it out of var_names, or use a likelihood such as pmp.CollapsedNormal."
        )


kmeans_energy = KMeansEnergyRV()


class KMeansEnergy(CollapsedLikelihood):
    r"""The k-means objective as a Boltzmann energy over partitions (Goswami, Liu &
    Wong 2005, §7.3.1, eq. 24).

    .. math::

        \log g(z) = -\frac1T \sum_k \sum_{i \in k} \lVert y_i - \bar y_k \rVert^2,
        \qquad \bar y_k = \frac{1}{|k|}\sum_{i\in k} y_i,

    the within-block sum of squares over a temperature T. Combined with a partition
    prior (e.g. :class:`~pymc_partitions.CRP`; Goswami et al. restrict to a fixed
    number of blocks), the partition samplers draw from
    :math:`p(z)\,g(z)`: at small T this is stochastic optimisation of the k-means
    objective.

    **This is a Gibbs energy, not a likelihood.** It is not normalised over the data,
    so ``observed`` is fixed input, not something the model explains, and the
    temperature is a *tempering constant*: it must be a positive number (a scalar,
    or a length-D vector giving dimension d the weight 1/T_d). A random-variable
    temperature is refused, because the missing normaliser depends on it: NUTS would
    sample T (and through it z) from a wrong target. Forward draws are not defined
    and raise NotImplementedError.

    Item y joining a block of m items with mean :math:`\bar y` raises the energy by
    :math:`\frac{m}{m+1}\lVert y - \bar y\rVert^2/T` (0 for an empty block): O(D)
    per (item, block) (:mod:`pymc_partitions.kernels.components.kmeans_energy`).

    Parameters
    ----------
    partition : TensorVariable
        A partition variable over the n rows.
    temperature : float or array of float, > 0
        A constant (scalar or length-D vector).
    observed : array_like, shape (n, D) or (n,)
        Finite data.
    """

    rv_op = kmeans_energy
    hyper_defaults = {"temperature": 1.0}

    @classmethod
    def _bind_hypers(cls, args, kwargs, owner):
        values = super()._bind_hypers(args, kwargs, owner)
        temperature = values["temperature"]
        if not _is_fixed(temperature):
            raise ValueError(
                f"{owner}: 'temperature' must be a positive constant (a number or an array of "
                f"numbers), got {temperature!r}. KMeansEnergy is an unnormalised Gibbs energy "
                f"whose normaliser depends on the temperature, so a random temperature would "
                f"make NUTS sample a wrong target. Fix it, or run several chains at different "
                f"temperatures (a tempering ladder)."
            )
        return values

    def logp(value, partition, temperature, _observed):
        # Within-block sums of squares, memoised on the labels (O(K D) per NUTS
        # step; pymc_partitions.distributions.statistics).
        ok, _, _, m2 = normal_moments(partition, value)
        within = pt.sum(m2, axis=0)
        logp = pt.switch(ok, -pt.sum(within / temperature), -np.inf)
        return check_parameters(logp, pt.all(temperature > 0), msg="temperature > 0")
