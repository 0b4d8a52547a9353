"""A part per worker on all its threads (``dscir.engine.shards``, ``dscir.models.lda._threads``).

An iteration groups its documents into one part per worker holding their
shards, whose task runs them on all the worker's threads with one copy of
its words' columns; the chain (cold and warm) is the same bit for bit on 1,
2 or 4 workers of 1 or 2 threads, and the kernels give the same integers
on any number of threads.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest
from distributed import Client, LocalCluster

from dscir.engine.chain import Chain
from dscir.engine.dask import DaskExecutor
from dscir.models.lda import LDAModel
from dscir.models.lda._threads import word_topic_counts
from dscir.models.lda.gibbs import gibbs_expectations
from dscir.models.lda.warm import gibbs_from
from support.lda import small_config

#: (workers, threads per worker) of the in-process clusters compared.
GRID = [(1, 1), (1, 2), (2, 1), (2, 2), (4, 1), (4, 2)]
WARM = dict(warm_start=True, sweeps=4, burn_sweeps=1, control_variates=True)
ITERATIONS = 5


def _chains(store: str, n_workers: int, threads: int) -> list[Chain]:
    """A cold and a warm chain run ITERATIONS iterations on a fresh in-process
    cluster; each chain's parts per worker checked at every iteration."""
    out = []
    with LocalCluster(n_workers=n_workers, threads_per_worker=threads, processes=False,
                      dashboard_address="127.0.0.1:0") as cluster, Client(cluster) as client:
        for extra in ({}, WARM):
            chain = Chain(LDAModel, small_config(batch_size=60, **extra), store,
                          DaskExecutor(client, store, "lda", resident=True))
            for _ in range(ITERATIONS):
                chain.step()
                # one task, so one copy of the columns, per worker and round
                assert chain.executor.timing.parts_per_worker == 1
            local = chain.executor.local_values(chain.local) if extra else []
            out.append((chain.model.topics.state_.log_theta.copy(), chain.model.mean_phi(),
                        [None if v is None else v.copy() for v in local]))
    return out


def test_the_chain_is_the_same_on_any_number_of_workers_and_threads(synthetic_store):
    store, _ = synthetic_store
    reference = _chains(store, *GRID[0])
    for n_workers, threads in GRID[1:]:
        for (theta, phi, local), (theta0, phi0, local0) in zip(_chains(store, n_workers, threads),
                                                              reference):
            where = f"{n_workers} workers x {threads} threads"
            assert np.array_equal(theta, theta0), where
            assert np.array_equal(phi, phi0), where
            assert all(np.array_equal(a, b) for a, b in zip(local, local0)), where


def _batch(n_docs: int, n_words: int, seed: int):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 60, n_docs)
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    indices = rng.integers(0, n_words, indptr[-1]).astype(np.int32)
    data = rng.integers(1, 4, indptr[-1]).astype(np.int32)
    words = np.unique(indices)
    return indptr, indices, data, np.arange(n_docs) * 7 + 3, np.searchsorted(words, indices)


def _on_threads(threads: int, fn, *args):
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        return fn(*args)
    finally:
        numba.set_num_threads(before)


@pytest.mark.parametrize("kernel", ["dense", "sparse"])
def test_the_kernels_give_the_same_integers_on_any_number_of_threads(kernel):
    indptr, indices, data, docs, local = _batch(400, 300, 1)
    rng = np.random.default_rng(2)
    phi = rng.random((12, local.max() + 1)) + 0.01
    z = rng.integers(0, 12, int(data.sum())).astype(np.int32)
    warm = rng.random(docs.size) < 0.5
    runs = [(_on_threads(t, gibbs_expectations, indptr, indices, data, docs, phi, local, 0.1, 6,
                         5, 2, kernel),
             _on_threads(t, gibbs_from, indptr, indices, data, docs, phi, local, z, warm, 0.1, 4,
                         1, 5, 2)) for t in (1, 2)]
    for one, two in zip(*runs):
        assert all(np.array_equal(a, b) for a, b in zip(one, two))
    # the counts are the kept assignments' counts: tokens x kept sweeps in all
    assert runs[0][0][0].sum() == data.sum() * 3


def test_word_topic_counts_add_every_kept_topic_once():
    """Two words, three topics and a million kept topics, on two threads: each
    counted once, where it belongs."""
    rng = np.random.default_rng(4)
    tokens = rng.integers(0, 2, 250_000).astype(np.int32)
    kept = rng.integers(0, 3, (4, tokens.size)).astype(np.int32)
    expected = np.zeros((3, 2), np.int64)
    np.add.at(expected, (kept, np.broadcast_to(tokens, kept.shape)), 1)
    for _ in range(3):
        got = _on_threads(2, word_topic_counts, tokens, kept, 3, 2, 2)
        assert np.array_equal(got, expected)
