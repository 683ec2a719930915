"""Mixing helper shared by the example scripts that report autocorrelation times (run
them from any directory: ``python examples/herlau_table2.py`` puts ``examples/`` on
the import path)."""

import arviz as az
import numpy as np


def iat(series):
    """Integrated autocorrelation time of one chain's series, draws / ESS, the ESS by
    ArviZ's ``ess(method="mean")`` (Geyer's initial monotone sequence); NaN if the
    series is constant (it has no autocorrelation time)."""
    series = np.asarray(series, dtype=np.float64)
    if np.ptp(series) == 0:
        return np.nan
    return series.size / float(az.ess(series[None, :], method="mean"))
