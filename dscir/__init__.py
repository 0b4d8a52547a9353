"""dscir: stochastic-gradient MCMC on the probability simplex, on Dask."""

from dscir.errors import CorpusError, DscirError
from dscir.api import LDA, DPMixture, Mixture
from dscir.api.session import session
from dscir.api.tune import tune

__version__ = "0.1.0"

__all__ = ["CorpusError", "DPMixture", "DscirError", "LDA", "Mixture", "__version__", "session",
           "tune"]
