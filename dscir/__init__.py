"""dscir: stochastic-gradient MCMC on the probability simplex, on Dask.

The estimators (``LDA``, ``DPMixture``, ``Mixture``), ``tune``, ``session`` and
``load`` are loaded from ``dscir.api`` on first use (PEP 562), so that importing
a lower package (``dscir.rng``, ``dscir.samplers``, ``dscir.corpus``) loads only
what that package uses, not the API, Dask's cluster client and every model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dscir.errors import CorpusError, DscirError

if TYPE_CHECKING:
    from dscir.api import LDA, DPMixture, Mixture, load, session, tune

__version__ = "0.1.0"

#: The API's names at the package's top, each an attribute of ``dscir.api``.
_API_NAMES = ("DPMixture", "LDA", "Mixture", "load", "session", "tune")

__all__ = ["CorpusError", "DPMixture", "DscirError", "LDA", "Mixture", "__version__", "load",
           "session", "tune"]


def __getattr__(name: str):
    """``dscir.LDA`` and the other API names, imported when first asked for."""
    if name not in _API_NAMES:
        raise AttributeError(f"module 'dscir' has no attribute {name!r}")
    from dscir import api

    value = getattr(api, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
