"""Documents resident on the workers (``dscir.engine.shards``).

A part built from resident shards is the batch a store read gives, its words
computed on the driver are the words of that batch, a minibatch is one part per
worker beside its shards (each holding whole shards), an iteration is one round of Gibbs tasks (one
per worker, no read or words task, each shard read once),
and a shard lost with its worker is rebuilt from the store with the chain
unchanged.
"""

from __future__ import annotations

import os
import signal
from collections import Counter

import numpy as np
import pytest
from distributed import get_task_stream

from dscir.corpus import Corpus
from dscir.engine.chain import Chain, run_chain
from dscir.engine.dask import DaskExecutor
from dscir.engine.shards import distinct, read_shard, take
from dscir.engine.worker import batch_words
from dscir.models.lda import LDAModel
from support.killing import hook_runner_calls, unhook_runner_calls
from support.lda import small_config


def lda_chain(client, store: str, config) -> Chain:
    return Chain(LDAModel, config, store, DaskExecutor(client, store, "lda", resident=True))


def _same_batch(a, b):
    for x, y in zip(a, b):
        assert np.array_equal(x, y)


def test_take_is_the_store_read_of_the_same_documents(synthetic_store):
    """Rows gathered from several shards (first and last rows of a shard, a
    shard with one document asked) are the store's own read, entry for entry."""
    store, _ = synthetic_store
    corpus = Corpus.open(store)
    chunk = corpus.chunk_docs
    shards = [read_shard(store, lo, min(lo + chunk, corpus.n_docs))
              for lo in range(0, corpus.n_docs, chunk)]
    rng = np.random.default_rng(0)
    for docs in (np.array([0, chunk - 1, chunk, 2 * chunk + 5, corpus.n_docs - 1]),
                 np.sort(rng.choice(corpus.n_docs, 40, replace=False)), np.array([7])):
        held = [shards[s] for s in np.unique(docs // chunk)]
        _same_batch(take(held, docs), corpus.read(docs))
    with pytest.raises(ValueError, match="hold 1 of the part's 2 documents"):
        take(shards[:1], np.array([0, chunk]))


def test_parts_are_the_documents_in_order_with_their_words(synthetic_store, two_workers):
    store, _ = synthetic_store
    corpus = Corpus.open(store)
    executor = DaskExecutor(two_workers, store, "lda", resident=True)
    docs = np.sort(np.random.default_rng(1).choice(corpus.n_docs, 50, replace=False))
    parts = executor.read(docs)
    assert np.array_equal(np.concatenate(parts.parts), parts.docs)
    assert np.array_equal(np.sort(parts.docs), docs)
    for p, w in zip(parts.parts, executor.words(parts)):
        assert np.array_equal(p, np.sort(p))
        assert np.array_equal(w, batch_words(corpus.read(p)))
    holders = executor.holders(parts.batches)
    assert set(holders) <= set(two_workers.nthreads())
    # each part runs beside its shards: the worker it is planned on holds them all
    held = two_workers.who_has([f for b in parts.batches for f in b.shards])
    for b in parts.batches:
        assert all(b.holder in held[f.key] for f in b.shards)
    # one part per worker, so a shard's documents are never split between two
    # parts (each returns its shards' whole new local state)
    assert len({b.holder for b in parts.batches}) == len(parts.batches) <= 2
    owners = [set(p // corpus.chunk_docs) for p in parts.parts]
    assert all(not (a & b) for i, a in enumerate(owners) for b in owners[i + 1:])


def _kinds(stream) -> Counter:
    return Counter(str(t["key"][0] if isinstance(t["key"], tuple) else t["key"]).split("-")[2]
                   for t in stream)


@pytest.mark.parametrize("runners", [True, False], ids=["runners", "tasks"])
def test_an_iteration_is_one_gibbs_call_per_worker_and_shards_are_read_once(
        synthetic_store, two_workers, runners):
    """Guards against a read task per iteration coming back (or a shard read at
    every visit), and against a round of parts that is not one call per worker:
    12 iterations, 2 workers, 5 shards, through the workers' runners or as tasks."""
    store, _ = synthetic_store
    two_workers.wait_for_workers(2, timeout=120)
    chain = lda_chain(two_workers, store, small_config(batch_size=60))
    chain.executor.runners = runners
    n_shards = chain.executor.shards.n_shards
    def count():
        from dscir.engine.worker import PartRunner

        calls = PartRunner.calls = []
        hook_runner_calls("count", lambda key: calls.append(key[0].split("-")[2]))

    def counted() -> list[str]:
        from dscir.engine.worker import PartRunner

        unhook_runner_calls("count")
        return PartRunner.__dict__.get("calls", [])

    two_workers.run(count)
    with get_task_stream(two_workers) as ts:
        run_chain(chain, 12, progress=False)
    calls = Counter(c for cs in two_workers.run(counted).values() for c in cs)
    kinds = _kinds(ts.data)
    assert kinds["read"] == kinds["words"] == 0
    assert kinds["shard"] <= n_shards
    gibbs = calls["gibbs"] if runners else kinds["gibbs"]
    assert 12 <= gibbs <= 2 * 12
    assert (kinds["gibbs"] if runners else calls["gibbs"]) == 0
    assert (kinds["runner"] == 2) if runners else (kinds["runner"] == 0)


def test_shards_lost_with_their_worker_are_rebuilt_and_the_chain_is_unchanged(
        synthetic_store, two_workers):
    """A worker killed between iterations takes its shards with it; the next
    tasks get them rebuilt from the store and the chain is the undisturbed one."""
    store, _ = synthetic_store
    config = small_config(batch_size=60)
    two_workers.wait_for_workers(2, timeout=120)
    undisturbed = lda_chain(two_workers, store, config)
    run_chain(undisturbed, 8, progress=False)
    disturbed = lda_chain(two_workers, store, config)
    run_chain(disturbed, 4, progress=False)
    holders = set(disturbed.executor.shards._holder) - {None}
    pids = two_workers.run(os.getpid)
    victim = sorted(holders)[0]
    os.kill(pids[victim], signal.SIGKILL)
    run_chain(disturbed, 4, progress=False)
    two_workers.wait_for_workers(2, timeout=120)
    assert victim not in two_workers.nthreads()
    assert np.array_equal(disturbed.model.topics.state_.log_theta, undisturbed.model.topics.state_.log_theta)
    assert np.array_equal(disturbed.model.mean_phi(), undisturbed.model.mean_phi())


def _restrictions(client, token: str) -> dict[str, object]:
    """The worker restrictions the scheduler holds for this executor's shard tasks."""
    def on_scheduler(dask_scheduler=None):
        return {str(k): ts.worker_restrictions for k, ts in dask_scheduler.tasks.items()
                if token in str(k) and "shard" in str(k)}
    return client.run_on_scheduler(on_scheduler)


@pytest.mark.slow  # runs with its mutant
def test_every_worker_lost_at_once_costs_a_rebuild_not_the_chain(
        synthetic_store, two_workers):  # noqa: F811
    """Both workers killed together (a host lost): the shards are rebuilt on the
    replacements and the chain is the undisturbed one. Guards against a worker
    restriction on the shard reads: Dask never reschedules a task that went to
    no-worker (no worker left) onto a new worker when its restriction names only
    dead ones, loose or not, so such a chain hangs; the scheduler must hold none."""
    store, _ = synthetic_store
    config = small_config(batch_size=60)
    two_workers.wait_for_workers(2, timeout=120)
    undisturbed = lda_chain(two_workers, store, config)
    run_chain(undisturbed, 6, progress=False)
    disturbed = lda_chain(two_workers, store, config)
    run_chain(disturbed, 3, progress=False)
    restrictions = _restrictions(two_workers, disturbed.executor._token)
    assert len(restrictions) == disturbed.executor.shards.n_shards
    assert not any(restrictions.values()), restrictions
    for pid in two_workers.run(os.getpid).values():
        os.kill(pid, signal.SIGKILL)
    run_chain(disturbed, 3, progress=False)
    two_workers.wait_for_workers(2, timeout=300)
    assert np.array_equal(disturbed.model.topics.state_.log_theta,
                          undisturbed.model.topics.state_.log_theta)
    assert np.array_equal(disturbed.model.mean_phi(), undisturbed.model.mean_phi())


@pytest.mark.parametrize("n", [7, 1000, 100_000])
def test_distinct_is_numpys_unique_in_both_regimes(n):
    """The words of a part by mask (dense ids) or by sort (sparse ids) are
    ``np.unique``'s: guards against a mask that drops or adds an id."""
    rng = np.random.default_rng(n)
    for size in (0, 1, 5, n // 16 + 1, 3 * n):
        ids = rng.integers(0, n, size).astype(np.int32)
        got = distinct(ids, n)
        assert got.dtype == np.int64 and np.array_equal(got, np.unique(ids))
