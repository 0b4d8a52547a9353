"""Watching a run: structured events, a scheduler plugin, a live page, Prometheus gauges.

- ``events``: the driver's side; a fit publishes ``start``, ``iteration``,
  ``evaluation`` and ``finish`` events on the ``"dscir"`` topic
  (``RunReporter``), and a notebook can listen (``subscribe``).
- ``plugin``: the scheduler's side; ``DscirMonitor`` keeps the recent runs and
  serves them at ``/dscir/`` (``page.html``) and ``/dscir/api/runs``.
- ``metrics``: the same runs as ``dscir_*`` gauges on the scheduler's ``/metrics``.

A fit registers the plugin itself (``ensure_monitor``); on a cluster started by
hand, ``dask scheduler --preload dscir.monitor`` installs it (``dask_setup``).
"""

from dscir.monitor.events import TOPIC, RunReporter, subscribe
from dscir.monitor.plugin import API_PATH, PAGE_PATH, PLUGIN_NAME, DscirMonitor, ensure_monitor

__all__ = ["API_PATH", "DscirMonitor", "PAGE_PATH", "PLUGIN_NAME", "RunReporter", "TOPIC",
           "ensure_monitor", "subscribe"]


def dask_setup(scheduler) -> None:
    """``dask scheduler --preload dscir.monitor`` installs the monitor."""
    scheduler.add_plugin(DscirMonitor(), name=PLUGIN_NAME, idempotent=True)
