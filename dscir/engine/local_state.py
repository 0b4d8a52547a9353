"""Per-document local state kept between visits, in a Zarr array the worker tasks read and write.

A model with local state (LDA with warm starts: each training document's
topic assignments) gets, in a minibatch task, the state its documents had at
the end of their last visit and returns the new state, which the task writes
before it returns. The array is ``z`` [3, n_docs, L] (L: the longest
training document), one chunk per (buffer, document), so a task writes whole
chunks and never another document's; chunk files are flat (``c.b.d.0``) in
one directory, not a directory per document. Which of the three buffers a visit
reads and which it writes is decided on the driver, per document, from two
small arrays:

- ``current[d]``: the buffer holding d's latest state (-1: never visited);
- ``protected[d]``: ``current`` as of the last checkpoint taken.

A visit reads ``current[d]`` and writes the lowest buffer that is neither
``current[d]`` nor ``protected[d]``; ``current`` moves only after the whole
iteration succeeded. Hence a task never reads what this iteration writes, a
retried or duplicated task (a worker killed before or after its write) reads
the same bytes and rewrites the same bytes, and the state a checkpoint names
is never overwritten before the next checkpoint, so a resume reads exactly
the state the checkpoint saw, whatever the abandoned run wrote after it. The
chain depends only on the states read, never on which buffer holds them, so
it is the same with any checkpointing, number of workers or task order.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import weakref
from typing import Any

import numpy as np
import zarr

from dscir import integrity
from dscir.errors import DscirError

N_BUFFERS = 3


def state_dtype(n_values: int) -> np.dtype:
    """The narrowest signed integer type holding 0..n_values-1 and the fill -1."""
    return np.dtype(np.int16 if n_values <= np.iinfo(np.int16).max else np.int32)


class LocalState:
    """The driver's side of a chain's per-document state stored at ``path``.

    ``lengths`` [n_docs] are the documents' state sizes (LDA: tokens). With
    ``path`` None the state lives in a temporary directory removed with this
    object (workers must see this machine's temporary directory, as a
    LocalCluster's do); a checkpointed run keeps it in the run.
    """

    def __init__(self, path: str | None, lengths: np.ndarray, dtype):
        if path is None:
            path = tempfile.mkdtemp(prefix="dscir-local-")
            self._cleanup = weakref.finalize(self, shutil.rmtree, path, True)
        self.path = str(path)
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.dtype = np.dtype(dtype)
        self.current = np.full(self.lengths.size, -1, dtype=np.int8)
        self.protected = self.current.copy()
        self._created = False

    def create(self) -> None:
        """Create the array if the store has none yet (an existing one is resumed)."""
        if self._created:
            return
        group = zarr.open_group(self.path, mode="a")
        width = max(int(self.lengths.max(initial=0)), 1)
        if "z" not in group:
            z = group.create_array("z", shape=(N_BUFFERS, self.lengths.size, width),
                                   chunks=(1, 1, width), dtype=self.dtype, fill_value=-1,
                                   chunk_key_encoding={"name": "default", "separator": "."},
                                   **integrity.array_options())
            z.attrs[integrity.WRITTEN_ON_USE] = True
        z = group["z"]
        if z.shape != (N_BUFFERS, self.lengths.size, width) or z.dtype != self.dtype:
            raise DscirError(f"{self.path}/z holds another chain's local state "
                             f"(shape {z.shape}, dtype {z.dtype})")
        self._created = True

    def plan(self, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(read, write) buffers int8 [n] of a visit to ``docs`` (read -1: a first visit)."""
        docs = np.asarray(docs, dtype=np.int64)
        read, keep = self.current[docs], self.protected[docs]
        write = np.zeros(docs.size, dtype=np.int8)
        for _ in range(2):  # the lowest buffer in neither set
            write += (write == read) | (write == keep)
        return read, write

    def commit(self, docs: np.ndarray, write: np.ndarray) -> None:
        """After the iteration succeeded: the visited documents' latest state is ``write``."""
        self.current[np.asarray(docs, dtype=np.int64)] = write

    def protect(self) -> None:
        """A checkpoint is being taken: keep the states it names until the next one."""
        self.protected = self.current.copy()

    def arrays(self) -> dict[str, np.ndarray]:
        return {"current": self.current.copy()}

    def restore(self, arrays: dict[str, Any]) -> None:
        current = np.asarray(arrays["current"], dtype=np.int8)
        if current.shape != self.current.shape:
            raise DscirError(f"the checkpoint's local state covers {current.size} documents, "
                             f"the corpus has {self.current.size}")
        self.current, self.protected = current.copy(), current.copy()


def _open(path: str, mode: str):
    """The state array at ``path``, or one clear error where this worker cannot see it
    (a driver's temporary directory seen from another host)."""
    try:
        return zarr.open_array(os.path.join(path, "z"), mode=mode)
    except FileNotFoundError:
        raise DscirError(
            f"worker on {socket.gethostname()} cannot see the chain's local state at {path}: "
            "warm starts need a directory every worker sees; on a multi-host cluster fit "
            "with out= on a shared filesystem and checkpoint_every (--out and "
            "--checkpoint-every on the command line), whose run holds it") from None


def read_rows(path: str, docs: np.ndarray, buffers: np.ndarray,
              lengths: np.ndarray) -> np.ndarray:
    """The stored states of ``docs`` concatenated (a document with buffer -1
    gets ``lengths[d]`` entries of -1); one read per buffer, its chunks fetched
    concurrently."""
    z = _open(path, "r")
    rows = np.full((len(docs), z.shape[2]), -1, z.dtype)
    for b in np.unique(buffers[buffers >= 0]):
        sel = np.flatnonzero(buffers == b)
        rows[sel] = z.get_orthogonal_selection((int(b), np.asarray(docs)[sel], slice(None)))
    keep = np.arange(z.shape[2]) < np.asarray(lengths)[:, None]
    return rows[keep]


def write_rows(path: str, docs: np.ndarray, buffers: np.ndarray, lengths: np.ndarray,
               values: np.ndarray) -> None:
    """Write each document's state (its slice of ``values``, padded with -1) as
    one whole chunk; one write per buffer."""
    z = _open(path, "r+")
    rows = np.full((len(docs), z.shape[2]), -1, z.dtype)
    rows[np.arange(z.shape[2]) < np.asarray(lengths)[:, None]] = values
    for b in np.unique(buffers):
        sel = np.flatnonzero(buffers == b)
        z.oindex[int(b), np.asarray(docs)[sel], :] = rows[sel]


def with_local(batch, words: np.ndarray, fn, path: str, read: np.ndarray, write: np.ndarray,
               lengths: np.ndarray, *args: Any) -> Any:
    """On a worker: ``fn(batch, words, state, warm, *args)`` given the batch
    documents' stored state (buffers ``read``; -1, a first visit, gives
    ``warm`` False); ``fn`` returns (result, new state), which is written to
    buffers ``write`` before the result is returned."""
    state = read_rows(path, batch.docs, read, lengths)
    result, new = fn(batch, words, state, read >= 0, *args)
    write_rows(path, batch.docs, write, lengths, np.asarray(new))
    return result


def bind(local: LocalState, fn, parts, args):
    """The task function and per-part arguments that run ``fn`` with ``local``
    state, and the write plans to ``commit`` once every part has succeeded."""
    local.create()
    plans = [local.plan(p) for p in parts.parts]
    args = [(fn, local.path, read, write, local.lengths[p], *a)
            for p, (read, write), a in zip(parts.parts, plans, args)]
    return with_local, args, plans


def commit(local: LocalState, parts, plans) -> None:
    for p, (_, write) in zip(parts.parts, plans):
        local.commit(p, write)
