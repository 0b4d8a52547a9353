"""``dscir.DPMixture``'s and ``dscir.Mixture``'s parameters, each declared once
(``dscir.api.params.Param``), and the run parameters they share.

Their signatures, constraint tables and docstrings, and ``dscir fit dpmm`` /
``dscir fit mixture``'s options are built from these tuples. ``AUTO`` settings
are the policy's (``dscir.models.mixtures.policy``); the configuration is built from the
resolved values (``dscir.api.params.config_values``).
"""

from __future__ import annotations

import numbers

from dscir.api.params import AUTO, Interval, Options, Pair, Param
from dscir.api.stopping_params import n_iter_param, stopping_params
from dscir.engine.stopping import SCORE_EVERY_PASSES
from dscir.models.mixtures.dp import INITS, REFERENCE as DP_REFERENCE
from dscir.models.mixtures.finite import INITS as MIXTURE_INITS, REFERENCE as MIXTURE_REFERENCE
from dscir.models.mixtures.components import PLACEMENTS
from dscir.models.mixtures.policy import POLICIES

Int, Real = numbers.Integral, numbers.Real
POSITIVE = Interval(Real, 0, open_low=True)

#: The run's length, samples, scores, seed and progress bar.
RUN: tuple[Param, ...] = (
    n_iter_param("log predictive"),
    *stopping_params(False),
    Param("burn_in", Interval(Int, 0, none=True), None,
          "samples are kept every thin iterations after burn_in (None: half of n_iter; "
          "with n_iter='auto' the stopping rule's); "
          "score averages the held-out predictive over them (held in memory, K x W "
          "floats each, to score other stores).", config=False),
    Param("thin", Interval(Int, 1), 10, "keep a sample every this many iterations."),
    Param("eval_every", Interval(Int, 0), 0,
          "score the held-out rows every this many iterations (0: never, or every "
          f"{SCORE_EVERY_PASSES:g} passes with n_iter='auto'; on the command line, at the end).",
          config=False),
    Param("seed", Interval(Int, 0), 0,
          "the whole chain is a function of the seed (and the corpus)."),
    Param("progress", Options((False, True)), True, "show a progress bar (on the command "
          "line: --progress, --no-progress, -q; by default only on a terminal).", flag=None,
          config=False),
)


def _policy(rows: str) -> Param:
    return Param("policy", Options(POLICIES), "auto",
                 "where the settings left 'auto' come from: 'auto' (from the corpus's "
                 f"vocabulary size and {rows}; on corpora of 1000 words or more the "
                 "components are seeded by k-means++; minibatch min(1000, N/4)) or "
                 "'reference' (the papers' settings); see dscir.models.mixtures.policy. The fit "
                 "records the resolved settings.")


def _init(rows: str, inits: tuple[str, ...] = INITS, more: str = "") -> Param:
    return Param("init", Options(inits), AUTO,
                 "'random' (components from Gamma(1, 1), the reference start) or 'kmeans++' "
                 f"(seeded on {rows}, dscir.models.mixtures.seeding){more}; 'auto': the policy's.",
                 auto=True)


def _placement() -> Param:
    return Param("placement", Options(PLACEMENTS), "auto",
                 "where the stochastic samplers' K x W components live, in column blocks: "
                 "'driver' (in this process; each task carries the columns of its words), "
                 "'workers' (on the workers, cut where they live; the same chain bit for "
                 "bit) or 'auto' (the "
                 "workers from 2^21 parameters on a Dask cluster; "
                 "dscir.models.mixtures.components).")


DPMM: tuple[Param, ...] = (
    Param("sampler", Options(tuple(DP_REFERENCE)), AUTO,
          "'scir' or 'sgrld': the stochastic slice sampler on a Dask cluster; 'gibbs': the "
          "exact Gibbs slice sampler on all training users in this process; 'auto': the "
          "policy's (SGRLD on text under policy 'auto', else SCIR).", auto=True,
          positional=True),
    _policy("users"),
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
    _init("users"),
    _placement(),
    *RUN,
)

MIXTURE: tuple[Param, ...] = (
    Param("n_clusters", Interval(Int, 2), 10, "number of clusters K (>= 2).",
          flag="--clusters", positional=True, required=True),
    Param("sampler", Options(tuple(MIXTURE_REFERENCE)), "scir",
          "'scir' or 'sgrld': allocations of a minibatch on a Dask cluster, weights and "
          "components moved by SCIR or SGRLD steps; 'gibbs': the exact Gibbs sampler on all "
          "training documents in this process.", positional=True),
    Param("gamma", POSITIVE, 1.0, "Dirichlet concentration of the mixture weights."),
    _policy("documents"),
    Param("a0", POSITIVE, AUTO, "Dirichlet concentration of the components ('auto': the "
          "policy's: on text a0 W is a tenth of a cluster's tokens, at most the sampler's "
          "reference value).", auto=True),
    Param("batch_size", Interval(Int, 1), AUTO,
          "documents per minibatch (stochastic samplers; 'auto': the policy's).", auto=True),
    _init("documents", MIXTURE_INITS, " or 'collapsed' (collapsed Gibbs sweeps on a sample "
          "of documents, dscir.models.mixtures.finite.collapsed; the policy's on text)"),
    _placement(),
    Param("step_weights", POSITIVE, AUTO, "h (SCIR) or epsilon (SGRLD) of the weights "
          "('auto': the sampler's reference value).", auto=True),
    Param("step_components", POSITIVE, AUTO, "h (SCIR) or epsilon (SGRLD) of the components "
          "('auto': the sampler's reference value).", auto=True),
    *RUN,
)
