"""The generic functions that run on workers: open a store once, read, time a task.

A worker opens a store once and keeps it (``open_store``), so a task carries
only a path and document ids, never documents. A result's integer matrices
that are mostly zeros (a part's topic-word counts: at most tokens x kept
sweeps of K x U entries are nonzero) travel as their nonzeros (``compact``)
and are rebuilt exactly on the driver (``expand``).
"""

from __future__ import annotations

import functools
import os
import socket
import threading
import time
from typing import Any, NamedTuple

import numpy as np

from dscir.corpus import Corpus, CSRBatch
from dscir.engine.parts import TaskTime


@functools.lru_cache(maxsize=16)
def open_store(path: str) -> Corpus:
    """The worker process's open handle on a corpus store."""
    return Corpus.open(path)


def read_batch(path: str, docs: np.ndarray) -> CSRBatch:
    """Read documents from the store on the worker (the batch stays there)."""
    return open_store(path).read(docs)


def batch_words(batch: CSRBatch) -> np.ndarray:
    """Sorted distinct word ids of a batch: the parameter columns its task needs."""
    return np.unique(batch.indices).astype(np.int64)


def with_threads(threads: int | None, fn, *args: Any) -> Any:
    """``fn(*args)`` with numba's parallel kernels on ``threads`` threads of the
    calling one (None: as many as this Dask worker has, or numba's default
    outside a worker), at most numba's pool. numba's count is the calling
    thread's own and stays with it, so every task sets it; a kernel's result
    does not depend on it (``dscir.models.lda._threads``)."""
    import numba

    if threads is None:
        from distributed import get_worker

        try:
            threads = get_worker().state.nthreads
        except ValueError:  # not on a worker
            threads = numba.config.NUMBA_NUM_THREADS
    numba.set_num_threads(max(1, min(int(threads), numba.config.NUMBA_NUM_THREADS)))
    return fn(*args)


def timed(fn, *args: Any) -> tuple[Any, TaskTime]:
    """``fn(*args)`` and when and where it computed (its own work, not its queueing)."""
    start, clock = time.time(), time.perf_counter()
    result = fn(*args)
    seconds = time.perf_counter() - clock
    thread = f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"
    return result, TaskTime(start, start + seconds, seconds, thread)


def timed_at(fn, *args: Any) -> tuple[Any, TaskTime, str]:
    """``timed(fn, *args)`` and the address of the worker that ran it."""
    from distributed import get_worker

    return (*timed(fn, *args), get_worker().address)


def result_of(out: tuple) -> tuple:
    """A ``timed_at`` visit's (result, TaskTime, worker), without its new local state."""
    (result, _), *stamps = out
    return (result, *stamps)


class Nonzeros(NamedTuple):
    """An integer array as its nonzero entries: flat positions and values, each in
    the narrowest integer type that holds them (``expand`` restores ``dtype``)."""

    shape: tuple[int, ...]
    dtype: str
    at: np.ndarray
    values: np.ndarray

    @property
    def nbytes(self) -> int:
        return self.at.nbytes + self.values.nbytes


def _narrow(a: np.ndarray) -> np.ndarray:
    """``a`` (integers) in the narrowest signed integer type holding its values."""
    lo, hi = (int(a.min()), int(a.max())) if a.size else (0, 0)
    kind = next(t for t in (np.int8, np.int16, np.int32, np.int64)
                if np.iinfo(t).min <= lo and hi <= np.iinfo(t).max)
    return a.astype(kind)


def nonzeros(a: np.ndarray) -> Nonzeros | np.ndarray:
    """``a`` as ``Nonzeros`` where that takes fewer bytes, else ``a`` itself."""
    at = np.flatnonzero(a)
    out = Nonzeros(a.shape, a.dtype.str, _narrow(at), _narrow(a.ravel()[at]))
    return out if out.nbytes < a.nbytes else a


def dense(a: Nonzeros | np.ndarray) -> np.ndarray:
    """The array ``nonzeros`` was given, exactly."""
    if not isinstance(a, Nonzeros):
        return a
    out = np.zeros(a.shape, np.dtype(a.dtype))
    out.ravel()[a.at.astype(np.int64)] = a.values
    return out


def _is_matrix(a: Any) -> bool:
    return isinstance(a, np.ndarray) and a.ndim == 2 and a.dtype.kind == "i"


def compact(result: Any) -> Any:
    """A named-tuple result with each integer matrix field as ``nonzeros`` of it
    (any other result unchanged): fewer bytes kept and sent back."""
    if not hasattr(result, "_replace"):
        return result
    return result._replace(**{f: nonzeros(v) for f, v in result._asdict().items()
                              if _is_matrix(v)})


def expand(result: Any) -> Any:
    """``compact``'s result as it was."""
    if not hasattr(result, "_replace"):
        return result
    return result._replace(**{f: dense(v) for f, v in result._asdict().items()
                              if isinstance(v, Nonzeros)})


def compact_visit(visit, *args: Any) -> tuple[Any, Any]:
    """``visit(*args)`` (a local-state visit: its result and new states) with its
    result ``compact``."""
    result, states = visit(*args)
    return compact(result), states
