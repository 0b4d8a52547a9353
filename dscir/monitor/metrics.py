"""Prometheus gauges (``dscir_*``) on the scheduler's own ``/metrics``.

Dask's ``/metrics`` handler reads prometheus_client's default registry, so one
``DscirCollector`` registered there (once per process: the registry refuses
duplicate names) reports every run of every live ``DscirMonitor``; monitors
join ``_MONITORS`` when they start and leave it when they close. The collector
needs of a monitor only its ``summaries()`` (``RunSummaries``).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from typing import Any, Protocol


class RunSummaries(Protocol):
    """What the collector reads of a monitor: one summary dict per run."""

    def summaries(self) -> list[dict[str, Any]]: ...


_MONITORS: weakref.WeakSet[RunSummaries] = weakref.WeakSet()
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
