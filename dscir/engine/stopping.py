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
