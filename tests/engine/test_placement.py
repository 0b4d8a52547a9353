"""Placement as an engine service: a model written only as column functions runs in
both forms of the blocks, and one rule resolves every model's placement.

A new model's K x W state needs no placement class of its own: the functions of
one block below (a seeded start, a step adding integer counts routed to their
blocks, row sums, column cuts, a read-only map) are driven through
``blocks_for`` in this process and on the workers of a small cluster, and give
the same arrays bit for bit. The resolver's rules and errors are the ones LDA
and the mixtures share (``dscir.models.placement``).
"""

from __future__ import annotations

import sys
from typing import Any, NamedTuple

import cloudpickle
import numpy as np
import pytest

from dscir.engine.blocks import BlockedState, Immediate, blocks_for
from dscir.engine.dask import DaskExecutor
from dscir.errors import DscirError
from dscir.models.column_blocks import block_bounds
from dscir.models.placement import PLACEMENTS, held_blocks, resolve_placement

# The column functions below are this module's: the workers unpickle them by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

K, W, ENTRIES, SEED = 3, 23, 15, 11  # blocks of 5 columns, the last one of 3


class Block(NamedTuple):
    lo: int
    values: np.ndarray  # float64 [K, width]
    task: Any = None


def start(index: int, lo: int, hi: int, seed: int, n_rows: int) -> Block:
    rng = np.random.default_rng([seed, index])
    return Block(lo, rng.gamma(1.0, 1.0, size=(n_rows, hi - lo)))


def add_counts(block: Block, scale: float, *items: tuple[np.ndarray, np.ndarray]) -> Block:
    """The block plus ``scale`` x the integer counts of its columns among ``items``
    (sorted global columns, K x len(columns) counts), added exactly in their order."""
    width = block.values.shape[1]
    counts = np.zeros(block.values.shape, np.int64)
    for cols, c in items:
        own = (cols >= block.lo) & (cols < block.lo + width)
        np.add.at(counts, (slice(None), cols[own] - block.lo), c[:, own])
    return block._replace(values=block.values + scale * counts)


def row_sums(block: Block) -> np.ndarray:
    return block.values.sum(axis=1)


def columns(block: Block, cols: np.ndarray) -> np.ndarray:
    return block.values[:, cols - block.lo]


def whole(block: Block) -> np.ndarray:
    return block.values


def halved(block: Block) -> Block:
    return block._replace(values=block.values / 2)


def run(state: BlockedState) -> dict[str, Any]:
    """Three steps of the tiny model on ``state``: seeded blocks, counts routed to
    the blocks holding their columns, a map; what a model reads of them."""
    rng = np.random.default_rng(4)
    state.start("tiny-start", start, SEED, K)
    sums = []
    for m in range(3):
        cols = [np.sort(rng.choice(W, size=6, replace=False)) for _ in range(3)]
        items = [(c, rng.integers(0, 5, size=(K, c.size))) for c in cols]
        state.update("tiny-step", add_counts, (0.5 + m,), state.route(items, cols))
        blocks_sums, _ = state.summarise("tiny-sums", row_sums)
        sums.append(np.sum(blocks_sums, axis=0))
    state.map("tiny-halve", halved)
    cut = [np.array([0, 4, 5, 22]), np.array([7])]
    return {"array": np.concatenate(state.gather("tiny-read", whole), axis=1),
            "sums": np.array(sums),
            "cut": [np.asarray(c) for c in state.executor.gather(
                state.cut("tiny-cut", columns, cut, ()))]}


def test_a_column_model_runs_one_chain_in_process_and_on_the_workers(two_workers):
    here = blocks_for("driver", None, K, W, ENTRIES)
    there = blocks_for("workers", DaskExecutor(two_workers, "unused", "tiny"), K, W, ENTRIES)
    assert here.in_process and not there.in_process
    np.testing.assert_array_equal(here.bounds, block_bounds(K, W, ENTRIES))
    np.testing.assert_array_equal(here.bounds, there.bounds)
    a, b = run(here), run(there)
    assert isinstance(here.futures[0], Block), "in process the blocks are plain values"
    np.testing.assert_array_equal(a["array"], b["array"],
                                  err_msg="the two forms of the blocks ran different chains")
    np.testing.assert_array_equal(a["sums"], b["sums"], err_msg="summaries out of block order")
    for x, y in zip(a["cut"], b["cut"]):
        np.testing.assert_array_equal(x, y, err_msg="cut columns differ between the forms")
    # the model's own maths, once, on a whole K x W array
    rng, want = np.random.default_rng(4), np.concatenate(
        [start(j, lo, hi, SEED, K).values for j, (lo, hi) in
         enumerate(zip(here.bounds[:-1], here.bounds[1:]))], axis=1)
    for m in range(3):
        cols = [np.sort(rng.choice(W, size=6, replace=False)) for _ in range(3)]
        counts = np.zeros((K, W), np.int64)
        for c in cols:
            counts[:, c] += rng.integers(0, 5, size=(K, c.size))
        want = want + (0.5 + m) * counts
        np.testing.assert_allclose(a["sums"][m], want.sum(axis=1), rtol=1e-12,
                                   err_msg="a block's counts lost or added twice")
    np.testing.assert_array_equal(a["array"], want / 2, err_msg="blocks joined out of order")
    np.testing.assert_array_equal(a["cut"][0], (want / 2)[:, [0, 4, 5, 22]])


def test_in_process_blocks_run_every_task_at_once():
    ex = Immediate()
    assert ex.submit("x", np.add, 2, 3, j=4, near="w") == 5
    value, task = ex.submit("x", np.add, 2, 3, timed=True)
    assert value == 5 and task.seconds >= 0
    assert ex.gather([3, 1, 2]) == [3, 1, 2], "gathered values reordered"
    assert ex.settle([1]) is None
    assert ex.blocks("driver", K, W, ENTRIES).n_blocks == 5


def test_the_workers_form_needs_workers_and_says_so():
    for executor in (None, Immediate(), object()):
        with pytest.raises(DscirError, match=r"placement='workers' needs a Dask cluster "
                                             r"\(the topics live on its workers\)"):
            if executor is None or hasattr(executor, "blocks"):
                blocks_for("workers", executor, K, W, ENTRIES, "the topics")
            else:
                held_blocks(executor, "workers", K, W, ENTRIES, "the topics")
    with pytest.raises(DscirError, match="a resolved placement is one of driver, workers"):
        blocks_for("auto", None, K, W, ENTRIES)


class WithWorkers:
    def blocked(self, *args):  # an executor that can hold blocks
        raise AssertionError("not called by the rule")


def test_one_rule_resolves_every_models_placement():
    big, executor = 100, WithWorkers()
    assert PLACEMENTS == ("auto", "driver", "workers")
    assert resolve_placement("auto", big, executor, big) == "workers", "threshold not inclusive"
    assert resolve_placement("auto", big - 1, executor, big) == "driver"
    assert resolve_placement("auto", big, object(), big) == "driver", \
        "auto chose the workers for an executor without any"
    assert resolve_placement("auto", big, None, big) == "workers", \
        "resolved before the executor: by size alone"
    assert resolve_placement("auto", 10**12, executor, None) == "driver", \
        "workers_from None: auto never chooses the workers"
    assert resolve_placement("auto", big, executor, big, refused="no") == "driver", \
        "auto chose the workers for a chain refused there"
    assert resolve_placement("driver", 10**12, executor, big) == "driver"
    assert resolve_placement("workers", 0, executor, big) == "workers"
    with pytest.raises(DscirError, match="placement='workers' needs a Dask cluster "
                                         r"\(the components live"):
        resolve_placement("workers", 0, object(), big, held="the components")
    with pytest.raises(DscirError, match="warm starts here"):
        resolve_placement("workers", 0, executor, big, refused="warm starts here")
    with pytest.raises(DscirError, match="placement must be one of auto, driver, workers, "
                                         "got 'gpu'"):
        resolve_placement("gpu", 0, executor, big)


def test_lda_and_the_mixtures_keep_their_own_thresholds():
    from dscir.models.mixtures import components as mixture_components
    from dscir.models.lda import placement as lda
    from support.lda import small_config

    assert lda.WORKERS_FROM_ENTRIES == 10**7 and mixture_components.MEASURED_UP_TO == 1 << 25
    k = small_config().n_topics
    at = -(-lda.WORKERS_FROM_ENTRIES // k)
    assert lda.resolve_placement(small_config(placement="auto"), at) == "workers"
    assert lda.resolve_placement(small_config(placement="auto"), at - 1) == "driver"
    assert lda.resolve_placement(small_config(placement="auto", scir_step="lazy"),
                                 at) == "driver", "the lazy step left the driver under auto"
    with pytest.raises(DscirError, match="does not support warm starts"):
        lda.check_placement("workers", True)
    rows = 1 << 7
    assert mixture_components.resolve_placement("auto", rows, (1 << 18) + 1, WithWorkers()) \
        == "workers"
    assert mixture_components.resolve_placement("auto", rows, 1 << 18, WithWorkers()) \
        == "measured"
