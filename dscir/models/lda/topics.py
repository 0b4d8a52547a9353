"""LDA's dense topics: one class on either form of the engine's blocks.

``TopicState`` is what ``model.LDAModel`` asks of its topics; ``Topics`` is
the one of the dense step (``LazyTopics`` the lazy SCIR step's). Its sampler
state (momenta too) is cut into vocabulary blocks (``vocabulary_blocks``: the
block functions, run where a block lives) held in the form the resolved
placement gives (``dscir.engine.blocks.blocks_for``): plain values in this
process (``placement="driver"``) or futures held by the workers
(``"workers"``). The same block functions run on either, in the same order,
so the two placements run one chain bit for bit, on any number of workers;
the driver keeps the row normalisers (O(K) per block).

Iteration ``m``: each part gets the phi columns of its words (normalised by
the driver's row values, rescaled per column as ``phi_columns`` does, which
leaves the Gibbs conditional unchanged and keeps beta = 1e-4 topics from
underflowing; float32 as on the wire), cut where the blocks live. In this
process they go to the executor's Gibbs tasks (warm starts too: with
``warm_start`` each document starts from its assignments at its last visit,
``dscir.models.lda.warm``); on the workers every block holding words of the
parts a worker holds cuts them there and one task joins them on that worker.
A Gibbs task's nonzero integer counts (``SparseCounts``) go to the blocks
holding their words; block b adds its own exactly (in any order) and steps
with a_hat = beta + counts x D / |S| / n_kept and the stream (seed, SAMPLER,
m, b). The samplers whose step reads the rows' totals (all but SCIR) get them
from one ``row-totals`` task over all the minibatch's counts (O(K)) and the
driver's normalisers. With ``control_variates`` (this process only) a_hat is
``vocabulary_blocks.control_variate``'s estimate from the stored assignments'
counts each block keeps. Block b starts from Gamma(1, 1) draws of the stream
(seed, INIT, b).

Where the K x W arrays go is the one difference of the forms, about memory:
in this process a kept sample is also a ``samples/phi`` row and the driver
writes the checkpoint's and the run's arrays (``arrays``,
``write_run_arrays`` return them); on the workers each block sums its kept
phi and writes its own columns (``held``: into the checkpoint before it is
renamed into place, the blocks then restarting from it, which bounds the
lineage Dask keeps to rebuild a lost block; ``write_run_arrays``,
``write_mean``), and the driver builds dense K x W arrays only where a caller
asks for ``log_phi``/``mean_phi``/``run_arrays``.
"""

from __future__ import annotations

import functools
from typing import Any, Protocol

import numpy as np

from dscir.models.column_blocks import combine
from dscir.models.lda.tasks import gibbs_sparse_counts, sparse_counts
from dscir.models.lda.vocabulary_blocks import (
    block_arrays, block_columns, block_from_arrays, block_lse, block_mean_log_columns,
    block_output, block_outputs, block_stored, cv_summary, gibbs_from_columns, gibbs_summary,
    init_block, keep_block, row_totals, start_block, step_block, step_block_cv)
from dscir.models.lda.warm import warm_gibbs_counts
from dscir.models.placement import held_blocks
from dscir.rng import derive, domains

#: The dtype of phi columns (tests/models/lda/test_blocked.py: the counts of a batch
#: are the same under float32 and float64 columns).
COLUMN_DTYPE = "float32"


class TopicState(Protocol):
    """LDA's topics as the model sees them, wherever they live.

    Built as ``cls(config, n_words, sampler, kernel, executor, placement)`` (the
    sampler and the Gibbs kernel resolved once, by the model; the placement
    resolved). ``executor`` arguments run tasks (``dscir.models.base.Executor``);
    columns and Gibbs results are arrays on the driver or futures on the
    workers, as the state keeps them.
    """

    placement: str  # "driver" or "workers"
    kept_rows: tuple[str, ...]  # the run's samples/ arrays a kept sample adds to
    n_samples: int  # kept samples in the running mean

    def columns(self, words, near=None) -> list[Any]:
        """The phi columns of each ``words`` (sorted), rescaled per column."""

    def gibbs(self, executor, m: int, parts, words, local=None) -> list[Any]:
        """Iteration ``m``'s Gibbs tasks of ``parts`` on these topics' columns."""

    def step(self, executor, m: int, results: list[Any], words, scale: float,
             h: float) -> dict[str, Any]:
        """The sampler step of step size ``h`` from the tasks' counts x ``scale``
        (D / |S|); returns the iteration's statistics (``n_tokens``, ...)."""

    def finite(self) -> bool:
        """Whether the topics are still finite numbers."""

    def keep(self) -> dict[str, np.ndarray]:
        """Add the current phi to the running mean; the rows of ``kept_rows``."""

    def mean_log_columns(self, words) -> list[Any]:
        """The log columns of the kept samples' mean phi (held-out scoring)."""

    def log_phi(self) -> np.ndarray: ...

    def mean_phi(self) -> np.ndarray: ...

    def arrays(self) -> dict[str, np.ndarray]:
        """The checkpoint arrays the driver writes."""

    def held(self) -> Any | None:
        """The checkpoint arrays their holders write (``runs.checkpoint.HeldState``)."""

    def restore(self, arrays: dict[str, Any], n_samples: int) -> None: ...

    def run_arrays(self) -> dict[str, np.ndarray]: ...

    def write_run_arrays(self, root: str) -> dict[str, np.ndarray]: ...


def by_holder(holders: list[str | None]) -> list[list[int]]:
    """Part indices grouped by the worker holding them (in order of first
    appearance); a part whose holder is unknown is a group of its own."""
    groups: dict[Any, list[int]] = {}
    for j, h in enumerate(holders):
        groups.setdefault(h if h is not None else ("part", j), []).append(j)
    return list(groups.values())


def vocabulary_blocks_on(executor, config, n_words: int, placement: str):
    """The topics' K x W blocks for ``placement`` from the executor (the engine's
    ``blocks_for``), or the error of an executor without workers to hold them."""
    return held_blocks(executor, placement, config.n_topics, n_words, config.block_entries,
                       "the topics")


def kept_sweeps(config) -> int:
    """n_kept: the sweeps a Gibbs task counts of a visit (after ``config.burn`` with
    warm starts, after the kernels' own ``sweeps // 2`` otherwise)."""
    return config.sweeps - (config.burn if config.warm_start else config.sweeps // 2)


def untimed_counts(result) -> tuple[Any, None]:
    """A Gibbs task's result run by the executor (``SparseCounts``, or the dense
    counts of a warm start made sparse, exactly) as a block step takes it."""
    return (sparse_counts(result) if hasattr(result, "topic_word") else result), None


def gibbs_on_workers(topics, executor, m: int, parts, words) -> list[Any]:
    """Futures of the parts' Gibbs tasks (timed ``SparseCounts``) on blocks held by
    the workers: each given the columns ``topics.columns`` cut once for the
    worker holding it; the results stay there."""
    cfg = topics.config
    holders = executor.holders(parts.batches)
    groups = by_holder(holders)
    cut = [np.unique(np.concatenate([words[j] for j in g])) for g in groups]
    cols = topics.columns(cut, [holders[g[0]] for g in groups])
    group = {j: i for i, g in enumerate(groups) for j in g}
    key = derive(cfg.seed, domains.GIBBS)
    return [executor.submit("gibbs", gibbs_from_columns, b, w, cut[group[j]],
                            cols[group[j]], cfg.alpha, cfg.sweeps, key, m, topics.kernel,
                            j=j, timed=True)
            for j, (b, w) in enumerate(zip(parts.batches, parts.words))]


class Topics:
    """LDA's dense topics (sampler state, kept-phi sum, with control variates the
    stored counts) in vocabulary blocks held where ``placement`` says; the
    driver holds the row normalisers ``norm``."""

    placement: str = "driver"  # this instance's: "driver" or "workers"

    def __init__(self, config, n_words: int, sampler, kernel: str, executor,
                 placement: str = "driver"):
        self.config, self.sampler, self.kernel = config, sampler, kernel
        self.n_words, self.n_samples, self.placement = n_words, 0, placement
        self.blocks = vocabulary_blocks_on(executor, config, n_words, placement)
        # A K x W row per kept sample only where the driver holds the topics anyway.
        self.kept_rows = ("samples/phi",) if self.blocks.in_process else ()
        init = functools.partial(init_block, config.seed, config.n_topics, sampler)
        self.blocks.start("block-init", start_block, init, config.control_variates)
        self.norm: np.ndarray | None = None
        self.normalise()

    def normalise(self, extra=()) -> list[Any]:
        """Gather the blocks' O(K) summaries with ``extra`` timed results in one
        round; set the row normalisers; returns the values of ``extra``."""
        lses, values = self.blocks.summarise("block-lse", block_lse, extra=extra)
        self.norm = combine(lses)
        return values

    def columns(self, words, near=None) -> list[Any]:
        """The phi columns of each ``words`` (sorted; ``block_columns``), cut where
        the blocks live and joined near ``near[j]`` when given (futures on the
        workers)."""
        return self.blocks.cut("columns", block_columns, words, (self.norm, COLUMN_DTYPE), near)

    def gibbs(self, executor, m: int, parts, words, local=None) -> list[Any]:
        """The parts' Gibbs tasks, as ``(counts, TaskTime)`` results: futures of
        ``SparseCounts`` on the workers; in this process the executor's results,
        dense with warm starts (from the documents' stored assignments ``local``)."""
        if not self.blocks.in_process:
            return gibbs_on_workers(self, executor, m, parts, words)
        cfg = self.config
        key = derive(cfg.seed, domains.GIBBS)
        cols = self.columns(words)
        if cfg.warm_start:
            args = [(c, cfg.alpha, cfg.sweeps, cfg.burn, key, m, cfg.control_variates)
                    for c in cols]
            results = executor.run("gibbs", warm_gibbs_counts, parts, args, local=local)
            if cfg.control_variates:  # the stored counts too: dense
                return [(r, None) for r in results]
        else:
            args = [(c, cfg.alpha, cfg.sweeps, key, m, self.kernel) for c in cols]
            results = executor.run("gibbs", gibbs_sparse_counts, parts, args)
        return [untimed_counts(r) for r in results]

    def step(self, executor, m: int, gibbs: list[Any], words, scale: float,
             h: float) -> dict[str, Any]:
        """Step every block with the counts of its words (``scale`` = D / |S|), then
        gather the new normalisers with the Gibbs tasks' tokens, in one round."""
        cfg, ex = self.config, self.blocks.executor
        stats = {}
        if cfg.control_variates:
            step, stats["cv_clipped"] = self._cv_step(gibbs, scale, h, m)
        else:
            factor = scale / kept_sweeps(cfg)
            totals = None
            if self.sampler.row_totals:
                totals = ex.submit("row-totals", row_totals, self.norm, factor, *gibbs)
            step = (step_block, (self.sampler, cfg.beta, factor, h, cfg.seed, m, totals))
        self.blocks.update("block-step", step[0], step[1], self.blocks.route(gibbs, words))
        summaries = [ex.submit("gibbs-summary", gibbs_summary, g, j=j)
                     for j, g in enumerate(gibbs)]
        return {"n_tokens": int(sum(self.normalise(summaries))), **stats}

    def _cv_step(self, gibbs: list[Any], scale: float, h: float, m: int) -> tuple[tuple, float]:
        """The control-variate block step and its arguments, and the share of a_hat
        entries clipped at beta: the blocks' estimates gathered first for their
        row sums (the rows' count totals) and clipped entries."""
        cfg = self.config
        results = [r for r, _ in gibbs]
        sums = self.blocks.gather("block-cv", cv_summary, scale, *results)
        rows = np.sum([s for s, _ in sums], axis=0)  # added in block order
        totals = np.stack([np.exp(self.norm), rows]) if self.sampler.row_totals else None
        clipped = sum(c for _, c in sums) / (cfg.n_topics * self.n_words)
        return (step_block_cv, (self.sampler, cfg.beta, scale, h, cfg.seed, m, totals)), clipped

    def finite(self) -> bool:
        """From the row normalisers: a non-finite entry makes its row's one so."""
        return bool(np.isfinite(self.norm).all())

    def keep(self) -> dict[str, np.ndarray]:
        """Add the current phi to every block's running sum (where it lives); in this
        process the phi is a ``samples/phi`` row too."""
        rows = {}
        if self.kept_rows:
            phi = self._dense(block_output, "phi_mean", 0, self.norm)
            rows["samples/phi"] = phi.astype(np.float32)[None]
        self.blocks.map("block-keep", keep_block, self.norm)
        self.n_samples += 1
        return rows

    def mean_log_columns(self, words) -> list[Any]:
        """The log mean-phi columns of each ``words`` (sorted; futures on the workers)."""
        return self.blocks.cut("mean-columns", block_mean_log_columns, words,
                               (self.n_samples, self.norm))

    def _dense(self, fn, *args) -> np.ndarray:
        """The blocks' K x width ``fn(block, *args)`` side by side: K x W on the driver."""
        return np.concatenate(self.blocks.gather("block-read", fn, *args), axis=1)

    def dense(self) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """The whole state's fields and phi sum as dense arrays on the driver."""
        parts = self.blocks.gather("block-arrays", block_arrays)
        fields = {k: np.concatenate([p[0][k] for p in parts], axis=1) for k in parts[0][0]}
        return fields, np.concatenate([p[1] for p in parts], axis=1)

    @property
    def state_(self):
        """The whole sampler state (a ``sampler.State``), K x W on the driver."""
        return self.sampler.State(**self.dense()[0])

    @property
    def stored(self) -> np.ndarray | None:
        """The stored assignments' counts, K x W on the driver (None without
        control variates)."""
        if not self.config.control_variates:
            return None
        return self._dense(block_stored)

    def log_phi(self) -> np.ndarray:
        """log phi of the current state (log theta - the row normalisers), K x W on
        the driver."""
        return self.state_.log_theta - self.norm[:, None]

    def mean_phi(self) -> np.ndarray:
        """The kept samples' mean phi (the current phi before any is kept), K x W
        on the driver, one block at a time."""
        return self._dense(block_output, "phi_mean", self.n_samples, self.norm)

    def arrays(self) -> dict[str, np.ndarray]:
        """The driver's part of a checkpoint: in this process the whole state
        (``sampler/<field>``, ``phi_sum``, ``stored_counts``); on the workers none
        (the blocks write theirs, ``held``)."""
        if not self.blocks.in_process:
            return {}
        fields, phi_sum = self.dense()
        arrays = {f"sampler/{k}": v for k, v in fields.items()}
        arrays["phi_sum"] = phi_sum
        if self.config.control_variates:
            arrays["stored_counts"] = self.stored
        return arrays

    def held(self) -> HeldBlocks | None:
        return None if self.blocks.in_process else HeldBlocks(self, self.n_samples)

    def restore(self, arrays: dict[str, Any], n_samples: int) -> None:
        """Blocks from a checkpoint's arrays: ``HeldArray`` parts read on the
        workers, or dense arrays the tasks carry."""
        fields = {k.split("/", 1)[1]: v for k, v in arrays.items() if k.startswith("sampler/")}
        self.sampler.check_arrays(fields, (self.config.n_topics, self.n_words))
        names = [f"sampler/{f}" for f in fields] + ["phi_sum"]
        names += ["stored_counts"] if self.config.control_variates else []
        self.blocks.load("block-load", block_from_arrays, {k: arrays[k] for k in names},
                         self.sampler.State)
        self.normalise()
        self.n_samples = int(n_samples)

    def write(self, root: str, names: dict[str, str]) -> None:
        """Write the blocks' outputs (``block_outputs``) ``names[output]`` into the
        Zarr group ``root``, from the workers."""
        self.blocks.write("block-write", root, names, self.config.n_topics, block_outputs,
                          self.n_samples, self.norm)

    def write_mean(self, root: str) -> None:
        """Write the kept samples' mean phi as ``phi_mean`` into the Zarr group
        ``root`` from the workers (the fitted topics, never gathered)."""
        self.write(root, {"phi_mean": "phi_mean"})

    def write_run_arrays(self, root: str) -> dict[str, np.ndarray]:
        """The run's K x W arrays (``state/...``, ``phi_mean``): in this process
        returned for the driver to write; on the workers written into the run's
        Zarr group ``root`` from the blocks, nothing returned."""
        if self.blocks.in_process:
            return self.run_arrays()
        names = {f"state/{f}": f"state/{f}" for f in self.sampler.State._fields}
        self.write(root, {**names, "phi_mean": "phi_mean"})
        return {}

    def run_arrays(self) -> dict[str, np.ndarray]:
        fields, _ = self.dense()
        return {**{f"state/{k}": v for k, v in fields.items()}, "phi_mean": self.mean_phi()}


class HeldBlocks:
    """A checkpoint's K x W arrays (``sampler/<field>``, ``phi_sum``) as the
    workers' blocks hold them (``dscir.runs.checkpoint.HeldState``): each block
    writes its own columns; once the checkpoint is in place the blocks restart
    from it."""

    def __init__(self, topics: Topics, n_samples: int):
        self.topics, self.n_samples = topics, n_samples
        self.fields = topics.sampler.State._fields
        self.names = [f"sampler/{f}" for f in self.fields] + ["phi_sum"]

    def write(self, group: str) -> None:
        names = {f"state/{f}": f"state/sampler/{f}" for f in self.fields}
        self.topics.write(group, {**names, "phi_sum": "state/phi_sum"})

    def restart(self, arrays: dict[str, Any]) -> None:
        self.topics.restore(arrays, self.n_samples)
