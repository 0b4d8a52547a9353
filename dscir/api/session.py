"""Where an estimator's tasks run: one Dask client per call chain, or this process.

Every estimator method that runs tasks takes ``client=None`` and the cluster
keywords of ``fit`` (``address``, ``scheduler_file``, ``n_workers``,
``security``) and opens ``session`` with them: the client given; else, without
cluster keywords, the running client of this process (yours, or the one an
enclosing call opened); else ``dscir.engine.cluster.dask_client``: the cluster
the keywords name, or without any the process's shared embedded cluster (one
in-process worker with a thread per core, started at the first call and reused
by every later one until exit, so an unguarded script works and a second fit
starts nothing). Embedded keywords (``n_workers=N``: N worker processes) start
a LocalCluster of their own, closed when the call returns, and ``with
session(n_workers=4):`` shares one between several calls. So a call that calls
others (several chains, ``to_pyldavis``'s transform then counts, a report's
diagnosis) starts at most one cluster. The exact samplers run in this process
(``local``: no client at all), and so does a stochastic sampler's chain on a
small in-memory matrix (scikit-learn's use) when no cluster is named or running
(``runs_in_process``); a corpus store goes to a cluster, the shared embedded one
by default. The same reads and tasks, by ``dscir.engine.inprocess.InProcessExecutor``,
so the same chain.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
from collections.abc import Iterator


#: Training tokens up to which a stochastic chain on an in-memory matrix runs in this
#: process when no cluster is named or running: starting a cluster costs more than
#: the work.
IN_PROCESS_TOKENS = 200_000


def cluster_named(client, cluster: dict) -> bool:
    """Whether a call's tasks go to a cluster: ``client`` or cluster keywords given,
    or a client running in this process."""
    from dscir.engine.cluster import current_client

    return (client is not None or any(v is not None for v in cluster.values())
            or current_client() is not None)


def on_a_cluster(X, client, cluster: dict) -> bool:
    """Whether a fit of ``X`` goes to a cluster: ``X`` a corpus store (the shared
    embedded cluster by default), or a cluster named or running; else a small in-memory
    matrix may run here (``runs_in_process``)."""
    from dscir.api.inputs import is_store

    return is_store(X) or cluster_named(client, cluster)


def runs_in_process(store: str) -> bool:
    """Whether a store is small enough for a stochastic chain in this process
    (at most ``IN_PROCESS_TOKENS`` training tokens)."""
    from dscir.corpus import Corpus

    c = Corpus.open(store)
    train = int(c.train_docs().size)
    return int(c.meta["n_tokens"]) * train <= IN_PROCESS_TOKENS * max(c.n_docs, 1)


@contextlib.contextmanager
def session(client=None, *, local: bool = False, **cluster) -> Iterator:
    """The client of this call chain (see the module); None with ``local``."""
    from dscir.engine.cluster import current_client, dask_client
    from dscir.engine.interrupts import interruptible

    cluster = {k: v for k, v in cluster.items() if v is not None}  # None: not given
    with interruptible():
        if local:
            yield None
            return
        if client is None and not cluster:
            client = current_client()
        with dask_client(client, **cluster) as c:
            if c is client:
                yield c
                return
            with c.as_current():  # the calls this one makes find it, not an older client
                yield c


def new_executor(model: str, store: str, client=None, *, resident: bool = False):
    """An executor of ``model``'s tasks on ``store``: on ``client``'s cluster, or in
    this process when ``client`` is None; ``resident``: the model's
    (``models.base.Model.resident``), whether its documents may stay on the workers."""
    from dscir.engine.dask import DaskExecutor
    from dscir.engine.inprocess import InProcessExecutor

    if client is None:
        return InProcessExecutor(store, model)
    return DaskExecutor(client, store, model, model_resident=resident)


@contextlib.contextmanager
def executor_for(model: str, store: str, client=None, *, local: bool = False,
                 resident: bool = False, **cluster) -> Iterator:
    """An executor of ``model``'s tasks on ``store`` in the ``session`` of ``client``
    and ``cluster`` (in this process with ``local``; ``resident``: ``new_executor``'s)."""
    with session(client, local=local, **cluster) as c:
        yield new_executor(model, store, c, resident=resident)


def lost_scheduler(executor, exc: BaseException) -> bool:
    """Whether ``exc`` is the driver's Dask client losing its scheduler (a cut
    link or a dead scheduler: its calls fail, or its futures are cancelled)."""
    client = getattr(executor, "client", None)
    return (isinstance(exc, (OSError, concurrent.futures.CancelledError))
            and client is not None and client.status != "running")
