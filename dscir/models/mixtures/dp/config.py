"""The DP mixture's configuration, made from its parameters, and the papers' reference
settings per sampler."""

from __future__ import annotations

from typing import Any

from dscir.models.mixtures.common import MixtureRunConfig
from dscir.models.mixtures.params import (CHAIN, POSITIVE, Int, init_param, placement_param,
                                          policy_param)
from dscir.params import AUTO, Interval, Options, Pair, Param, configuration

# Reference settings for the DP mixture on msweb (Baker et al. 2018, Section 5.2):
# step sizes are (h_theta, h_DP) for the components and the sticks.
INITS = ("random", "kmeans++", "collapsed")  # the starts (``dscir.models.mixtures.dp.gibbs``)
REFERENCE: dict[str, dict[str, Any]] = {
    "scir": {"a0": 0.5, "step_sizes": (0.1, 0.1), "n_init": 20},
    "sgrld": {"a0": 0.001, "step_sizes": (0.001, 0.005), "n_init": 30},
    "gibbs": {"a0": 0.5, "step_sizes": None, "n_init": 20},
}


#: The parameters that make up a DP-mixture chain's configuration, in the estimator's order.
PARAMS: tuple[Param, ...] = (
    Param("sampler", Options(tuple(REFERENCE)), AUTO,
          "'scir' or 'sgrld': the stochastic slice sampler on a Dask cluster; 'gibbs': the "
          "exact Gibbs slice sampler on all training users in this process; 'auto': the "
          "policy's (SGRLD on text under policy 'auto', else SCIR).", auto=True,
          positional=True),
    policy_param("users"),
    Param("a0", POSITIVE, AUTO, "Dirichlet concentration of the components ('auto': the "
          "policy's).", auto=True),
    Param("alpha_prior", Pair(("{} shape", "{} rate"), POSITIVE, POSITIVE), (1.0, 1.0),
          "(shape, rate) of the Gamma prior on the DP concentration.",
          config=("alpha_shape", "alpha_rate")),
    Param("batch_size", Interval(Int, 1), AUTO,
          "users per minibatch (stochastic samplers; 'auto': the policy's).", auto=True),
    Param("step_sizes", Pair(("{}[0] (h_theta)", "{}[1] (h_DP)"), POSITIVE, POSITIVE), AUTO,
          "(h_theta, h_DP) for components and sticks ('auto': the policy's).", auto=True,
          config=("step_theta", "step_sticks")),
    Param("n_init", Interval(Int, 1), AUTO, "components at the start ('auto': the policy's).",
          auto=True),
    init_param("users", INITS, " or 'collapsed' (the occupied clusters of collapsed Gibbs "
               "sweeps with n_init clusters under Dirichlet(alpha / n_init) weights, on a "
               "sample of users; dscir.models.mixtures.finite.collapsed)"),
    Param("split_merge", Interval(Int, 0), AUTO,
          "split-merge proposals per pass over the training users: exact Metropolis-"
          "Hastings moves that split or merge whole clusters (0: none; 'auto': the "
          "policy's).", auto=True),
    placement_param(),
    *CHAIN,
)


@configuration(PARAMS)
class DPMMConfig(MixtureRunConfig):
    """Everything that determines a DP-mixture chain (with the corpus): ``PARAMS``,
    resolved (``alpha_prior`` as ``alpha_shape``, ``alpha_rate``; ``step_sizes`` as
    ``step_theta``, ``step_sticks``: the components' and the sticks' steps), then
    ``burn_in``."""

    burn_in: int = 0  # iterations before posterior samples are kept
