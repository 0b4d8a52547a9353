"""Where an estimator's tasks run: this process, or a Dask cluster.

The exact samplers run in this process (``LocalExecutor``); the others run on
Dask (``DaskExecutor``) on the client ``dscir.engine.cluster.dask_client``
gives for ``client`` and the cluster keywords of ``fit``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


def new_executor(model: str, store: str, client=None):
    """An executor of ``model``'s tasks on ``store``: on ``client``'s cluster, or in
    this process when ``client`` is None."""
    from dscir.engine.dask import DaskExecutor
    from dscir.engine.local import LocalExecutor

    return LocalExecutor(store, model) if client is None else DaskExecutor(client, store, model)


@contextlib.contextmanager
def executor_for(model: str, store: str, client=None, *, local: bool = False,
                 **cluster) -> Iterator:
    """Where a model's tasks run: this process (``local``, the exact samplers) or
    Dask (``client``, or a cluster from the ``dscir.engine.cluster.dask_client``
    keywords in ``cluster``)."""
    from dscir.engine.cluster import dask_client

    if local:
        yield new_executor(model, store)
        return
    with dask_client(client, **cluster) as c:
        yield new_executor(model, store, c)
