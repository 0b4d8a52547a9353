"""Documents resident on the workers: the corpus in shards held in worker memory.

A shard is one store chunk of documents (``chunk_docs`` consecutive rows),
read from the Zarr store once by a task (``read_shard``) whose result stays
on its worker as long as the executor holds its future, under Dask's memory
management (spilled, never dropped). An iteration's documents are grouped by
the worker holding their shards into runs of consecutive documents (``group``),
and each run is one task on that worker that gets its shards' futures and the
document ids (``ResidentBatch``), with no read task and no words gather per
iteration: the distinct words of a part are computed on the driver from a
resident index of the documents' word ids (``Shards.words``).

Which documents a minibatch holds is the chain's business (its streams), not
the shards': a shard only changes where a document is read from, so the
chain does not depend on the number of workers. A shard lost with its worker
is rebuilt by Dask from its read task (it depends only on the store); the
driver's map of holders is a placement hint, refreshed when a task ran on
another worker than planned, never a condition of correctness.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from dscir.corpus import Corpus, CSRBatch


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


def _entries(indptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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
        where, n = _entries(shard.indptr, docs[(docs >= lo) & (docs < hi)] - lo)
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

    ``key(s)`` names shard s's read task. Shards are created on first use,
    spread over the workers in blocks of consecutive shards (so a minibatch's
    sorted documents fall into few runs, one task each).
    """

    def __init__(self, client, store: str, key: Callable[[int], Any]):
        self.client, self.store, self._key = client, store, key
        corpus = Corpus.open(store, cache_bytes=0)
        self.n_docs, self.chunk = corpus.n_docs, corpus.chunk_docs
        self.n_shards = -(-self.n_docs // self.chunk)
        self._corpus = corpus
        self._index: CSRBatch | None = None
        self._futures: dict[int, Any] = {}
        self._holder: dict[int, str] = {}
        self._nthreads: dict[str, int] | None = None
        self.stale = True  # the holders and workers must be asked for

    def words(self, docs: np.ndarray) -> np.ndarray:
        """Sorted distinct word ids of ``docs`` (as ``worker.batch_words`` of their
        batch), from the driver's index of every document's word ids, read once."""
        if self._index is None:
            self._index = self._corpus.read(np.arange(self.n_docs, dtype=np.int64))
        where, _ = _entries(self._index.indptr, np.asarray(docs, np.int64))
        return np.unique(self._index.indices[where]).astype(np.int64)

    def _refresh(self) -> None:
        """Ask the scheduler for the workers and where the shards are (after a
        change: a task ran elsewhere than planned, or the first time)."""
        self._nthreads = dict(sorted(self.client.nthreads().items()))
        if self._futures:
            held = self.client.who_has(list(self._futures.values()))
            for s, f in self._futures.items():
                where = held.get(f.key, ())
                self._holder[s] = next(iter(where), None) or self._planned(s)
        self.stale = False

    def _planned(self, s: int) -> str:
        workers = list(self._nthreads)
        return workers[s * len(workers) // self.n_shards]

    def _future(self, s: int) -> Any:
        if s not in self._futures:
            lo, hi = s * self.chunk, min((s + 1) * self.chunk, self.n_docs)
            self._holder[s] = where = self._planned(s)
            self._futures[s] = self.client.submit(read_shard, self.store, lo, hi,
                                                  key=self._key(s), workers=[where],
                                                  allow_other_workers=True)
        return self._futures[s]

    def group(self, docs: np.ndarray) -> list[ResidentBatch]:
        """``docs`` (sorted) in parts: runs of consecutive documents whose shards
        one worker holds, each run split into that worker's threads."""
        if self.stale or self._nthreads is None:
            self._refresh()
        docs = np.asarray(docs, np.int64)
        if docs.size == 0:
            return []
        shard = docs // self.chunk
        for s in np.unique(shard):
            self._future(int(s))
        holder = np.array([self._holder[int(s)] for s in shard], dtype=object)
        cuts = np.flatnonzero(holder[1:] != holder[:-1]) + 1
        out = []
        for run in np.split(np.arange(docs.size), cuts):
            where = holder[run[0]]
            for piece in np.array_split(run, min(self._nthreads.get(where, 1), run.size)):
                ids = docs[piece]
                futures = [self._futures[int(s)] for s in np.unique(shard[piece])]
                out.append(ResidentBatch(futures, ids, where))
        return out

    def ran_on(self, planned: Sequence[str | None], actual: Sequence[str]) -> None:
        """Tasks planned on ``planned`` ran on ``actual``: a worker was lost or
        replaced, so ask again before the next grouping."""
        if any(p != a for p, a in zip(planned, actual)):
            self.stale = True
