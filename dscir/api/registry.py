"""The estimator class of each model name a run store records.

``Estimator`` subclasses register themselves by ``_model_name``; the commands
that read a run (diagnose, KSD, report) ask the run's estimator class what it
supports and how, instead of comparing model names.
"""

from __future__ import annotations

from dscir.errors import DscirError

ESTIMATORS: dict[str, type] = {}


def register(cls: type) -> None:
    ESTIMATORS[cls._model_name] = cls


def estimator_class(model: str, needs: str | None = None, what: str = "") -> type:
    """The estimator class of runs of ``model``; with ``needs``, one clear error
    unless that class supports it (a true class attribute), ``what`` naming the use."""
    cls = ESTIMATORS.get(model)
    if cls is None:
        raise DscirError(f"no estimator fits {model} runs")
    if needs is not None and not getattr(cls, needs):
        able = " and ".join(sorted(c.__name__ for c in ESTIMATORS.values() if getattr(c, needs)))
        raise DscirError(f"{what} is for {able} runs, not {model} runs ({cls.__name__})")
    return cls
