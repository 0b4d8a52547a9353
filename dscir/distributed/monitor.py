"""Watching a run: structured events, a scheduler plugin, a live page, Prometheus gauges.

The driver reports each run through ``Client.log_event`` on the topic
``"dscir"`` (``RunReporter``): a ``start`` event with the run's settings, one
``iteration`` event per iteration (documents, tokens and the time split), one
``evaluation`` event per held-out score and a ``finish`` event. Anything can
listen:

- a notebook: ``subscribe(client, print)`` (``Client.subscribe_topic``);
- the scheduler: ``DscirMonitor``, a ``SchedulerPlugin`` that keeps the
  recent history of every run and serves it as a live page at
  ``/dscir/`` on the scheduler's dashboard server, as JSON at
  ``/dscir/api/runs``, and as Prometheus gauges (``dscir_*``) on the
  scheduler's ``/metrics``. The driver registers it (``ensure_monitor``); on a
  cluster started by hand, ``dask scheduler --preload dscir.distributed.monitor``
  installs it before any client connects.

Events are plain dicts of numbers and strings (msgpack-serialisable), so a
scheduler without dscir installed still records them in its event log.
"""

from __future__ import annotations

import collections
import itertools
import json
import logging
import threading
import time
import uuid
import warnings
import weakref
from collections.abc import Callable, Iterator
from importlib import resources
from typing import Any

from distributed import Client
from distributed.diagnostics.plugin import SchedulerPlugin

logger = logging.getLogger(__name__)

TOPIC = "dscir"
PLUGIN_NAME = "dscir-monitor"
PAGE_PATH = "/dscir/"
API_PATH = "/dscir/api/runs"


# -- the driver's side ---------------------------------------------------------


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


def ensure_monitor(client: Client) -> bool:
    """Register ``DscirMonitor`` on the client's scheduler unless it has one.

    Returns False (with a warning) when the scheduler cannot load it, e.g.
    when dscir is not installed where the scheduler runs; events are still
    logged then.
    """
    try:
        client.register_plugin(DscirMonitor(), name=PLUGIN_NAME)
        return True
    except Exception as exc:
        warnings.warn(
            f"the dscir dashboard page and metrics are off: the scheduler could not "
            f"load the dscir monitor ({type(exc).__name__}: {exc}); install dscir where "
            "the scheduler runs, or start it with --preload dscir.distributed.monitor",
            RuntimeWarning, stacklevel=2,
        )
        return False


# -- the scheduler's side -------------------------------------------------------


class RunRecord:
    """What the scheduler keeps of one run: its settings and recent history."""

    MAX_ITERATIONS = 20_000

    def __init__(self, run: str):
        self.run = run
        self.info: dict[str, Any] = {}
        self.status = "running"
        self.started = time.time()
        self.updated = self.started
        self.iterations: collections.deque[dict] = collections.deque(maxlen=self.MAX_ITERATIONS)
        self.evaluations: list[dict] = []

    def add(self, msg: dict) -> None:
        self.updated = msg.get("time", time.time())
        kind = msg.get("event")
        body = {k: v for k, v in msg.items() if k not in ("run", "event")}
        if kind == "start":
            self.info.update({k: v for k, v in body.items() if k not in ("time", "iteration")})
            self.status = "running"
        elif kind == "iteration":
            self.iterations.append(body)
        elif kind == "evaluation":
            self.evaluations.append(body)
        elif kind == "finish":
            self.status = body.get("status", "finished")

    def rates(self, window: int = 10) -> tuple[float, float]:
        """Documents/s and tokens/s over the last ``window`` iterations."""
        recent = list(itertools.islice(reversed(self.iterations), window))
        wall = sum(r.get("wall", 0.0) for r in recent)
        if wall <= 0:
            return float("nan"), float("nan")
        docs = sum(r.get("n_docs", 0) for r in recent)
        tokens = sum(r.get("n_tokens", 0) for r in recent)
        return docs / wall, tokens / wall

    def summary(self) -> dict[str, Any]:
        last = self.iterations[-1] if self.iterations else {}
        docs_s, tokens_s = self.rates()
        return {
            **self.info, "run": self.run, "status": self.status, "started": self.started,
            "updated": self.updated, "iteration": last.get("iteration", 0),
            "docs_per_second": _finite(docs_s), "tokens_per_second": _finite(tokens_s),
            "score": self.evaluations[-1]["score"] if self.evaluations else None,
            "n_clusters": last.get("n_clusters"),
        }

    def detail(self) -> dict[str, Any]:
        return {**self.summary(), "iterations": list(self.iterations),
                "evaluations": list(self.evaluations)}


def _finite(x: float) -> float | None:
    return x if x == x else None


class DscirMonitor(SchedulerPlugin):
    """Scheduler plugin: records dscir events, serves ``/dscir/`` and ``dscir_*`` metrics."""

    idempotent = True
    name = PLUGIN_NAME
    MAX_RUNS = 50

    def __init__(self) -> None:
        self.runs: collections.OrderedDict[str, RunRecord] = collections.OrderedDict()
        self.lock = threading.Lock()

    def __reduce__(self):
        # Sent to the scheduler by register_plugin: only the class travels.
        return (DscirMonitor, ())

    async def start(self, scheduler) -> None:
        self.scheduler = scheduler
        app = getattr(scheduler, "http_application", None)
        if app is not None:
            prefix = "/" + (getattr(scheduler, "http_prefix", None) or "").strip("/")
            prefix = prefix.rstrip("/")
            app.add_handlers(r".*$", _handlers(self, prefix))
        _MONITORS.add(self)
        _register_collector()
        # Runs that started before the plugin was registered are in the event log.
        for _, msg in scheduler.get_events(TOPIC):
            self.log_event(TOPIC, msg)

    async def close(self) -> None:
        _MONITORS.discard(self)

    def log_event(self, topic: str, msg: Any) -> None:
        if topic != TOPIC or not isinstance(msg, dict) or "run" not in msg:
            return
        with self.lock:
            record = self.runs.get(msg["run"])
            if record is None:
                record = self.runs[msg["run"]] = RunRecord(msg["run"])
                while len(self.runs) > self.MAX_RUNS:
                    self.runs.popitem(last=False)
            record.add(msg)

    def summaries(self) -> list[dict]:
        with self.lock:
            return [r.summary() for r in self.runs.values()]

    def detail(self, run: str) -> dict | None:
        with self.lock:
            record = self.runs.get(run)
            return None if record is None else record.detail()


def dask_setup(scheduler) -> None:
    """``dask scheduler --preload dscir.distributed.monitor`` installs the monitor."""
    scheduler.add_plugin(DscirMonitor(), name=PLUGIN_NAME, idempotent=True)


# -- HTTP ----------------------------------------------------------------------


def _handlers(monitor: DscirMonitor, prefix: str) -> list:
    from tornado import web

    class PageHandler(web.RequestHandler):
        def get(self) -> None:
            self.set_header("Content-Type", "text/html; charset=utf-8")
            self.write(_page())

    class RunsHandler(web.RequestHandler):
        def get(self, run: str | None = None) -> None:
            self.set_header("Content-Type", "application/json")
            if not run:
                self.write(json.dumps({"runs": monitor.summaries()}))
                return
            detail = monitor.detail(run)
            if detail is None:
                self.set_status(404)
                self.write(json.dumps({"error": f"no dscir run {run!r} on this scheduler"}))
                return
            self.write(json.dumps(detail))

    return [
        (prefix + PAGE_PATH.rstrip("/"), web.RedirectHandler, {"url": prefix + PAGE_PATH}),
        (prefix + PAGE_PATH, PageHandler),
        (prefix + API_PATH + r"/?([A-Za-z0-9_.\-]*)", RunsHandler),
    ]


def _page() -> str:
    return resources.files("dscir.distributed").joinpath("monitor.html").read_text("utf-8")


# -- Prometheus ----------------------------------------------------------------

_MONITORS: weakref.WeakSet[DscirMonitor] = weakref.WeakSet()
_COLLECTOR_LOCK = threading.Lock()
_COLLECTOR_REGISTERED = False


class DscirCollector:
    """``dscir_*`` gauges for every run known to the monitors of this process.

    One collector per process (the default registry refuses duplicate names),
    read by the scheduler's ``/metrics`` handler.
    """

    def collect(self) -> Iterator:
        from prometheus_client.core import GaugeMetricFamily

        labels = ["run", "model", "sampler"]
        gauges = {
            "iteration": GaugeMetricFamily(
                "dscir_iteration", "Iterations completed by the run", labels=labels),
            "n_iter": GaugeMetricFamily(
                "dscir_iterations_planned", "Iterations the run will reach", labels=labels),
            "docs_per_second": GaugeMetricFamily(
                "dscir_documents_per_second",
                "Documents per second over the last 10 iterations", labels=labels),
            "tokens_per_second": GaugeMetricFamily(
                "dscir_tokens_per_second",
                "Tokens per second over the last 10 iterations", labels=labels),
            "n_clusters": GaugeMetricFamily(
                "dscir_occupied_clusters", "Occupied clusters (DP mixture)", labels=labels),
            "running": GaugeMetricFamily(
                "dscir_run_running", "1 while the run is running, 0 after", labels=labels),
        }
        score = GaugeMetricFamily(
            "dscir_heldout_score",
            "Latest held-out score (metric: perplexity, or log predictive in nats/user)",
            labels=labels + ["metric"])
        for monitor in list(_MONITORS):
            for s in monitor.summaries():
                values = [s["run"], str(s.get("model", "")), str(s.get("sampler", ""))]
                for field, gauge in gauges.items():
                    v = (1.0 if s["status"] == "running" else 0.0) if field == "running" \
                        else s.get(field)
                    if v is not None:
                        gauge.add_metric(values, float(v))
                if s["score"] is not None:
                    score.add_metric(values + [str(s.get("metric", ""))], float(s["score"]))
        yield from gauges.values()
        yield score


def _register_collector() -> None:
    global _COLLECTOR_REGISTERED
    with _COLLECTOR_LOCK:
        if _COLLECTOR_REGISTERED:
            return
        try:
            import prometheus_client
        except ModuleNotFoundError:
            return
        prometheus_client.REGISTRY.register(DscirCollector())
        _COLLECTOR_REGISTERED = True
