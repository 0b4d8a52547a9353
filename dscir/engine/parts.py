"""What an executor hands a model: documents split into parts, read where they run."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np


def split(docs: np.ndarray, n_parts: int) -> list[np.ndarray]:
    """``docs`` (sorted, so store-chunk contiguous) in at most ``n_parts`` non-empty parts."""
    if docs.size == 0:
        return []
    return [p for p in np.array_split(docs, min(n_parts, docs.size)) if p.size]


@dataclass
class Parts:
    """Documents in parts; ``batches``/``words`` are futures (Dask) or values (local)."""

    docs: np.ndarray
    parts: list[np.ndarray]
    batches: list[Any]
    words: list[Any]


class TaskTime(NamedTuple):
    """One task's own work, stamped on its worker: ``start``/``stop`` (epoch
    seconds, comparable with the driver's clock on one machine), ``seconds``
    computed and the worker ``thread`` that ran it."""

    start: float
    stop: float
    seconds: float
    thread: str


def critical_path(tasks: Sequence[TaskTime]) -> float:
    """Compute on the busiest worker thread: the tasks a thread runs one after
    another add up, so a thread with two queued tasks computes for both."""
    per_thread: dict[str, float] = {}
    for t in tasks:
        per_thread[t.thread] = per_thread.get(t.thread, 0.0) + t.seconds
    return max(per_thread.values(), default=0.0)


@dataclass
class Timing:
    """Where an iteration's time went, as measured, summed over its rounds of tasks.

    The driver's time blocked in a round (``gather_start`` to ``gather_end``) is
    split into parts that add up to it:

    - ``transfer``: before the round's first task starts on a worker (its inputs
      and the scheduler's assignment still on the way) and after the last task
      stops (results reported and fetched);
    - ``compute``: the compute on the critical path (the busiest worker
      thread's tasks, queued ones included) inside the rest;
    - ``queue``: what is left: threads idle between tasks, uneven parts, and
      waits for work outside the round (a read not yet done).

    ``compute_sum`` is every task's compute (for parallel efficiency). Worker
    stamps are compared with the driver's clock: exact on one machine; on a
    cluster, clock skew moves time between ``transfer`` and ``queue``. The rest
    of an iteration's wall time (not blocked) is the driver's own work.

    ``parts_per_worker`` is the most tasks one worker ran in one round of parts
    (each with a copy of its words' columns): 1 when a worker runs its part
    on all its threads. It is a count of this executor's, not in ``split``.
    """

    blocked: float = 0.0
    compute: float = 0.0
    compute_sum: float = 0.0
    transfer: float = 0.0
    queue: float = 0.0
    parts_per_worker: int = 0

    def add_parts(self, workers: Sequence[str]) -> None:
        """A round of parts ran on ``workers`` (one address per task)."""
        most = max(Counter(workers).values(), default=0)
        self.parts_per_worker = max(self.parts_per_worker, most)

    def add_wait(self, seconds: float) -> None:
        """A wait on work that is not a timed task (e.g. reads): queueing."""
        self.blocked += seconds
        self.queue += seconds

    def add_round(self, gather_start: float, gather_end: float,
                  tasks: Sequence[TaskTime]) -> None:
        """Account one round: the driver blocked from ``gather_start`` to
        ``gather_end`` (epoch seconds) for ``tasks``."""
        blocked = max(gather_end - gather_start, 0.0)
        self.blocked += blocked
        self.compute_sum += sum(t.seconds for t in tasks)
        if not tasks:
            self.queue += blocked
            return
        tail = min(max(gather_end - max(t.stop for t in tasks), 0.0), blocked)
        head = min(max(min(t.start for t in tasks) - gather_start, 0.0), blocked - tail)
        compute = min(critical_path(tasks), blocked - tail - head)
        self.transfer += head + tail
        self.compute += compute
        self.queue += blocked - tail - head - compute

    def split(self, wall: float) -> dict[str, float]:
        """The iteration's record: parts that add up to ``wall``, and compute_sum."""
        return {"wall": wall, "compute": self.compute, "transfer": self.transfer,
                "queue": self.queue, "update": max(wall - self.blocked, 0.0),
                "compute_sum": self.compute_sum}
