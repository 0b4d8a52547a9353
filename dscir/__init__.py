"""dscir: stochastic-gradient MCMC on the probability simplex, on Dask."""

from dscir.errors import CorpusError, DscirError

__version__ = "0.1.0"

__all__ = ["CorpusError", "DscirError", "__version__"]
