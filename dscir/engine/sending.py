"""Large task arguments sent to the workers ahead of a round, and sent again when lost.

A round of parts read by tasks of their own (``DaskExecutor.run`` without
resident documents) may carry arrays the driver cut for each part: a
mixture's component columns under ``placement="driver"``, up to K x the
part's words float64. Inside the tasks they would make graphs of many
megabytes (distributed warns from 10 MB), so each is scattered ahead of the
round to the worker holding its part's documents. Scattered data has no
lineage: a worker lost with it cannot recompute it, so the round's tasks are
forgotten. The driver still holds the arrays, and the round's tasks are
pure, so it sends them and runs the round again, with the same results.
"""

from __future__ import annotations

import functools
import itertools
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dscir.engine import worker
from dscir.engine.parts import Parts

#: A task argument of this many bytes or more (a part's parameter columns, in a
#: round of parts read by tasks) is sent to the workers ahead of the round, so
#: its graph stays small (distributed warns of graphs from 10 MB).
SCATTER_BYTES = 1 << 20
#: How many times a round is sent again whose arguments sent ahead were lost
#: with a worker.
RESENDS = 3

log = logging.getLogger(__name__)


class SendsAhead:
    """``DaskExecutor``'s rounds of parts read by tasks, their large arguments sent
    ahead (the executor's ``client``, ``_key``, ``resources``, ``timing``,
    ``holders`` and ``store``)."""

    def _run_sent(self, what: str, fn: Callable, parts: Parts, args: Sequence[tuple]
                  ) -> list[Any]:
        """``run`` of parts read by tasks of their own: one task per part on one
        thread, the words staying on the workers as futures (no second gather).
        Large arguments are sent ahead (``_send``); where a worker is lost with
        some of them, the round is sent and run again (``RESENDS`` times at most):
        its tasks are pure, so its results are the same."""
        one = functools.partial(worker.with_threads, 1, fn)  # a part per thread
        for attempt in itertools.count():
            start, sent = time.time(), []
            try:
                sent_args, sent = self._send(parts, args)
                key = self._key(what)
                futures = [self.client.submit(worker.timed, one, b, w, *a, key=key(j),
                                              resources=self.resources.get(what))
                           for j, (b, w, a) in enumerate(zip(parts.batches, parts.words,
                                                             sent_args))]
                out = self.client.gather(futures)
                break
            except Exception as e:
                if attempt == RESENDS or all(f.status == "finished" for f in sent):
                    raise
                log.info("%s: a worker was lost with a round's arguments: sent again "
                         "(%s: %s)", self.store, type(e).__name__, e)
        self.timing.add_round(start, time.time(), [o[1] for o in out])
        return [o[0] for o in out]

    def _send(self, parts: Parts, args: Sequence[tuple]) -> tuple[list[tuple], list[Any]]:
        """``args`` with each array of ``SCATTER_BYTES`` or more (a part's parameter
        columns) replaced by the future of its copy on the worker holding the
        part's documents (``Client.scatter``; any worker while none does), so a
        round's graph carries no large array. Returns (the args, the futures sent)."""
        large = [[isinstance(x, np.ndarray) and x.nbytes >= SCATTER_BYTES for x in a]
                 for a in args]
        if not any(map(any, large)):
            return list(args), []
        holders = self.holders(parts.batches)
        by_holder: dict[str | None, list[tuple[int, int]]] = {}
        for j, flags in enumerate(large):
            places = [(j, i) for i, f in enumerate(flags) if f]
            if places:  # a worker with nothing large to hold gets no scatter (it fails empty)
                by_holder.setdefault(holders[j], []).extend(places)
        out, sent = [list(a) for a in args], []
        for holder, places in by_holder.items():
            futures = self.client.scatter([args[j][i] for j, i in places], hash=False,
                                          workers=None if holder is None else [holder])
            for (j, i), f in zip(places, futures):
                out[j][i] = f
            sent += futures
        return [tuple(a) for a in out], sent
