"""LDA's topics held by the workers in vocabulary blocks (``placement="workers"``).

The sampler state (momenta too) lives in blocks of words on the workers
(``dscir.engine.blocks`` holds them; ``vocabulary_blocks`` is what runs on
one); the driver keeps the row normalisers (O(K) per block). Iteration ``m``:
for each worker, every block holding words of the parts that worker holds
cuts their phi columns where it lives (normalised by the driver's row values,
rescaled per column as ``phi_columns`` does, float32 on the wire) and one task
joins them on that worker; each part's Gibbs task takes them and sends on
only its nonzero integer counts (``SparseCounts``: at most tokens x kept
sweeps entries of K x U); block b adds the counts of its own words exactly
and steps with a_hat = beta + counts x D / |S| / n_kept and the stream (seed,
SAMPLER, m, b). The samplers whose step reads the rows' totals (all but SCIR:
theta_k. and c_k. in the expanded-mean gradient) get them from one
``row-totals`` task over all the minibatch's counts (O(K), worker to worker)
and the driver's normalisers. Block b starts from Gamma(1, 1) draws of the
stream (seed, INIT, b).

Kept samples: only their running mean (each block sums its phi); the run has
no ``samples/phi``. Held-out scoring cuts the log mean-phi columns of the
held-out words from the blocks too, and the blocks write the run's final K x W
arrays themselves (``write_run_arrays``; the fitted mean alone: ``write_mean``)
and a checkpoint's (``held``: written in parallel into the checkpoint before
it is renamed into place; the blocks then restart from it, which bounds the
lineage Dask keeps to rebuild a lost block, and a resume reads each block's
columns on its worker). The driver
builds dense K x W arrays only where a caller asks for
``log_phi``/``mean_phi``/``run_arrays``.
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar

import numpy as np

from dscir.rng import domains
from dscir.models.column_blocks import combine
from dscir.models.placement import held_blocks
from dscir.models.lda.vocabulary_blocks import (
    block_arrays, block_columns, block_from_arrays, block_lse, block_mean_log_columns,
    block_output, block_outputs, gibbs_from_columns, gibbs_summary, init_block,
    keep_block, row_totals, start_block, step_block)
from dscir.rng import derive
from dscir.samplers.simplex import normalize_log

#: The dtype of phi columns on the wire (tests/models/lda/test_blocked.py: the counts of a
#: batch are the same under float32 and float64 columns).
COLUMN_DTYPE = "float32"


def by_holder(holders: list[str | None]) -> list[list[int]]:
    """Part indices grouped by the worker holding them (in order of first
    appearance); a part whose holder is unknown is a group of its own."""
    groups: dict[Any, list[int]] = {}
    for j, h in enumerate(holders):
        groups.setdefault(h if h is not None else ("part", j), []).append(j)
    return list(groups.values())


def vocabulary_blocks_on(executor, config, n_words: int, placement: str = "workers"):
    """The topics' K x W blocks for ``placement`` from the executor (the engine's
    ``blocks_for``), or the error of an executor without workers to hold them."""
    return held_blocks(executor, placement, config.n_topics, n_words, config.block_entries,
                       "the topics")


class WorkerTopics:
    """LDA's topics (sampler state and kept-phi sum) in vocabulary blocks on the
    workers of a Dask executor; the driver holds the row normalisers ``norm``."""

    placement: ClassVar[str] = "workers"
    kept_rows: ClassVar[tuple[str, ...]] = ()

    def __init__(self, config, n_words: int, sampler, kernel: str, executor):
        self.config, self.sampler, self.kernel = config, sampler, kernel
        self.n_words, self.n_samples = n_words, 0
        self.blocks = vocabulary_blocks_on(executor, config, n_words)
        self.blocks.start("block-init", start_block,
                          functools.partial(init_block, config.seed, config.n_topics, sampler))
        self.norm: np.ndarray | None = None
        self.normalise()

    def normalise(self, extra=()) -> list[Any]:
        """Gather the blocks' O(K) summaries with ``extra`` futures of timed results
        in one round; set the row normalisers; returns the values of ``extra``."""
        lses, values = self.blocks.summarise("block-lse", block_lse, extra=extra)
        self.norm = combine(lses)
        return values

    def columns(self, words, near=None) -> list[Any]:
        """Futures of the phi columns of each ``words`` (sorted; ``block_columns``),
        cut on the blocks' workers and joined near ``near[j]`` when given."""
        return self.blocks.cut("columns", block_columns, words, (self.norm, COLUMN_DTYPE), near)

    def gibbs(self, executor, m: int, parts, words, local=None) -> list[Any]:
        """Futures of the parts' Gibbs tasks (timed ``SparseCounts``), each given the
        columns cut once for the worker holding it; the results stay there."""
        cfg = self.config
        holders = executor.holders(parts.batches)
        groups = by_holder(holders)
        cut = [np.unique(np.concatenate([words[j] for j in g])) for g in groups]
        cols = self.columns(cut, [holders[g[0]] for g in groups])
        group = {j: i for i, g in enumerate(groups) for j in g}
        key = derive(cfg.seed, domains.GIBBS)
        return [executor.submit("gibbs", gibbs_from_columns, b, w, cut[group[j]],
                                cols[group[j]], cfg.alpha, cfg.sweeps, key, m, self.kernel,
                                j=j, timed=True)
                for j, (b, w) in enumerate(zip(parts.batches, parts.words))]

    def step(self, executor, m: int, gibbs: list[Any], words, scale: float,
             h: float) -> dict[str, Any]:
        """Step every block with the counts of its words (``scale`` = D / |S|), then
        gather the new normalisers with the Gibbs tasks' tokens, in one round."""
        cfg = self.config
        factor = scale / (cfg.sweeps - cfg.sweeps // 2)
        totals = None
        if self.sampler.row_totals:
            totals = executor.submit("row-totals", row_totals, self.norm, factor, *gibbs)
        step = (self.sampler, cfg.beta, factor, h, cfg.seed, m, totals)
        self.blocks.update("block-step", step_block, step, self.blocks.route(gibbs, words))
        summaries = [executor.submit("gibbs-summary", gibbs_summary, g, j=j)
                     for j, g in enumerate(gibbs)]
        return {"n_tokens": int(sum(self.normalise(summaries)))}

    def finite(self) -> bool:
        return bool(np.isfinite(self.norm).all())

    def keep(self) -> dict[str, np.ndarray]:
        """Add the current phi to every block's running sum (on the workers)."""
        self.blocks.map("block-keep", keep_block, self.norm)
        self.n_samples += 1
        return {}

    def mean_log_columns(self, words) -> list[Any]:
        """Futures of the log mean-phi columns of each ``words`` (sorted)."""
        return self.blocks.cut("mean-columns", block_mean_log_columns, words,
                               (self.n_samples, self.norm))

    def dense(self) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """The whole state's fields and phi sum as dense arrays on the driver."""
        parts = self.blocks.gather("block-arrays", block_arrays)
        fields = {k: np.concatenate([p[0][k] for p in parts], axis=1) for k in parts[0][0]}
        return fields, np.concatenate([p[1] for p in parts], axis=1)

    def log_phi(self) -> np.ndarray:
        """log phi of the current state (gathered to the driver: K x W)."""
        fields, _ = self.dense()
        return normalize_log(self.sampler.State(**fields).log_theta, axis=1)

    def mean_phi(self) -> np.ndarray:
        """The kept samples' mean phi (the current phi before any is kept), K x W
        on the driver, one block at a time."""
        parts = self.blocks.gather("block-output", block_output, "phi_mean", self.n_samples,
                                   self.norm)
        out = np.empty((self.norm.size, self.blocks.n_cols))
        for (_, lo, hi), part in zip(self.blocks.spans(), parts):
            out[:, lo:hi] = part
        return out

    def arrays(self) -> dict[str, np.ndarray]:
        """The driver's part of a checkpoint: none (the blocks write theirs, ``held``)."""
        return {}

    def held(self) -> HeldBlocks:
        return HeldBlocks(self, self.n_samples)

    def restore(self, arrays: dict[str, Any], n_samples: int) -> None:
        """Blocks from a checkpoint's arrays: ``HeldArray`` parts read on the
        workers, or dense arrays the tasks carry."""
        fields = {k.split("/", 1)[1]: v for k, v in arrays.items() if k.startswith("sampler/")}
        self.sampler.check_arrays(fields, (self.config.n_topics, self.n_words))
        names = [f"sampler/{f}" for f in fields] + ["phi_sum"]
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
        """Write the run's K x W arrays (``state/...``, ``phi_mean``) into the run's
        Zarr group ``root`` from the workers; nothing is left for the driver."""
        names = {f"state/{f}": f"state/{f}" for f in self.sampler.State._fields}
        self.write(root, {**names, "phi_mean": "phi_mean"})
        return {}

    def run_arrays(self) -> dict[str, np.ndarray]:
        fields, phi_sum = self.dense()
        out = {f"state/{k}": v for k, v in fields.items()}
        out["phi_mean"] = (phi_sum / self.n_samples if self.n_samples else
                           np.exp(normalize_log(self.sampler.State(**fields).log_theta, 1)))
        return out


class HeldBlocks:
    """A checkpoint's K x W arrays (``sampler/<field>``, ``phi_sum``) as the blocks
    hold them (``dscir.runs.checkpoint.HeldState``): each block writes its own
    columns; once the checkpoint is in place the blocks restart from it."""

    def __init__(self, topics: WorkerTopics, n_samples: int):
        self.topics, self.n_samples = topics, n_samples
        self.fields = topics.sampler.State._fields
        self.names = [f"sampler/{f}" for f in self.fields] + ["phi_sum"]

    def write(self, group: str) -> None:
        names = {f"state/{f}": f"state/sampler/{f}" for f in self.fields}
        self.topics.write(group, {**names, "phi_sum": "state/phi_sum"})

    def restart(self, arrays: dict[str, Any]) -> None:
        self.topics.restore(arrays, self.n_samples)
