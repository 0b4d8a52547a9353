"""Where a run's Dask client comes from.

A client passed in is used as is; an address or a scheduler file connects to a
running cluster (``dask scheduler`` / ``dask worker``); otherwise an embedded
LocalCluster is started and closed with the run.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import dask
from distributed import Client, LocalCluster

from dscir.errors import DscirError


@contextlib.contextmanager
def dask_client(
    client: Client | None = None,
    *,
    address: str | None = None,
    scheduler_file: str | None = None,
    n_workers: int | None = None,
    threads_per_worker: int = 1,
    processes: bool = True,
    dashboard_address: str | None = ":0",
) -> Iterator[Client]:
    """Yield a connected client; close only what this function opened.

    The embedded default is one single-threaded worker process per core: the
    Gibbs kernel holds the GIL-free numba loop, but process workers keep numba
    and zarr caches apart and match how a real cluster behaves.
    """
    given = sum(x is not None for x in (client, address, scheduler_file))
    if given > 1:
        raise DscirError("give at most one of client, address and scheduler_file")
    if client is not None:
        yield client
        return
    if address is not None or scheduler_file is not None:
        try:
            c = Client(
                address=address,
                scheduler_file=scheduler_file,
                timeout=dask.config.get("distributed.comm.timeouts.connect"),
            )
        except (OSError, TimeoutError, ValueError) as exc:
            target = address or scheduler_file
            raise DscirError(f"cannot connect to the Dask scheduler at {target}: {exc}") from exc
        try:
            yield c
        finally:
            c.close()
        return
    if n_workers is None:
        n_workers = max(1, min(os.cpu_count() or 1, 4))
    cluster = LocalCluster(
        n_workers=n_workers,
        threads_per_worker=threads_per_worker,
        processes=processes,
        dashboard_address=dashboard_address,
        silence_logs=40,
    )
    c = Client(cluster)
    try:
        yield c
    finally:
        c.close()
        cluster.close()


def dashboard_link(client: Client) -> str | None:
    """The dashboard URL of the client's scheduler, if it serves one."""
    try:
        return client.dashboard_link
    except (AttributeError, KeyError):
        return None
