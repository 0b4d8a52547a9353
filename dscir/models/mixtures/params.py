"""The mixtures' parameters that both configurations share, each declared once
(``dscir.params.Param``): the policy, the start, the placement, the kept samples'
thinning and the seed. Each mixture's own are beside its configuration
(``finite.config``, ``dp.config``), which is made from them."""

from __future__ import annotations

import numbers

from dscir.models.mixtures.components import MEASURED_UP_TO, TRIAL
from dscir.models.placement import PLACEMENTS
from dscir.params import AUTO, Interval, Options, Param

Int, Real = numbers.Integral, numbers.Real
POSITIVE = Interval(Real, 0, open_low=True)
POLICIES = ("auto", "reference")


def policy_param(rows: str) -> Param:
    """``policy``, where the settings left 'auto' come from (``rows``: what the rows are)."""
    return Param("policy", Options(POLICIES), "auto",
                 "where the settings left 'auto' come from: 'auto' (from the corpus's "
                 f"vocabulary size and {rows}; on corpora of 1000 words or more the "
                 f"components start from collapsed Gibbs sweeps on a sample of {rows}; "
                 "minibatch min(1000, N/4)) or "
                 "'reference' (the papers' settings); see dscir.models.mixtures.policy. The fit "
                 "records the resolved settings.")


def init_param(rows: str, inits: tuple[str, ...], more: str = "") -> Param:
    """``init``, the components' start, one of ``inits``."""
    return Param("init", Options(inits), AUTO,
                 "'random' (components from Gamma(1, 1), the reference start) or 'kmeans++' "
                 f"(seeded on {rows}, dscir.models.mixtures.seeding){more}; 'auto': the policy's.",
                 auto=True)


def placement_param() -> Param:
    """``placement``, where the stochastic samplers' components live."""
    return Param("placement", Options(PLACEMENTS), "auto",
                 "where the stochastic samplers' K x W components live, in column blocks: "
                 "'driver' (in this process; each task gets the columns of its words), "
                 "'workers' (on the workers, cut where they live; the same chain bit for "
                 f"bit) or 'auto' (on a Dask cluster, the faster of the two as timed over "
                 f"{TRIAL} iterations each, up to {MEASURED_UP_TO:,} parameters; the workers "
                 "beyond; dscir.models.mixtures.components).")


#: The kept samples' thinning and the seed.
CHAIN: tuple[Param, ...] = (
    Param("thin", Interval(Int, 1), 10, "keep a sample every this many iterations."),
    Param("seed", Interval(Int, 0), 0,
          "the whole chain is a function of the seed (and the corpus)."),
)
