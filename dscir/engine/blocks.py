"""Parameters that live on the workers: a K x W sampler state in vocabulary blocks.

The columns (words) of a K x W state are cut into fixed blocks of
``block_width(K, block_entries)`` words: the boundaries depend on K, W and the
setting, never on the cluster, so the chain is the same on any number of
workers. Each block (its sampler state, its running sum of kept phi and the
row log-sum-exp of its log theta) is the result of a task, held by a worker
as a Dask future. Per iteration the driver sees O(K) per block (``lse``) and
combines the blocks' values in block order into the row normalisers; each
block cuts the phi columns of the minibatch's words it holds where it lives,
and one task per worker joins them (only columns travel, never blocks); each
block steps with the counts of its own words, added exactly from the Gibbs
tasks' nonzero entries.

A lost block is recomputed by Dask from its lineage: every task is a pure
function of its inputs (the store, the seed, the previous blocks), so the
recomputed block is bit for bit the lost one. A checkpoint bounds that
lineage: each block writes its own columns into the checkpoint's arrays
(``BlockedState.write``), and once the checkpoint is in place the blocks
restart from it (``BlockedState.load`` of ``HeldArray`` parts: each task reads
its own columns on its worker), so the driver never holds K x W.

The functions below the class run on the workers: pure array code.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from dscir.engine.placement import TaskTime

def block_bounds(n_rows: int, n_cols: int, block_entries: int) -> np.ndarray:
    """Boundaries ``b`` (block j holds columns ``b[j]:b[j+1]``): blocks of
    ``max(1, block_entries // n_rows)`` columns, the last one shorter."""
    width = max(1, int(block_entries) // int(n_rows))
    return np.append(np.arange(0, n_cols, width), n_cols).astype(np.int64)


class Block(NamedTuple):
    """One block of columns ``lo:lo + width`` of a state, on a worker."""

    index: int
    lo: int
    state: Any  # a sampler state whose fields hold the block's columns
    phi_sum: np.ndarray  # float64 [K, width]: the kept samples' phi, summed
    lse: np.ndarray  # float64 [K]: log sum exp of the block's log theta per row
    task: TaskTime | None = None  # when and where the step that made it computed


def row_lse(log_theta: np.ndarray) -> np.ndarray:
    """log sum exp along each row (the block's share of the row normaliser)."""
    top = log_theta.max(axis=1)
    return top + np.log(np.exp(log_theta - top[:, None]).sum(axis=1))


def combine(lses: Sequence[np.ndarray]) -> np.ndarray:
    """The row normalisers from the blocks' ``lse``, added in block order."""
    out = np.asarray(lses[0], dtype=np.float64)
    for x in lses[1:]:
        out = np.logaddexp(out, x)
    return out


def slice_state(state, lo: int, hi: int):
    """Columns ``lo:hi`` of every field of a sampler state (copies)."""
    return type(state)(*(np.array(a[:, lo:hi]) for a in state))


def new_block(index: int, lo: int, state, phi_sum: np.ndarray) -> Block:
    return Block(index, lo, state, phi_sum, row_lse(np.asarray(state.log_theta)))


def start_block(index: int, lo: int, hi: int, init: Callable[[int, int, int], Any]) -> Block:
    """Block ``index`` of a new chain: ``init(index, lo, hi)`` draws its state."""
    state = init(index, lo, hi)
    return new_block(index, lo, state, np.zeros(np.shape(state.log_theta)))


def block_from_arrays(index: int, lo: int, state, phi_sum) -> Block:
    """A block from the arrays the task carries, or reads here when they are
    parts of arrays on disk (``np.asarray`` of a ``HeldArray`` part): a restored
    chain, or one restarted from its checkpoint."""
    state = type(state)(*(np.asarray(v) for v in state))
    return new_block(index, lo, state, np.asarray(phi_sum, dtype=np.float64))


def block_output(block: Block, key: str, n_samples: int, norm: np.ndarray) -> np.ndarray:
    """One of the block's ``block_outputs`` (for the driver)."""
    return block_outputs(block, n_samples, norm)[key]


def block_arrays(block: Block) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """A block's state fields by name and its phi sum (for the driver)."""
    return {k: np.asarray(v) for k, v in block.state._asdict().items()}, block.phi_sum


def block_lse(block: Block) -> tuple[np.ndarray, TaskTime | None]:
    """What the driver gathers of a block each iteration: O(K)."""
    return block.lse, block.task


def words_by_block(words: np.ndarray, bounds: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """The blocks (by ``bounds``) holding any of ``words`` (sorted), each with its
    share of them, in block order."""
    cuts = np.searchsorted(words, bounds)
    return [(b, words[cuts[b]:cuts[b + 1]]) for b in range(bounds.size - 1)
            if cuts[b + 1] > cuts[b]]


def block_columns(block: Block, words: np.ndarray, norm: np.ndarray, dtype: str) -> np.ndarray:
    """phi columns of ``words`` (sorted, all held by ``block``), each rescaled by
    its maximum (as ``phi_columns``), as ``dtype``: cut where the block lives, so
    only the columns travel."""
    cols = np.asarray(block.state.log_theta)[:, words - block.lo] - norm[:, None]
    return np.exp(cols - cols.max(axis=0, keepdims=True)).astype(dtype)


def block_mean_log_columns(block: Block, words: np.ndarray, n_samples: int,
                           norm: np.ndarray) -> np.ndarray:
    """float64 log columns of ``words`` (sorted, all held by ``block``) of the kept
    samples' mean phi (the current phi when ``n_samples`` is 0)."""
    if n_samples:
        with np.errstate(divide="ignore"):
            return np.log(block.phi_sum[:, words - block.lo] / n_samples)
    return np.asarray(block.state.log_theta)[:, words - block.lo] - norm[:, None]


def join_columns(*pieces: np.ndarray) -> np.ndarray:
    """The columns of consecutive blocks side by side (in block order)."""
    return pieces[0] if len(pieces) == 1 else np.concatenate(pieces, axis=1)


def block_counts(block: Block, results: Sequence) -> np.ndarray:
    """int64 [K, width]: the counts of the block's words in ``results`` (each a
    ``SparseCounts``: nonzero entries ordered by global word id), added exactly."""
    width = block.phi_sum.shape[1]
    counts = np.zeros((block.lse.size, width), np.int64)
    for r in results:
        a, b = np.searchsorted(r.word_ids, (block.lo, block.lo + width))
        counts[r.topics[a:b], r.word_ids[a:b] - block.lo] += r.values[a:b]
    return counts


def row_totals(norm: np.ndarray, factor: float, *results: tuple[Any, TaskTime]) -> np.ndarray:
    """[2, K]: the rows' theta totals (exp of the row normalisers) and count totals
    (every result's counts by topic, added exactly, times ``factor``), which a
    step reading whole-row totals needs in every block."""
    counts = np.zeros(norm.size, np.int64)
    for r, _ in results:
        np.add.at(counts, r.topics, r.values)
    return np.stack([np.exp(norm), counts * factor])


def step_block(block: Block, step: Callable[..., Any], totals: np.ndarray | None,
               *results: tuple[Any, TaskTime]) -> Block:
    """The block after ``step(state, counts, index, totals)`` with the counts of its
    words in ``results`` (timed task results) and the whole rows' ``totals`` (None
    for a step that reads none); stamps when and where it computed."""
    import os
    import socket
    import threading

    start, clock = time.time(), time.perf_counter()
    state = step(block.state, block_counts(block, [r for r, _ in results]), block.index, totals)
    out = new_block(block.index, block.lo, state, block.phi_sum)
    seconds = time.perf_counter() - clock
    thread = f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"
    return out._replace(task=TaskTime(start, start + seconds, seconds, thread))


def keep_block(block: Block, norm: np.ndarray) -> Block:
    """The block with its current phi (log theta - the row normaliser) added to its sum."""
    phi = np.exp(np.asarray(block.state.log_theta) - norm[:, None])
    return block._replace(phi_sum=block.phi_sum + phi, task=None)


def block_outputs(block: Block, n_samples: int, norm: np.ndarray) -> dict[str, np.ndarray]:
    """What a block can write: its state fields (``state/<field>``), its phi sum
    (``phi_sum``) and the kept samples' mean phi (``phi_mean``; the current phi,
    by the row normalisers ``norm``, when none is kept)."""
    out = {f"state/{k}": np.asarray(v) for k, v in block.state._asdict().items()}
    out["phi_sum"] = block.phi_sum
    out["phi_mean"] = (block.phi_sum / n_samples if n_samples else
                       np.exp(np.asarray(block.state.log_theta) - norm[:, None]))
    return out


def write_block(block: Block, root: str, names: dict[str, str], n_samples: int,
                norm: np.ndarray) -> None:
    """Write the block's columns of its outputs (``block_outputs``) named in
    ``names`` into the K x W arrays ``names[output]`` of the Zarr group ``root``:
    whole chunks, its own."""
    import zarr

    lo, width = block.lo, block.phi_sum.shape[1]
    out = block_outputs(block, n_samples, norm)
    for key, path in names.items():
        zarr.open_array(f"{root}/{path}", mode="r+")[:, lo:lo + width] = out[key]


class BlockedState:
    """The driver's handle on a state held in blocks: futures and the O(K) normaliser.

    ``executor`` is a ``DaskExecutor`` (its ``submit``/``gather`` name and time
    the tasks); models get one from ``DaskExecutor.blocked``.
    """

    def __init__(self, executor, bounds: np.ndarray):
        self.executor = executor
        self.bounds = np.asarray(bounds, dtype=np.int64)
        self.futures: list[Any] = []
        self.norm: np.ndarray | None = None

    @property
    def n_blocks(self) -> int:
        return self.bounds.size - 1

    def _spans(self):
        return [(j, int(self.bounds[j]), int(self.bounds[j + 1])) for j in range(self.n_blocks)]

    def start(self, init: Callable[[int, int, int], Any]) -> None:
        """A new state: ``init(index, lo, hi)`` draws each block on a worker."""
        self.futures = [self.executor.submit("block-init", start_block, j, lo, hi, init, j=j)
                        for j, lo, hi in self._spans()]
        self.normalise()

    def load(self, fields: dict[str, Any], phi_sum: Any, State: type) -> None:
        """Blocks from K x W arrays: dense ones (each task carries its slice) or
        ``HeldArray`` ones on disk (each task reads its own slice on its worker)."""
        def part(v, lo, hi):
            return v[:, lo:hi] if hasattr(v, "held") else np.array(v[:, lo:hi])

        self.futures = [
            self.executor.submit("block-load", block_from_arrays, j, lo,
                                 State(**{k: part(v, lo, hi) for k, v in fields.items()}),
                                 part(phi_sum, lo, hi), j=j)
            for j, lo, hi in self._spans()]
        self.normalise()

    def normalise(self, extra: Sequence[Any] = ()) -> list[Any]:
        """Gather the blocks' O(K) summaries with ``extra`` futures of timed results
        (``(value, TaskTime)``) in one round; set the row normalisers; returns the
        values of ``extra``."""
        n = self.n_blocks
        summaries = [self.executor.submit("block-lse", block_lse, f, j=j)
                     for j, f in enumerate(self.futures)]

        def tasks_of(out):
            return [t for _, t in out if t is not None]

        out = self.executor.gather(summaries + list(extra), tasks_of)
        self.norm = combine([lse for lse, _ in out[:n]])
        return [v for v, _ in out[n:]]

    def _cut(self, what: str, fn: Callable, words: Sequence[np.ndarray], args: tuple,
             near: Sequence[str | None]) -> list[Any]:
        """Per ``words[j]``: ``fn(block, its words, *args)`` on each block holding
        some of them (where the block lives), joined by one task near ``near[j]``."""
        out = []
        for j, w in enumerate(words):
            pieces = [self.executor.submit(f"{what}-piece", fn, self.futures[b], part, *args,
                                           j=j * self.n_blocks + b)
                      for b, part in words_by_block(w, self.bounds)]
            out.append(self.executor.submit(what, join_columns, *pieces, j=j, near=near[j]))
        return out

    def columns(self, words: Sequence[np.ndarray], dtype: str,
                near: Sequence[str | None] | None = None) -> list[Any]:
        """Futures of the phi columns of each ``words`` (sorted; ``block_columns``),
        cut on the blocks' workers and joined near ``near[j]`` when given."""
        return self._cut("columns", block_columns, words, (self.norm, dtype),
                         near or [None] * len(words))

    def mean_log_columns(self, words: Sequence[np.ndarray], n_samples: int) -> list[Any]:
        """Futures of the log mean-phi columns of each ``words`` (sorted;
        ``block_mean_log_columns``)."""
        return self._cut("mean-columns", block_mean_log_columns, words,
                         (n_samples, self.norm), [None] * len(words))

    def step(self, step: Callable, results: Sequence[Any], words: Sequence[np.ndarray],
             factor: float | None = None) -> None:
        """Step every block with the results (futures of timed task results) whose
        ``words`` fall in it; the new blocks stay on the workers. With ``factor``
        (the counts' scale), every block also gets the whole rows' totals
        (``row_totals``, one task over all results, worker to worker)."""
        held = [{b for b, _ in words_by_block(w, self.bounds)} for w in words]
        totals = None if factor is None else self.executor.submit(
            "row-totals", row_totals, self.norm, factor, *results)
        self.futures = [
            self.executor.submit("block-step", step_block, self.futures[j], step, totals,
                                 *(r for r, h in zip(results, held) if j in h), j=j)
            for j in range(self.n_blocks)]

    def keep(self) -> None:
        """Add the current phi to every block's running sum (on the workers)."""
        self.futures = [self.executor.submit("block-keep", keep_block, f, self.norm, j=j)
                        for j, f in enumerate(self.futures)]

    def gather(self) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """The whole state's fields and phi sum as dense arrays on the driver."""
        parts = self.executor.gather([self.executor.submit("block-arrays", block_arrays, f, j=j)
                                      for j, f in enumerate(self.futures)])
        fields = {k: np.concatenate([p[0][k] for p in parts], axis=1) for k in parts[0][0]}
        return fields, np.concatenate([p[1] for p in parts], axis=1)

    def output(self, key: str, n_samples: int) -> np.ndarray:
        """One of the blocks' outputs (``block_outputs``, e.g. ``phi_mean``) as a
        dense K x W array on the driver, built block by block."""
        parts = self.executor.gather([
            self.executor.submit("block-output", block_output, f, key, n_samples, self.norm,
                                 j=j)
            for j, f in enumerate(self.futures)])
        out = np.empty((self.norm.size, int(self.bounds[-1])))
        for (_, lo, hi), part in zip(self._spans(), parts):
            out[:, lo:hi] = part
        return out

    def write(self, root: str, names: dict[str, str], n_samples: int) -> None:
        """Write the blocks' outputs (``block_outputs``: ``state/<field>``,
        ``phi_sum``, ``phi_mean``) into new K x W float64 arrays of the Zarr group
        ``root``, ``names[output]`` each, from the workers, block by block (chunks
        of one block's columns, so no two tasks share a chunk)."""
        import zarr

        from dscir import integrity

        group = zarr.open_group(root, mode="r+")
        shape = (self.norm.size, int(self.bounds[-1]))
        chunks = (shape[0], max(int(self.bounds[1] - self.bounds[0]), 1))
        for path in names.values():
            group.create_array(path, shape=shape, chunks=chunks, dtype="float64",
                               overwrite=True, **integrity.array_options())
        self.executor.gather([
            self.executor.submit("block-write", write_block, f, root, names, n_samples,
                                 self.norm, j=j)
            for j, f in enumerate(self.futures)])
