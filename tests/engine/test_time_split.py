"""The honest time split: an iteration's wall time as compute on the critical path,
transfer, queueing and the driver's update, as measured."""

from __future__ import annotations

import numpy as np
import pytest

from dscir.engine.dask import DaskExecutor
from dscir.engine.parts import Parts, TaskTime, Timing, critical_path


def test_round_split_from_known_stamps():
    # Two threads: A runs two tasks back to back (1 s + 2 s), B one (1.5 s). The
    # driver blocks from t=10 to t=14; the first task starts at 10.25, the last
    # stops at 13.5. Transfer 0.25 + 0.5, compute on the critical path 3 (thread
    # A, both its tasks), queue the rest 0.25; compute summed 4.5.
    tasks = [TaskTime(10.25, 11.25, 1.0, "A"), TaskTime(11.5, 13.5, 2.0, "A"),
             TaskTime(10.5, 12.0, 1.5, "B")]
    assert critical_path(tasks) == 3.0
    t = Timing()
    t.add_round(10.0, 14.0, tasks)
    t.add_wait(0.5)
    assert (t.transfer, t.compute, t.queue, t.compute_sum) == (0.75, 3.0, 0.75, 4.5)
    split = t.split(wall=5.0)
    assert split["update"] == 0.5
    assert split["compute"] + split["transfer"] + split["queue"] + split["update"] == 5.0


def test_parts_never_exceed_the_wait_and_add_up_to_it():
    # Compute partly before the driver blocked (tasks started while it was still
    # busy) and stamps outside the wait (clock skew): parts are clipped, never
    # negative, and still add up to the blocked time.
    rng = np.random.default_rng(0)
    for _ in range(200):
        start = rng.uniform(0, 2, size=4)
        seconds = rng.uniform(0, 2, size=4)
        tasks = [TaskTime(s, s + c, c, str(rng.integers(2))) for s, c in zip(start, seconds)]
        g0, g1 = sorted(rng.uniform(0, 4, size=2))
        t = Timing()
        t.add_round(g0, g1, tasks)
        parts = np.array([t.transfer, t.compute, t.queue])
        assert np.all(parts >= 0)
        assert parts.sum() == pytest.approx(g1 - g0, abs=1e-12)
        assert t.compute <= critical_path(tasks) + 1e-12


def test_queued_task_on_a_one_thread_worker_is_compute_not_wait(one_worker):
    # Two tasks that each sleep 0.3 s on a worker with one thread: the second
    # waits behind the first, and the driver waits for both. The critical path
    # is the two tasks (0.6 s of compute), not the slowest one (0.3 s): the old
    # split reported the second task's 0.3 s as "wait". Compute is clipped to the
    # driver's wait, which starts a moment after the first task may have (so not
    # ">= 0.6"); more than one task's 0.3 s plus half the other's tells the two
    # splits apart.
    def nap(batch, words, seconds):
        import time

        time.sleep(seconds)
        return seconds

    executor = DaskExecutor(one_worker, "unused", "test")
    parts = Parts(np.arange(2), [np.array([0]), np.array([1])], [None, None], [None, None])
    assert executor.run("nap", nap, parts, [(0.3,), (0.3,)]) == [0.3, 0.3]
    t = executor.timing
    assert t.compute_sum >= 0.6
    assert t.compute >= 0.45
    assert t.compute + t.transfer + t.queue == pytest.approx(t.blocked, abs=1e-9)


def test_chain_records_add_up_to_the_wall_time(one_worker, tmp_path):
    from support.chains import lda_chain
    from support.lda import synthetic_lda, small_config
    from dscir.corpus import write_corpus

    path = str(tmp_path / "s.zarr")
    write_corpus(path, synthetic_lda(60, 30, seed=2)[0], chunk_docs=32)
    chain = lda_chain(one_worker, path, small_config(batch_size=20))
    for _ in range(3):
        chain.step()
    chain.close()
    for r in chain.history:
        parts = [r["compute"], r["transfer"], r["queue"], r["update"]]
        assert min(parts) >= 0
        assert sum(parts) == pytest.approx(r["wall"], rel=1e-9)
        assert 0 < r["compute"] <= r["compute_sum"] + 1e-12
