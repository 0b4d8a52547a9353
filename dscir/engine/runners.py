"""The workers' runners as the driver holds them: one ``worker.PartRunner`` actor
per worker, made on first use, and a round's calls awaited under watch.

A call to an actor whose worker died can wait forever: Dask's actor handle,
on a lost connection, waits for the actor's own task to finish again, and that
task is pinned to the dead worker. So a round never waits on a call without
looking, every ``CHECK_SECONDS``, whether the runner is still held where it
was made; once it is not, the round ends with ``RunnerLost`` (the executor
then runs it as tasks, which Dask carries through the loss), and ``drop``
releases every runner, which also ends such a wait.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from distributed import Client

from dscir.engine import worker

#: How long a round waits for a worker's runner to start before it runs as tasks.
START_SECONDS = 30.0
#: How often a round waiting on its runner calls checks that their runners are held.
CHECK_SECONDS = 1.0


class RunnerLost(RuntimeError):
    """A runner's worker left (died, was replaced or retired) while a round waited."""


class Runners:
    """The ``PartRunner`` actors of ``client``'s workers, by worker address; their
    tasks' keys start with ``prefix``."""

    def __init__(self, client: Client, prefix: str):
        self.client, self.prefix = client, prefix
        self._made = 0
        self._held: dict[str, tuple[Any, Any]] = {}  # by worker: (future, actor)

    def on(self, address: str) -> Any:
        """The runner on the worker at ``address`` (made on first use)."""
        if address not in self._held:
            future = self.client.submit(worker.PartRunner, actor=True, workers=[address],
                                        allow_other_workers=False,
                                        key=f"{self.prefix}-{self._made}")
            self._made += 1
            try:  # a worker that died since the grouping never takes it: no wait forever
                self._held[address] = (future, future.result(timeout=START_SECONDS))
            except BaseException:
                future.cancel()
                raise
        return self._held[address][1]

    def results(self, calls: Sequence[Any], addresses: Sequence[str]) -> list[Any]:
        """The values of actor ``calls`` made on the runners at ``addresses``, in
        order; ``RunnerLost`` once a runner one of them waits on is no longer held."""
        out = []
        for call, address in zip(calls, addresses):
            while True:
                try:
                    out.append(call.result(timeout=CHECK_SECONDS))
                    break
                except TimeoutError:
                    if not self.held(address):
                        raise RunnerLost(f"the runner on {address} is gone") from None
        return out

    def held(self, address: str) -> bool:
        """Whether the runner made on ``address`` still lives there: its task finished
        and its worker still in the cluster."""
        future = self._held[address][0]
        return future.status == "finished" and address in self.client.nthreads()

    def drop(self) -> None:
        """Release every runner (new ones are made on next use)."""
        for future, _ in self._held.values():
            future.cancel()
        self._held.clear()
