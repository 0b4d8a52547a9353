"""One vocabulary block of LDA's topics under the lazy SCIR step: pure array code.

Both placements of ``scir_step="lazy"`` hold the topics as the same blocks of
word columns (``models.column_blocks.block_bounds``: set by K, W and
``block_entries``, never by the cluster) and run the functions below on them:
one class, ``topics_lazy.LazyTopics``, on the engine's blocks held in this
process or by the workers (``dscir.engine.blocks.blocks_for``). Every number
the chain uses is computed by the same function on the same block in the same
order (row moments summed in block order), so the two placements run one chain
bit for bit, on any number of workers.

A block is a ``cir_lazy.State`` of its columns (streams named by word id) and
a ``version``: every function that changes the state in place (touch, step,
keep) advances it, and every function is given the versions the driver
expects (``versions[index]``) and refuses a block at another one. In place is
what makes an iteration cost O(K x the block's minibatch words + K) instead of
a copy of the block; the version check turns a read of a block already changed
(a lost result recomputed by Dask after the step) into an error, never into a
silently different chain.

Checkpoints: the columns packed as one (2K + 2) x width array (log theta,
kept phi sum, realization clock, first pending kept sample: ``packed``) and
O(K) per block (``small``); ``from_packed`` rebuilds the block bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from dscir.rng import domains
from dscir.errors import DscirError
from dscir.models.lda.tasks import SparseCounts
from dscir.rng import derive
from dscir.samplers import cir_lazy


class LazyBlock(NamedTuple):
    """The topics' columns ``lo:lo + width`` as a lazy SCIR state."""

    index: int
    lo: int
    state: cir_lazy.State
    version: int
    finite: bool = True  # the columns the last step moved are finite numbers
    task: Any = None  # the engine's TaskTime of the step that made it (``blocks.stamped``)


def start_lazy_block(index: int, lo: int, hi: int, seed: int, n_topics: int) -> LazyBlock:
    """Block ``index`` of a new chain: Gamma(1, 1) draws of stream (seed, INIT, index),
    the dense workers placement's start (``vocabulary_blocks.init_block``)."""
    rng = np.random.Generator(np.random.PCG64(derive(seed, domains.INIT, index)))
    theta0 = rng.gamma(1.0, 1.0, size=(n_topics, hi - lo))
    return LazyBlock(index, lo, cir_lazy.init(theta0, first_word=lo), 0)


def _check(block: LazyBlock, versions: np.ndarray) -> None:
    if block.version != versions[block.index]:
        raise DscirError(f"lazy block {block.index} is at version {block.version}, the task "
                         f"expected {versions[block.index]}: it was changed in place before "
                         f"this read (a lost result recomputed after a later step)")


def _own(block: LazyBlock, words: np.ndarray) -> np.ndarray:
    """The block's columns of ``words`` (sorted global ids)."""
    width = block.state.log_theta.shape[0]
    a, b = np.searchsorted(words, (block.lo, block.lo + width))
    return np.asarray(words[a:b], np.int64) - block.lo


def touch_block(block: LazyBlock, words: np.ndarray, versions: np.ndarray, beta: float,
                key: int) -> LazyBlock:
    """The block with its columns of ``words`` caught up to the clock (``cir_lazy.touch``)."""
    _check(block, versions)
    state = cir_lazy.touch(block.state, _own(block, words), beta, key)
    return block._replace(state=state, version=block.version + 1)


def block_moments(block: LazyBlock, versions: np.ndarray, beta: float) -> np.ndarray:
    """[3, K]: the block's share of the row moments (``cir_lazy.moments``)."""
    _check(block, versions)
    return cir_lazy.moments(block.state, beta)


def block_summary(block: LazyBlock, versions: np.ndarray,
                  beta: float) -> tuple[np.ndarray, bool, int]:
    """What the driver gathers of a block per iteration: its moments, whether its
    stepped columns are finite, the entries it has visited so far. O(K)."""
    return block_moments(block, versions, beta), block.finite, block.state.entries


def summed_moments(moments: Sequence[np.ndarray]) -> np.ndarray:
    """The blocks' moments added in block order (the same bits in both placements)."""
    out = np.array(moments[0], dtype=np.float64)
    for m in moments[1:]:
        out += m
    return out


def draw_norm(key: int, *moments: np.ndarray) -> np.ndarray:
    """The step's row totals: the ``"draw"`` normaliser of the summed moments."""
    return cir_lazy.normaliser(summed_moments(moments), "draw", key)


def mean_norm(moments: Sequence[np.ndarray]) -> np.ndarray:
    """The kept samples' row totals: the ``"mean"`` normaliser of the summed moments."""
    return cir_lazy.normaliser(summed_moments(moments), "mean")


def lazy_block_columns(block: LazyBlock, words: np.ndarray, versions: np.ndarray,
                       norm: np.ndarray, dtype: str) -> np.ndarray:
    """phi columns of ``words`` (sorted, all in the block, touched at this clock)
    with row totals ``norm``, each rescaled by its maximum, as ``dtype``."""
    _check(block, versions)
    lc = cir_lazy.columns(block.state, np.asarray(words, np.int64) - block.lo, norm)
    return np.exp(lc - lc.max(axis=0, keepdims=True)).astype(dtype)


def sparse_block_counts(block: LazyBlock, words: np.ndarray,
                        results: Sequence[SparseCounts]) -> np.ndarray:
    """int64 [K, u]: the counts of the block's minibatch words ``words`` (sorted
    global ids, the union of the results' words in the block), added exactly."""
    counts = np.zeros((block.state.log_theta.shape[1], words.size), np.int64)
    for r in results:
        a, b = np.searchsorted(r.word_ids, (words[0], words[-1] + 1)) if words.size else (0, 0)
        counts[r.topics[a:b], np.searchsorted(words, r.word_ids[a:b])] += r.values[a:b]
    return counts


def step_counts(block: LazyBlock, versions: np.ndarray, words: np.ndarray, counts: np.ndarray,
                beta: float, factor: float, h: float, key: int) -> LazyBlock:
    """The block after the step over ``h``: its minibatch columns ``words`` (sorted
    global ids) with a_hat = beta + ``counts`` x ``factor``; the others stay lazy."""
    _check(block, versions)
    own = np.asarray(words, np.int64) - block.lo
    state = cir_lazy.step(block.state, own, counts, beta, h, key, factor)
    finite = bool(np.isfinite(state.log_theta[own]).all())
    return block._replace(state=state, version=block.version + 1, finite=finite)


def step_lazy_block(block: LazyBlock, versions: np.ndarray, u: np.ndarray, beta: float,
                    factor: float, h: float, key: int, *results: tuple[SparseCounts, Any]
                    ) -> LazyBlock:
    """``step_counts`` with the counts of the block's words in ``results`` (timed
    Gibbs results routed to it); ``u``: the minibatch's sorted distinct words."""
    words = u[np.searchsorted(u, block.lo):np.searchsorted(u, block.lo + block_width(block))]
    counts = sparse_block_counts(block, words, [r for r, _ in results])
    return step_counts(block, versions, words, counts, beta, factor, h, key)


def block_width(block: LazyBlock) -> int:
    return block.state.log_theta.shape[0]


def keep_lazy_block(block: LazyBlock, versions: np.ndarray, norm: np.ndarray) -> LazyBlock:
    """The block with a kept sample recorded at the clock (``cir_lazy.keep``)."""
    _check(block, versions)
    return block._replace(state=cir_lazy.keep(block.state, norm), version=block.version + 1,
                          task=None)


def lazy_mean_columns(block: LazyBlock, words: np.ndarray | None, versions: np.ndarray,
                      norm: np.ndarray, beta: float) -> np.ndarray:
    """K x len(words) of the kept samples' mean phi (all columns when ``words`` is
    None); before the first keep E[theta | x] / ``norm`` (the summed ``"mean"``
    totals). Read-only."""
    _check(block, versions)
    s = block.state
    own = slice(None) if words is None else np.asarray(words, np.int64) - block.lo
    part = s._replace(log_theta=s.log_theta[own], last=s.last[own],
                      kept=s.kept._replace(at=s.kept.at[own], phi_sum=None if s.kept.phi_sum
                                           is None else s.kept.phi_sum[own]))
    if s.kept.n == 0:
        e = np.exp(-(s.clock - part.last))[:, None]
        return ((beta + (np.exp(part.log_theta) - beta) * e) / norm).T
    return cir_lazy.mean_phi(part, beta)


def lazy_mean_log_columns(block: LazyBlock, words: np.ndarray, versions: np.ndarray,
                          norm: np.ndarray, beta: float) -> np.ndarray:
    """log of ``lazy_mean_columns`` (held-out scoring)."""
    with np.errstate(divide="ignore"):
        return np.log(lazy_mean_columns(block, words, versions, norm, beta))


def lazy_block_outputs(block: LazyBlock, versions: np.ndarray, norm: np.ndarray, beta: float,
                       key: int) -> dict[str, np.ndarray]:
    """The run's K x width arrays of the block: its state realized at the clock on a
    copy (``state/log_theta``; the chain goes on unrealized) and ``phi_mean``."""
    final = cir_lazy.realize(cir_lazy.copy(block.state), beta, key)
    return {"state/log_theta": np.ascontiguousarray(cir_lazy.log_theta_kw(final)),
            "phi_mean": lazy_mean_columns(block, None, versions, norm, beta)}


def packed(block: LazyBlock, versions: np.ndarray) -> dict[str, np.ndarray]:
    """The block's columns for a checkpoint: (2K + 2) x width float64 rows
    [log theta; kept phi sum; realization clock; first pending kept sample]."""
    _check(block, versions)
    s = block.state
    phi_sum = np.zeros_like(s.log_theta) if s.kept.phi_sum is None else s.kept.phi_sum
    rows = np.concatenate([s.log_theta.T, phi_sum.T, s.last[None], s.kept.at[None]], axis=0)
    return {"columns": rows}


def small(block: LazyBlock, versions: np.ndarray) -> dict[str, np.ndarray]:
    """The rest of the block's state (O(K) and the kept history, the same in every block)."""
    _check(block, versions)
    out = cir_lazy.to_arrays(block.state)
    for f in ("log_theta", "last", "kept/at", "kept/phi_sum", "first_word"):
        out.pop(f, None)
    return out


def from_packed(index: int, lo: int, arrays: dict[str, Any], blocks_small: dict[str, Any]
                ) -> LazyBlock:
    """Block ``index`` from its columns of ``lazy/columns`` (a dense part or a
    ``HeldArray`` part read here) and ``blocks_small``: per-block fields stacked
    over blocks (``sums``, ``col_sums``, ``entries``) and the common ones."""
    rows = np.asarray(arrays["lazy/columns"], dtype=np.float64)
    k = (rows.shape[0] - 2) // 2
    fields = {f: (np.asarray(v)[index] if f in ("sums", "col_sums", "entries") else
                  np.array(v)) for f, v in blocks_small.items()}
    fields.update({"log_theta": np.ascontiguousarray(rows[:k].T), "last": rows[2 * k].copy(),
                   "kept/at": rows[2 * k + 1].astype(np.int64), "first_word": np.array(lo)})
    if int(fields["kept/n"]) > 0:
        fields["kept/phi_sum"] = np.ascontiguousarray(rows[k:2 * k].T)
    return LazyBlock(index, lo, cir_lazy.from_arrays(fields), 0)


def spans(bounds: np.ndarray) -> list[tuple[int, int, int]]:
    """(index, lo, hi) of every block of ``bounds``."""
    return [(j, int(bounds[j]), int(bounds[j + 1])) for j in range(len(bounds) - 1)]


PER_BLOCK = ("sums", "col_sums", "entries")


def stack_small(smalls: Sequence[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The blocks' ``small`` fields as checkpoint arrays ``lazy/<field>``: the
    per-block ones stacked in block order, the common ones once."""
    return {f"lazy/{f}": (np.stack([s[f] for s in smalls]) if f in PER_BLOCK else v)
            for f, v in smalls[0].items()}


def check_lazy_arrays(arrays: dict[str, Any]) -> None:
    """One clear error for a checkpoint without the lazy blocks' arrays."""
    if "lazy/columns" not in arrays:
        raise DscirError("this checkpoint has no lazy SCIR blocks (lazy/columns): it was "
                         "written by another dscir or another scir_step; start the fit again")


def lazy_small(arrays: dict[str, Any]) -> dict[str, np.ndarray]:
    """The ``small`` fields (per-block ones stacked) of checkpoint ``arrays``."""
    return {k[5:]: np.asarray(v) for k, v in arrays.items()
            if k.startswith("lazy/") and k != "lazy/columns"}
