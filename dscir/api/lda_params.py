"""``dscir.LDA``'s parameters, each declared once (``dscir.params.Param``).

The estimator's signature, constraint table and docstring, and ``dscir fit lda``'s
options are built from ``PARAMS``: the configuration's (``dscir.models.lda.config``,
from which ``LDAConfig`` is made; ``AUTO`` resolved by the policy), and those that
drive the run declared here: ``n_iter`` and the stopping rule of ``n_iter="auto"``
(``config="stopping"``: ``LDAConfig.stopping``, the fields of
``dscir.engine.stopping.Plateau``, declared in ``dscir.api.stopping_params``),
``burn_in``, ``eval_every`` and ``progress``. ``SAMPLER_OPTIONS`` are entries of
``sampler_options``, each with its command-line flag.
"""

from __future__ import annotations

import numbers

from dscir.api.stopping_params import n_iter_param, stopping_params
from dscir.engine.stopping import SCORE_EVERY_PASSES
from dscir.errors import DscirError
from dscir.models.lda import config
from dscir.params import Interval, Options, Param
from dscir.samplers.base import INTEGRATORS

Int, Real = numbers.Integral, numbers.Real

#: The parameters the policy chooses when they are ``AUTO``.
POLICY_CHOSEN = tuple(p.name for p in config.PARAMS if p.auto)

_RUN = (
    n_iter_param("perplexity"),
    *stopping_params("stopping"),
    Param("burn_in", Interval(Int, 0, none=True), None,
          "samples of phi are kept every thin iterations after burn_in (None: half of "
          "n_iter; with n_iter='auto' the stopping rule's); topic_word_ is their mean.",
          config=False),
    Param("eval_every", Interval(Int, 0), 0,
          "score the held-out documents every this many iterations (0: never, or every "
          f"{SCORE_EVERY_PASSES:g} passes with n_iter='auto'; on the command line, at the end when the store "
          "has held-out documents).", config=False),
    Param("progress", config.BOOL, True, "show a progress bar (on the command line: --progress, "
          "--no-progress, -q; by default only on a terminal).", flag=None, config=False),
)
# n_iter and the stopping rule after the settings of a visit, progress last
_AFTER = [p.name for p in config.PARAMS].index("control_variates") + 1
PARAMS: tuple[Param, ...] = (*config.PARAMS[:_AFTER], *_RUN[:-1], *config.PARAMS[_AFTER:],
                             _RUN[-1])

#: The samplers' own hyperparameters, entries of ``sampler_options`` (None: unset,
#: the sampler's default); ``dscir fit lda`` has a flag for each.
SAMPLER_OPTIONS: tuple[Param, ...] = (
    Param("friction", Interval(Real, 0, open_low=True), None,
          "SGHMC's friction C (default 1).", config="sampler_options"),
    Param("integrator", Options(INTEGRATORS), None,
          "gSGRHMC's and SGHMC's integrator: 'splitting' (default, exact friction) or "
          "'euler' (the papers' step; docs/integrators.md).", config="sampler_options"),
)


def resumed_options(sampler: str, options, run) -> dict | None:
    """``options`` (``sampler_options``) for a fit resuming ``run``: the integrator the
    run recorded where none is given, so a resumed chain keeps its integrator whatever
    dscir's default; one clear error for a different explicit one, or for a run
    checkpointed before the integrator was recorded (which one ran is unknown)."""
    from dscir.runs.checkpoint import started_with
    from dscir.samplers.base import SAMPLERS

    chosen = SAMPLERS.get(sampler)
    if run is None or chosen is None or "integrator" not in chosen.hyperparameters or \
            not isinstance(options, (dict, type(None))) or started_with(run, "sampler") != sampler:
        return options  # nothing to continue, or one the configuration's check refuses
    ran = (started_with(run, "sampler_options") or {}).get("integrator")
    given = (options or {}).get("integrator")
    if ran is None:
        raise DscirError(f"{run} was checkpointed before dscir recorded {sampler}'s "
                         f"integrator, so which one ran is unknown; fit it again")
    if given is not None and given != ran:
        raise DscirError(f"{run} ran {sampler} with integrator={ran!r}, this fit asks for "
                         f"integrator={given!r}; resume with integrator={ran!r} or unset")
    return {**(options or {}), "integrator": ran}
