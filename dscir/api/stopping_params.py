"""The parameters of ``n_iter="auto"``, the default length of every fit, declared once
for each estimator (``dscir.params.Param``; the rule is
``dscir.engine.stopping.Plateau``)."""

from __future__ import annotations

import numbers

from dscir.params import AUTO, Interval, Param
from dscir.engine.stopping import SCORE_EVERY_PASSES, Plateau

Real = numbers.Real
DEFAULTS = Plateau._field_defaults


def n_iter_param(score: str) -> Param:
    """``n_iter``: a number of iterations, or "auto" (the default): until the held-out
    ``score`` stops improving."""
    return Param("n_iter", Interval(numbers.Integral, 0), AUTO,
                 f"iterations of fit, run exactly; 'auto': until the held-out {score} "
                 "stops improving (dscir.engine.stopping: scored every eval_every "
                 f"iterations, every {SCORE_EVERY_PASSES:g} passes when 0; burn-in ends at the plateau of the "
                 "current state's score, the run at the plateau of the kept samples' "
                 "mean's (a mixture, whose fit is its final state: at the first, nothing "
                 "kept), after min_passes and at most max_passes passes over the "
                 "training documents; scored on the store's held-out documents, or on up to 500 "
                 "it sets aside). The fit records "
                 "why it stopped (stop_reason_).",
                 flag="--iterations", config=False, auto=True)


def stopping_params(config) -> tuple[Param, ...]:
    """The rule's parameters; ``config``: where the configuration holds them
    ("stopping": a field of it, False: the estimator alone)."""
    return (
        Param("tolerance", Interval(Real, 0), DEFAULTS["tolerance"],
              "with n_iter='auto', the relative change of the held-out score per pass over "
              "the training documents (over the last window passes) below which the chain "
              "has converged (0.001: 0.1 % per pass).", config=config),
        Param("window", Interval(Real, 0, open_low=True), DEFAULTS["window"],
              "with n_iter='auto', the passes over which the change is read.",
              config=config),
        Param("min_passes", Interval(Real, 0), DEFAULTS["min_passes"],
              "with n_iter='auto', passes over the training documents before the chain "
              "may stop.", config=config),
        Param("max_passes", Interval(Real, 0, open_low=True), DEFAULTS["max_passes"],
              "with n_iter='auto', passes at the most (stop_reason_ 'max_passes').",
              config=config),
    )


__all__ = ["AUTO", "n_iter_param", "stopping_params"]
