"""Held-out log predictive over kept posterior samples: the score the mixtures share.

A mixture keeps a posterior sample every ``thin`` iterations; each kept
sample's per-document held-out log predictive enters a running log-space
average, log (1/S) sum_s p_s(x_i) per document, whose mean over documents is
the model's score (``score_or``: the current state's while none is kept).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dscir.errors import DscirError


class PredictiveAverage:
    """Held-out log predictive averaged over posterior samples, in log space:
    per document, log (1/S) sum_s p_s(x_i) (a running logsumexp), then the mean over documents."""

    def __init__(self):
        self.log_sum: np.ndarray | None = None
        self.n_samples = 0

    def add(self, log_p: np.ndarray) -> None:
        log_p = np.asarray(log_p, dtype=np.float64)
        self.log_sum = log_p.copy() if self.log_sum is None else np.logaddexp(self.log_sum, log_p)
        self.n_samples += 1

    def per_user(self) -> np.ndarray:
        if self.n_samples == 0:
            raise DscirError("no posterior sample has been scored yet")
        return self.log_sum - np.log(self.n_samples)

    def mean(self) -> float:
        return float(np.mean(self.per_user()))


class KeptSamples:
    """A mixture chain's kept samples (in memory when ``keep``) and their running
    held-out average; ``state``/``restore`` carry it through checkpoints."""

    def __init__(self, keep: bool = True):
        self.keep = keep
        self.samples: list = []
        self.average = PredictiveAverage()
        self.n_samples = 0

    def add(self, sample, heldout: np.ndarray | None) -> None:
        """Keep ``sample``; ``heldout``: its per-document held-out log predictive (None
        when the store has no held-out documents)."""
        self.n_samples += 1
        if self.keep:
            self.samples.append(sample)
        if heldout is not None:
            self.average.add(heldout)

    def score_or(self, current: Callable[[], np.ndarray]) -> float:
        """The average over the kept samples, or the mean of ``current()`` (the current
        state's per-document scores) while none is kept."""
        if self.average.n_samples:
            return self.average.mean()
        return float(np.mean(current()))

    def state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        log_sum = np.zeros(0) if self.average.log_sum is None else self.average.log_sum.copy()
        return ({"average_log_sum": log_sum},
                {"n_samples": self.n_samples, "average_n": self.average.n_samples})

    def restore(self, arrays: dict[str, np.ndarray], values: dict[str, Any],
                samples: list) -> None:
        """Back to a checkpoint; ``samples``: the run's kept samples up to it."""
        self.n_samples = int(values["n_samples"])
        self.average = PredictiveAverage()
        if values["average_n"]:
            self.average.log_sum = np.array(arrays["average_log_sum"], dtype=np.float64)
            self.average.n_samples = int(values["average_n"])
        self.samples = list(samples) if self.keep else []
        if self.keep and len(self.samples) != self.n_samples:
            raise DscirError(f"the run holds {len(self.samples)} samples, its checkpoint "
                             f"{self.n_samples}")


def no_heldout(store: str, unit: str = "documents") -> DscirError:
    """The error for scoring a store without held-out documents."""
    return DscirError(f"{store} has no held-out {unit} to score; split it first "
                      "(dscir ingest --heldout-every, or dscir.corpus.split_heldout)")
