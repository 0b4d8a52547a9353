"""The DP mixture's configuration and the papers' reference settings per sampler."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

# Reference settings for the DP mixture on msweb (Baker et al. 2018, Section 5.2):
# step sizes are (h_theta, h_DP) for the components and the sticks.
INITS = ("random", "kmeans++")  # see ``dscir.models.seeding``
REFERENCE: dict[str, dict[str, Any]] = {
    "scir": {"a0": 0.5, "step_sizes": (0.1, 0.1), "n_init": 20},
    "sgrld": {"a0": 0.001, "step_sizes": (0.001, 0.005), "n_init": 30},
    "gibbs": {"a0": 0.5, "step_sizes": None, "n_init": 20},
}


@dataclass(frozen=True)
class DPMMConfig:
    """Everything that determines a DP-mixture chain (with the corpus and the seed)."""

    # Settings added after checkpoint format 2, at the value a chain had before
    # they existed (see LDAConfig.PREDATED).
    PREDATED: ClassVar[dict[str, Any]] = {"init": "random", "policy": "reference"}

    sampler: str  # "scir" or "sgrld" (stochastic, on Dask) or "gibbs" (exact)
    a0: float  # Dirichlet(a0) base measure of the components
    alpha_shape: float  # Gamma(shape, rate) prior of the DP concentration
    alpha_rate: float
    batch_size: int  # users per minibatch (ignored by "gibbs")
    step_theta: float  # h (SCIR) or epsilon (SGRLD) of the components
    step_sticks: float  # the same for the stick gammas
    n_init: int  # components at the start
    seed: int
    burn_in: int = 0  # iterations before posterior samples are kept
    thin: int = 10  # keep every thin-th iteration after burn_in
    init: str = "random"  # initial components: "random" (Gamma(1, 1)) or "kmeans++" (seeded)
    policy: str = "reference"  # where unset settings came from (``dscir.models.policy``)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
