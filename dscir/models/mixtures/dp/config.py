"""The DP mixture's configuration and the papers' reference settings per sampler."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dscir.models.mixtures.common import MixtureRunConfig

# Reference settings for the DP mixture on msweb (Baker et al. 2018, Section 5.2):
# step sizes are (h_theta, h_DP) for the components and the sticks.
INITS = ("random", "kmeans++")  # see ``dscir.models.mixtures.seeding``
REFERENCE: dict[str, dict[str, Any]] = {
    "scir": {"a0": 0.5, "step_sizes": (0.1, 0.1), "n_init": 20},
    "sgrld": {"a0": 0.001, "step_sizes": (0.001, 0.005), "n_init": 30},
    "gibbs": {"a0": 0.5, "step_sizes": None, "n_init": 20},
}


@dataclass(frozen=True)
class DPMMConfig(MixtureRunConfig):
    """Everything that determines a DP-mixture chain (with the corpus and the seed;
    the run settings, ``MixtureRunConfig``'s, by keyword)."""

    sampler: str  # "scir" or "sgrld" (stochastic, on Dask) or "gibbs" (exact)
    a0: float  # Dirichlet(a0) base measure of the components
    alpha_shape: float  # Gamma(shape, rate) prior of the DP concentration
    alpha_rate: float
    batch_size: int  # users per minibatch (ignored by "gibbs")
    step_theta: float  # h (SCIR) or epsilon (SGRLD) of the components
    step_sticks: float  # the same for the stick gammas
    n_init: int  # components at the start
