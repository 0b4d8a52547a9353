"""The in-process executor: the same reads and tasks as on Dask, run here.

The exact full-data baselines (and small jobs without a cluster) use it; a
model cannot tell the two executors apart except by their speed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dscir.corpus import Corpus
from dscir.engine import blocks, local_state, worker
from dscir.engine.parts import Parts, Timing, split


class InProcessExecutor(blocks.HoldsBlocks):
    """Runs a model's reads and tasks in this process, one part."""

    n_parts = 1
    client = None

    def __init__(self, store: str, model: str):
        self.store = str(store)
        self.model = model
        self.timing = Timing()
        self.iteration = 0
        self._corpus = Corpus.open(self.store)

    def read(self, docs: np.ndarray, what: str = "read", iteration: int | None = None) -> Parts:
        docs = np.asarray(docs, dtype=np.int64)
        return self.read_blocks(split(docs, 1), what, iteration, docs)

    def read_blocks(self, blocks: Sequence[np.ndarray], what: str = "read",
                    iteration: int | None = None, docs: np.ndarray | None = None) -> Parts:
        """Read ``blocks`` (each sorted document ids), one part each."""
        parts = [np.asarray(p, dtype=np.int64) for p in blocks]
        if docs is None:
            docs = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        batches = [self._corpus.read(p) for p in parts]
        return Parts(docs, parts, batches, [worker.batch_words(b) for b in batches])

    def words(self, parts: Parts) -> list[np.ndarray]:
        return list(parts.words)

    def require(self, what: str, resources: dict[str, float], check: Callable) -> None:
        """Tasks ``what`` need ``resources`` (``DaskExecutor.require``): they run in
        this process, so ``check`` (raising where this process lacks them) runs here."""
        check()

    def run(self, what: str, fn: Callable, parts: Parts, args: Sequence[tuple],
            local: local_state.LocalState | None = None) -> list[Any]:
        if local is not None:
            out = [self._visit(fn, b, w, a, local) for b, w, a in
                   zip(parts.batches, parts.words, args)]
        else:
            out = [worker.timed(fn, b, w, *a) for b, w, a in
                   zip(parts.batches, parts.words, args)]
        tasks = [t for _, t in out]
        self.timing.add_round(tasks[0].start if tasks else time.time(),
                              tasks[-1].stop if tasks else time.time(), tasks)
        return [r for r, _ in out]

    @staticmethod
    def _state(local: local_state.LocalState, s: int) -> np.ndarray | None:
        ref = local.refs[s]
        if isinstance(ref, local_state.Stored):
            if ref.held is None:  # a resumed chain's state, read once
                n = int(local.offsets[s][-1])
                ref = local.refs[s] = ref._replace(
                    held=local_state.read_state(local.path, ref.slot, s, n))
            return ref.held
        return ref

    def _visit(self, fn: Callable, batch, words, args: tuple, local: local_state.LocalState):
        """``local_state.visit`` of one part here, its shards' new states kept."""
        local.create()
        shards, targs = local_state.part_args(
            local, batch.docs, [self._state(local, s) for s in local.shards(batch.docs)],
            fn, args)
        (result, states), t = worker.timed(local_state.visit, batch, words, *targs)
        for s, state in zip(shards, states):
            local.refs[s] = state
        return result, t

    def flush(self, local: local_state.LocalState) -> None:
        """Write every shard's state changed since the last flush as one chunk."""
        slots = {s: local.slot_for(s) for s in local.changed()}
        for s, k in slots.items():
            local_state.write_state(local.path, k, s, local.refs[s])
        local.flushed(slots, keep=True)

    def local_values(self, local: local_state.LocalState) -> list[np.ndarray | None]:
        """Every shard's local state now, here (for inspection: tests, benchmarks)."""
        return local_state.values(local, lambda x: x)
