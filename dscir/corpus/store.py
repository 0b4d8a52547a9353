"""The dscir corpus store (format version 1): a Zarr v3 group.

Layout (AnnData-compatible CSR encoding of the document-term matrix)::

    STORE/                 attrs: encoding-type "csr_matrix", encoding-version "0.1.0",
                           shape [n_docs, n_words], dscir_corpus {format_version,
                           n_docs, n_words, n_tokens, chunk_docs}
      indptr   int64 [n_docs + 1]   row offsets (one chunk)
      indices  int32 [nnz]          word ids, ascending within a document
      data     int32 [nnz]          counts (> 0)
      vocabulary  str [n_words]
      doc_ids     str [n_docs]
      heldout     bool [n_docs]     optional: the held-out flag (split_heldout)

``indices`` and ``data`` are chunked along the entries so that each chunk
holds about ``chunk_docs`` documents' worth of entries; a block of documents is
a contiguous range of entries, read with one slice per array.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import NamedTuple

import numpy as np
import zarr

from dscir.errors import CorpusError

FORMAT_VERSION = 1
ATTR = "dscir_corpus"


class CSRBatch(NamedTuple):
    """Documents as CSR arrays; ``docs`` are their row indices in the store."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    docs: np.ndarray


class Corpus:
    """A read-only handle on a corpus store; metadata and ``indptr`` are loaded once."""

    def __init__(self, path: str, group: zarr.Group, meta: dict):
        self.path = path
        self._group = group
        self._meta = meta
        self._indptr = group["indptr"][...]
        self._indices = group["indices"]
        self._data = group["data"]
        self._heldout = group["heldout"][...] if "heldout" in group else None

    @classmethod
    def open(cls, path) -> Corpus:
        path = str(path)
        try:
            group = zarr.open_group(path, mode="r")
        except (FileNotFoundError, zarr.errors.GroupNotFoundError) as exc:
            raise CorpusError(f"no corpus store at {path}") from exc
        meta = group.attrs.get(ATTR)
        if meta is None:
            raise CorpusError(f"{path} is a Zarr group but not a dscir corpus store")
        if meta.get("format_version") != FORMAT_VERSION:
            raise CorpusError(
                f"{path} has corpus format {meta.get('format_version')}; "
                f"this dscir reads format {FORMAT_VERSION}"
            )
        return cls(path, group, dict(meta))

    n_docs = property(lambda self: int(self._meta["n_docs"]))
    n_words = property(lambda self: int(self._meta["n_words"]))
    n_tokens = property(lambda self: int(self._meta["n_tokens"]))
    chunk_docs = property(lambda self: int(self._meta["chunk_docs"]))

    @property
    def vocabulary(self) -> np.ndarray:
        return self._group["vocabulary"][...]

    @property
    def doc_ids(self) -> np.ndarray:
        return self._group["doc_ids"][...]

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

    def read(self, docs) -> CSRBatch:
        """Documents ``docs`` (row indices), in the order given: one contiguous
        read per run of documents that share a chunk of the doc axis."""
        docs = np.asarray(docs, dtype=np.int64).ravel()
        if docs.size and (docs.min() < 0 or docs.max() >= self.n_docs):
            raise CorpusError(f"document index out of range 0..{self.n_docs - 1}")
        order = np.argsort(docs, kind="stable")
        sdocs = docs[order]
        starts, ends = self._indptr[sdocs], self._indptr[sdocs + 1]
        lengths = ends - starts
        pieces_i, pieces_d = [], []
        chunk = sdocs // self.chunk_docs
        bounds = np.flatnonzero(np.diff(chunk)) + 1
        for group in np.split(np.arange(sdocs.size), bounds):
            if group.size == 0:
                continue
            lo, hi = int(starts[group[0]]), int(ends[group[-1]])
            idx = self._indices[lo:hi]
            dat = self._data[lo:hi]
            for g in group:
                a, b = int(starts[g]) - lo, int(ends[g]) - lo
                pieces_i.append(idx[a:b])
                pieces_d.append(dat[a:b])
        inverse = np.empty_like(order)
        inverse[order] = np.arange(order.size)
        pieces_i = [pieces_i[k] for k in inverse]
        pieces_d = [pieces_d[k] for k in inverse]
        indptr = np.zeros(docs.size + 1, dtype=np.int64)
        np.cumsum(lengths[inverse], out=indptr[1:])
        cat = lambda ps, dt: np.concatenate(ps).astype(dt) if ps else np.zeros(0, dt)  # noqa: E731
        return CSRBatch(indptr, cat(pieces_i, np.int32), cat(pieces_d, np.int32), docs)

    def iter_blocks(self):
        """(first row, CSRBatch) for each chunk of the document axis."""
        for start in range(0, self.n_docs, self.chunk_docs):
            stop = min(start + self.chunk_docs, self.n_docs)
            yield start, self.read(np.arange(start, stop))

    def __repr__(self) -> str:
        return (f"Corpus({self.path!r}: {self.n_docs} documents, {self.n_words} words, "
                f"{self.n_tokens} tokens)")


def write_corpus(path, matrix, vocabulary=None, doc_ids=None, *, overwrite=False,
                 chunk_docs: int = 1024, progress: bool = False) -> Corpus:
    """Write a scipy.sparse document-term matrix as a corpus store, atomically."""
    import scipy.sparse as sp

    m = sp.csr_matrix(matrix)
    m.sum_duplicates()
    m.eliminate_zeros()
    if m.data.size and m.data.min() < 0:
        raise CorpusError("counts must be positive")
    n_docs, n_words = m.shape
    if vocabulary is None:
        vocabulary = [str(i) for i in range(n_words)]
    if len(vocabulary) != n_words:
        raise CorpusError(f"vocabulary has {len(vocabulary)} entries, the matrix {n_words} columns")
    if doc_ids is None:
        doc_ids = [str(i) for i in range(n_docs)]
    return _write(Path(path), m.indptr.astype(np.int64), m.indices.astype(np.int32),
                  m.data.astype(np.int32), np.asarray(vocabulary, dtype=str),
                  np.asarray(doc_ids, dtype=str), n_words, overwrite, chunk_docs)


def _write(path: Path, indptr, indices, data, vocabulary, doc_ids, n_words, overwrite,
           chunk_docs) -> Corpus:
    n_docs = indptr.size - 1
    if n_docs == 0:
        raise CorpusError("the corpus is empty: no documents")
    if path.exists() and not overwrite:
        raise CorpusError(f"{path} exists; pass overwrite=True (--overwrite) to replace it")
    tmp = path.parent / f".{path.name}.partial-{uuid.uuid4().hex[:8]}"
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        g = zarr.open_group(str(tmp), mode="w")
        nnz = max(int(indices.size), 1)
        per_chunk = max(int(nnz * min(chunk_docs, n_docs) / n_docs), 1024)
        g.create_array("indptr", shape=indptr.shape, dtype="int64")[...] = indptr
        for name, arr in (("indices", indices), ("data", data)):
            a = g.create_array(name, shape=arr.shape, dtype=arr.dtype, chunks=(per_chunk,))
            if arr.size:
                a[...] = arr
        g.create_array("vocabulary", shape=vocabulary.shape, dtype=str)[...] = vocabulary
        g.create_array("doc_ids", shape=doc_ids.shape, dtype=str)[...] = doc_ids
        g.attrs.update({
            "encoding-type": "csr_matrix", "encoding-version": "0.1.0",
            "shape": [int(n_docs), int(n_words)],
            ATTR: {"format_version": FORMAT_VERSION, "n_docs": int(n_docs),
                   "n_words": int(n_words), "n_tokens": int(data.astype(np.int64).sum()),
                   "chunk_docs": int(chunk_docs)},
        })
        if path.exists():
            shutil.rmtree(path)
        tmp.rename(path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return Corpus.open(path)


def split_heldout(path, *, n_heldout=None, fraction=None, every=None, seed=0) -> np.ndarray:
    """Store a held-out flag beside the counts: every ``every``-th document, or a
    seeded random choice of ``n_heldout`` (or ``fraction``) documents."""
    corpus = Corpus.open(path)
    n = corpus.n_docs
    given = sum(x is not None for x in (n_heldout, fraction, every))
    if given != 1:
        raise CorpusError("give exactly one of n_heldout, fraction and every")
    flag = np.zeros(n, dtype=bool)
    if every is not None:
        if every < 2:
            raise CorpusError(f"every must be >= 2, got {every}")
        flag[every - 1 :: every] = True
    else:
        k = n_heldout if n_heldout is not None else int(round(fraction * n))
        if not 0 < k < n:
            raise CorpusError(f"held-out size must be between 1 and {n - 1}, got {k}")
        from dscir.rng import derive

        rng = np.random.Generator(np.random.PCG64(derive(seed, 7)))
        flag[rng.choice(n, size=k, replace=False)] = True
    g = zarr.open_group(str(path), mode="r+")
    if "heldout" in g:
        del g["heldout"]
    g.create_array("heldout", shape=(n,), dtype="bool")[...] = flag
    return np.flatnonzero(flag)


def completion_split(batch: CSRBatch, every: int = 10) -> tuple[CSRBatch, CSRBatch]:
    """Document completion: lay each document's tokens out in word-id order and
    send tokens at positions every-1, 2*every-1, ... (every ``every``-th) to test."""
    obs_i, obs_d, test_i, test_d = [], [], [], []
    obs_ptr, test_ptr = [0], [0]
    for d in range(batch.docs.size):
        a, b = batch.indptr[d], batch.indptr[d + 1]
        words, counts = batch.indices[a:b], batch.data[a:b].astype(np.int64)
        ends = np.cumsum(counts)
        starts = ends - counts
        # test tokens at positions p with p % every == every - 1, p in [start, end)
        n_test = (ends + 1) // every - (starts + 1) // every
        keep = counts - n_test
        mo, mt = keep > 0, n_test > 0
        obs_i.append(words[mo]); obs_d.append(keep[mo])
        test_i.append(words[mt]); test_d.append(n_test[mt])
        obs_ptr.append(obs_ptr[-1] + int(mo.sum())); test_ptr.append(test_ptr[-1] + int(mt.sum()))
    cat = lambda ps, dt: np.concatenate(ps).astype(dt) if ps else np.zeros(0, dt)  # noqa: E731
    return (CSRBatch(np.array(obs_ptr, np.int64), cat(obs_i, np.int32), cat(obs_d, np.int32), batch.docs),
            CSRBatch(np.array(test_ptr, np.int64), cat(test_i, np.int32), cat(test_d, np.int32), batch.docs))
