"""The estimators' side of ``n_iter="auto"`` (the rule: ``dscir.engine.stopping``):
the rule from the parameters (``dscir.api.stopping_params``), the chain's
``Stopping`` on a store, and why a fit stopped, recorded in the run store,
read back by ``load`` and said in one line."""

from __future__ import annotations

import logging

from dscir.params import AUTO
from dscir.errors import DscirError

#: The run store attribute holding why the run stopped ("reason", one of
#: ``dscir.engine.stopping.STOP_REASONS``) and, for ``n_iter="auto"``, the rule and
#: where it ended burn-in and the run.
STOPPING_ATTR = "dscir_stopping"

log = logging.getLogger(__name__)


def stopping_rule(est) -> dict | None:
    """The rule's parameters and the scoring cadence of ``est`` with ``n_iter="auto"``
    (None: a fixed number of iterations)."""
    from dscir.engine.stopping import Plateau

    if est.n_iter != AUTO:
        return None
    if est.burn_in is not None:
        raise DscirError("burn_in is decided by the stopping rule with n_iter='auto'; "
                         "leave it None")
    declared = est._parameter_constraints
    rule = {k: declared[k].coerce(getattr(est, k)) for k in Plateau._fields}
    Plateau(**rule).check()
    return {**rule, "eval_every": int(est.eval_every)}  # 0: the rule's cadence


def iters_per_pass(est, config, data) -> float:
    """Iterations per pass over the training documents: the training documents
    over the minibatch, or 1 for an exact sampler (all of them each iteration)."""
    if not est._model_type(config).minibatch:
        return 1.0
    return data.train.size / config.batch_size


def make_stopping(est, config, store: str):
    """The ``Stopping`` of ``est``'s chain of ``config`` on ``store`` (None: a fixed
    length). On a store without held-out documents the chain sets some aside to
    score (``dscir.engine.stopping.set_aside``); with too few to spare nothing can
    be scored: the chain runs ``max_passes`` passes, half of them burn-in."""
    from dscir.engine.stopping import Plateau, Stopping, set_aside
    from dscir.models.base import Data

    rule = est._rule(config)
    if rule is None:
        return None
    data = Data.open(store)
    aside = set_aside(data.train) if data.heldout.size == 0 else None
    if aside is not None:
        data = data.setting_aside(aside)
    # The rule reads a held-out perplexity per token (``Model.stopping_score``): lower is
    # better; of the current state alone where the fit is that state.
    return Stopping(Plateau(**{k: rule[k] for k in Plateau._fields}), rule["eval_every"],
                    True, iters_per_pass(est, config, data),
                    scored=bool(data.heldout.size), aside=aside,
                    kept_mean=not est._model_type(config).fit_is_state)


def note_unscored(est, config, store: str, n_iter: int) -> None:
    """Say (logging) what an ``n_iter="auto"`` fit on a store without held-out
    documents scores: the documents it sets aside, or nothing (too few to spare),
    so it runs its maximum."""
    stopping = make_stopping(est, config, store)
    if stopping is None:
        return
    if stopping.aside.size:
        log.info("n_iter='auto': %s has no held-out documents, so the chain sets %d of its "
                 "documents aside to score and trains on the rest", store, stopping.aside.size)
    elif not stopping.scored:
        log.info("n_iter='auto': %s has no held-out documents and too few to set aside, so "
                 "the chain runs max_passes=%g passes (%d iterations), the first half burn-in",
                 store, stopping.rule.max_passes, n_iter)


def stop_record(chain) -> dict:
    """Why ``chain`` stopped, for the run store and ``stop_reason_``: the stopping rule's
    summary, or ``{"reason": "n_iter"}`` for the iterations asked for."""
    if chain.stopping is not None:
        return chain.stopping.summary()
    return {"reason": "n_iter", "stopped": chain.iteration}


def load_stopping(est, run) -> None:
    """``stop_reason_`` (and ``stopping_`` for ``n_iter="auto"``) as ``run`` recorded
    them (a run from before dscir recorded a reason: "n_iter")."""
    import zarr

    record = zarr.open_group(str(run), mode="r").attrs.get(STOPPING_ATTR)
    est.stop_reason_ = "n_iter" if record is None else record["reason"]
    if record is not None and "tolerance" in record:
        est.stopping_ = dict(record)


def stop_summary(est) -> str:
    """One line: where the fitted ``est`` stopped and why."""
    reason = getattr(est, "stop_reason_", "n_iter")
    rule = getattr(est, "stopping_", None)
    if reason == "n_iter" or rule is None:
        return f"stopped after {est.n_iter_} iterations: the n_iter asked for"
    passes = est.n_iter_ / rule["iters_per_pass"]
    aside = rule.get("set_aside", 0)
    if not rule.get("scored", True):
        why = f"no held-out documents to score, so max_passes={rule['max_passes']:g}"
    elif reason == "plateau":
        why = f"the held-out score's change per pass fell below {rule['tolerance']:.2%}"
        why += f" (scored on {aside} documents set aside)" if aside else ""
    else:
        why = f"max_passes={rule['max_passes']:g} reached"
    return f"stopped after {est.n_iter_} iterations ({passes:.1f} passes): {why}"


class AutoStop:
    """An estimator's length: ``n_iter`` iterations, or with ``n_iter="auto"`` where
    the stopping rule decides (a mixin of ``dscir.api.base.Estimator``)."""


    def _burn_in(self) -> int:
        """Iterations before samples are kept: ``burn_in``, or half of ``n_iter`` (0
        with ``n_iter="auto"``: the stopping rule decides)."""
        if self.n_iter == AUTO:
            return 0
        return int(self.n_iter // 2 if self.burn_in is None else self.burn_in)

    def _iterations(self, config, store: str) -> int:
        """The iterations ``fit`` runs in all (at most, with a stopping rule)."""
        stopping = self._stopping(config, store)
        return self.n_iter if stopping is None else stopping.max_iter

    def _stopping_rule(self) -> dict | None:
        """The rule's parameters and scoring cadence with ``n_iter="auto"`` (None:
        a fixed number of iterations)."""
        return stopping_rule(self)

    def _rule(self, config) -> dict | None:
        """The rule of ``config``'s chain (an LDA configuration holds its own)."""
        return self._stopping_rule()

    def _stopping(self, config, store: str):
        """The ``dscir.engine.stopping.Stopping`` that ends a chain of unknown
        length on ``store`` (None: the chain runs ``n_iter`` iterations)."""
        return make_stopping(self, config, store)

    def stop_summary(self) -> str:
        """One line: where the fit stopped and why (``stop_reason_``)."""
        self._fitted("n_iter_")
        return stop_summary(self)
