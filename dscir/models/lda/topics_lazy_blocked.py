"""LDA's topics in vocabulary blocks on the workers, under the lazy SCIR step.

``LazyWorkerTopics`` is the ``topics.TopicState`` of ``scir_step="lazy"`` with
``placement="workers"``: the blocks of ``lazy_blocks`` held by the workers
(``dscir.engine.blocks``), the same functions as the driver placement
(``topics_lazy.LazyDriverTopics``) run as tasks, so the two run one chain bit
for bit. Iteration ``m`` (key ``derive(seed, SAMPLER, m)``), with no round
trip before the one that ends it:

1. the blocks holding the minibatch's U words touch them (catch-up, O(K x
   their words)); each touched block's moments (O(K)) and the moments the
   driver gathered last round for the others go to one ``lazy-norm`` task
   (the ``"draw"`` normaliser, summed in block order);
2. the columns are cut where the blocks live with that normaliser (a future)
   and the Gibbs tasks run as in ``WorkerTopics``;
3. every block steps: its words of U with their counts (from the routed
   ``SparseCounts``, K x its words, never K x width), the others by O(K)
   bookkeeping; the driver gathers every block's moments, finiteness and cost
   counter with the Gibbs tasks' tokens in one round.

A kept sample is recorded on every block with the ``"mean"`` normaliser the
driver forms from the gathered moments. Readers of a block always run before
the task that changes it in place: the Gibbs tasks its step takes depend on
its cut pieces and, through the normaliser, on its moments (the version check
in ``lazy_blocks`` makes any other order an error). Checkpoints: the blocks
write ``lazy/columns`` from the workers; the driver writes the O(K) per block
fields. Exactly what is approximated is docs/lazy_scir.md's: the row totals.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from dscir.rng import domains
from dscir.models.lda.lazy_blocks import (
    block_summary, check_lazy_arrays, draw_norm, from_packed, keep_lazy_block,
    lazy_block_columns, lazy_block_outputs, lazy_mean_columns, lazy_mean_log_columns,
    lazy_small, mean_norm, packed, small, stack_small, start_lazy_block, step_lazy_block,
    summed_moments, touch_block)
from dscir.models.lda.topics_blocked import COLUMN_DTYPE, WorkerTopics, vocabulary_blocks_on
from dscir.models.lda.topics_lazy import minibatch_words
from dscir.models.lda.vocabulary_blocks import gibbs_summary
from dscir.rng import derive


def block_moments_of(block, versions: np.ndarray, beta: float) -> np.ndarray:
    """A touched block's moments (``block_summary``'s first value)."""
    return block_summary(block, versions, beta)[0]


class LazyWorkerTopics:
    """Lazy SCIR blocks held by the workers; the driver keeps their O(K) moments.
    The Gibbs tasks are ``WorkerTopics.gibbs``'s (columns cut once per worker)."""

    placement: ClassVar[str] = "workers"
    kept_rows: ClassVar[tuple[str, ...]] = ()

    def __init__(self, config, n_words: int, sampler, kernel: str, executor):
        self.config, self.sampler, self.kernel = config, sampler, kernel
        self.n_words, self.n_samples, self.iteration = n_words, 0, 0
        self.blocks = vocabulary_blocks_on(executor, config, n_words)
        self.blocks.start("lazy-block-init", start_lazy_block, config.seed, config.n_topics)
        self.versions = np.zeros(self.blocks.n_blocks, np.int64)
        self._u, self._m = np.zeros(0, np.int64), 0
        self.normalise()

    def normalise(self, extra=()) -> list[Any]:
        """Gather every block's moments, finiteness and cost with ``extra`` timed
        futures in one round; returns the values of ``extra``."""
        out, values = self.blocks.summarise("lazy-block-moments", block_summary,
                                            self.versions.copy(), self.config.beta,
                                            extra=extra)
        self.moments = [o[0] for o in out]
        self._finite = all(o[1] for o in out)
        self._entries = int(sum(o[2] for o in out))
        self.norm = mean_norm(self.moments)  # the kept samples' and the readers' totals
        return values

    def _key(self, m: int) -> int:
        return derive(self.config.seed, domains.SAMPLER, m)

    def gibbs(self, executor, m: int, parts, words, local=None) -> list[Any]:
        self._m = m
        return WorkerTopics.gibbs(self, executor, m, parts, words, local)

    def columns(self, words, near=None) -> list[Any]:
        """Futures of the phi columns of each ``words``: the minibatch's blocks
        touched, the ``"draw"`` normaliser from their moments, the columns cut."""
        beta, key, ex = self.config.beta, self._key(self._m), self.blocks.executor
        self._u = minibatch_words(words)
        touched = self.blocks.update_holding("lazy-touch", touch_block, self._u,
                                             self.versions.copy(), beta, key)
        self.versions[touched] += 1
        fresh = dict(zip(touched, self.blocks.each("lazy-moments", touched, block_moments_of,
                                                   self.versions.copy(), beta)))
        moments = [fresh.get(b, m) for b, m in enumerate(self.moments)]
        norm = ex.submit("lazy-norm", draw_norm, key, *moments)
        return self.blocks.cut("lazy-columns", lazy_block_columns, words,
                               (self.versions.copy(), norm, COLUMN_DTYPE), near)

    def step(self, executor, m: int, gibbs: list[Any], words, scale: float,
             h: float) -> dict[str, Any]:
        """Every block's step with the counts of its words, then the blocks' moments
        and the Gibbs tasks' tokens gathered in one round."""
        cfg = self.config
        factor = scale / (cfg.sweeps - cfg.sweeps // 2)
        args = (self.versions.copy(), self._u, cfg.beta, factor, h, self._key(m))
        self.blocks.update("lazy-block-step", step_lazy_block, args,
                           self.blocks.route(gibbs, words))
        self.versions += 1
        self.iteration = m
        summaries = [executor.submit("gibbs-summary", gibbs_summary, g, j=j)
                     for j, g in enumerate(gibbs)]
        n_tokens = int(sum(self.normalise(summaries)))
        return {"n_tokens": n_tokens, "lazy_entries": self.entries()}

    def finite(self) -> bool:
        return bool(self._finite and np.isfinite(summed_moments(self.moments)).all())

    def entries(self) -> int:
        """State entries visited so far, all blocks, as of the last step (the cost
        counter; ``lazy_entries`` in the run's history)."""
        return self._entries

    def keep(self) -> dict[str, np.ndarray]:
        self.blocks.map("lazy-block-keep", keep_lazy_block, self.versions.copy(), self.norm)
        self.versions += 1
        self.n_samples += 1
        return {}

    def mean_log_columns(self, words) -> list[Any]:
        return self.blocks.cut("lazy-mean-columns", lazy_mean_log_columns, words,
                               (self.versions.copy(), self.norm, self.config.beta))

    def _gathered(self, fn, *args) -> list[Any]:
        return self.blocks.gather("lazy-block-read", fn, self.versions.copy(), *args)

    def mean_phi(self) -> np.ndarray:
        return np.concatenate(self._gathered(lazy_mean_columns_all, self.norm,
                                             self.config.beta, self.n_samples), axis=1)

    def log_phi(self) -> np.ndarray:
        """log of the current phi's conditional mean (as the driver placement's)."""
        with np.errstate(divide="ignore"):
            return np.log(np.concatenate(self._gathered(
                lazy_mean_columns_all, self.norm, self.config.beta, 0), axis=1))

    def arrays(self) -> dict[str, np.ndarray]:
        """The driver's part of a checkpoint: the blocks' O(K) fields."""
        return {**stack_small(self._gathered(small)),
                "lazy_iteration": np.array(self.iteration, np.int64)}

    def state_arrays(self) -> dict[str, np.ndarray]:
        """The whole state as the driver placement's ``arrays`` (gathered: O(K W))."""
        cols = [p["columns"] for p in self._gathered(packed)]
        return {"lazy/columns": np.concatenate(cols, axis=1), **self.arrays()}

    def held(self) -> HeldLazyBlocks:
        return HeldLazyBlocks(self, self.n_samples, self.arrays())

    def restore(self, arrays: dict[str, Any], n_samples: int) -> None:
        """Blocks from a checkpoint: their columns read on the workers (``HeldArray``
        parts) or carried, the O(K) fields from the driver."""
        check_lazy_arrays(arrays)
        self.blocks.load("lazy-block-load", from_packed,
                         {"lazy/columns": arrays["lazy/columns"]}, lazy_small(arrays))
        self.versions[:] = 0
        self.iteration = int(np.asarray(arrays["lazy_iteration"]))
        self.n_samples = int(n_samples)
        self.normalise()

    def _outputs_args(self) -> tuple:
        key = derive(self.config.seed, domains.SAMPLER, self.iteration, 1)
        return self.versions.copy(), self.norm, self.config.beta, key

    def write_run_arrays(self, root: str) -> dict[str, np.ndarray]:
        """Write ``state/log_theta`` (realized on copies) and ``phi_mean`` from the workers."""
        self.blocks.write("lazy-block-write", root, {"state/log_theta": "state/log_theta",
                                                     "phi_mean": "phi_mean"},
                          self.config.n_topics, lazy_block_outputs, *self._outputs_args())
        return {}

    def run_arrays(self) -> dict[str, np.ndarray]:
        outs = self.blocks.gather("lazy-block-output", lazy_block_outputs,
                                  *self._outputs_args())
        return {k: np.concatenate([o[k] for o in outs], axis=1) for k in outs[0]}


def lazy_mean_columns_all(block, versions: np.ndarray, norm: np.ndarray, beta: float,
                          n_samples: int) -> np.ndarray:
    """All the block's columns of the kept mean phi, or with ``n_samples`` 0 of the
    current phi's conditional mean."""
    s = block.state if n_samples else block.state._replace(
        kept=block.state.kept._replace(n=0))
    return lazy_mean_columns(block._replace(state=s), None, versions, norm, beta)


class HeldLazyBlocks:
    """A checkpoint's ``lazy/columns`` as the blocks hold them (``HeldState``): each
    block writes its own columns; once in place the blocks restart from it."""

    names = ["lazy/columns"]

    def __init__(self, topics: LazyWorkerTopics, n_samples: int, small_arrays: dict):
        self.topics, self.n_samples, self.small = topics, n_samples, small_arrays

    def write(self, group: str) -> None:
        k = self.topics.config.n_topics
        self.topics.blocks.write("lazy-block-write", group, {"columns": "state/lazy/columns"},
                                 2 * k + 2, packed, self.topics.versions.copy())

    def restart(self, arrays: dict[str, Any]) -> None:
        self.topics.restore({**self.small, **arrays}, self.n_samples)
