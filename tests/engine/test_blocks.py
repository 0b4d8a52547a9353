"""An array held in blocks on the workers (``dscir.engine.blocks``) reaches the
scheduler in graphs, not task by task (``DaskExecutor.graph``).

What each test guards against:
- an iteration's messages to the scheduler growing with the blocks: each call
  on the blocks sending a task per block (mutant ``blocks-graph-task-by-task``)
  or a graph sent task by task (mutant ``round-submitted-task-by-task``);
- a graph's tasks keyed, timed or placed otherwise than ``submit`` would:
  a ``near`` dropped (mutant ``graph-near-dropped``) or applied to every task
  of the graph, a reference to an earlier task of the graph not met.
"""

from __future__ import annotations

import operator

import pytest

from dscir.engine.chain import run_chain
from dscir.engine.dask import DaskExecutor
from dscir.engine.parts import TaskTime
from support.chains import lda_chain
from support.graphs import counting_graphs
from support.lda import K_TRUE, W, small_config

def graphs_per_iteration(client, store: str, n_blocks: int, scir_step: str) -> int:
    """Graphs sent in 4 iterations (after the first 2) of a chain with its topics on
    the workers in ``n_blocks`` blocks, keeping samples and scoring held-out text."""
    config = small_config(placement="workers", block_entries=W // n_blocks * K_TRUE,
                          scir_step=scir_step, burn_in=2, thin=2)
    chain = lda_chain(client, store, config)
    assert chain.model.topics.blocks.n_blocks == n_blocks
    run_chain(chain, 2, progress=False)
    with counting_graphs(client) as graphs:
        run_chain(chain, 4, eval_every=2, progress=False)
    return graphs.n


@pytest.mark.parametrize("scir_step", ["dense", "lazy"])
def test_an_iteration_sends_as_many_graphs_at_2_and_at_8_blocks(synthetic_store, two_workers,
                                                                 scir_step):
    store, _ = synthetic_store
    two_workers.wait_for_workers(2, timeout=120)
    two = graphs_per_iteration(two_workers, store, 2, scir_step)
    eight = graphs_per_iteration(two_workers, store, 8, scir_step)
    assert two == eight


def test_a_graph_keys_places_and_times_its_tasks_as_submit_does(tmp_path, two_workers):
    """One graph: a task near each worker (restricted to it, loosely, as ``submit``
    restricts), one taking an earlier task's reference, one timed; keys as
    ``submit`` names them, serials in order."""
    two_workers.wait_for_workers(2, timeout=120)
    first, second = sorted(two_workers.nthreads())
    ex = DaskExecutor(two_workers, str(tmp_path), "generic", resident=False)
    ex.iteration = 7
    graph = ex.graph()
    at = [graph.submit("near", int, i, j=i, near=w) for i, w in enumerate([second, first])]
    one = graph.submit("one", int, 1, j=5)
    two = graph.submit("two", operator.add, one, 1, j=6)
    timed = graph.submit("timed", int, 3, j=8, timed=True)
    futures = graph.send([*at, two, timed])
    after = ex.submit("after", int, 0, near=first)
    assert ex.gather(futures[:3]) == [0, 1, 2]
    value, stamp = futures[3].result()
    assert value == 3 and isinstance(stamp, TaskTime)
    tasks = two_workers.cluster.scheduler.tasks
    placed = [(tasks[f.key].worker_restrictions, tasks[f.key].loose_restrictions)
              for f in [*futures, after]]
    assert placed == [({second}, True), ({first}, True), (None, False), (None, False),
                      ({first}, True)]
    keys = [f.key for f in futures] + [after.key]
    token = ex._token
    assert [k[0] for k in keys] == [f"dscir-generic-{w}-{token}"
                                    for w in ("near", "near", "two", "timed", "after")]
    assert [k[1] for k in keys] == [7] * 5
    assert [k[3] for k in keys] == [0, 1, 6, 8, 0]
    serials = [k[2] for k in keys]
    assert serials == [serials[0] + s for s in (0, 1, 3, 4, 5)]  # "one" was serial 2
