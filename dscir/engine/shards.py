"""Documents resident on the workers: the corpus in shards held in worker memory.

A shard is one store chunk of documents (``chunk_docs`` consecutive rows),
read from the Zarr store once by a task (``read_shard``) whose result stays
on its worker as long as the executor holds its future, under Dask's memory
management (spilled, never dropped). All shards are read on first use, where
the scheduler puts them; an iteration's documents are then grouped by the
worker holding their shards (``group``), one task per worker (its kernel
runs the documents on the worker's threads), which gets its shards' futures
and the document ids (``ResidentBatch``), with no read task and no words
gather per iteration: the distinct words of a part are computed on the
driver from a resident index of the documents' word ids (``Shards.words``).

No task carries a worker restriction: a task's shards (its dependencies)
draw it to their worker. A restriction would name a worker that may die, and
Dask's scheduler never reschedules a task that went to ``no-worker`` (every
worker gone at once: a host lost, or two kills in a row) on a new worker when
its restriction names only dead ones, even a loose one (the chain hung).

Which documents a minibatch holds is the chain's business (its streams), not
the shards': a shard only changes where a document is read from, and LDA adds
its parts' integer counts exactly in any order, so the chain does not depend
on the number of workers. A shard lost with its worker is rebuilt by Dask
from its read task (it depends only on the store); the driver's map of
holders is a placement hint, refreshed when a task ran on another worker
than planned, never a condition of correctness.

Shards hold the whole corpus in worker memory, and so does the driver's index
of word ids: ``choose_reads`` keeps them for a store whose entries take at most
``RESIDENT_SHARE`` of the workers' memory limits together, and a larger store
is streamed (each part read from the store by a task, every iteration).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
from distributed import wait

from dscir.corpus import Corpus, CSRBatch


#: Documents are resident only when their shards take at most this share of the
#: workers' memory limits together: Dask spills from 60 % of a worker's limit,
#: the scheduler may place the shards unevenly, and the tasks (batches, Gibbs
#: assignments, columns) need the rest.
RESIDENT_SHARE = 0.25


def shards_bytes(corpus: Corpus) -> int:
    """Bytes a store's shards hold once read (``read_shard``): an int32 word id and
    count per entry, an int64 row pointer and document id per document, and one
    more row pointer per shard."""
    return 8 * corpus.nnz + 16 * corpus.n_docs + 8 * -(-corpus.n_docs // corpus.chunk_docs)


def _host_memory() -> int:
    """On a worker: its host's memory (cgroup limits counted), Dask's own figure."""
    from distributed.system import MEMORY_LIMIT

    return int(MEMORY_LIMIT)


def workers_memory(client) -> int:
    """The memory limits of ``client``'s workers together (bytes); a worker without
    a limit counts its host's memory."""
    info = client.scheduler_info(n_workers=-1)["workers"]
    unlimited = [a for a, w in info.items() if not w.get("memory_limit")]
    host = client.run(_host_memory, workers=unlimited) if unlimited else {}
    return sum(int(w.get("memory_limit") or host[a]) for a, w in info.items())


def choose_reads(client, store: str) -> dict:
    """How ``store``'s documents reach the tasks on ``client``'s workers:
    ``"resident"`` if its shards take at most ``RESIDENT_SHARE`` of the workers'
    memory, else ``"streamed"``; with the figures compared."""
    need, have = shards_bytes(Corpus.open(store, cache_bytes=0)), workers_memory(client)
    return {"reads": "resident" if need <= RESIDENT_SHARE * have else "streamed",
            "shards_bytes": need, "workers_memory_bytes": have,
            "resident_share": RESIDENT_SHARE}


class ResidentBatch(NamedTuple):
    """A part's documents (sorted) and the futures of the shards holding them,
    in shard order; ``holder`` is the worker planned to run its task."""

    shards: list[Any]
    docs: np.ndarray
    holder: str | None


@functools.lru_cache(maxsize=16)
def _uncached(path: str) -> Corpus:
    """A worker's handle on a store that keeps no entries of its own (the shard is the copy)."""
    return Corpus.open(path, cache_bytes=0)


def read_shard(path: str, lo: int, hi: int) -> CSRBatch:
    """Documents lo..hi-1 of the store (one contiguous read per array)."""
    return _uncached(path).read(np.arange(lo, hi, dtype=np.int64))


def row_entries(indptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where the entries of ``rows`` (in order) lie in a CSR's entry arrays, and
    each row's number of entries."""
    starts = indptr[rows]
    n = indptr[rows + 1] - starts
    offsets = np.cumsum(n) - n
    return np.repeat(starts - offsets, n) + np.arange(int(n.sum()), dtype=np.int64), n


def take(shards: Sequence[CSRBatch], docs: np.ndarray) -> CSRBatch:
    """The rows of ``docs`` (sorted) from ``shards`` (each holding consecutive
    documents, in order, together covering ``docs``), as one batch."""
    docs = np.asarray(docs, dtype=np.int64)
    pieces, lengths = [], []
    for shard in shards:
        lo, hi = int(shard.docs[0]), int(shard.docs[-1]) + 1
        where, n = row_entries(shard.indptr, docs[(docs >= lo) & (docs < hi)] - lo)
        pieces.append((shard.indices[where], shard.data[where]))
        lengths.append(n)
    n = np.concatenate(lengths) if lengths else np.zeros(0, np.int64)
    if n.size != docs.size:
        raise ValueError(f"the shards given hold {n.size} of the part's {docs.size} documents")
    indptr = np.zeros(docs.size + 1, np.int64)
    np.cumsum(n, out=indptr[1:])
    cat = (lambda k: np.concatenate([p[k] for p in pieces]).astype(np.int32, copy=False)
           if pieces else np.zeros(0, np.int32))
    return CSRBatch(indptr, cat(0), cat(1), docs)


def unpack(fn: Callable, spots: tuple[int, ...], *args: Any) -> Any:
    """On a worker: ``fn(*args)`` with each argument at ``spots``, a (shards,
    docs) pair, replaced by those documents' batch."""
    args = list(args)
    for i in spots:
        shards, docs = args[i]
        args[i] = take(shards, docs)
    return fn(*args)


def packed(fn: Callable, args: Sequence[Any]) -> tuple[Callable, tuple]:
    """``fn`` and ``args`` as a task: every ResidentBatch among ``args`` travels as
    (shard futures, docs), which Dask resolves on the worker, and is turned into
    its batch there (``unpack``)."""
    spots = tuple(i for i, a in enumerate(args) if isinstance(a, ResidentBatch))
    if not spots:
        return fn, tuple(args)
    args = tuple((a.shards, a.docs) if i in spots else a for i, a in enumerate(args))
    return functools.partial(unpack, fn, spots), args


class Shards:
    """The driver's side of a store's resident shards on ``client``'s workers.

    ``key(s)`` names shard s's read task. Every shard is submitted on first
    use; the holders are asked for once they are in memory.
    """

    def __init__(self, client, store: str, key: Callable[[int], Any]):
        self.client, self.store, self._key = client, store, key
        corpus = Corpus.open(store, cache_bytes=0)
        self.n_docs, self.chunk = corpus.n_docs, corpus.chunk_docs
        self.n_shards = -(-self.n_docs // self.chunk)
        self._corpus = corpus
        self._index: CSRBatch | None = None
        self._futures: list[Any] = []
        self._holder: list[str | None] = []
        self.stale = True  # the holders and workers must be asked for

    def words(self, docs: np.ndarray) -> np.ndarray:
        """Sorted distinct word ids of ``docs`` (as ``worker.batch_words`` of their
        batch), from the driver's index of every document's word ids, read once."""
        if self._index is None:
            self._index = self._corpus.read(np.arange(self.n_docs, dtype=np.int64))
        where, _ = row_entries(self._index.indptr, np.asarray(docs, np.int64))
        return np.unique(self._index.indices[where]).astype(np.int64)

    def _submit(self) -> None:
        """Submit every shard's read (no restriction: the scheduler spreads them)."""
        for s in range(self.n_shards):
            lo, hi = s * self.chunk, min((s + 1) * self.chunk, self.n_docs)
            self._futures.append(self.client.submit(read_shard, self.store, lo, hi,
                                                    key=self._key(s)))
        self._holder = [None] * self.n_shards

    @property
    def futures(self) -> list[Any]:
        """Every shard's future, in shard order (submitted on first use)."""
        if not self._futures:
            self._submit()
        return self._futures

    def _refresh(self) -> None:
        """Wait for the shards (a lost one is being rebuilt) and ask the scheduler
        where they are; a shard held by several workers keeps its last holder."""
        if not self._futures:
            self._submit()
        wait(self._futures)
        held = self.client.who_has(self._futures)
        for s, f in enumerate(self._futures):
            where = sorted(held.get(f.key, ()))
            if self._holder[s] not in where:
                self._holder[s] = where[0] if where else None
        self.stale = False

    def group(self, docs: np.ndarray) -> list[ResidentBatch]:
        """``docs`` (sorted) in parts: one per worker, its documents (those whose
        shards it holds, in order). A part holds a shard's every document of the
        minibatch, so it can return its shards' new local state
        (``dscir.engine.local_state``), and its task runs them on all the
        worker's threads with one copy of their words' columns."""
        if self.stale:
            self._refresh()
        docs = np.asarray(docs, np.int64)
        shard = docs // self.chunk
        holder = np.array([self._holder[s] or "" for s in range(self.n_shards)],
                          dtype=object)[shard]
        out = []
        for where in sorted(set(holder)):
            piece = np.flatnonzero(holder == where)
            futures = [self._futures[int(s)] for s in np.unique(shard[piece])]
            out.append(ResidentBatch(futures, docs[piece], where or None))
        return out

    def ran_on(self, planned: Sequence[str | None], actual: Sequence[str]) -> None:
        """Tasks planned on ``planned`` ran on ``actual``: a worker was lost or
        replaced, so ask again before the next grouping."""
        if any(p != a for p, a in zip(planned, actual)):
            self.stale = True
