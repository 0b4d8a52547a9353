"""The finite mixture's configuration and reference settings per sampler."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dscir.models.mixtures.common import MixtureRunConfig

# Reference settings, carried over from the DP mixture's (Baker et al. 2018, Section 5.2):
# the weights play the part of the DP's sticks and the components are the same
# K x W Gamma variables, so SGRLD keeps the DP's epsilon of the sticks (0.005) for
# the weights and of the components (0.001) for the components.
INITS = ("random", "kmeans++", "collapsed")  # the starts (``gibbs``, ``collapsed``)

REFERENCE: dict[str, dict[str, Any]] = {
    "scir": {"a0": 0.5, "step_weights": 0.1, "step_components": 0.1},
    "sgrld": {"a0": 0.001, "step_weights": 0.005, "step_components": 0.001},
    "gibbs": {"a0": 0.5, "step_weights": None, "step_components": None},
}


@dataclass(frozen=True)
class MixtureConfig(MixtureRunConfig):
    """Everything that determines a finite-mixture chain (with the corpus and the seed;
    the run settings, ``MixtureRunConfig``'s, by keyword)."""

    sampler: str  # "scir" or "sgrld" (stochastic, on Dask) or "gibbs" (exact, in process)
    n_clusters: int  # K, fixed
    gamma: float  # Dirichlet(gamma) prior of the mixture weights
    a0: float  # Dirichlet(a0) prior of each component
    batch_size: int  # documents per minibatch (ignored by "gibbs")
    step_weights: float  # h (SCIR) or epsilon (SGRLD) of the K weight gammas
    step_components: float  # the same for the K x W component gammas
