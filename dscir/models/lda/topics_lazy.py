"""LDA's topics on the driver with the lazy SCIR step: an iteration costs O(K x U + K).

``LazyDriverTopics`` is the ``topics.TopicState`` of ``scir_step="lazy"`` with
the topics on the driver (docs/lazy_scir.md, "Wiring it into the LDA model").
The topics are the vocabulary blocks of the workers placement
(``lazy_blocks``), stepped here in a loop by the same functions, so the two
placements run one chain bit for bit. Iteration ``m`` with key
``derive(seed, SAMPLER, m)``: the minibatch's U distinct words (the union of
the parts' words) catch up to the clock (``touch_block``), the row totals are
the ``"draw"`` normaliser of the blocks' moments summed in block order, each
part gets its columns (log phi rescaled per column, as
``kernels.phi_columns``, float32 as on the wire), the tasks' integer counts
are added into K x U (exact in any order) and every block steps (its U
columns with a_hat = beta + counts x D / |S| / n_kept, the others by O(K)
bookkeeping). No K x W array is made per iteration: a kept sample is recorded
with the ``"mean"`` normaliser (its phi added to each column in closed form
when the column is next touched), so the run keeps no ``samples/phi`` rows,
only their mean (``phi_mean``). Checkpoints hold the unrealized state
(``lazy_blocks.packed``/``small``), so the chain does not depend on when they
are written; the run's final ``state/log_theta`` is realized on a copy.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from dscir.rng import domains
from dscir.models.column_blocks import block_bounds, columns_by_block, join_columns
from dscir.models.lda.lazy_blocks import (
    block_moments, check_lazy_arrays, draw_norm, from_packed, keep_lazy_block,
    lazy_block_columns, lazy_block_outputs, lazy_mean_columns, lazy_small, mean_norm, packed,
    small, spans, stack_small, start_lazy_block, step_counts, summed_moments, touch_block)
from dscir.models.lda.tasks import gibbs_sparse_counts
from dscir.models.lda.topics_blocked import COLUMN_DTYPE
from dscir.models.lda.warm import warm_gibbs_counts
from dscir.rng import derive


def minibatch_words(words) -> np.ndarray:
    """U: the sorted distinct words of the whole minibatch (the parts' union)."""
    if not len(words):
        return np.zeros(0, np.int64)
    return np.unique(np.concatenate([np.asarray(w, np.int64) for w in words]))


def add_counts_u(counts: np.ndarray, u: np.ndarray, results: list[Any]) -> np.ndarray:
    """Add tasks' integer counts (dense ``GibbsResult`` or ``SparseCounts``) into
    the K x U total of the minibatch's words ``u`` (exact in any order)."""
    for r in results:
        if hasattr(r, "topic_word"):
            counts[:, np.searchsorted(u, r.words)] += r.topic_word
        else:
            counts[r.topics, np.searchsorted(u, r.word_ids)] += r.values
    return counts


class LazyDriverTopics:
    """LDA's topics as lazy SCIR blocks (``lazy_blocks.LazyBlock``) on the driver."""

    placement: ClassVar[str] = "driver"
    kept_rows: ClassVar[tuple[str, ...]] = ()  # a K x W row per kept sample would be O(K W)

    def __init__(self, config, n_words: int, sampler, kernel: str, executor=None):
        self.config, self.kernel = config, kernel
        self.bounds = block_bounds(config.n_topics, n_words, config.block_entries)
        self.blocks = [start_lazy_block(j, lo, hi, config.seed, config.n_topics)
                       for j, lo, hi in spans(self.bounds)]
        self.versions = np.zeros(len(self.blocks), np.int64)
        self.n_samples = 0
        self.iteration = 0  # the last iteration stepped (names the final realization's streams)
        self._u = np.zeros(0, np.int64)

    def _key(self, m: int) -> int:
        return derive(self.config.seed, domains.SAMPLER, m)

    def _moments(self) -> list[np.ndarray]:
        return [block_moments(b, self.versions, self.config.beta) for b in self.blocks]

    def columns(self, words, near=None, m: int = 0) -> list[np.ndarray]:
        """Iteration ``m``'s phi columns of each part's ``words``: the minibatch's
        columns caught up to the clock, row totals by the ``"draw"`` normaliser."""
        beta, key = self.config.beta, self._key(m)
        self._u = minibatch_words(words)
        for b, _ in columns_by_block(self._u, self.bounds):
            self.blocks[b] = touch_block(self.blocks[b], self._u, self.versions, beta, key)
            self.versions[b] += 1
        norm = draw_norm(key, *self._moments())
        out = []
        for w in words:
            held = columns_by_block(np.asarray(w, np.int64), self.bounds)
            out.append(join_columns(*[lazy_block_columns(self.blocks[b], part, self.versions,
                                                         norm, COLUMN_DTYPE)
                                      for b, part in held]))
        return out

    def gibbs(self, executor, m: int, parts, words, local=None) -> list[Any]:
        cfg = self.config
        key = derive(cfg.seed, domains.GIBBS)
        cols = self.columns(words, m=m)
        if cfg.warm_start:
            args = [(c, cfg.alpha, cfg.sweeps, cfg.burn, key, m, False) for c in cols]
            return executor.run("gibbs", warm_gibbs_counts, parts, args, local=local)
        args = [(c, cfg.alpha, cfg.sweeps, key, m, self.kernel) for c in cols]
        return executor.run("gibbs", gibbs_sparse_counts, parts, args)

    def step(self, executor, m: int, results: list[Any], words, scale: float,
             h: float) -> dict[str, Any]:
        """Every block's step, its columns of U with their K x U counts."""
        cfg, u = self.config, self._u
        counts = add_counts_u(np.zeros((cfg.n_topics, u.size), np.int64), u, results)
        cuts = np.searchsorted(u, self.bounds)
        factor, key = scale / results[0].n_kept, self._key(m)
        for b in range(len(self.blocks)):
            lo, hi = cuts[b], cuts[b + 1]
            self.blocks[b] = step_counts(self.blocks[b], self.versions, u[lo:hi],
                                         np.ascontiguousarray(counts[:, lo:hi]), cfg.beta,
                                         factor, h, key)
        self.versions += 1
        self.iteration = m
        return {"n_tokens": int(sum(r.n_tokens for r in results)), "lazy_entries": self.entries()}

    def finite(self) -> bool:
        """The stepped columns and the row moments: O(K U), not O(K W)."""
        return bool(all(b.finite for b in self.blocks)
                    and np.isfinite(summed_moments(self._moments())).all())

    def entries(self) -> int:
        """State entries visited so far, all blocks (the cost counter; ``lazy_entries``
        in the run's history)."""
        return int(sum(b.state.entries for b in self.blocks))

    def keep(self) -> dict[str, np.ndarray]:
        norm = mean_norm(self._moments())
        for b in range(len(self.blocks)):
            self.blocks[b] = keep_lazy_block(self.blocks[b], self.versions, norm)
        self.versions += 1
        self.n_samples += 1
        return {}

    def _mean(self, n_samples: int) -> np.ndarray:
        norm = mean_norm(self._moments())
        parts = []
        for b in self.blocks:
            s = b.state if n_samples else b.state._replace(kept=b.state.kept._replace(n=0))
            parts.append(lazy_mean_columns(b._replace(state=s), None, self.versions, norm,
                                           self.config.beta))
        return np.concatenate(parts, axis=1)

    def log_phi(self) -> np.ndarray:
        """log of the current phi's conditional mean, E[theta | x] / E[R | x] (O(K W);
        read-only: a sample would need the columns realized)."""
        with np.errstate(divide="ignore"):
            return np.log(self._mean(0))

    def mean_phi(self) -> np.ndarray:
        """The kept samples' mean phi (before the first keep: ``exp(log_phi())``)."""
        return self._mean(self.n_samples)

    def mean_log_columns(self, words) -> list[np.ndarray]:
        with np.errstate(divide="ignore"):
            lphi = np.log(self.mean_phi())
        return [np.ascontiguousarray(lphi[:, w]) for w in words]

    def arrays(self) -> dict[str, np.ndarray]:
        """The whole state: ``lazy/columns`` and the blocks' small fields."""
        cols = [packed(b, self.versions)["columns"] for b in self.blocks]
        return {"lazy/columns": np.concatenate(cols, axis=1),
                **stack_small([small(b, self.versions) for b in self.blocks]),
                "lazy_iteration": np.array(self.iteration, np.int64)}

    def state_arrays(self) -> dict[str, np.ndarray]:
        """The whole state as arrays (``arrays``; the workers placement gathers them)."""
        return self.arrays()

    def held(self) -> None:
        return None

    def restore(self, arrays: dict[str, Any], n_samples: int) -> None:
        check_lazy_arrays(arrays)
        fields = lazy_small(arrays)
        self.blocks = [from_packed(j, lo, {"lazy/columns": np.asarray(
            arrays["lazy/columns"])[:, lo:hi]}, fields) for j, lo, hi in spans(self.bounds)]
        self.versions[:] = 0
        self.iteration = int(np.asarray(arrays["lazy_iteration"]))
        self.n_samples = int(n_samples)

    def run_arrays(self) -> dict[str, np.ndarray]:
        """The final state realized at the clock on a copy (the chain goes on from
        the unrealized one) and the kept mean."""
        key = derive(self.config.seed, domains.SAMPLER, self.iteration, 1)
        norm = mean_norm(self._moments())
        outs = [lazy_block_outputs(b, self.versions, norm, self.config.beta, key)
                for b in self.blocks]
        return {k: np.concatenate([o[k] for o in outs], axis=1) for k in outs[0]}

    def write_run_arrays(self, root: str) -> dict[str, np.ndarray]:
        """The run's arrays, for the driver to write."""
        return self.run_arrays()
