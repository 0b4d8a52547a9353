"""Placement on a Dask cluster: reads on the workers, tasks beside their data, keys.

The driver owns the chain; workers own data. A minibatch is split into parts
(one per worker thread: each task costs milliseconds of scheduler round trip,
as much as a few hundred documents' Gibbs work); each
part is read from the Zarr store by a task on a worker, which reports the
distinct words it uses; a model's task for that part then runs on the batch
where it lies and gets only the parameter columns of its words. Every task's
input is either computed from the store or travels inside the task, never
scattered, so a lost worker costs a recomputation, not the chain.

Keys are ``(f"dscir-{model}-{what}-{token}", iteration, serial, part)``: the
dashboard shows ``dscir-lda-gibbs`` and friends, a key names the chain's
iteration it belongs to, and no two submissions share a key.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from distributed import Client

from dscir.engine import blocks, local_state, worker
from dscir.engine.placement import Parts, TaskTime, Timing, split
from dscir.runs.checkpoint import absolute_store


class DaskExecutor:
    """Runs a model's reads and tasks on the workers of ``client``."""

    def __init__(self, client: Client, store: str, model: str):
        self.client = client
        self.store = absolute_store(str(store))  # the workers' cwd is not the driver's
        self.model = model
        self.timing = Timing()
        self.iteration = 0  # the chain's, named in task keys
        self._token = uuid.uuid4().hex[:8]
        self._serial = itertools.count()

    @property
    def n_parts(self) -> int:
        """One task per worker thread."""
        return max(sum(self.client.nthreads().values()), 1)

    def _key(self, what: str, iteration: int | None = None) -> Callable[[int], tuple]:
        name, serial = f"dscir-{self.model}-{what}-{self._token}", next(self._serial)
        it = self.iteration if iteration is None else iteration
        return lambda j: (name, it, serial, j)

    def read(self, docs: np.ndarray, what: str = "read", iteration: int | None = None) -> Parts:
        """Submit reads of ``docs`` (sorted) in parts, for ``iteration`` (default the
        current one); returns at once."""
        docs = np.asarray(docs, dtype=np.int64)
        return self.read_blocks(split(docs, self.n_parts), what, iteration, docs)

    def read_blocks(self, blocks: Sequence[np.ndarray], what: str = "read",
                    iteration: int | None = None, docs: np.ndarray | None = None) -> Parts:
        """Submit reads of ``blocks`` (each sorted document ids), one part each."""
        parts = [np.asarray(p, dtype=np.int64) for p in blocks]
        if docs is None:
            docs = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        read_key, words_key = self._key(what, iteration), self._key("words", iteration)
        batches = [self.client.submit(worker.read_batch, self.store, p, key=read_key(j))
                   for j, p in enumerate(parts)]
        words = [self.client.submit(worker.batch_words, b, key=words_key(j))
                 for j, b in enumerate(batches)]
        return Parts(docs, parts, batches, words)

    def words(self, parts: Parts) -> list[np.ndarray]:
        """The distinct word ids of each part."""
        start = time.perf_counter()
        out = self.client.gather(parts.words)
        self.timing.add_wait(time.perf_counter() - start)
        return out

    def submit(self, what: str, fn: Callable, *args: Any, j: int = 0, timed: bool = False,
               near: str | None = None) -> Any:
        """``fn(*args)`` as one task (futures among ``args`` are its dependencies, met
        worker to worker); its key names ``what``, the iteration and ``j``. With
        ``timed`` its result is ``(value, TaskTime)`` (``worker.timed``); ``near``
        (a worker address) is where it should run if that worker is still there."""
        if timed:
            fn, args = worker.timed, (fn, *args)
        where = {} if near is None else {"workers": [near], "allow_other_workers": True}
        return self.client.submit(fn, *args, key=self._key(what)(j), **where)

    def holders(self, futures: Sequence[Any]) -> list[str | None]:
        """The worker holding each future's result now (None: not in memory)."""
        held = self.client.who_has(list(futures))
        return [next(iter(held.get(f.key, ())), None) for f in futures]

    def gather(self, futures: Sequence[Any],
               tasks_of: Callable[[list[Any]], list[TaskTime]] | None = None) -> list[Any]:
        """The values of ``futures``: a round timed by ``tasks_of(values)`` (the
        tasks' own stamps), or without it a wait counted as queueing."""
        start, clock = time.time(), time.perf_counter()
        out = self.client.gather(list(futures))
        if tasks_of is None:
            self.timing.add_wait(time.perf_counter() - clock)
        else:
            self.timing.add_round(start, time.time(), tasks_of(out))
        return out

    def blocked(self, n_rows: int, n_cols: int, block_entries: int) -> blocks.BlockedState:
        """A handle on an n_rows x n_cols state to be held by the workers in blocks of
        about ``block_entries`` entries (``dscir.engine.blocks``)."""
        return blocks.BlockedState(self, blocks.block_bounds(n_rows, n_cols, block_entries))

    def run(self, what: str, fn: Callable, parts: Parts, args: Sequence[tuple],
            local: local_state.LocalState | None = None) -> list[Any]:
        """``fn(batch_j, words_j, *args[j])`` for every part j, on the part's worker;
        with ``local``, ``fn`` also gets and returns its documents' local state."""
        plans = None
        if local is not None:
            fn, args, plans = local_state.bind(local, fn, parts, args)
        key = self._key(what)
        # The words stay on the workers as futures: no second gather, no round trip.
        futures = [self.client.submit(worker.timed, fn, b, w, *a, key=key(j))
                   for j, (b, w, a) in enumerate(zip(parts.batches, parts.words, args))]
        start = time.time()
        out = self.client.gather(futures)
        self.timing.add_round(start, time.time(), [t for _, t in out])
        if local is not None:
            local_state.commit(local, parts, plans)
        return [r for r, _ in out]
