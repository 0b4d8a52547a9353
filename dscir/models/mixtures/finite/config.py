"""The finite mixture's configuration, made from its parameters, and the reference
settings per sampler."""

from __future__ import annotations

from typing import Any

from dscir.models.mixtures.common import MixtureRunConfig
from dscir.models.mixtures.params import (CHAIN, POSITIVE, Int, init_param, placement_param,
                                          policy_param)
from dscir.params import AUTO, Interval, Options, Param, configuration

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


#: The parameters that make up a finite-mixture chain's configuration, in the
#: estimator's order.
PARAMS: tuple[Param, ...] = (
    Param("n_clusters", Interval(Int, 2), 10, "number of clusters K (>= 2).",
          flag="--clusters", positional=True, required=True),
    Param("sampler", Options(tuple(REFERENCE)), "scir",
          "'scir' or 'sgrld': allocations of a minibatch on a Dask cluster, weights and "
          "components moved by SCIR or SGRLD steps; 'gibbs': the exact Gibbs sampler on all "
          "training documents in this process.", positional=True),
    Param("gamma", POSITIVE, 1.0, "Dirichlet concentration of the mixture weights."),
    policy_param("documents"),
    Param("a0", POSITIVE, AUTO, "Dirichlet concentration of the components ('auto': the "
          "policy's: on text a0 W is a tenth of a cluster's tokens, at most the sampler's "
          "reference value).", auto=True),
    Param("batch_size", Interval(Int, 1), AUTO,
          "documents per minibatch (stochastic samplers; 'auto': the policy's).", auto=True),
    init_param("documents", INITS, " or 'collapsed' (collapsed Gibbs sweeps on a sample "
          "of documents, dscir.models.mixtures.finite.collapsed; the policy's on text)"),
    placement_param(),
    Param("step_weights", POSITIVE, AUTO, "h (SCIR) or epsilon (SGRLD) of the weights "
          "('auto': the sampler's reference value).", auto=True),
    Param("step_components", POSITIVE, AUTO, "h (SCIR) or epsilon (SGRLD) of the components "
          "('auto': the sampler's reference value).", auto=True),
    *CHAIN,
)


@configuration(PARAMS)
class MixtureConfig(MixtureRunConfig):
    """Everything that determines a finite-mixture chain (with the corpus): ``PARAMS``,
    resolved, then ``burn_in``."""

    burn_in: int = 0  # iterations before posterior samples are kept
