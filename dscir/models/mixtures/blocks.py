"""One column block of a mixture's components, in this process or on a worker: pure array code.

The K x W component gammas of the DP and finite mixtures
(``mixtures.components.Components``) are blocks of the words' columns, held
in this process or by the workers (``dscir.engine.blocks``). A block keeps its
columns of the sampler state and the row log-sum-exp of its log theta, its
share of the row normalisers that the driver combines in block order (O(K)
per block). The functions below make, cut, step, grow, shrink and read one
block; the driver's handle submits them, the same in either form.

Random streams: block b's step at iteration m draws from (the iteration's
component stream, b), its new prior components from (the iteration's
new-component stream, b), so a block's draws depend on its index and the
chain's keys only, never on which worker holds it. The one block of
components no wider than a block is the whole array and draws as the whole
array: from the iteration's streams themselves, with its own row totals
(``block_stream``), so the stochastic sampler with h = inf and every document
stays the exact Gibbs sampler draw for draw (``finite.gibbs``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from dscir.models.column_blocks import combine, row_lse, shifted_columns
from dscir.rng import derive
from dscir.samplers.cir import sample_stationary

__all__ = ["Block", "SparseAllocation", "allocation_summary", "block_columns", "block_fields",
           "block_from_arrays", "block_log_phi", "block_lse", "block_outputs", "block_stream",
           "combine", "extend_block", "head_block", "permute_block", "replace_block",
           "row_totals", "sparse",
           "sparse_allocation", "step_block"]


class Block(NamedTuple):
    """The components' columns ``lo:lo + width``, on a worker."""

    index: int
    lo: int
    state: Any  # a sampler state whose fields hold the block's columns
    lse: np.ndarray  # float64 [K]: log sum exp of the block's log theta per row
    task: Any = None  # the engine's TaskTime: when and where the step that made it computed


def new_block(index: int, lo: int, state) -> Block:
    return Block(index, lo, state, state_row_lse(state))


def state_row_lse(state) -> np.ndarray:
    """log sum theta per row of the block: from log theta (SCIR) by ``row_lse``, or
    the log of a linear-scale state's row sums (SGRLD: no log or exp of the K x
    width entries)."""
    if "log_theta" in state._fields:
        return row_lse(np.asarray(state.log_theta))
    return np.log(np.asarray(state.theta).sum(axis=1))


def block_from_arrays(index: int, lo: int, arrays: dict[str, Any], State: type) -> Block:
    """A block from its columns of the state's fields (``{field: columns}``),
    carried by the task or read here (``np.asarray`` of a ``HeldArray`` part)."""
    return new_block(index, lo, State(**{k: np.asarray(v) for k, v in arrays.items()}))


def block_lse(block: Block) -> np.ndarray:
    """What the driver gathers of a block each iteration: O(K)."""
    return block.lse


def block_fields(block: Block) -> dict[str, np.ndarray]:
    """The block's state fields by name (for the driver or a checkpoint)."""
    return {k: np.asarray(v) for k, v in block.state._asdict().items()}


def block_log_phi(block: Block, norm: np.ndarray) -> np.ndarray:
    """The block's columns of log phi: log theta less the row normalisers ``norm``."""
    return np.asarray(block.state.log_theta) - norm[:, None]


def block_outputs(block: Block, norm: np.ndarray) -> dict[str, np.ndarray]:
    """The block's columns of the run's arrays: its state fields (``state/<field>``)
    and the fitted components phi (``components``, exp of ``block_log_phi``)."""
    out = {f"state/{k}": v for k, v in block_fields(block).items()}
    out["components"] = np.exp(block_log_phi(block, norm))
    return out


def block_columns(block: Block, words: np.ndarray, norm: np.ndarray) -> np.ndarray:
    """float64 log phi columns of ``words`` (sorted, all held by ``block``), cut
    where the block lives, so only the columns travel: log theta less the row
    normalisers; a linear-scale state (SGRLD's ``theta``) takes the log of those
    columns only, not of the whole block (the same values: the log is elementwise)."""
    cols = words - block.lo
    if "log_theta" in block.state._fields:
        return shifted_columns(block.state.log_theta, cols, norm)
    cut = np.take(np.asarray(block.state.theta), cols, axis=1)
    return np.subtract(np.log(cut, out=cut), norm[:, None], out=cut)


class SparseAllocation(NamedTuple):
    """An ``AllocationResult`` as the blocks read it: the allocations, rows and
    tokens per component, and only the nonzero counts, ordered by word id."""

    rows: np.ndarray  # int64 [n] the task's documents
    z: np.ndarray  # int32 [n] their new allocations
    components: np.ndarray  # int64 [C] components they occupy
    n_rows: np.ndarray  # int64 [C] rows in each
    tokens: np.ndarray  # int64 [C] tokens in each
    component_ids: np.ndarray  # int64 [nnz] the component of each nonzero count
    word_ids: np.ndarray  # int64 [nnz] its word, nondecreasing
    values: np.ndarray  # int64 [nnz] the count


def sparse_allocation(fn, *args) -> SparseAllocation:
    """``fn(*args)`` (an ``AllocationResult``) made ``sparse`` where it ran."""
    return sparse(fn(*args))


def sparse(r) -> SparseAllocation:
    """An ``AllocationResult`` (dense counts [C, U]) with its counts kept as nonzero
    entries, so a block receives at most a token's worth each."""
    u, c = np.nonzero(np.asarray(r.counts).T)  # by word, then component
    return SparseAllocation(r.rows, r.z, r.components, r.n_rows, r.counts.sum(axis=1),
                            r.components[c], r.words[u], r.counts[c, u])


def block_counts(block: Block, results: Sequence[SparseAllocation]) -> np.ndarray:
    """int64 [K, width]: the counts of the block's words in ``results``, added
    exactly, in any order."""
    k, width = np.shape(block.state[0])
    counts = np.zeros((k, width), np.int64)
    for r in results:
        a, b = np.searchsorted(r.word_ids, (block.lo, block.lo + width))
        counts[r.component_ids[a:b], r.word_ids[a:b] - block.lo] += r.values[a:b]
    return counts


def row_totals(norm: np.ndarray, scale: float, *summaries: tuple[tuple, Any]) -> np.ndarray:
    """[2, K]: the rows' theta totals (exp of the row normalisers) and count totals
    (every task's tokens by component, from its ``allocation_summary``, added
    exactly, times ``scale``), which a step reading whole-row totals (SGRLD)
    needs in every block."""
    counts = np.zeros(norm.size, np.int64)
    for (_, _, components, _, tokens), _ in summaries:
        np.add.at(counts, components, tokens)
    return np.stack([np.exp(norm), counts * scale])


def block_stream(key: int, index: int, n_blocks: int) -> int:
    """The stream of block ``index``'s draws at ``key``: (key, index), or ``key``
    itself for the one block of the whole array."""
    return key if n_blocks == 1 else derive(key, index)


def step_block(block: Block, sampler, a0: float, scale: float, h: float, key: int,
               n_blocks: int, totals: np.ndarray | None, *results: tuple[Any, Any]) -> Block:
    """The block after its sampler step: a_hat = a0 + the counts of its words in
    ``results`` (timed ``SparseAllocation``) x ``scale`` (N / |S|), from its
    ``block_stream``; ``totals``: the whole rows' theta and count sums (None: the
    sampler reads none, or the block holds the whole rows)."""
    counts = block_counts(block, [r for r, _ in results])
    state = sampler.step_scaled(block.state, a0, counts, scale, h,
                                block_stream(key, block.index, n_blocks), totals)
    return new_block(block.index, block.lo, state)


def extend_block(block: Block, sampler, n_new: int, a0: float, key: int,
                 n_blocks: int) -> Block:
    """The block with ``n_new`` rows of prior components Gamma(a0, 1) appended (its
    columns of them), drawn from its ``block_stream``; the row sums of the rows
    it held are kept (each row's is its own)."""
    if n_new == 0:
        return block._replace(task=None)
    width = np.shape(block.state[0])[1]
    new = sample_stationary(np.full((n_new, width), float(a0)),
                            block_stream(key, block.index, n_blocks))
    state = sampler.append_log(block.state, new)
    added = type(state)(*(a[-n_new:] for a in state))
    return Block(block.index, block.lo, state,
                 np.concatenate([block.lse, state_row_lse(added)]))


def head_block(block: Block, sampler, n_rows: int) -> Block:
    """The block's first ``n_rows`` rows (the components kept)."""
    return Block(block.index, block.lo, sampler.head(block.state, n_rows), block.lse[:n_rows])


def permute_block(block: Block, sampler, order: np.ndarray) -> Block:
    """The block's rows reordered: row i is old row ``order[i]``."""
    state = type(block.state)(*(np.asarray(a)[order] for a in block.state))
    return Block(block.index, block.lo, state, block.lse[order])


def replace_block(block: Block, sampler, rows: np.ndarray, log_rows: np.ndarray) -> Block:
    """The block with its ``rows`` set to theta = exp(``log_rows``) (its columns of
    them, R x width) and their row sums formed again; the other rows are kept."""
    new = sampler.init_log(np.asarray(log_rows))
    fields = []
    for old, values in zip(block.state, new):
        field = np.array(old)
        field[rows] = values
        fields.append(field)
    lse = block.lse.copy()
    lse[rows] = state_row_lse(new)
    return Block(block.index, block.lo, type(block.state)(*fields), lse)


def allocation_summary(result: tuple[SparseAllocation, Any]) -> tuple[tuple, Any]:
    """What the driver (and the row totals) see of a timed allocation task: its
    rows, their allocations, the rows and tokens per component (O(rows + K)),
    and its timing."""
    r, task = result
    return (r.rows, r.z, r.components, r.n_rows, r.tokens), task
