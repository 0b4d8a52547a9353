"""Local state kept in memory beside the shards (``dscir.engine.local_state``).

A visit places each document's state where its shard keeps it and never
modifies the states it reads; a flush never writes the chunk a live state's
lineage reads nor the one the last checkpoint names; a checkpoint writes one
chunk per shard changed, not one per document; a warm chain is unchanged when
a worker holding states is killed, whether they are rebuilt from their
lineage or from their last flush.
"""

from __future__ import annotations

import os
import signal
from collections import Counter
from types import SimpleNamespace

import numpy as np
import pytest
from distributed import get_task_stream

from dscir.engine import local_state, worker
from dscir.engine.chain import Chain, run_chain
from dscir.engine.inprocess import InProcessExecutor
from dscir.engine.local_state import LocalState, Stored, visit
from dscir.models.lda import LDAModel
from support.chains import lda_chain
from support.lda import small_config

WARM = dict(warm_start=True, sweeps=4, burn_sweeps=1, control_variates=True, batch_size=60)


def test_a_flush_never_overwrites_a_lineage_root_or_the_checkpoint():
    """Random visits, flushes and checkpoints over 4 shards: each shard's chunk
    that its live state was read from, and the one the last checkpoint names,
    still hold what was written there."""
    rng = np.random.default_rng(0)
    local = LocalState(None, np.ones(8), 2, np.int16)
    written = {}  # (slot, shard) -> serial of the flush that wrote it
    checkpoint = None
    for m in range(300):
        for s in rng.choice(4, size=2, replace=False):
            local.refs[s] = np.array([m])  # a visit: the state changed
        if rng.random() < 0.4:
            slots = {s: local.slot_for(s) for s in local.changed()}
            for s, k in slots.items():
                assert k not in (local.base[s], local.protected[s])
                written[k, s] = m
            local.flushed(slots)
            if rng.random() < 0.3:
                local.protect()
                checkpoint = {(int(k), s): written[k, s] for s, k in enumerate(local.protected)
                              if k >= 0}
        roots = {(int(r.slot), s): written[r.slot, s] for s, r in enumerate(local.refs)
                 if isinstance(r, Stored)}
        assert all(written[key] == serial for key, serial in roots.items())
        assert all(written[key] == serial for key, serial in (checkpoint or {}).items())


def test_a_visit_places_states_by_shard_and_never_modifies_its_inputs():
    """Shards of 3 documents (token lengths 3, 0, 2 | 4, 1, 2); a part of
    documents 0, 2 (shard 0, never visited) and 3, 5 (shard 1, visited)."""
    local = LocalState(None, np.array([3, 0, 2, 4, 1, 2]), 3, np.int16)
    shard1 = np.array([5, 5, 5, 5, 6, 7, 7], np.int16)
    batch = SimpleNamespace(docs=np.array([0, 2, 3, 5]))
    seen = {}

    def fn(batch, words, state, warm, plus):
        seen.update(state=state.copy(), warm=warm.copy())
        return "result", np.arange(state.size) + plus

    shards, args = local_state.part_args(local, batch.docs, [None, shard1.copy()], fn, (10,))
    result, new = visit(batch, None, *args)
    assert shards == [0, 1] and result == "result"
    assert np.array_equal(seen["state"], [-1, -1, -1, -1, -1, 5, 5, 5, 5, 7, 7])
    assert np.array_equal(seen["warm"], [False, False, True, True])
    assert np.array_equal(new[0], [10, 11, 12, 13, 14])
    assert np.array_equal(new[1], [15, 16, 17, 18, 6, 19, 20])
    assert np.array_equal(args[4][1], shard1)  # the input state is unchanged


def _chunks(path) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in (path / "z").glob("c.*")}


def test_a_checkpoint_writes_one_chunk_per_shard_changed(synthetic_store, tmp_path):
    """Guards against the state written per document (one file each, what made
    the Zarr design slow): 270 training documents in 5 shards."""
    store, _ = synthetic_store
    chain = Chain(LDAModel, small_config(**WARM), store, InProcessExecutor(store, "lda"),
                  local_dir=str(tmp_path / "local"))
    run_chain(chain, 3, progress=False)
    changed = chain.local.changed()
    assert len(changed) == chain.local.n_shards == 5
    chain.checkpoint()
    first = _chunks(tmp_path / "local")
    assert sorted(first) == sorted(f"c.0.{s}.0" for s in changed)
    run_chain(chain, 1, progress=False)
    changed = chain.local.changed()
    chain.checkpoint()
    second = _chunks(tmp_path / "local")
    new = {k for k, v in second.items() if first.get(k) != v}
    assert new == {f"c.1.{s}.0" for s in changed}
    chain.checkpoint()  # nothing changed since: nothing written
    assert _chunks(tmp_path / "local") == second


def _same(a, b):
    for x, y in ((a.model.topics.state_.log_theta, b.model.topics.state_.log_theta),
                 (a.model.mean_phi(), b.model.mean_phi()),
                 (a.model.topics.stored, b.model.topics.stored)):
        assert np.array_equal(x, y)
    for x, y in zip(a.executor.local_values(a.local), b.executor.local_values(b.local)):
        assert np.array_equal(x, y)


@pytest.mark.parametrize("budget", [local_state.LINEAGE_BYTES, 0])
def test_states_lost_with_their_worker_are_rebuilt_and_the_chain_is_unchanged(
        synthetic_store, two_workers, monkeypatch, budget):
    """A worker holding shards and their states killed between iterations: the
    states are recomputed from their lineage (the earlier visits' tasks) or,
    flushed at every iteration (budget 0), read back from their chunks."""
    store, _ = synthetic_store
    monkeypatch.setattr(local_state, "LINEAGE_BYTES", budget)
    two_workers.wait_for_workers(2, timeout=120)
    undisturbed = lda_chain(two_workers, store, small_config(**WARM))
    run_chain(undisturbed, 8, progress=False)
    disturbed = lda_chain(two_workers, store, small_config(**WARM))
    run_chain(disturbed, 5, progress=False)
    assert any(isinstance(r, Stored) for r in disturbed.local.refs) == (budget == 0)
    victim = sorted(set(disturbed.executor.shards._holder) - {None})[0]
    os.kill(two_workers.run(os.getpid)[victim], signal.SIGKILL)
    run_chain(disturbed, 3, progress=False)
    two_workers.wait_for_workers(2, timeout=120)
    assert victim not in two_workers.nthreads()
    _same(disturbed, undisturbed)


def _kinds(stream) -> Counter:
    """Tasks by kind: the ``what`` of their keys (``dscir.engine.dask``)."""
    return Counter(str(t["key"][0]).split("-")[2] for t in stream)


def test_a_warm_iteration_is_a_visit_and_its_results_task_per_part(synthetic_store,
                                                                   two_workers, monkeypatch):
    """Guards against a second task per part coming back beside the one that brings
    the result to the driver (a task taking the new states out of the visit's
    value): after the shards' first reads, every task of 6 iterations is a visit
    or its result's, one each per part (5 shards, 2 workers: 1 to 5 parts); and
    against the counts coming back dense: each arrives as its nonzeros."""
    store, _ = synthetic_store
    arrived, expand = [], worker.expand

    def arrive(result):
        arrived.append(result)
        return expand(result)

    monkeypatch.setattr(worker, "expand", arrive)
    two_workers.wait_for_workers(2, timeout=120)
    chain = lda_chain(two_workers, store, small_config(**WARM))
    run_chain(chain, 1, progress=False)
    with get_task_stream(two_workers) as ts:
        run_chain(chain, 6, progress=False)
    kinds = _kinds(ts.data)
    assert set(kinds) == {"gibbs", "result"}
    assert 6 <= kinds["gibbs"] == kinds["result"] <= 6 * 5
    assert len(arrived) >= 7
    assert all(isinstance(r.topic_word, worker.Nonzeros) for r in arrived)


class _Graphs:
    """A scheduler plugin counting the graphs clients send (``update_graph``)."""

    name = "dscir-test-graphs"

    def __init__(self):
        self.n = 0

    def update_graph(self, scheduler, **kwargs):
        self.n += 1


def test_a_warm_iteration_is_one_message_to_the_scheduler(synthetic_store, two_workers):
    """Guards against a submit per task (each a message the driver sends and the
    scheduler handles): after the first iterations, each of 5 warm iterations sends
    its parts' visits and results as one graph."""
    store, _ = synthetic_store
    two_workers.wait_for_workers(2, timeout=120)
    chain = lda_chain(two_workers, store, small_config(**WARM))
    run_chain(chain, 2, progress=False)
    graphs = _Graphs()
    scheduler = two_workers.cluster.scheduler
    scheduler.add_plugin(graphs)
    try:
        run_chain(chain, 5, progress=False)
    finally:
        scheduler.remove_plugin(graphs.name)
    assert graphs.n == 5


def test_the_results_kept_with_the_states_count_towards_the_lineage_budget(
        synthetic_store, two_workers, monkeypatch):
    """A visit's value keeps its result until its shards' next visits: with the
    columns not counted, the results alone pass a budget of 1 byte and every
    state visited is flushed (guards against workers filling with results)."""
    store, _ = synthetic_store
    monkeypatch.setattr(local_state, "args_bytes", lambda args: 0)
    monkeypatch.setattr(local_state, "LINEAGE_BYTES", 1)
    two_workers.wait_for_workers(2, timeout=120)
    chain = lda_chain(two_workers, store, small_config(**WARM))
    run_chain(chain, 2, progress=False)
    visited = [r for r in chain.local.refs if r is not None]
    assert visited and all(isinstance(r, Stored) for r in visited)
