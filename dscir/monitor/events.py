"""The driver's side of monitoring: a run's events on the ``dscir`` topic.

A fit reports itself through ``Client.log_event`` (``RunReporter``): a
``start`` event with the run's settings, one ``iteration`` event per iteration
(documents, tokens and the time split), one ``evaluation`` event per held-out
score and a ``finish`` event. Anything can listen: a notebook with
``subscribe(client, print)``, the scheduler with ``DscirMonitor``
(``dscir.monitor.plugin``). Events are plain dicts of numbers and strings
(msgpack-serialisable), so a scheduler without dscir installed still records
them in its event log.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from distributed import Client

logger = logging.getLogger(__name__)

TOPIC = "dscir"


class RunReporter:
    """Publishes one run's events on the ``dscir`` topic of the client's scheduler.

    ``client=None`` (a run in this process, e.g. the exact Gibbs sampler)
    makes every call a no-op, so drivers report unconditionally.
    """

    def __init__(self, client: Client | None, model: str, *, metric: str, **settings: Any):
        self.client = client
        self.run = f"{model}-{uuid.uuid4().hex[:8]}"
        self.model = model
        self.metric = metric
        self.settings = {k: _plain(v) for k, v in settings.items()}

    def _emit(self, event: str, **fields: Any) -> None:
        if self.client is None:
            return
        msg = {"run": self.run, "event": event, "time": time.time()}
        msg.update({k: _plain(v) for k, v in fields.items()})
        try:
            self.client.log_event(TOPIC, msg)
        except Exception as exc:  # monitoring never stops a run
            logger.debug("dscir event not delivered: %s", exc)

    def start(self, iteration: int, n_iter: int) -> None:
        self._emit("start", model=self.model, metric=self.metric, iteration=iteration,
                   n_iter=n_iter, **self.settings)

    def iteration(self, **stats: Any) -> None:
        self._emit("iteration", **stats)

    def evaluation(self, iteration: int, score: float, **extra: Any) -> None:
        self._emit("evaluation", iteration=iteration, score=score, metric=self.metric, **extra)

    def finish(self, iteration: int, status: str = "finished") -> None:
        self._emit("finish", iteration=iteration, status=status)


def _plain(value: Any) -> Any:
    """Numpy scalars to Python numbers, so the event is msgpack-serialisable."""
    if hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def subscribe(client: Client, handler: Callable[[dict], None], run: str | None = None) -> None:
    """Call ``handler(event)`` in this process for every dscir event (of one ``run``).

    Replaces an earlier subscription of this client; ``client.unsubscribe_topic("dscir")``
    ends it.
    """

    def on_event(event: tuple[float, dict]) -> None:
        msg = event[1]
        if run is None or msg.get("run") == run:
            handler(msg)

    client.subscribe_topic(TOPIC, on_event)
