"""An executor and a sampler that keep what passes through them, and a fixed minibatch,
for checking one iteration's statistics exactly."""

from __future__ import annotations

import numpy as np

from dscir.engine.local import LocalExecutor
from dscir.models.base import Data


class RecordingExecutor(LocalExecutor):
    """A LocalExecutor that keeps the results of the last ``run``."""

    def run(self, what, fn, parts, args):
        self.results = super().run(what, fn, parts, args)
        return self.results


class RecordingSampler:
    """Wraps a model's sampler and keeps the counts of every ``step``."""

    def __init__(self, sampler):
        self._sampler, self.counts = sampler, []

    def __getattr__(self, name):
        return getattr(self._sampler, name)

    def step(self, state, prior, counts, step_size, key):
        self.counts.append(np.array(counts, dtype=np.float64))
        return self._sampler.step(state, prior, counts, step_size, key)


def minibatch(data: Data, size: int) -> np.ndarray:
    return np.sort(np.random.default_rng(1).choice(data.train, size=size, replace=False))
