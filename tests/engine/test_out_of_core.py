"""A fit on a store larger than the workers' memory (``shards.choose_reads``).

LDA's documents are resident on the workers only when their shards take at
most ``RESIDENT_SHARE`` of the workers' memory limits together; a larger store
is streamed, a part read by a task every iteration. The store here decodes to
about 1.1 GiB: more than twice a tight worker's 512 MiB limit and more than
the two tight workers' limits together. A fit there must stream, lose no
worker, and give the chain that resident documents give on a roomy cluster
(shards only change where a document is read from).
"""

from __future__ import annotations

import logging
import os

import numpy as np
import pytest
from distributed import Client, LocalCluster

from dscir.api import LDA
from dscir.corpus import Corpus
from dscir.engine.shards import RESIDENT_SHARE, choose_reads, read_shard, shards_bytes
from support.large import ranges_store

MIB = 2 ** 20
TIGHT = 512 * MIB  # each of the two tight workers
N_DOCS, N_WORDS, ENTRIES = 1_000_000, 2_000, 140  # ~1.1 GiB of decoded entries


@pytest.fixture(scope="module")
def large_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("large") / "large.zarr"
    ranges_store(path, N_DOCS, N_WORDS, ENTRIES)
    return str(path)


def _cluster(memory_limit: int):
    return LocalCluster(n_workers=2, threads_per_worker=1, memory_limit=memory_limit,
                        dashboard_address=None, host="127.0.0.1")


def _fit(client, store: str) -> LDA:
    return LDA(n_topics=4, batch_size=300, n_iter=3, sweeps=4, seed=5,
               progress=False).fit(store, client=client)


def _shard_tasks(client) -> int:
    """How many shard reads the scheduler knows of (resident documents)."""
    return client.run_on_scheduler(
        lambda dask_scheduler: sum("-shard-" in str(k) for k in dask_scheduler.tasks))


def test_shards_bytes_is_what_the_shards_hold(synthetic_store):
    """Guards against the size compared being another figure (the counts alone,
    the compressed store)."""
    store, _ = synthetic_store
    corpus = Corpus.open(store)
    held = 0
    for lo in range(0, corpus.n_docs, corpus.chunk_docs):
        shard = read_shard(store, lo, min(lo + corpus.chunk_docs, corpus.n_docs))
        held += sum(a.nbytes for a in shard)
    assert shards_bytes(corpus) == held


@pytest.mark.slow  # a 1.1 GiB store; runs with its mutants (OUT_OF_CORE_FIT)
def test_a_store_larger_than_the_workers_memory_is_streamed_and_the_chain_unchanged(
        large_store, caplog):
    """The tight fit streams (no shard task ever exists), no worker dies or is
    restarted, and its chain is bit for bit the roomy cluster's resident one."""
    need = shards_bytes(Corpus.open(large_store))
    assert need > 2 * TIGHT
    roomy = int(need / RESIDENT_SHARE / 2 * 1.2)  # resident on two, not on one of them
    with _cluster(TIGHT) as cluster, Client(cluster) as client:
        client.wait_for_workers(2, timeout=120)
        assert choose_reads(client, large_store)["reads"] == "streamed"
        pids = client.run(os.getpid)
        with caplog.at_level(logging.INFO, logger="dscir.engine.dask"):
            tight = _fit(client, large_store)
        assert client.run(os.getpid) == pids  # the same worker processes, none restarted
        assert _shard_tasks(client) == 0
    assert tight._chain.executor.reads["reads"] == "streamed"
    assert "documents streamed" in caplog.text
    with _cluster(roomy) as cluster, Client(cluster) as client:
        client.wait_for_workers(2, timeout=120)
        assert choose_reads(client, large_store)["reads"] == "resident"
        resident = _fit(client, large_store)
        assert _shard_tasks(client) > 0
    assert resident._chain.executor.reads["reads"] == "resident"
    assert np.array_equal(tight.history_["n_tokens"], resident.history_["n_tokens"])
    assert np.array_equal(np.asarray(tight.topic_word_), np.asarray(resident.topic_word_))
