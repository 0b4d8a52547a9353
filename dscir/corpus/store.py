"""The dscir corpus store: a Zarr v3 group holding a CSR document-term matrix.

Format version 2 (the full spec: docs/guide/store.md)::

    STORE/   attrs: encoding-type "csr_matrix", encoding-version "0.1.0",
             shape [n_docs, n_words] (AnnData's sparse encoding), and
             dscir_corpus {format_version, n_docs, n_words, n_tokens, nnz,
             chunk_docs, shard_docs, chunk_entries, shard_entries, ingest}
      indptr      int64 [n_docs + 1]  chunks of chunk_docs rows, shards of shard_docs
      indices     int32 [nnz]         word ids, ascending within a document
      data        int32 [nnz]         counts (> 0)
      doc_ids     str   [n_docs]      chunked like indptr
      vocabulary  str   [n_words]
      heldout     bool  [n_docs]      optional held-out flag (split_heldout)

``indices`` and ``data`` are chunked along the entries so that one chunk holds
about ``chunk_docs`` documents (from the mean document size of the first
shard written), and sharded so that one shard file holds ``shard_chunks``
chunks: a block of documents is one contiguous slice of each array. This module
reads a store (``Corpus``) and checks it (``check_shapes``, ``verify``);
``dscir.corpus.writer`` writes one.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import NamedTuple

import numpy as np
import zarr

from dscir import integrity
from dscir.errors import CorpusError, DataError, DscirError, spell

DEFAULT_CACHE_BYTES = 128 << 20
FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)
ATTR = "dscir_corpus"
#: The attributes that mark a run store (``dscir.runs.store``: finished, resumable,
#: several chains): a run passed where a corpus is expected is named as one.
RUN_ATTRS = ("dscir_run", "dscir_resumable", "dscir_chains")
INT32_MAX = np.iinfo(np.int32).max


class CSRBatch(NamedTuple):
    """Documents as CSR arrays; ``docs`` are their row indices in the store."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    docs: np.ndarray


class Corpus:
    """A read-only handle on a corpus store; metadata and ``indptr`` are loaded once.

    If the counts fit in ``cache_bytes`` (8 bytes an entry; default 128 MiB,
    0 turns caching off), reads keep each shard of ``indices``/``data`` they
    touch in memory: a worker drawing random minibatches then pays one
    contiguous read per shard, once, instead of one read per chunk per batch.
    A larger corpus is read from the store each time (an LRU over shards
    would thrash on random minibatches). Safe to share between threads."""

    def __init__(self, path: str, group: zarr.Group, meta: dict,
                 cache_bytes: int = DEFAULT_CACHE_BYTES):
        self.path = path
        self._group = group
        self._meta = meta
        self._indptr = integrity.read(self._array("indptr"))
        self._indices = self._array("indices")
        self._data = self._array("data")
        try:
            self._heldout = integrity.read(integrity.member(group, "heldout", "corpus store"))
        except KeyError:  # no held-out split stored
            self._heldout = None
        self._check_shapes()
        self._shard_entries = int((self._indices.shards or self._indices.chunks)[0])
        self._use_cache = 0 < 8 * self.nnz <= int(cache_bytes)
        self._cache: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._lock = threading.Lock()

    def _array(self, name: str) -> zarr.Array:
        try:
            arr = integrity.member(self._group, name, "corpus store")
        except KeyError:
            raise DataError(f"{self.path} has no {name!r} array: the store is "
                            "incomplete or damaged") from None
        if not isinstance(arr, zarr.Array):
            raise DataError(f"{self.path}: {name!r} is not an array")
        return arr

    def _check_shapes(self) -> None:
        """The cheap consistency checks: the attribute's sizes against the arrays'
        shapes, and ``indptr``'s ends (``dscir verify`` checks every entry)."""
        problems = check_shapes(self._meta, self._group, self._indptr, self._indices,
                                self._data)
        if problems:
            raise DataError(f"{self.path} is inconsistent: {'; '.join(problems)} "
                            "(the store is damaged; `dscir verify` checks it in full)")

    @classmethod
    def open(cls, path, *, cache_bytes: int = DEFAULT_CACHE_BYTES) -> Corpus:
        """Open a store by local path or any fsspec URL zarr accepts."""
        path = str(path)
        group, meta = _corpus_group(path)
        if not isinstance(meta, dict):
            raise DataError(f"{path}: the {ATTR} attribute is not a JSON object")
        if meta.get("format_version") not in READABLE_VERSIONS:
            raise CorpusError(
                f"{path} has corpus format {meta.get('format_version')}; "
                f"this dscir reads formats {', '.join(map(str, READABLE_VERSIONS))}"
            )
        return cls(path, group, dict(meta), cache_bytes)

    n_docs = property(lambda self: int(self._meta["n_docs"]))
    n_words = property(lambda self: int(self._meta["n_words"]))
    n_tokens = property(lambda self: int(self._meta["n_tokens"]))
    chunk_docs = property(lambda self: int(self._meta["chunk_docs"]))
    nnz = property(lambda self: int(self._indptr[-1]))

    @property
    def meta(self) -> dict:
        """The store's ``dscir_corpus`` attributes (sizes, chunking, ingest report)."""
        return dict(self._meta)

    @property
    def vocabulary(self) -> np.ndarray:
        return integrity.read(self._array("vocabulary"))

    @property
    def doc_ids(self) -> np.ndarray:
        return integrity.read(self._array("doc_ids"))

    @property
    def doc_lengths(self) -> np.ndarray:
        """Tokens per document (reads the counts once, block by block)."""
        out = np.zeros(self.n_docs, dtype=np.int64)
        for start, batch in self.iter_blocks():
            csum = np.concatenate([[0], np.cumsum(batch.data, dtype=np.int64)])
            out[start : start + batch.docs.size] = np.diff(csum[batch.indptr])
        return out

    @property
    def heldout(self) -> np.ndarray | None:
        return self._heldout

    def train_docs(self) -> np.ndarray:
        if self._heldout is None:
            return np.arange(self.n_docs, dtype=np.int64)
        return np.flatnonzero(~self._heldout).astype(np.int64)

    def heldout_docs(self) -> np.ndarray:
        if self._heldout is None:
            return np.zeros(0, dtype=np.int64)
        return np.flatnonzero(self._heldout).astype(np.int64)

    def _shard(self, s: int) -> tuple[np.ndarray, np.ndarray]:
        """Entries of shard ``s`` (indices, data), from the cache or the store."""
        pair = self._cache.get(s)
        if pair is None:
            lo, hi = s * self._shard_entries, min((s + 1) * self._shard_entries, self.nnz)
            pair = (integrity.read(self._indices, slice(lo, hi)).astype(np.int32, copy=False),
                    integrity.read(self._data, slice(lo, hi)).astype(np.int32, copy=False))
            self._check_entries(*pair, lo)
            with self._lock:
                pair = self._cache.setdefault(s, pair)
        return pair

    def read(self, docs) -> CSRBatch:
        """Documents ``docs`` (row indices), in the order given. With the shard
        cache in use, entries are gathered from cached shards; without it, a
        contiguous ascending run is one slice per array and any other set one
        coordinate selection per array (zarr fetches the chunks concurrently)."""
        docs = np.asarray(docs, dtype=np.int64).ravel()
        if docs.size and (docs.min() < 0 or docs.max() >= self.n_docs):
            raise CorpusError(f"document index out of range 0..{self.n_docs - 1}")
        starts, ends = self._indptr[docs], self._indptr[docs + 1]
        lengths = ends - starts
        indptr = np.zeros(docs.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        total = int(indptr[-1])
        if total == 0:
            indices = data = np.zeros(0, np.int32)
        elif self._use_cache:
            where = np.repeat(starts - indptr[:-1], lengths) + np.arange(total, dtype=np.int64)
            shard = where // self._shard_entries
            indices, data = np.empty(total, np.int32), np.empty(total, np.int32)
            for s in np.unique(shard):
                sel = shard == s
                i, d = self._shard(int(s))
                local = where[sel] - int(s) * self._shard_entries
                indices[sel], data[sel] = i[local], d[local]
        elif docs.size == 1 or np.all(np.diff(docs) == 1):
            lo, hi = int(starts[0]), int(ends[-1])
            indices = integrity.read(self._indices, slice(lo, hi))
            data = integrity.read(self._data, slice(lo, hi))
            self._check_entries(indices, data, lo)
        else:
            where = np.repeat(starts - indptr[:-1], lengths) + np.arange(total, dtype=np.int64)
            indices = integrity.read(self._indices, where, coordinates=True)
            data = integrity.read(self._data, where, coordinates=True)
            self._check_entries(indices, data, None)
        return CSRBatch(indptr, indices.astype(np.int32, copy=False),
                        data.astype(np.int32, copy=False), docs)

    def _check_entries(self, indices: np.ndarray, data: np.ndarray, first) -> None:
        """Word ids in [0, n_words) and counts > 0 (stores without checksums can
        hold damaged entries that still decode)."""
        if not indices.size:
            return
        where = f"entries from {first}" if first is not None else "the entries read"
        lo, hi = int(indices.min()), int(indices.max())
        if lo < 0 or hi >= self.n_words:
            bad = lo if lo < 0 else hi
            raise CorpusError(
                f"{self.path} is damaged: array 'indices' holds word id {bad} outside "
                f"0..{self.n_words - 1} ({where}); `dscir verify {self.path}` checks the "
                "whole store")
        if int(data.min()) <= 0:
            raise CorpusError(
                f"{self.path} is damaged: array 'data' holds a count {int(data.min())} <= 0 "
                f"({where}); `dscir verify {self.path}` checks the whole store")

    def iter_blocks(self, block_docs: int | None = None):
        """(first row, CSRBatch) for consecutive blocks of ``block_docs``
        documents (default: one chunk of the document axis)."""
        step = int(block_docs or self.chunk_docs)
        for start in range(0, self.n_docs, step):
            stop = min(start + step, self.n_docs)
            yield start, self.read(np.arange(start, stop))

    def __repr__(self) -> str:
        return (f"Corpus({self.path!r}: {self.n_docs} documents, {self.n_words} words, "
                f"{self.n_tokens} tokens)")


def check_shapes(meta: dict, group: zarr.Group, indptr: np.ndarray, indices: zarr.Array,
                 data: zarr.Array) -> list[str]:
    """Disagreements between the ``dscir_corpus`` sizes and the arrays' shapes,
    and ``indptr``'s ends (cheap: no entry is read)."""
    problems = []
    try:
        n_docs, n_words = int(meta["n_docs"]), int(meta["n_words"])
        int(meta["n_tokens"])
    except (KeyError, TypeError, ValueError):
        return [f"the {ATTR} attribute lacks integer n_docs, n_words, n_tokens"]
    nnz = meta.get("nnz")
    if indptr.ndim != 1 or indptr.shape[0] != n_docs + 1:
        problems.append(f"'indptr' has {indptr.shape[0] if indptr.ndim else 0} entries, "
                        f"{n_docs + 1} expected for n_docs={n_docs}")
        return problems
    if int(indptr[0]) != 0:
        problems.append(f"'indptr' starts at {int(indptr[0])}, not 0")
    drop = np.flatnonzero(np.diff(indptr) < 0)
    if drop.size:
        problems.append(f"'indptr' decreases after document {int(drop[0])}")
    end = int(indptr[-1])
    if nnz is not None and end != int(nnz):
        problems.append(f"'indptr' ends at {end}, the attribute says nnz={int(nnz)}")
    for name, arr in (("indices", indices), ("data", data)):
        if arr.shape[0] != end:
            problems.append(f"'{name}' has {arr.shape[0]} entries, 'indptr' ends at {end}")
    for name, size in (("doc_ids", n_docs), ("vocabulary", n_words), ("heldout", n_docs)):
        try:
            shape = integrity.member(group, name, "corpus store").shape
        except KeyError:  # an optional array (heldout) or one the reader names itself
            continue
        if shape != (size,):
            problems.append(f"'{name}' has shape {list(shape)}, [{size}] expected")
    if n_words < 1:
        problems.append(f"n_words={n_words}")
    return problems


def _corpus_group(path: str):
    """The Zarr group of the corpus store ``path`` and its dscir attribute (not None)."""
    try:
        group = integrity.open_group(path, "corpus store")
    except (FileNotFoundError, zarr.errors.GroupNotFoundError) as exc:
        where = Path(str(path))
        if where.is_dir() or where.is_file():
            what = "a directory" if where.is_dir() else "a file"
            raise CorpusError(f"{path} is {what}, not a corpus store (no zarr.json); "
                              f"{spell('dscir.corpus.ingest_* write', '`dscir ingest` writes')} "
                              "one") from exc
        raise CorpusError(f"no corpus store at {path}") from exc
    meta = group.attrs.get(ATTR)
    if meta is None and any(mark in group.attrs for mark in RUN_ATTRS):
        run = group.attrs.get(RUN_ATTRS[0])
        store = run.get("store") if isinstance(run, dict) else None
        fitted_on = f" (this one was fitted on {store})" if isinstance(store, str) else ""
        reader = spell("an estimator's load(RUN)", "`dscir info RUN` or `dscir topics RUN`")
        raise CorpusError(f"{path} is a dscir run (a fitted model), not a corpus store: pass "
                          f"the corpus store it was fitted on{fitted_on}, or read the run "
                          f"with {reader}")
    if meta is None:
        raise CorpusError(f"{path} is a Zarr group but not a dscir corpus store "
                          f"(its zarr.json has no {ATTR} attribute)")
    return group, meta


def verify(path) -> tuple[list[str], list[str]]:
    """Read every chunk of every array of the corpus store ``path`` and check its
    consistency: ``indptr`` starts at 0, is monotone and ends at nnz, word ids in
    [0, n_words), counts > 0, and the attribute's sizes agree with the arrays.
    Returns (arrays found sound, problems as "array: what")."""
    path = str(path)
    group, meta = _corpus_group(path)
    if not isinstance(meta, dict):
        raise DataError(f"{path}: the {ATTR} attribute is not a JSON object")
    ok, problems = [], []
    arrays = {}
    for name in ("indptr", "indices", "data", "doc_ids", "vocabulary", "heldout"):
        try:
            arrays[name] = integrity.member(group, name, "corpus store")
        except KeyError:
            if name != "heldout":
                problems.append(f"{name}: missing")
            continue
        except DscirError as exc:
            problems.append(f"{name}: {exc}")
            continue
        # stores without checksums skip empty chunks; counts are never all zero
        found = integrity.check_array(arrays[name], require_all=True if name == "data" else None)
        problems.extend(f"{name}: {p}" for p in found)
        if not found:
            ok.append(name)
    if any(p.startswith(("indptr", "indices", "data")) for p in problems):
        return ok, problems
    indptr = arrays["indptr"][...]
    problems.extend(f"consistency: {p}" for p in check_shapes(
        meta, group, indptr, arrays["indices"], arrays["data"]))
    n_words = int(meta.get("n_words", 0))
    indices, data = arrays["indices"], arrays["data"]
    step = int((indices.shards or indices.chunks)[0])
    tokens = 0
    for lo in range(0, indices.shape[0], step):
        hi = min(lo + step, indices.shape[0])
        i, d = indices[lo:hi], data[lo:hi]
        if i.size and (int(i.min()) < 0 or int(i.max()) >= n_words):
            bad = int(np.flatnonzero((i < 0) | (i >= n_words))[0])
            problems.append(f"indices: word id {int(i[bad])} at entry {lo + bad} is outside "
                            f"0..{n_words - 1}")
        if d.size and int(d.min()) <= 0:
            bad = int(np.flatnonzero(d <= 0)[0])
            problems.append(f"data: count {int(d[bad])} at entry {lo + bad} is not > 0")
        tokens += int(d.sum(dtype=np.int64))
    if "n_tokens" in meta and tokens != int(meta["n_tokens"]):
        problems.append(f"consistency: the counts sum to {tokens} tokens, the attribute says "
                        f"n_tokens={int(meta['n_tokens'])}")
    return ok, problems
