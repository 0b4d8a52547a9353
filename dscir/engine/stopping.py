"""When a chain of unknown length stops: its held-out score has reached a plateau.

A chain fitted with ``n_iter="auto"`` scores its held-out documents every few
iterations; ``Plateau`` says it has converged once the last ``window`` scores
improved on the best score before them by no more than ``tolerance``, relative
to that best score's magnitude (so the rule reads the same for a perplexity of
thousands and a log predictive of tens). ``max_iter`` bounds the chain
whatever its scores do. The rule sees only the scores, never the clock, so
the same chain stops at the same iteration on any cluster.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from dscir.errors import DscirError


class Plateau(NamedTuple):
    tolerance: float = 0.002  # relative improvement that still counts as progress
    window: int = 3  # evaluations that must all fail to improve by more than it
    max_iter: int = 5000  # iterations at the most

    def check(self) -> Plateau:
        if not self.tolerance >= 0:
            raise DscirError(f"the stopping tolerance must be >= 0, got {self.tolerance!r}")
        if not (isinstance(self.window, int) and self.window >= 1):
            raise DscirError(f"the stopping window must be a positive number of evaluations, "
                             f"got {self.window!r}")
        if not (isinstance(self.max_iter, int) and self.max_iter >= 1):
            raise DscirError(f"max_iter must be a positive number of iterations, "
                             f"got {self.max_iter!r}")
        return self

    def improvement(self, scores: Sequence[float], lower_is_better: bool) -> float | None:
        """The relative improvement of the last ``window`` scores on the best one
        before them (None while there are too few scores to say)."""
        if len(scores) <= self.window:
            return None
        before, recent = scores[:-self.window], scores[-self.window:]
        best_before = min(before) if lower_is_better else max(before)
        best_recent = min(recent) if lower_is_better else max(recent)
        gain = best_before - best_recent if lower_is_better else best_recent - best_before
        return gain / max(abs(best_before), 1e-300)

    def reached(self, scores: Sequence[float], lower_is_better: bool) -> bool:
        """Whether the chain whose held-out scores so far are ``scores`` has converged."""
        gain = self.improvement(scores, lower_is_better)
        return gain is not None and gain <= self.tolerance


#: Held-out scores every this many iterations under the rule when none is asked for.
EVAL_EVERY = 10


class Stopping:
    """The decision of a chain of unknown length, in two plateaus.

    Every ``eval_every`` iterations the chain scores its held-out documents. While
    burning in (no sample kept), the score is the current state's; burn-in ends at
    the first iteration where those scores reach a plateau (``burn_end``). Then
    samples are kept and the score is the kept samples' mean's; the chain stops at
    that score's plateau (``stopped``), or at ``max_iter`` whatever the scores do.
    The scores seen so far are part of the chain's state: a resumed chain
    continues the same decision (``state``/``restore``).
    """

    def __init__(self, rule: Plateau, eval_every: int, lower_is_better: bool):
        self.rule, self.eval_every = rule.check(), int(eval_every)
        self.lower_is_better = lower_is_better
        self.burn_scores: list[float] = []
        self.kept_scores: list[float] = []
        self.burn_end: int | None = None
        self.stopped: int | None = None

    @property
    def burn_in(self) -> int:
        """Iterations before samples are kept (all of them while burning in)."""
        return self.rule.max_iter if self.burn_end is None else self.burn_end

    def due(self, iteration: int) -> bool:
        """Whether the chain scores its held-out documents after ``iteration``."""
        return iteration % self.eval_every == 0 or iteration >= self.rule.max_iter

    def observe(self, iteration: int, score: float) -> None:
        """Take the held-out score after ``iteration``; ends burn-in or the chain."""
        scores = self.burn_scores if self.burn_end is None else self.kept_scores
        scores.append(float(score))
        if self.rule.reached(scores, self.lower_is_better):
            if self.burn_end is None:
                self.burn_end = iteration
            else:
                self.stopped = iteration
        if self.stopped is None and iteration >= self.rule.max_iter:
            self.stopped = iteration

    def done(self, iteration: int) -> bool:
        return self.stopped is not None or iteration >= self.rule.max_iter

    def summary(self) -> dict:
        """The rule and where it ended burn-in and the chain (for the run store)."""
        plateau = self.stopped is not None and self.stopped < self.rule.max_iter
        return {**self.rule._asdict(), "eval_every": self.eval_every,
                "burn_end": self.burn_end, "stopped": self.stopped,
                "reason": "plateau" if plateau else "max_iter"}

    def state(self) -> dict:
        return {"burn_scores": list(self.burn_scores), "kept_scores": list(self.kept_scores),
                "burn_end": self.burn_end, "stopped": self.stopped}

    def restore(self, state: dict) -> None:
        self.burn_scores = [float(s) for s in state["burn_scores"]]
        self.kept_scores = [float(s) for s in state["kept_scores"]]
        self.burn_end, self.stopped = state["burn_end"], state["stopped"]
