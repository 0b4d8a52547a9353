"""One Dask client per call chain (``dscir.api.session``).

Guards against each estimator method starting its own LocalCluster when one
is running (a fit, then its perplexity and coherence, were three clusters),
against each fit without a client starting (and stopping) a cluster of its own,
against cluster keywords being ignored in favour of the running client, and
against a client that lost its scheduler being taken for the running one.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import urllib.request

import numpy as np
import pytest
import scipy.sparse as sp
from distributed import Client

from dscir.api import LDA
from dscir.api.session import session
from dscir.corpus import write_corpus
from dscir.engine import cluster as cluster_module
from dscir.engine.cluster import (close_embedded, current_client, dashboard_link,
                                  embedded_client)
from dscir.engine.shards import workers_memory

#: A LocalCluster of threads in this process: fast to start, enough to count starts.
THREADS = dict(n_workers=1, processes=False)


@pytest.fixture
def started(monkeypatch):
    """The LocalClusters ``dask_client`` starts during the test."""
    clusters = []
    real = cluster_module.LocalCluster

    def counted(*args, **kwargs):
        clusters.append(real(*args, **kwargs))
        return clusters[-1]

    monkeypatch.setattr(cluster_module, "LocalCluster", counted)
    return clusters


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    rng = np.random.default_rng(0)
    path = tmp_path_factory.mktemp("session") / "docs.zarr"
    write_corpus(path, sp.csr_matrix(rng.poisson(0.8, size=(60, 20))),
                 heldout={"n_heldout": 10, "seed": 1})
    return str(path)


def small_lda() -> LDA:
    return LDA(n_topics=3, n_iter=3, batch_size=10, sweeps=4, eval_sweeps=4, seed=1,
               progress=False)


def test_calls_inside_a_session_share_its_one_cluster(store, started):
    model = small_lda()
    with session(**THREADS) as client:
        assert current_client() is client
        model.fit(store)
        perplexity = model.perplexity(store)
        model.coherence(store)
    assert len(started) == 1
    assert np.isfinite(perplexity) and perplexity > 1
    assert current_client() is not client  # closed with its session, never reused


@pytest.fixture
def fresh_embedded(monkeypatch):
    """No shared embedded cluster before the test, none left after it, and no client
    of another test running (the test session's cluster fixtures are Dask's default
    client until the session ends: calls without a client would use them)."""
    monkeypatch.setattr(cluster_module, "current_client", lambda: None)
    close_embedded()
    yield
    close_embedded()


def test_fits_without_a_client_share_one_embedded_cluster(store, started, fresh_embedded):
    """Two fits and a perplexity, none given a cluster: one LocalCluster, started at
    the first call and still running after the last (reused until exit), made of one
    in-process worker with a thread per core, and not Dask's default client."""
    first, second = small_lda().fit(store), small_lda().fit(store)
    second.perplexity(store)
    assert len(started) == 1
    client = embedded_client()
    assert client.status == "running" and started[0].scheduler_address == \
        client.scheduler.address
    assert list(client.nthreads().values()) == [os.cpu_count()]
    assert not started[0].processes
    with contextlib.suppress(ValueError):  # no default client at all: fine too
        assert Client.current() is not client  # not Dask's default client
    assert np.array_equal(first.components_, second.components_)


def test_the_embedded_cluster_serves_the_run_page_and_its_memory(store, fresh_embedded):
    """The dashboard's dscir page lists each fit of the shared cluster; the worker's
    memory (what the resident reads are sized against) is the host's."""
    small_lda().fit(store)
    small_lda().fit(store)
    client = embedded_client()
    base = dashboard_link(client).rsplit("/", 1)[0]
    for _ in range(100):
        with urllib.request.urlopen(base + "/dscir/api/runs", timeout=10) as page:
            runs = json.loads(page.read())["runs"]
        if len(runs) == 2 and all(r["status"] == "finished" for r in runs):
            break
        time.sleep(0.1)
    assert [(r["model"], r["status"]) for r in runs] == [("lda", "finished")] * 2
    assert workers_memory(client) > 2**28


def test_cluster_keywords_start_the_cluster_they_name(store, started):
    model = small_lda()
    with session(**THREADS):
        model.fit(store)
        model.perplexity(store, **THREADS)
    assert len(started) == 2


def test_a_client_that_lost_its_scheduler_is_not_the_running_one():
    """A session after a lost scheduler starts afresh rather than reuse the dead link."""
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=0, processes=False, dashboard_address=":0")
    client = Client(cluster.scheduler_address)
    try:
        stack = contextlib.ExitStack()
        stack.enter_context(client.as_current())  # as ``with Client(...)`` makes it
        assert current_client() is client
        cluster.close()
        for _ in range(600):  # the client notices the closed link on its event loop
            if client.status != "running":
                break
            time.sleep(0.05)
        assert client.status == "connecting"
        assert current_client() is not client
    finally:
        stack.close()
        client.close()
