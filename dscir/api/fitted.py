"""Fitted K x W parameters where they are stored (LDA's topics, the mixtures'
components): NumPy when small, else a dask array over the Zarr array the
workers wrote.

With the topics on the workers (``placement="workers"``) the kept samples' mean
phi is written by the vocabulary blocks themselves (``Topics.write_mean``)
into the run store (``phi_mean``: one checksummed chunk per block) or, for a
fit without ``out``, into a temporary Zarr group removed once nothing refers to
it. Above ``DENSE_MAX_ENTRIES`` entries the fitted ``topic_word_`` (and a loaded
run's) is a dask array over that array and what reads it goes a block of
columns at a time, so the driver never holds K x W: ``top_ids`` (top words,
coherence), ``document_topics`` (the in-process transform, by groups of
documents whose columns fit in ``COLUMN_ENTRIES``; ``local_log_columns`` scores
an in-memory matrix by the same groups), ``worker_log_columns`` (held-out
scoring and the store transform: the columns read on the workers).
``materialize`` is the call that builds the K x W array on the driver. The DP
and finite mixtures' ``components_`` go the same way (``collect_stored``, their
blocks writing ``components`` and their state), read by ``topic_columns``.
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from pathlib import Path

import numpy as np
import zarr

from dscir import integrity

#: Fitted topics of at most this many entries (128 MB of float64) are a NumPy array.
DENSE_MAX_ENTRIES = 2**24
#: The in-process transform reads at most this many entries of columns at a time (32 MB).
COLUMN_ENTRIES = 2**22
#: The Zarr array of the fitted topics in a run (or a temporary group).
NAME = "phi_mean"


class TemporaryTopics:
    """A temporary directory removed when the last object referring to it goes
    (a copy sent to another process refers to it without owning it)."""

    def __init__(self, path: str | None = None):
        self.path = path or tempfile.mkdtemp(prefix="dscir-topics-")
        if path is None:
            weakref.finalize(self, shutil.rmtree, self.path, True)

    def __reduce__(self):
        return TemporaryTopics, (self.path,)


class StoredTopics:
    """The K x W Zarr array of fitted topics, as the array-like a dask array reads
    (keeping its temporary directory, if any, alive as long as the dask array)."""

    def __init__(self, path: str, holder: TemporaryTopics | None = None):
        from dscir.api.heap import release_large_buffers

        release_large_buffers()  # its column blocks are freed back to the system
        self.path, self.holder = str(path), holder
        self.array = zarr.open_array(self.path, mode="r")
        self.shape, self.dtype, self.ndim = self.array.shape, self.array.dtype, 2

    def __getitem__(self, selection) -> np.ndarray:
        return integrity.read(self.array, selection)


def lazy(path: str, holder: TemporaryTopics | None = None):
    """A dask array over the stored topics at ``path``, chunked as stored."""
    import dask.array as da

    stored = StoredTopics(path, holder)
    return da.from_array(stored, chunks=stored.array.chunks, lock=False, asarray=True,
                         name=f"dscir-topics-{abs(hash((path, id(stored)))):x}")


def read_topics(path: str):
    """The stored topics at ``path``: NumPy up to ``DENSE_MAX_ENTRIES`` entries, else lazy."""
    stored = StoredTopics(path)
    if int(np.prod(stored.shape)) <= DENSE_MAX_ENTRIES:
        return stored[...]
    return lazy(path)


def collect_stored(dense, write, n_entries: int, run: str | Path | None, name: str):
    """A fitted K x W array: ``dense()`` (on the driver) when ``write`` is None (the
    driver holds it) or it has at most ``DENSE_MAX_ENTRIES`` entries, else a dask
    array over ``run``'s ``name`` (written by the blocks at commit) or over a
    temporary copy that ``write(root)`` has the blocks write now."""
    if write is None or n_entries <= DENSE_MAX_ENTRIES:
        return dense()
    holder = None
    if run is None:
        holder = TemporaryTopics()
        zarr.open_group(holder.path, mode="w")
        write(holder.path)
        run = holder.path
    return lazy(f"{run}/{name}", holder)


def collect_topics(model, run: str | Path | None):
    """The fitted topics of an LDA chain's ``model``: its kept mean (``collect_stored``)."""
    k, w = model.config.n_topics, model.data.n_words
    write = model.write_mean if model.placement == "workers" else None
    return collect_stored(model.mean_phi, write, k * w, run, NAME)


def is_lazy(topics) -> bool:
    return not isinstance(topics, np.ndarray)


def source(topics) -> StoredTopics:
    """The ``StoredTopics`` a lazy ``topic_word_`` reads."""
    return next(v for v in topics.dask.values() if isinstance(v, StoredTopics))


def materialize(topics) -> np.ndarray:
    """The whole K x W array on the driver (float64)."""
    return np.asarray(topics.compute() if is_lazy(topics) else topics, np.float64)


def spans(topics) -> list[tuple[int, int]]:
    """The column spans (lo, hi) of a lazy ``topic_word_``'s stored chunks."""
    bounds = np.cumsum((0,) + topics.chunks[1])
    return [(int(lo), int(hi)) for lo, hi in zip(bounds[:-1], bounds[1:])]


def top_ids(topics, n: int) -> np.ndarray:
    """int64 [K, n]: each topic's ``n`` largest entries, largest first (ties: lower
    id); lazy topics one stored chunk at a time."""
    from dscir.models.lda.top_words import merge_top, top_entries

    if not is_lazy(topics):
        return np.argsort(-np.asarray(topics), axis=1, kind="stable")[:, :n].astype(np.int64)
    stored = source(topics)
    return merge_top([top_entries(stored[:, lo:hi], n, lo) for lo, hi in spans(topics)], n)


def top_entries(topics, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(values, word ids) [K, n] of each topic's ``n`` largest entries (``top_ids``)."""
    from dscir.models.lda import top_words as top

    if not is_lazy(topics):
        ids = top_ids(topics, n)
        return np.take_along_axis(np.asarray(topics), ids, axis=1), ids
    stored = source(topics)
    return top.merge_top_entries([top.top_entries(stored[:, lo:hi], n, lo)
                                  for lo, hi in spans(topics)], n)


def topic_columns(topics, words: np.ndarray) -> np.ndarray:
    """float64 [K, len(words)]: the columns of ``words`` (sorted, distinct); lazy
    topics one stored chunk at a time."""
    if not is_lazy(topics):
        return np.asarray(topics)[:, words]
    stored = source(topics)
    out = np.empty((topics.shape[0], words.size))
    cuts = np.searchsorted(words, [lo for lo, _ in spans(topics)] + [topics.shape[1]])
    for (lo, hi), a, b in zip(spans(topics), cuts[:-1], cuts[1:]):
        if b > a:
            out[:, a:b] = stored[:, lo:hi][:, words[a:b] - lo]
    return out


def document_groups(indptr: np.ndarray, indices: np.ndarray, n_words: int,
                    max_words: int) -> list[tuple[int, int]]:
    """Consecutive documents in groups (lo, hi) using at most ``max_words`` distinct
    words each (a document with more is a group of its own)."""
    seen = np.zeros(n_words, bool)
    groups, lo, count = [], 0, 0
    for d in range(indptr.size - 1):
        words = indices[indptr[d]:indptr[d + 1]]
        new = np.unique(words[~seen[words]]).size
        if d > lo and count + new > max_words:
            groups.append((lo, d))
            seen[:] = False
            lo, count, new = d, 0, np.unique(words).size
        seen[words] = True
        count += new
    return groups + [(lo, indptr.size - 1)]


def document_topics(topics, indptr, indices, data, alpha: float, sweeps: int,
                    key: int) -> np.ndarray:
    """``gibbs.document_topics`` under the fitted topics (``csr_arrays`` documents),
    by groups of documents whose columns take at most ``COLUMN_ENTRIES`` entries,
    each group's columns read (lazy topics) or cut (NumPy ones) and rescaled in
    place: one K x U array at a time, never log phi over all W (each document's
    stream is its row, so the groups change nothing)."""
    from dscir.models.lda import gibbs

    k, w = topics.shape
    out = np.empty((indptr.size - 1, k))
    for lo, hi in document_groups(indptr, indices, w, max(1, COLUMN_ENTRIES // k)):
        a, b = indptr[lo], indptr[hi]
        words = np.unique(indices[a:b])
        cols = topic_columns(topics, words)
        with np.errstate(divide="ignore", invalid="ignore"):  # as gibbs.phi_columns
            np.log(cols, out=cols)
            cols -= cols.max(axis=0, keepdims=True)
        np.exp(cols, out=cols)
        out[lo:hi] = gibbs.topic_proportions(
            indptr[lo:hi + 1] - a, indices[a:b], data[a:b], np.arange(lo, hi, dtype=np.int64),
            cols, np.searchsorted(words, indices[a:b]).astype(np.int32), alpha, sweeps, key)
        del cols  # before the next group's columns are read
    return out


def local_log_columns(topics, corpus, docs: np.ndarray):
    """For scoring ``docs`` (sorted) of ``corpus`` in this process (an in-memory
    matrix): ``log_columns(words)``, each part's log columns cut from NumPy topics
    or read from stored ones, and the documents in groups whose columns take at
    most ``COLUMN_ENTRIES`` entries (``document_groups``), as ``document_topics``
    goes: one K x U array at a time, never log phi over all W."""
    def log_columns(words):
        with np.errstate(divide="ignore"):
            return [np.log(topic_columns(topics, np.asarray(w, np.int64))) for w in words]

    if docs.size == 0:
        return log_columns, None
    k, w = topics.shape
    batch = corpus.read(docs)
    groups = document_groups(batch.indptr, batch.indices, w, max(1, COLUMN_ENTRIES // k))
    return log_columns, [docs[lo:hi] for lo, hi in groups]


def read_log_columns(path: str, words: np.ndarray) -> np.ndarray:
    """The worker task: float64 log columns of ``words`` (sorted) of the stored topics."""
    stored = StoredTopics(path)
    with np.errstate(divide="ignore"):
        return np.log(np.asarray(stored[:, np.asarray(words)], np.float64))


def worker_log_columns(topics, executor):
    """For lazy topics, ``log_columns(words)``: futures of tasks reading each
    ``words``' log columns on the workers (None for NumPy topics)."""
    if not is_lazy(topics):
        return None
    path = source(topics).path

    def log_columns(words):
        return [executor.submit("topic-columns", read_log_columns, path, w, j=j)
                for j, w in enumerate(words)]

    return log_columns


def read_phi_columns(path: str, words: np.ndarray) -> np.ndarray:
    """The worker task: ``gibbs.phi_columns`` of ``words`` (sorted) of the stored topics."""
    from dscir.models.lda.gibbs import phi_columns

    log_cols = read_log_columns(path, words)
    return np.ascontiguousarray(phi_columns(log_cols, np.arange(log_cols.shape[1])))


def phi_columns_of(topics):
    """``columns(executor, j, words)``: the rescaled phi columns of a part's words
    (``gibbs.phi_columns``), cut on the driver from NumPy topics or for lazy ones
    read by a task on the workers (a future)."""
    from dscir.models.lda.gibbs import phi_columns

    if is_lazy(topics):
        path = source(topics).path
        return lambda ex, j, words: ex.submit("topic-columns", read_phi_columns, path, words,
                                              j=j)
    with np.errstate(divide="ignore"):
        log_phi = np.log(topics)
    return lambda ex, j, words: np.ascontiguousarray(phi_columns(log_phi, words))
