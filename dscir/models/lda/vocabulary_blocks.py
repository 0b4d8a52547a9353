"""One vocabulary block of LDA's dense topics, where it is held: pure array code.

LDA's dense topics (``topics.Topics``) are blocks of the words' columns, held
in this process or by the workers (``dscir.engine.blocks``: plain values or
futures). A block keeps its columns of the sampler state, its running sum of
kept phi, the row log-sum-exp of its log theta (its share of the row
normalisers that the driver combines in block order, O(K) per block) and,
with control variates, its columns of the stored assignments' counts. The
functions below make, step, read and write one block; the driver's handle
submits them.

Memory: a worker holds K x width float64 per block (log theta) and, once a
sample is kept, as much again (the kept phi sum; None before, so that Dask,
which spills a worker's blocks by their size, counts only the state). A block
function adds at most the block it returns and the integer counts it steps
with. Whole-block temporaries (exp of log theta for
the row sums and for a kept phi, counts x factor) are formed ``ROWS`` rows
at a time, elementwise or per row as the whole-block expression, so every
float is the same bit for bit (the control-variate functions, which run in
this process only, form theirs whole). Functions never change their input block:
a block held by Dask stays what its key says (a lost one is recomputed).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from dscir.errors import DscirError
from dscir.rng import domains
from dscir.models.column_blocks import row_chunks, row_lse
from dscir.models.lda._gibbs import add_entries
from dscir.models.lda.gibbs import phi_columns_of_state
from dscir.models.lda.tasks import SparseCounts, gibbs_sparse_counts
from dscir.rng import derive


class Block(NamedTuple):
    """The topics' columns ``lo:lo + width``, on a worker."""

    index: int
    lo: int
    state: Any  # a sampler state whose fields hold the block's columns
    phi_sum: np.ndarray | None  # float64 [K, width]: the kept samples' phi summed (None: none)
    lse: np.ndarray  # float64 [K]: log sum exp of the block's log theta per row
    task: Any = None  # the engine's TaskTime: when and where the step that made it computed
    stored: np.ndarray | None = None  # int64 [K, width]: control variates' stored counts


def new_block(index: int, lo: int, state, phi_sum: np.ndarray | None,
              stored: np.ndarray | None = None) -> Block:
    return Block(index, lo, state, phi_sum, row_lse(np.asarray(state.log_theta)), None,
                 stored)


def init_block(seed: int, n_topics: int, sampler, index: int, lo: int, hi: int):
    """Block ``index``'s initial state: Gamma(1, 1) draws of stream (seed, INIT, index)."""
    rng = np.random.Generator(np.random.PCG64(derive(seed, domains.INIT, index)))
    return sampler.init(rng.gamma(1.0, 1.0, size=(n_topics, hi - lo)))


def start_block(index: int, lo: int, hi: int, init: Callable[[int, int, int], Any],
                stored: bool = False) -> Block:
    """Block ``index`` of a new chain: ``init(index, lo, hi)`` draws its state;
    ``stored``: with zero stored counts (control variates)."""
    state = init(index, lo, hi)
    zeros = np.zeros(np.shape(state.log_theta), np.int64) if stored else None
    return new_block(index, lo, state, None, zeros)


def block_from_arrays(index: int, lo: int, arrays: dict[str, Any], State: type) -> Block:
    """A block from its columns of a checkpoint's arrays (``sampler/<field>``,
    ``phi_sum``, ``stored_counts`` with control variates), carried by the task or
    read here when they are parts of arrays on disk (``np.asarray`` of a
    ``HeldArray`` part)."""
    fields = {k.split("/", 1)[1]: np.asarray(v) for k, v in arrays.items()
              if k.startswith("sampler/")}
    phi_sum = np.asarray(arrays["phi_sum"], dtype=np.float64)
    stored = arrays.get("stored_counts")
    return new_block(index, lo, State(**fields), phi_sum if phi_sum.any() else None,
                     None if stored is None else np.array(stored, dtype=np.int64))


def block_lse(block: Block) -> np.ndarray:
    """What the driver gathers of a block each iteration: O(K)."""
    return block.lse


def phi_sum_of(block: Block) -> np.ndarray:
    """The block's kept phi sum, zeros before the first keep."""
    if block.phi_sum is None:
        return np.zeros(np.shape(block.state.log_theta))
    return block.phi_sum


def block_arrays(block: Block) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """A block's state fields by name and its phi sum (for the driver)."""
    return {k: np.asarray(v) for k, v in block.state._asdict().items()}, phi_sum_of(block)


def block_stored(block: Block) -> np.ndarray | None:
    """The block's stored counts (control variates; None without)."""
    return block.stored


def block_columns(block: Block, words: np.ndarray, norm: np.ndarray, dtype: str) -> np.ndarray:
    """phi columns of ``words`` (sorted, all held by ``block``), each rescaled by
    its maximum (as ``phi_columns``), as ``dtype``: cut where the block lives, so
    only the columns travel. K x U reads (``phi_columns_of_state``), never K x width."""
    cols = phi_columns_of_state(np.asarray(block.state.log_theta), norm, words - block.lo)
    return cols.astype(dtype, copy=False)


def block_mean_log_columns(block: Block, words: np.ndarray, n_samples: int,
                           norm: np.ndarray) -> np.ndarray:
    """float64 log columns of ``words`` (sorted, all held by ``block``) of the kept
    samples' mean phi (the current phi when ``n_samples`` is 0)."""
    if n_samples:
        with np.errstate(divide="ignore"):
            return np.log(block.phi_sum[:, words - block.lo] / n_samples)
    return np.asarray(block.state.log_theta)[:, words - block.lo] - norm[:, None]


def block_counts(block: Block, results: Sequence) -> np.ndarray:
    """int64 [K, width]: the counts of the block's words in ``results`` (each a
    ``SparseCounts``: nonzero entries ordered by global word id), added exactly
    (numba, O(entries)); one clear error for a topic outside the K rows."""
    width = np.shape(block.state.log_theta)[1]
    counts = np.zeros((block.lse.size, width), np.int64)
    for r in results:
        a, b = np.searchsorted(r.word_ids, (block.lo, block.lo + width))
        bad = add_entries(counts, r.topics[a:b], r.word_ids[a:b] - block.lo, r.values[a:b])
        if bad:
            raise DscirError(f"{bad} Gibbs count entries lie outside the {counts.shape[0]} "
                             f"topics")
    return counts


def row_totals(norm: np.ndarray, factor: float, *results: tuple[Any, Any]) -> np.ndarray:
    """[2, K]: the rows' theta totals (exp of the row normalisers) and count totals
    (every result's counts by topic, added exactly, times ``factor``), which a
    step reading whole-row totals needs in every block."""
    counts = np.zeros(norm.size, np.int64)
    for r, _ in results:
        np.add.at(counts, r.topics, r.values)
    return np.stack([np.exp(norm), counts * factor])


def step_key(seed: int, m: int, block: Block) -> int:
    """The stream of ``block``'s step at iteration ``m``: (seed, SAMPLER, m, its index)."""
    return derive(seed, domains.SAMPLER, m, block.index)


def step_block(block: Block, sampler, beta: float, factor: float, h: float, seed: int, m: int,
               totals: np.ndarray | None, *results: tuple[SparseCounts, Any]) -> Block:
    """The block after its sampler step at iteration ``m``: a_hat = beta + the counts
    of its words in ``results`` (timed Gibbs results) x ``factor`` (D / |S| /
    n_kept), stream (seed, SAMPLER, m, index); ``totals``: the whole rows' theta
    and count sums, for the samplers that read them (None for the others)."""
    counts = block_counts(block, [r for r, _ in results])
    state = sampler.step_scaled(block.state, beta, counts, factor, h,
                                step_key(seed, m, block), totals)
    del counts
    return new_block(block.index, block.lo, state, block.phi_sum, block.stored)


def control_variate(stored: np.ndarray, minibatch: np.ndarray, minibatch_stored: np.ndarray,
                    scale: float) -> np.ndarray:
    """Dubey et al.'s estimate of the full-data expected counts: ``stored`` (every
    training document's stored-assignment counts, summed) + ``scale`` (D/|S|) x
    (the minibatch's expected counts - its documents' stored counts). Over a
    uniformly drawn minibatch its mean is the full-data sum whatever is stored;
    its variance falls as the stored assignments approach the new ones."""
    return stored + scale * (minibatch - minibatch_stored)


def dense_counts(block: Block, results: Sequence, field: str = "topic_word") -> np.ndarray:
    """int64 [K, width]: the block's words' columns of each result's K x U ``field``
    (a warm-started task's ``WarmResult``: its sorted ``words``), added exactly."""
    width = np.shape(block.state.log_theta)[1]
    counts = np.zeros((block.lse.size, width), np.int64)
    for r in results:
        a, b = np.searchsorted(r.words, (block.lo, block.lo + width))
        counts[:, r.words[a:b] - block.lo] += getattr(r, field)[:, a:b]
    return counts


def cv_estimate(block: Block, scale: float, results: Sequence
                ) -> tuple[np.ndarray, int, np.ndarray]:
    """The block's a_hat - beta by ``control_variate`` from warm-started results
    (``scale`` = D / |S|) with negative entries clipped to 0 (the samplers need
    a_hat >= beta), how many were clipped, and its stored counts once the
    minibatch's new assignments replace the ones read."""
    before = dense_counts(block, results, "stored_before")
    after = dense_counts(block, results, "stored_after")
    minibatch = dense_counts(block, results) / results[0].n_kept
    estimate = control_variate(block.stored, minibatch, before, scale)
    clipped = estimate < 0
    return np.where(clipped, 0.0, estimate), int(clipped.sum()), block.stored + (after - before)


def cv_summary(block: Block, scale: float, *results) -> tuple[np.ndarray, int]:
    """What the driver gathers of a block before a control-variate step: its
    a_hat - beta row sums (the rows' count totals) and its clipped entries."""
    estimate, clipped, _ = cv_estimate(block, scale, results)
    return estimate.sum(axis=1), clipped


def step_block_cv(block: Block, sampler, beta: float, scale: float, h: float, seed: int,
                  m: int, totals: np.ndarray | None, *results) -> Block:
    """``step_block`` with a_hat = beta + the control-variate estimate of its words
    (``cv_estimate`` of the timed ``results``), its stored counts updated; stream
    (seed, SAMPLER, m, index)."""
    estimate, _, stored = cv_estimate(block, scale, [r for r, _ in results])
    state = sampler.step(block.state, beta, estimate, h,
                         step_key(seed, m, block), totals)
    return new_block(block.index, block.lo, state, block.phi_sum, stored)


def keep_block(block: Block, norm: np.ndarray) -> Block:
    """The block with its current phi (log theta - the row normaliser) added to its
    sum (the first keep's sum is that phi: 0 + x is x)."""
    log_theta = np.asarray(block.state.log_theta)
    phi_sum = np.empty_like(log_theta)
    for rows in row_chunks(phi_sum.shape[0]):
        np.exp(log_theta[rows] - norm[rows, None], out=phi_sum[rows])
        if block.phi_sum is not None:
            np.add(block.phi_sum[rows], phi_sum[rows], out=phi_sum[rows])
    return block._replace(phi_sum=phi_sum, task=None)


def block_outputs(block: Block, n_samples: int, norm: np.ndarray) -> dict[str, np.ndarray]:
    """What a block can write: its state fields (``state/<field>``), its phi sum
    (``phi_sum``) and the kept samples' mean phi (``phi_mean``; the current phi,
    by the row normalisers ``norm``, when none is kept)."""
    out = {f"state/{k}": np.asarray(v) for k, v in block.state._asdict().items()}
    out["phi_sum"] = phi_sum_of(block)
    out["phi_mean"] = (block.phi_sum / n_samples if n_samples else
                       np.exp(np.asarray(block.state.log_theta) - norm[:, None]))
    return out


def block_output(block: Block, key: str, n_samples: int, norm: np.ndarray) -> np.ndarray:
    """One of the block's ``block_outputs`` (for the driver)."""
    return block_outputs(block, n_samples, norm)[key]


def gibbs_from_columns(batch, words: np.ndarray, cut_words: np.ndarray, cut_cols: np.ndarray,
                       *args) -> SparseCounts:
    """``gibbs_counts`` of a part whose ``words`` are among ``cut_words``, the words
    whose columns ``cut_cols`` were cut once for every part on this worker; its
    nonzero counts only, for the blocks (``gibbs_sparse_counts``). A part with all
    of them (the one part of its worker) takes ``cut_cols`` as they are, no copy."""
    same = words.size == cut_words.size  # words are among cut_words: the same words
    cols = cut_cols if same else cut_cols[:, np.searchsorted(cut_words, words)]
    return gibbs_sparse_counts(batch, words, cols, *args)


def gibbs_summary(result: tuple[SparseCounts, Any]) -> tuple[int, Any]:
    """What the driver sees of a Gibbs task: its tokens and its timing."""
    return result[0].n_tokens, result[1]
