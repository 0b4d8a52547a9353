"""A model's K x W state in blocks of columns, held in this process or by the workers.

An n_rows x n_cols array (a model's parameters) is cut into fixed blocks of
columns (``dscir.models.column_blocks``): the boundaries depend on the shape and the setting,
never on the cluster or the placement, so a chain built on them is the same on
any number of workers and in this process. ``BlockedState`` is the handle on
the blocks and ``blocks_for`` gives a model one for its resolved placement
(``dscir.models.placement``): ``"workers"``, each block the result of a task
held by a worker as a Dask future (``DaskExecutor.blocked``); ``"driver"``,
each block a plain value in this process, every task its function called at
once (``Immediate``). A model writes its column maths once, as functions of a
block, and gets both forms.

The driver submits functions to the blocks: ones that make the next
block (``start``, ``load``, ``map``, ``update``), ones whose small values it
gathers in one round (``summarise``, ``gather``), cuts of given columns made
where the blocks live and joined by one task near where they are needed
(``cut``: only columns travel, never blocks), and writes of the blocks into
Zarr arrays from the workers (``write``).

What a block holds and what the functions compute is the caller's: a block
is any NamedTuple with a ``task`` field (a ``TaskTime`` or None), which
``update`` stamps with when and where it computed, so the round that gathers
the blocks' summaries is timed by the blocks' own work.

A lost block is recomputed by Dask from its lineage: every task is a pure
function of its inputs, so the recomputed block is bit for bit the lost one.
``load`` restarts the blocks from arrays on disk (``HeldArray`` parts, each
read by its own task on its worker), which bounds that lineage.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dscir.engine import worker
from dscir.engine.worker import timed
from dscir.errors import DscirError
from dscir.models.column_blocks import block_bounds, columns_by_block, join_columns
from dscir.models.placement import no_workers

PLACES = ("driver", "workers")


def stamped(block, fn: Callable, *args: Any):
    """The block ``fn(block, *args)``, stamped (its ``task``) with when and where
    it computed."""
    out, task = timed(fn, block, *args)
    return out._replace(task=task)


def summary(block, fn: Callable, *args: Any) -> tuple[Any, Any]:
    """What the driver gathers of a block: ``fn(block, *args)`` and its stamp."""
    return fn(block, *args), block.task


def column_part(array: Any, lo: int, hi: int) -> Any:
    """Columns ``lo:hi`` of an array for a task: a copy it carries, or for a
    ``HeldArray`` on disk the part its task reads on its worker."""
    return array[:, lo:hi] if hasattr(array, "held") else np.array(array[:, lo:hi])


def write_block(block, lo: int, hi: int, root: str, names: dict[str, str], fn: Callable,
                *args: Any) -> None:
    """Write the block's columns ``lo:hi`` of the outputs ``fn(block, *args)`` named
    in ``names`` into the arrays ``names[output]`` of the Zarr group ``root``:
    whole chunks, its own."""
    import zarr

    width = hi - lo
    out = fn(block, *args)
    for key, path in names.items():
        zarr.open_array(f"{root}/{path}", mode="r+")[:, lo:lo + width] = out[key]


class HoldsBlocks:
    """What every executor offers a model: its state's blocks for a placement."""

    def blocks(self, placement: str, n_rows: int, n_cols: int, block_entries: int,
               held: str = "the state") -> BlockedState:
        """A model's n_rows x n_cols state in blocks for its resolved ``placement``
        (``blocks_for``): held by this executor's workers, or in this process."""
        return blocks_for(placement, self, n_rows, n_cols, block_entries, held)


class Immediate(HoldsBlocks):
    """The executor of blocks held in this process: a task is its function called at
    once on its arguments, a gather the values themselves (in their order). The
    calls are ``DaskExecutor.submit``/``gather``/``settle``'s."""

    def submit(self, what: str, fn: Callable, *args: Any, j: int = 0, timed: bool = False,
               near: str | None = None) -> Any:
        return worker.timed(fn, *args) if timed else fn(*args)

    def gather(self, values: Sequence[Any],
               tasks_of: Callable[[list[Any]], list[Any]] | None = None) -> list[Any]:
        return list(values)

    def settle(self, values: Sequence[Any], timeout: float | None = None) -> None:
        return None


def blocks_for(placement: str, executor, n_rows: int, n_cols: int, block_entries: int,
               held: str = "the state") -> BlockedState:
    """The blocks of a model's n_rows x n_cols state for a resolved ``placement``:
    held by ``executor``'s workers (``"workers"``; one clear error for an executor
    without workers, ``held`` naming what would live there) or in this process
    (``"driver"``). The blocks' bounds are the same in both forms."""
    if placement not in PLACES:
        raise DscirError(f"a resolved placement is one of {', '.join(PLACES)}, got "
                         f"{placement!r}")
    if placement == "workers":
        if not hasattr(executor, "blocked"):
            raise no_workers(held)
        return executor.blocked(n_rows, n_cols, block_entries)
    return BlockedState(Immediate(), block_bounds(n_rows, n_cols, block_entries))


class BlockedState:
    """The driver's handle on an array held in blocks: one future (or, in this
    process, one value) per block.

    ``executor`` is a ``DaskExecutor`` (its ``submit``/``gather`` name and time
    the tasks) or ``Immediate``; models get one from ``blocks_for``. ``what``
    names each call's tasks (their keys, the dashboard).
    """

    def __init__(self, executor, bounds: np.ndarray):
        self.executor = executor
        self.bounds = np.asarray(bounds, dtype=np.int64)
        self.futures: list[Any] = []

    @property
    def in_process(self) -> bool:
        """Whether the blocks are plain values in this process (``Immediate``)."""
        return isinstance(self.executor, Immediate)

    @property
    def n_blocks(self) -> int:
        return self.bounds.size - 1

    @property
    def n_cols(self) -> int:
        return int(self.bounds[-1])

    def spans(self) -> list[tuple[int, int, int]]:
        """(index, lo, hi) of every block."""
        return [(j, int(self.bounds[j]), int(self.bounds[j + 1])) for j in range(self.n_blocks)]

    def _each(self, what: str, fn: Callable, *args: Any) -> list[Any]:
        return [self.executor.submit(what, fn, f, *args, j=j) for j, f in enumerate(self.futures)]

    def start(self, what: str, fn: Callable, *args: Any) -> None:
        """New blocks: ``fn(index, lo, hi, *args)`` makes each on a worker."""
        self.futures = [self.executor.submit(what, fn, j, lo, hi, *args, j=j)
                        for j, lo, hi in self.spans()]

    def load(self, what: str, fn: Callable, arrays: dict[str, Any], *args: Any) -> None:
        """Blocks from whole arrays: ``fn(index, lo, {name: columns lo:hi}, *args)``,
        each task carrying its columns of dense arrays or reading its part of
        ``HeldArray`` ones on its worker (``column_part``)."""
        self.futures = [
            self.executor.submit(what, fn, j, lo,
                                 {k: column_part(v, lo, hi) for k, v in arrays.items()}, *args,
                                 j=j)
            for j, lo, hi in self.spans()]

    def map(self, what: str, fn: Callable, *args: Any) -> None:
        """Every block becomes ``fn(block, *args)`` (on the workers)."""
        self.futures = self._each(what, fn, *args)

    def update(self, what: str, fn: Callable, args: tuple, inputs: Sequence[Sequence[Any]]) -> None:
        """Every block j becomes ``fn(block, *args, *inputs[j])`` (futures among the
        inputs are met worker to worker), stamped with when and where it computed."""
        self.futures = [self.executor.submit(what, stamped, f, fn, *args, *inputs[j], j=j)
                        for j, f in enumerate(self.futures)]

    def update_holding(self, what: str, fn: Callable, cols: np.ndarray, *args: Any) -> list[int]:
        """The blocks holding any of the column indices ``cols`` (sorted) become
        ``fn(block, cols, *args)``; returns their indices (the others are unchanged)."""
        held = [b for b, _ in columns_by_block(cols, self.bounds)]
        for b in held:
            self.futures[b] = self.executor.submit(what, fn, self.futures[b], cols, *args, j=b)
        return held

    def each(self, what: str, which: Sequence[int], fn: Callable, *args: Any) -> list[Any]:
        """Futures of ``fn(block, *args)`` of the blocks ``which`` (small values)."""
        return [self.executor.submit(what, fn, self.futures[b], *args, j=b) for b in which]

    def route(self, items: Sequence[Any], cols: Sequence[np.ndarray]) -> list[list[Any]]:
        """Per block, the ``items`` whose column indices ``cols[i]`` (sorted) fall in
        it, in their order: the inputs ``update`` gives each block."""
        held = [{b for b, _ in columns_by_block(c, self.bounds)} for c in cols]
        return [[x for x, h in zip(items, held) if j in h] for j in range(self.n_blocks)]

    def summarise(self, what: str, fn: Callable, *args: Any,
                  extra: Sequence[Any] = ()) -> tuple[list[Any], list[Any]]:
        """``fn(block, *args)`` of every block (small values) and the values of
        ``extra`` futures of timed results (``(value, TaskTime)``), gathered in one
        round timed by the tasks' own stamps (the blocks' last ``update``)."""
        n = self.n_blocks

        def tasks_of(out):
            return [t for _, t in out if t is not None]

        out = self.executor.gather(self._each(what, summary, fn, *args) + list(extra), tasks_of)
        return [v for v, _ in out[:n]], [v for v, _ in out[n:]]

    def gather(self, what: str, fn: Callable, *args: Any) -> list[Any]:
        """``fn(block, *args)`` of every block, on the driver (in block order)."""
        return self.executor.gather(self._each(what, fn, *args))

    def cut(self, what: str, fn: Callable, cols: Sequence[np.ndarray], args: tuple,
            near: Sequence[str | None] | None = None) -> list[Any]:
        """Per ``cols[j]`` (sorted column indices): ``fn(block, its columns, *args)``
        on each block holding some of them (where the block lives), joined in
        block order by one task near ``near[j]`` (a worker address) when given."""
        near = near or [None] * len(cols)
        out = []
        for j, c in enumerate(cols):
            held = columns_by_block(c, self.bounds) or [(0, c)]  # none: block 0's empty cut
            pieces = [self.executor.submit(f"{what}-piece", fn, self.futures[b], part, *args,
                                           j=j * self.n_blocks + b)
                      for b, part in held]
            out.append(self.executor.submit(what, join_columns, *pieces, j=j, near=near[j]))
        return out

    def write(self, what: str, root: str, names: dict[str, str], n_rows: int, fn: Callable,
              *args: Any) -> None:
        """Write the blocks' outputs ``fn(block, *args)`` (a dict of n_rows-row
        column blocks) into new n_rows x n_cols float64 arrays of the Zarr group
        ``root``, ``names[output]`` each, from the workers (chunks of one block's
        columns, so no two tasks share a chunk)."""
        import zarr

        from dscir import integrity

        group = zarr.open_group(root, mode="r+")
        shape = (int(n_rows), self.n_cols)
        chunks = (shape[0], max(int(self.bounds[1] - self.bounds[0]), 1))
        for path in names.values():
            group.create_array(path, shape=shape, chunks=chunks, dtype="float64",
                               overwrite=True, **integrity.array_options())
        writes = [self.executor.submit(what, write_block, f, lo, hi, root, names, fn, *args,
                                       j=j)
                  for (j, lo, hi), f in zip(self.spans(), self.futures)]
        try:
            self.executor.gather(writes)
        except BaseException:  # interrupted: the caller may remove root once no task writes
            self.executor.settle(writes)
            raise
