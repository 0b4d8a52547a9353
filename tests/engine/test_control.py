"""The control paths of a resident round give one chain.

A round of parts reaches the workers through their runners (Dask actors,
``worker.PartRunner``), as one task graph (dask's task spec), or, where that
spec is missing from the installed dask, as one ``Client.submit`` per task.
Guards against a path that hands a part other documents, other columns or
another stream (a runner reading the wrong shard, a reference to the wrong
task), and against the public fallback rotting untested.
"""

from __future__ import annotations

import numpy as np
import pytest

from dscir.engine import dask as engine_dask
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
