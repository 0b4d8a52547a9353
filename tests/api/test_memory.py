"""The memory checks before a fit: each placement is refused where its arrays
would live (the driver's memory, or the workers' memory limits plus the disk
they spill to), before any cluster starts, in one line naming the size and the
largest K that fits; a K above the vocabulary or the documents is a warning."""

from __future__ import annotations

import re
import sys
import time

import numpy as np
import pytest
import scipy.sparse as sp

import dscir
from dscir.api import memory
from dscir.cli import main
from dscir.corpus import write_corpus
from dscir.errors import EXIT_USAGE, DscirError

GB = 10**9
HUGE = 10**8  # topics: 10^8 x 8 words x 3 float64 arrays = 19.2 GB


@pytest.fixture
def store(tmp_path) -> str:
    rng = np.random.default_rng(0)
    path = tmp_path / "c.zarr"
    write_corpus(path, sp.csr_matrix(rng.integers(0, 3, (20, 8))),
                 vocabulary=[f"w{i}" for i in range(8)])
    return str(path)


@pytest.fixture
def small_machine(monkeypatch):
    """4 GB of memory available, 1 GB of disk to spill to, no client running, and
    no cluster may start."""
    import dscir.engine.cluster

    def refuse(*args, **kwargs):
        raise AssertionError("a cluster was started")

    monkeypatch.setattr(memory, "available_memory", lambda: 4 * GB)
    monkeypatch.setattr(memory, "_spill_room", lambda dask_worker=None: ("host", 1 * GB))
    monkeypatch.setattr(dscir.engine.cluster, "current_client", lambda: None)
    monkeypatch.setattr(sys.modules["dscir.api.base"], "session", refuse)
    monkeypatch.setattr(sys.modules["dscir.api.session"], "session", refuse)


WORKERS = ("100,000,000 x 8 parameters need about 19.2 GB of worker memory (3 float64 "
           "100,000,000 x 8 arrays: state, running mean, counts), more than the 5.0 GB the "
           "workers can hold (4.0 GB: this machine's memory, and 1.0 GB of disk to spill "
           "to); at most 26,041,666 topics/clusters fit")


def test_the_workers_placement_is_refused_before_the_cluster_starts(store, small_machine,
                                                                     capsys):
    start = time.perf_counter()
    assert main(["fit", "lda", store, "--topics", str(HUGE)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith(f"dscir: error: {WORKERS}: use fewer") and err.count("\n") == 1
    assert time.perf_counter() - start < 30
    with pytest.raises(DscirError, match=re.escape(WORKERS)):
        dscir.LDA(n_topics=HUGE).fit(store)


def test_the_driver_placement_is_refused_on_the_driver_memory(store, small_machine):
    with pytest.raises(DscirError, match="need about 19.2 GB of driver memory .* more than "
                       "the 4.0 GB available; at most 20,833,333 topics/clusters fit"):
        dscir.LDA(n_topics=HUGE, placement="driver").fit(store)


def test_a_running_cluster_counts_its_workers_limits_and_spill(small_machine):
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, processes=False, memory_limit="1GB",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        assert memory.worker_capacity({"client": client}) == (
            2 * GB, 1 * GB, "the memory limits of 2 workers")  # one host, one disk
        with pytest.raises(DscirError, match=r"more than the 3.0 GB the workers can hold "
                           r"\(2.0 GB: the memory limits of 2 workers"):
            memory.check_worker_memory(HUGE, 8, ["state", "running mean", "counts"],
                                       {"client": client, "address": None})
    # a scheduler not connected to yet: unknown here, checked once fit is connected
    assert memory.worker_capacity({"address": "tcp://127.0.0.1:9"}) is None
    assert memory.worker_capacity(None) == (4 * GB, 1 * GB, "this machine's memory")


def test_more_topics_than_words_or_documents_is_a_warning(tmp_path, store, capsys):
    with pytest.warns(UserWarning, match="n_topics=9 is more than the 8 words in the "
                      "vocabulary: the extra topics can only repeat"):
        dscir.LDA(n_topics=9).check_run(store)
    few = tmp_path / "few.zarr"
    write_corpus(few, sp.csr_matrix(np.ones((4, 30), dtype=np.int64)))
    with pytest.warns(UserWarning, match="n_clusters=5 is more than the 4 training documents"):
        dscir.Mixture(n_clusters=5, batch_size=2).check_run(str(few))
    assert main(["fit", "mixture", str(few), "--clusters", "5", "--sampler", "gibbs",
                 "--iterations", "2", "-q"]) == 0
    err = capsys.readouterr().err
    assert err == ("dscir: warning: --clusters 5 is more than the 4 training documents: "
                   "the extra clusters can only repeat others or stay empty; choose fewer\n")
