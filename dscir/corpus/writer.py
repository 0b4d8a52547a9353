"""Writing a corpus store: shards appended as they stream in, then renamed into place.

A store is written to ``.OUTPUT.partial-XXXX`` beside OUTPUT and renamed into
place only when complete, so an error or interruption leaves nothing behind.
"""


from __future__ import annotations

import math
import shutil
import uuid
import warnings
from pathlib import Path

import numpy as np
import zarr

from dscir import integrity
from dscir.corpus.split import heldout_flag
from dscir.corpus.store import ATTR, FORMAT_VERSION, INT32_MAX, Corpus
from dscir.errors import CorpusError, spell

class CorpusWriter:
    """Append documents to a new store block by block, with memory bounded by
    about one shard; the store appears at ``path`` only when ``finish`` succeeds.

    Use as a context manager (an exception removes the partial store) or call
    ``abort`` yourself. Documents arrive as blocks (lengths, indices, data,
    doc_ids) with ascending, distinct word ids and positive counts per document.
    Empty documents are kept unless ``drop_empty``; either way they are counted
    in the ingest report.
    """

    def __init__(self, path, *, overwrite: bool = False, chunk_docs: int = 256,
                 shard_chunks: int = 16, drop_empty: bool = False,
                 max_buffer_entries: int = 1 << 22):
        self.path = Path(path)
        if chunk_docs < 1 or shard_chunks < 1:
            raise CorpusError("chunk_docs and shard_chunks must be >= 1")
        if self.path.exists() and not overwrite:
            raise CorpusError(f"{self.path} exists; pass {spell('overwrite=True', '--overwrite')} "
                              "to replace it")
        self.chunk_docs, self.shard_chunks = int(chunk_docs), int(shard_chunks)
        self.shard_docs = self.chunk_docs * self.shard_chunks
        self.drop_empty = drop_empty
        self.max_buffer_entries = int(max_buffer_entries)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._tmp = self.path.parent / f".{self.path.name}.partial-{uuid.uuid4().hex[:8]}"
        self._group = zarr.open_group(str(self._tmp), mode="w")
        self._arrays: dict | None = None
        self._ptr, self._ids = [np.zeros(1, np.int64)], [np.zeros(0, str)]
        self._idx, self._dat = [np.zeros(0, np.int32)], [np.zeros(0, np.int32)]
        self._n_buf_docs = self._n_buf_entries = 0
        self._ptr_written = self._docs_written = self._entries_written = 0
        self.n_docs = self.nnz = self.n_tokens = 0
        self.max_word = -1
        self.n_empty = 0
        self._open = True

    def __enter__(self) -> CorpusWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None or self._open:
            self.abort()

    def add(self, lengths, indices, data, doc_ids) -> None:
        """Append a block of documents: ``lengths[i]`` entries each, taken in
        order from ``indices``/``data``; ``doc_ids`` names them."""
        lengths = np.asarray(lengths, dtype=np.int64)
        indices = np.asarray(indices, dtype=np.int64)
        data = np.asarray(data, dtype=np.int64)
        doc_ids = np.asarray(doc_ids, dtype=str)
        if (doc_ids.size != lengths.size or indices.size != data.size
                or int(lengths.sum()) != indices.size):
            raise ValueError("block sizes disagree")
        empty = lengths == 0
        self.n_empty += int(empty.sum())
        if self.drop_empty and empty.any():
            lengths, doc_ids = lengths[~empty], doc_ids[~empty]
        if not lengths.size:
            return
        if indices.size:
            if data.max() > INT32_MAX:
                raise CorpusError(f"a count exceeds {INT32_MAX}")
            self.max_word = max(self.max_word, int(indices.max()))
        self._ptr.append(self.nnz + np.cumsum(lengths))
        self._ids.append(doc_ids)
        self._idx.append(indices.astype(np.int32))
        self._dat.append(data.astype(np.int32))
        self.n_docs += lengths.size
        self.nnz += indices.size
        self.n_tokens += int(data.sum())
        self._n_buf_docs += lengths.size
        self._n_buf_entries += indices.size
        if self._arrays is None:
            if (self._n_buf_docs >= self.shard_docs
                    or self._n_buf_entries >= self.max_buffer_entries):
                self._create_arrays()
        if self._arrays is not None:
            self._flush(final=False)

    def _create_arrays(self) -> None:
        per_doc = self._n_buf_entries / max(self._n_buf_docs, 1)
        chunk_entries = max(1024, 1024 * math.ceil(per_doc * self.chunk_docs / 1024))
        self.chunk_entries = chunk_entries
        self.shard_entries = chunk_entries * self.shard_chunks
        g, docs, ents = self._group, (self.chunk_docs,), (chunk_entries,)
        dshard, eshard = (self.shard_docs,), (self.shard_entries,)
        self._arrays = {
            name: g.create_array(name, shape=(0,), dtype=dtype, chunks=chunks, shards=shards,
                                 **integrity.array_options())
            for name, dtype, chunks, shards in (
                ("indptr", "int64", docs, dshard), ("doc_ids", str, docs, dshard),
                ("indices", "int32", ents, eshard), ("data", "int32", ents, eshard))
        }

    @staticmethod
    def _append(array, parts: list, written: int, shard: int, final: bool) -> int:
        """Write whole shards from the buffered ``parts`` (all of them if
        ``final``); keep the rest in ``parts``; return the new length written."""
        buf = np.concatenate(parts) if len(parts) > 1 else parts[0]
        n = buf.size if final else (buf.size // shard) * shard
        if n:
            array.resize((written + n,))
            array[written : written + n] = buf[:n]
        parts[:] = [buf[n:]]
        return written + n

    def _flush(self, final: bool) -> None:
        a = self._arrays
        if final or self._n_buf_docs >= self.shard_docs:
            self._ptr_written = self._append(a["indptr"], self._ptr, self._ptr_written,
                                             self.shard_docs, final)
            self._docs_written = self._append(a["doc_ids"], self._ids, self._docs_written,
                                              self.shard_docs, final)
            self._n_buf_docs = self._ids[0].size
        if final or self._n_buf_entries >= self.shard_entries:
            w = self._append(a["indices"], self._idx, self._entries_written, self.shard_entries,
                             final)
            self._append(a["data"], self._dat, self._entries_written, self.shard_entries, final)
            self._entries_written = w
            self._n_buf_entries = self._idx[0].size

    def finish(self, vocabulary, *, heldout: dict | None = None,
               report: dict | None = None) -> Corpus:
        """Write the vocabulary and attributes, optionally the held-out flag
        (``heldout``: keyword arguments of ``split_heldout``), and move the
        store into place. Returns the open store."""
        if not self._open:
            raise CorpusError("the writer is closed")
        try:
            vocabulary = np.asarray(vocabulary, dtype=str)
            if self.n_docs == 0:
                what = (f" ({self.n_empty} empty documents dropped)"
                        if self.n_empty else "")
                raise CorpusError(f"the corpus is empty: no documents{what}")
            if self.max_word >= vocabulary.size:
                raise CorpusError(
                    f"word id {self.max_word} has no vocabulary entry "
                    f"(the vocabulary has {vocabulary.size} words)")
            if vocabulary.size == 0:
                raise CorpusError("the vocabulary is empty")
            if self._arrays is None:
                self._create_arrays()
            self._flush(final=True)
            g = self._group
            g.create_array("vocabulary", shape=vocabulary.shape, dtype=str,
                           chunks=(max(vocabulary.size, 1),),
                           **integrity.array_options())[...] = vocabulary
            if heldout:
                flag = heldout_flag(self.n_docs, **heldout)
                g.create_array("heldout", shape=flag.shape, dtype="bool",
                               chunks=(self.chunk_docs,), **integrity.array_options())[...] = flag
            n_words = int(vocabulary.size)
            ingest = {"empty_docs": self.n_empty,
                      "empty_policy": "dropped" if self.drop_empty else "kept"}
            ingest.update(report or {})
            g.attrs.update({
                "encoding-type": "csr_matrix", "encoding-version": "0.1.0",
                "shape": [self.n_docs, n_words],
                ATTR: {"format_version": FORMAT_VERSION, "n_docs": self.n_docs,
                       "n_words": n_words, "n_tokens": self.n_tokens, "nnz": self.nnz,
                       "chunk_docs": self.chunk_docs, "shard_docs": self.shard_docs,
                       "chunk_entries": self.chunk_entries,
                       "shard_entries": self.shard_entries, "ingest": ingest},
            })
            _move_into_place(self._tmp, self.path)
        except BaseException:
            self.abort()
            raise
        self._open = False
        return Corpus.open(self.path)

    def abort(self) -> None:
        """Remove the partial store."""
        self._open = False
        integrity.remove_unfinished(self._tmp)


def warn_merged(n: int, where) -> None:
    """Say that ``n`` duplicate (document, word) entries were summed."""
    if n:
        warnings.warn(f"{where}: merged {n:,} duplicate (document, word) entries "
                      "by summing their counts", stacklevel=3)


def _move_into_place(tmp: Path, path: Path) -> None:
    """Rename ``tmp`` to ``path``; an old store there is removed only after."""
    old = None
    if path.exists():
        old = path.parent / f".{path.name}.old-{uuid.uuid4().hex[:8]}"
        path.rename(old)
    tmp.rename(path)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def write_corpus(path, matrix, vocabulary=None, doc_ids=None, *, overwrite=False,
                 chunk_docs: int = 256, shard_chunks: int = 16, drop_empty: bool = False,
                 heldout: dict | None = None, progress: bool = False) -> Corpus:
    """Write an in-memory scipy.sparse document-term matrix (e.g. scikit-learn's
    CountVectorizer output) as a corpus store, block by block and atomically.
    Counts must be non-negative integers; explicit zeros are dropped and
    duplicate entries summed."""
    import scipy.sparse as sp

    if not sp.issparse(matrix) and not isinstance(matrix, np.ndarray):
        raise CorpusError(f"expected a scipy.sparse matrix, got {type(matrix).__name__}")
    m = sp.csr_matrix(matrix)
    n_docs, n_words = m.shape
    if m.data.size:
        if not np.all(np.isfinite(m.data)) or np.any(m.data != np.round(m.data)):
            raise CorpusError("counts must be integers")
        if m.data.min() < 0:
            raise CorpusError("counts must be positive (found a negative entry)")
    before = matrix.nnz if sp.issparse(matrix) else m.nnz
    m.sum_duplicates()
    merged = before - m.nnz
    warn_merged(merged, "the matrix")
    m.eliminate_zeros()
    vocabulary = [str(i) for i in range(n_words)] if vocabulary is None else list(vocabulary)
    if len(vocabulary) != n_words:
        raise CorpusError(f"vocabulary has {len(vocabulary)} entries, the matrix {n_words} columns")
    doc_ids = np.arange(n_docs).astype(str) if doc_ids is None else np.asarray(doc_ids, str)
    if doc_ids.size != n_docs:
        raise CorpusError(f"{doc_ids.size} document ids for {n_docs} documents")
    from dscir.progress import tqdm

    with CorpusWriter(path, overwrite=overwrite, chunk_docs=chunk_docs,
                      shard_chunks=shard_chunks, drop_empty=drop_empty) as w:
        step = w.shard_docs
        for lo in tqdm(range(0, n_docs, step), disable=not progress, unit="block"):
            hi = min(lo + step, n_docs)
            a, b = m.indptr[lo], m.indptr[hi]
            w.add(np.diff(m.indptr[lo : hi + 1]), m.indices[a:b], m.data[a:b], doc_ids[lo:hi])
        return w.finish(vocabulary, heldout=heldout,
                        report={"format": "scipy.sparse", "duplicates_merged": merged})
