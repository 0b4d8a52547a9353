"""Counting the graphs a client sends the scheduler (each one message, ``update_graph``)."""

from __future__ import annotations

import contextlib


class GraphCounter:
    """A scheduler plugin counting the graphs clients send (``update_graph``)."""

    name = "dscir-test-graphs"

    def __init__(self):
        self.n = 0

    def update_graph(self, scheduler, **kwargs):
        self.n += 1


@contextlib.contextmanager
def counting_graphs(client):
    """A ``GraphCounter`` on ``client``'s (in-process) scheduler while the block runs."""
    graphs = GraphCounter()
    scheduler = client.cluster.scheduler
    scheduler.add_plugin(graphs)
    try:
        yield graphs
    finally:
        scheduler.remove_plugin(graphs.name)
