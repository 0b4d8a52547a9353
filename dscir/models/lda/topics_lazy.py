"""LDA's topics under the lazy SCIR step: one class on either form of the engine's blocks.

``LazyTopics`` is the ``topics.TopicState`` of ``scir_step="lazy"``
(docs/lazy_scir.md, "Wiring it into the LDA model"). Its topics are the
vocabulary blocks of ``lazy_blocks`` held in the form the resolved placement
gives (``dscir.engine.blocks.blocks_for``): plain values in this process
(``placement="driver"``) or futures held by the workers (``"workers"``). The
same block functions run on either, in the same order, so the two placements
run one chain bit for bit, on any number of workers. Iteration ``m`` (key
``derive(seed, SAMPLER, m)``), with no round trip before the one that ends it:

1. the blocks holding the minibatch's U distinct words (the union of the
   parts' words) touch them (catch-up, O(K x their words)); each touched
   block's moments (O(K)) and those gathered last round for the others go to
   one ``lazy-norm`` task (the ``"draw"`` normaliser, summed in block order);
2. each part gets its phi columns with that normaliser (log phi rescaled per
   column, as ``gibbs.phi_columns``, float32 as on the wire): cut where the
   blocks live. In this process they go to the executor's Gibbs tasks (warm
   starts too); on the workers they are cut once per worker and met by its
   parts' tasks there (``topics.gibbs_on_workers``, as the dense topics');
3. every block steps: its words of U with their integer counts (from the
   ``SparseCounts`` routed to it, exact in any order) and a_hat = beta +
   counts x D / |S| / n_kept, the others by O(K) bookkeeping; every block's
   moments, finiteness and cost counter are gathered with the tasks' tokens in
   one round.

No K x W array is made per iteration: a kept sample is recorded on every block
with the ``"mean"`` normaliser of the gathered moments (its phi added to each
column in closed form when the column is next touched), so the run keeps no
``samples/phi`` rows, only their mean (``phi_mean``). Readers of a block run
before the task that changes it in place (the version check in ``lazy_blocks``
makes any other order an error). Checkpoints hold the unrealized state
(``lazy_blocks.packed``/``small``), so the chain does not depend on when they
are written; the run's final ``state/log_theta`` is realized on a copy. Where
the K x W arrays are written is the one difference of the forms, about
memory: in this process the driver writes them (``arrays``,
``write_run_arrays`` return them); on the workers the blocks write their own
columns (``held``, ``write_run_arrays``) and the driver only the O(K) fields.
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
from dscir.models.lda.tasks import gibbs_sparse_counts
from dscir.models.lda.topics import (
    COLUMN_DTYPE, gibbs_on_workers, kept_sweeps, untimed_counts, vocabulary_blocks_on)
from dscir.models.lda.vocabulary_blocks import gibbs_summary
from dscir.models.lda.warm import warm_gibbs_counts
from dscir.rng import derive


def minibatch_words(words) -> np.ndarray:
    """U: the sorted distinct words of the whole minibatch (the parts' union)."""
    if not len(words):
        return np.zeros(0, np.int64)
    return np.unique(np.concatenate([np.asarray(w, np.int64) for w in words]))


def block_moments_of(block, versions: np.ndarray, beta: float) -> np.ndarray:
    """A touched block's moments (``block_summary``'s first value)."""
    return block_summary(block, versions, beta)[0]


def lazy_mean_columns_all(block, versions: np.ndarray, norm: np.ndarray, beta: float,
                          n_samples: int) -> np.ndarray:
    """All the block's columns of the kept mean phi, or with ``n_samples`` 0 of the
    current phi's conditional mean."""
    s = block.state if n_samples else block.state._replace(
        kept=block.state.kept._replace(n=0))
    return lazy_mean_columns(block._replace(state=s), None, versions, norm, beta)


class LazyTopics:
    """LDA's topics as lazy SCIR blocks (``lazy_blocks.LazyBlock``) held where
    ``placement`` says; the driver keeps their O(K) moments."""

    placement: str = "driver"  # this instance's: "driver" or "workers"
    kept_rows: ClassVar[tuple[str, ...]] = ()  # a K x W row per kept sample would be O(K W)

    def __init__(self, config, n_words: int, sampler, kernel: str, executor,
                 placement: str = "driver"):
        self.config, self.sampler, self.kernel = config, sampler, kernel
        self.n_words, self.n_samples, self.iteration = n_words, 0, 0
        self.placement = placement
        self.blocks = vocabulary_blocks_on(executor, config, n_words, placement)
        self.blocks.start("lazy-block-init", start_lazy_block, config.seed, config.n_topics)
        self.versions = np.zeros(self.blocks.n_blocks, np.int64)
        self._u, self._m = np.zeros(0, np.int64), 0
        self.normalise()

    def normalise(self, extra=()) -> list[Any]:
        """Gather every block's moments, finiteness and cost with ``extra`` timed
        results in one round; returns the values of ``extra``."""
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

    def columns(self, words, near=None, m: int | None = None) -> list[Any]:
        """The phi columns of each ``words`` (iteration ``m``, default the one
        ``gibbs`` runs): the minibatch's blocks touched, the ``"draw"`` normaliser
        from their moments, the columns cut (futures on the workers)."""
        if m is not None:
            self._m = m
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

    def gibbs(self, executor, m: int, parts, words, local=None) -> list[Any]:
        """The parts' Gibbs tasks, as ``(SparseCounts, TaskTime)`` results (futures on
        the workers, where the columns are cut once per worker)."""
        self._m = m
        if not self.blocks.in_process:
            return gibbs_on_workers(self, executor, m, parts, words)
        cfg = self.config
        key = derive(cfg.seed, domains.GIBBS)
        cols = self.columns(words)
        if cfg.warm_start:
            args = [(c, cfg.alpha, cfg.sweeps, cfg.burn, key, m, False) for c in cols]
            results = executor.run("gibbs", warm_gibbs_counts, parts, args, local=local)
        else:
            args = [(c, cfg.alpha, cfg.sweeps, key, m, self.kernel) for c in cols]
            results = executor.run("gibbs", gibbs_sparse_counts, parts, args)
        return [untimed_counts(r) for r in results]

    def step(self, executor, m: int, gibbs: list[Any], words, scale: float,
             h: float) -> dict[str, Any]:
        """Every block's step with the counts of its words, then the blocks' moments
        and the Gibbs tasks' tokens gathered in one round."""
        cfg = self.config
        factor = scale / kept_sweeps(cfg)
        args = (self.versions.copy(), self._u, cfg.beta, factor, h, self._key(m))
        self.blocks.update("lazy-block-step", step_lazy_block, args,
                           self.blocks.route(gibbs, words))
        self.versions += 1
        self.iteration = m
        summaries = [self.blocks.executor.submit("gibbs-summary", gibbs_summary, g, j=j)
                     for j, g in enumerate(gibbs)]
        n_tokens = int(sum(self.normalise(summaries)))
        return {"n_tokens": n_tokens, "lazy_entries": self.entries()}

    def finite(self) -> bool:
        """The stepped columns and the row moments, as gathered after the last step:
        O(K U), not O(K W)."""
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
        """The kept samples' mean phi (before the first keep: ``exp(log_phi())``)."""
        return np.concatenate(self._gathered(lazy_mean_columns_all, self.norm,
                                             self.config.beta, self.n_samples), axis=1)

    def log_phi(self) -> np.ndarray:
        """log of the current phi's conditional mean, E[theta | x] / E[R | x] (O(K W);
        read-only: a sample would need the columns realized)."""
        with np.errstate(divide="ignore"):
            return np.log(np.concatenate(self._gathered(
                lazy_mean_columns_all, self.norm, self.config.beta, 0), axis=1))

    def _small_arrays(self) -> dict[str, np.ndarray]:
        return {**stack_small(self._gathered(small)),
                "lazy_iteration": np.array(self.iteration, np.int64)}

    def state_arrays(self) -> dict[str, np.ndarray]:
        """The whole state as arrays: ``lazy/columns`` (gathered from the workers:
        O(K W)) and the blocks' small fields."""
        cols = [p["columns"] for p in self._gathered(packed)]
        return {"lazy/columns": np.concatenate(cols, axis=1), **self._small_arrays()}

    def arrays(self) -> dict[str, np.ndarray]:
        """The driver's part of a checkpoint: in this process the whole state
        (``state_arrays``); on the workers the blocks' O(K) fields (they write
        their columns themselves, ``held``)."""
        return self.state_arrays() if self.blocks.in_process else self._small_arrays()

    def held(self) -> HeldLazyBlocks | None:
        if self.blocks.in_process:
            return None
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

    def run_arrays(self) -> dict[str, np.ndarray]:
        """The final state realized at the clock on a copy (the chain goes on from
        the unrealized one) and the kept mean."""
        outs = self.blocks.gather("lazy-block-output", lazy_block_outputs,
                                  *self._outputs_args())
        return {k: np.concatenate([o[k] for o in outs], axis=1) for k in outs[0]}

    def write_run_arrays(self, root: str) -> dict[str, np.ndarray]:
        """The run's arrays: in this process returned for the driver to write; on the
        workers ``state/log_theta`` (realized on copies) and ``phi_mean`` written
        from the blocks, nothing returned."""
        if self.blocks.in_process:
            return self.run_arrays()
        self.blocks.write("lazy-block-write", root, {"state/log_theta": "state/log_theta",
                                                     "phi_mean": "phi_mean"},
                          self.config.n_topics, lazy_block_outputs, *self._outputs_args())
        return {}


class HeldLazyBlocks:
    """A checkpoint's ``lazy/columns`` as the workers' blocks hold them
    (``HeldState``): each block writes its own columns; once in place the blocks
    restart from it."""

    names = ["lazy/columns"]

    def __init__(self, topics: LazyTopics, n_samples: int, small_arrays: dict):
        self.topics, self.n_samples, self.small = topics, n_samples, small_arrays

    def write(self, group: str) -> None:
        k = self.topics.config.n_topics
        self.topics.blocks.write("lazy-block-write", group, {"columns": "state/lazy/columns"},
                                 2 * k + 2, packed, self.topics.versions.copy())

    def restart(self, arrays: dict[str, Any]) -> None:
        self.topics.restore({**self.small, **arrays}, self.n_samples)
