"""The generic functions that run on workers: open a store once, read, time a task.

A worker opens a store once and keeps it (``open_store``), so a task carries
only a path and document ids, never documents.
"""

from __future__ import annotations

import functools
import os
import socket
import threading
import time
from typing import Any

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
