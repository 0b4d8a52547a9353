"""The scheduler's side of monitoring: a plugin that records runs and serves them.

``DscirMonitor`` is a ``SchedulerPlugin``: it receives every event on the
``dscir`` topic (``dscir.monitor.events``), keeps the recent history of the
last runs (``RunRecord``) and serves it on the scheduler's dashboard server
as a live page at ``/dscir/`` and as JSON at ``/dscir/api/runs``; its runs
also appear as ``dscir_*`` gauges on ``/metrics`` (``dscir.monitor.metrics``).
A fit registers it itself (``ensure_monitor``); on a cluster started by hand,
``dask scheduler --preload dscir.monitor`` installs it before any client
connects, so the page exists before the first run.
"""

from __future__ import annotations

import base64
import collections
import functools
import hashlib
import itertools
import json
import math
import threading
import time
import warnings
from importlib import resources
from typing import TYPE_CHECKING, Any

from distributed.diagnostics.plugin import SchedulerPlugin

from dscir.monitor.events import TOPIC
from dscir.monitor.metrics import _MONITORS, _register_collector

if TYPE_CHECKING:
    from distributed import Client

PLUGIN_NAME = "dscir-monitor"
PAGE_PATH = "/dscir/"
API_PATH = "/dscir/api/runs"


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
            "the scheduler runs, or start it with --preload dscir.monitor",
            RuntimeWarning, stacklevel=2,
        )
        return False


# -- HTTP ----------------------------------------------------------------------


def _handlers(monitor: DscirMonitor, prefix: str) -> list:
    from tornado import web

    class ReadOnly(web.RequestHandler):
        """GET only (any other method is 405); responses are never sniffed as
        another type, cached, or framed by other sites."""

        SUPPORTED_METHODS = ("GET",)

        def set_default_headers(self) -> None:
            self.set_header("X-Content-Type-Options", "nosniff")
            self.set_header("Cache-Control", "no-store")
            self.set_header("X-Frame-Options", "DENY")

    class PageHandler(ReadOnly):
        def get(self) -> None:
            self.set_header("Content-Type", "text/html; charset=utf-8")
            self.set_header("Content-Security-Policy", _page_policy())
            self.write(_page())

    class RunsHandler(ReadOnly):
        def get(self, run: str | None = None) -> None:
            self.set_header("Content-Type", "application/json; charset=utf-8")
            self.set_header("Content-Security-Policy", "default-src 'none'")
            if not run:
                self.write(_json({"runs": monitor.summaries()}))
                return
            detail = monitor.detail(run)
            if detail is None:
                self.set_status(404)
                self.write(_json({"error": f"no dscir run {run!r} on this scheduler"}))
                return
            self.write(_json(detail))

    class Redirect(web.RedirectHandler):
        SUPPORTED_METHODS = ("GET",)

    return [
        (prefix + PAGE_PATH.rstrip("/"), Redirect, {"url": prefix + PAGE_PATH}),
        (prefix + PAGE_PATH, PageHandler),
        # any run name (percent-encoded by the page), read as text, never as a path
        (prefix + API_PATH + r"/?([^/]*)", RunsHandler),
    ]


def _json(value: Any) -> str:
    """Strict JSON: a non-finite number (a diverged score, an empty timing) is
    null, since NaN and Infinity are not JSON and the page's parser refuses them."""

    def plain(v):
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if isinstance(v, dict):
            return {str(k): plain(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        return v

    return json.dumps(plain(value), allow_nan=False, default=str)


@functools.cache
def _page() -> str:
    """The page, served as packaged: no value is ever interpolated into it on
    the server; its script fetches the JSON and shows values as text."""
    return resources.files("dscir.monitor").joinpath("page.html").read_text("utf-8")


@functools.cache
def _page_policy() -> str:
    """A Content-Security-Policy allowing only the page's own inline script and
    style (by hash) and fetches from this server."""
    page = _page()

    def digest(tag: str) -> str:
        body = page.split(f"<{tag}>", 1)[1].split(f"</{tag}>", 1)[0]
        return "'sha256-" + base64.b64encode(hashlib.sha256(body.encode()).digest()).decode() + "'"

    return (f"default-src 'none'; script-src {digest('script')}; style-src {digest('style')}; "
            "connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; "
            "frame-ancestors 'none'")
