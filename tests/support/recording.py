"""Executors and a sampler that keep what passes through them or cut reads as several
workers would, and a fixed minibatch, for checking one iteration exactly in this process."""

from __future__ import annotations

import numpy as np

from dscir.engine.inprocess import InProcessExecutor
from dscir.engine.parts import split
from dscir.models.base import Data


class RecordingExecutor(InProcessExecutor):
    """A InProcessExecutor that keeps the results of the last ``run``."""

    def run(self, what, fn, parts, args):
        self.results = super().run(what, fn, parts, args)
        return self.results


class RecordingSampler:
    """Wraps a model's sampler and keeps the counts of every ``step``."""

    def __init__(self, sampler):
        self._sampler, self.counts = sampler, []

    def __getattr__(self, name):
        return getattr(self._sampler, name)

    def step(self, state, prior, counts, step_size, key, totals=None):
        self.counts.append(np.array(counts, dtype=np.float64))
        return self._sampler.step(state, prior, counts, step_size, key, totals)

    def step_scaled(self, state, prior, counts, factor, step_size, key):
        """The fused step records the counts it forms: ``counts`` x ``factor``."""
        self.counts.append(np.asarray(counts) * factor)
        return self._sampler.step_scaled(state, prior, counts, factor, step_size, key)


def minibatch(data: Data, size: int) -> np.ndarray:
    return np.sort(np.random.default_rng(1).choice(data.train, size=size, replace=False))


class ThreeParts(InProcessExecutor):
    """The in-process executor with reads cut into three parts, as on three workers."""

    def read(self, docs, what="read", iteration=None):
        return self.read_blocks(split(np.asarray(docs, np.int64), 3), what, iteration)
