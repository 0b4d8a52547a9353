"""The control paths of a resident round give one chain.

A round of parts reaches the workers through their runners (Dask actors,
``worker.PartRunner``), as one task graph (dask's task spec), or, where that
spec is missing from the installed dask, as one ``Client.submit`` per task.
Guards against a path that hands a part other documents, other columns or
another stream (a runner reading the wrong shard, a reference to the wrong
task), against the public fallback rotting untested, and against a round that
waits forever on a runner whose worker is gone.
"""

from __future__ import annotations

import numpy as np
import pytest

from dscir.engine import dask as engine_dask
from dscir.engine import runners as engine_runners
from dscir.engine.chain import run_chain
from support.chains import lda_chain
from support.lda import small_config


def _run(client, store, config, runners: bool):
    chain = lda_chain(client, store, config)
    chain.executor.runners = runners
    run_chain(chain, 6, progress=False)
    return chain


@pytest.mark.parametrize("warm_start", [False, True], ids=["cold", "warm-start"])
def test_runners_tasks_and_submits_give_one_chain(synthetic_store, two_workers, monkeypatch,
                                                  warm_start):
    store, _ = synthetic_store
    two_workers.wait_for_workers(2, timeout=120)
    config = small_config(batch_size=60, warm_start=warm_start)
    graph = _run(two_workers, store, config, runners=False)
    runners = _run(two_workers, store, config, runners=True)
    monkeypatch.setattr(engine_dask, "GRAPHS", False)
    submits = _run(two_workers, store, config, runners=False)
    for other in (runners, submits):
        assert np.array_equal(other.model.topics.state_.log_theta,
                              graph.model.topics.state_.log_theta)
        assert np.array_equal(other.model.mean_phi(), graph.model.mean_phi())
    assert graph.executor.timing.parts_per_worker == 1


class _NeverEnds:
    """An actor call whose worker is gone: it never answers (Dask's handle waits for
    the actor's task, pinned to the dead worker, to finish again)."""

    def __init__(self):
        self.waits = 0

    def result(self, timeout=None):
        self.waits += 1
        assert timeout is not None, "waited on a runner call with no timeout"
        assert self.waits < 50, "waited on a lost runner's call without looking at it"
        raise TimeoutError


def test_a_round_on_a_lost_runner_ends_instead_of_waiting_forever(two_workers, monkeypatch):
    """Guards against the hang of a resident round whose runner's worker died
    mid-call: the wait looks at the runner between waits and ends the round with
    ``RunnerLost``, so the executor reruns it as tasks."""
    monkeypatch.setattr(engine_runners, "CHECK_SECONDS", 0.01)
    two_workers.wait_for_workers(2, timeout=120)
    held = engine_runners.Runners(two_workers, "dscir-test-runner")
    address = sorted(two_workers.nthreads())[0]
    held.on(address)
    assert held.held(address)
    held._held[address][0].cancel()  # its task no longer finished, as once its worker died
    call = _NeverEnds()
    with pytest.raises(engine_runners.RunnerLost):
        held.results([call], [address])
    assert 1 <= call.waits < 50
    held.drop()
    assert not held._held
