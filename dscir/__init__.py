"""dscir: stochastic-gradient MCMC on the probability simplex, on Dask."""

from dscir.errors import CorpusError, DscirError
from dscir.api import LDA, DPMixture, Mixture

__version__ = "0.1.0"

__all__ = ["CorpusError", "DPMixture", "DscirError", "LDA", "Mixture", "__version__"]
