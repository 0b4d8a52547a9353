"""LDA with its topics on the workers (``placement="workers"``), in vocabulary blocks.

The executor holds the sampler state (momenta too) in blocks of words (``DaskExecutor.blocked``,
``dscir.engine.blocks``); the driver keeps the row normalisers (O(K) per
block). Iteration ``m``: for each worker, every block holding words of the
parts that worker holds cuts their phi columns where it lives (normalised by
the driver's row values, rescaled per column as ``phi_columns`` does, float32
on the wire) and one task joins them on that worker; each part's Gibbs task
takes them and sends on only its nonzero integer counts (``SparseCounts``:
at most tokens x kept sweeps entries of K x U); block b adds the counts of
its own words exactly and steps with
a_hat = beta + counts x D / |S| / n_kept and the stream (seed, SAMPLER, m, b).
The samplers whose step reads the rows' totals (all but SCIR: theta_k. and
c_k. in the expanded-mean gradient) get them from one ``row-totals`` task over
all the minibatch's counts (O(K), worker to worker) and the driver's normalisers.
Block b starts from Gamma(1, 1) draws of the stream (seed, INIT, b).

Kept samples: only their running mean (each block sums its phi); the run has
no ``samples/phi``. Held-out scoring cuts the log mean-phi columns of the
held-out words from the blocks too, and the blocks write the run's final K x W
arrays themselves (``write_run_arrays``) and a checkpoint's (``held_state``:
written in parallel into the checkpoint before it is renamed into place; the
blocks then restart from it, which bounds the lineage Dask keeps to rebuild a
lost block, and a resume reads each block's columns on its worker). The driver
builds dense K x W arrays only where a caller asks for
``log_phi``/``mean_phi``/``run_arrays``.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from dscir import streams
from dscir.errors import DscirError
from dscir.models.lda.evaluation import perplexity
from dscir.models.lda.kernels import resolve_kernel
from dscir.models.lda.model import LDAModel, check_finite
from dscir.models.lda.placement import check_model_placement
from dscir.models.lda.tasks import SparseCounts, gibbs_sparse_counts
from dscir.rng import derive
from dscir.samplers import get_sampler
from dscir.samplers.simplex import normalize_log

#: The dtype of phi columns on the wire (tests/test_blocked.py: the counts of a
#: batch are the same under float32 and float64 columns).
COLUMN_DTYPE = "float32"


def init_block(seed: int, n_topics: int, sampler, index: int, lo: int, hi: int):
    """Block ``index``'s initial state: Gamma(1, 1) draws of stream (seed, INIT, index)."""
    rng = np.random.Generator(np.random.PCG64(derive(seed, streams.INIT, index)))
    return sampler.init(rng.gamma(1.0, 1.0, size=(n_topics, hi - lo)))


def step_block(sampler, beta: float, factor: float, h: float, seed: int, m: int, state,
               counts: np.ndarray, index: int, totals: np.ndarray | None = None):
    """Block ``index``'s sampler step at iteration ``m``: a_hat = beta + counts x
    ``factor`` (D / |S| / n_kept), stream (seed, SAMPLER, m, index); ``totals``: the
    whole rows' theta and count sums, for the samplers that read them."""
    return sampler.step(state, beta, counts * factor, h, derive(seed, streams.SAMPLER, m, index),
                        totals)


def gibbs_from_columns(batch, words: np.ndarray, cut_words: np.ndarray, cut_cols: np.ndarray,
                       *args) -> SparseCounts:
    """``gibbs_counts`` of a part whose ``words`` are among ``cut_words``, the words
    whose columns ``cut_cols`` were cut once for every part on this worker; its
    nonzero counts only, for the blocks (``gibbs_sparse_counts``)."""
    cols = cut_cols[:, np.searchsorted(cut_words, words)]
    return gibbs_sparse_counts(batch, words, cols, *args)


def by_holder(holders: list[str | None]) -> list[list[int]]:
    """Part indices grouped by the worker holding them (in order of first
    appearance); a part whose holder is unknown is a group of its own."""
    groups: dict[Any, list[int]] = {}
    for j, h in enumerate(holders):
        groups.setdefault(h if h is not None else ("part", j), []).append(j)
    return list(groups.values())


def gibbs_summary(result: tuple[SparseCounts, Any]) -> tuple[int, Any]:
    """What the driver sees of a Gibbs task: its tokens and its timing."""
    return result[0].n_tokens, result[1]


class LDAWorkersModel(LDAModel):
    """An LDA chain whose sampler state and kept-phi sum live on the workers."""

    placement = "workers"

    def __init__(self, config, data, executor):
        check_model_placement(self.placement, config, data.n_words)
        if not hasattr(executor, "blocked"):
            raise DscirError("placement='workers' needs a Dask cluster (the topics live on "
                             "its workers); use placement='driver' here")
        self.config, self.data, self.executor = config, data, executor
        self.sampler = get_sampler(config.sampler, **config.sampler_options)
        self.kernel = resolve_kernel(config.kernel, config.n_topics)
        self.schedule = config.schedule()
        self.n_samples = 0
        self.local_values, self.local, self.stored = None, None, None
        self.blocks = executor.blocked(config.n_topics, data.n_words, config.block_entries)
        self.blocks.start(functools.partial(init_block, config.seed, config.n_topics,
                                            self.sampler))

    def _dense(self) -> tuple[dict[str, np.ndarray], np.ndarray]:
        return self.blocks.gather()

    def log_phi(self) -> np.ndarray:
        """log phi of the current state (gathered to the driver: K x W)."""
        fields, _ = self._dense()
        return normalize_log(self.sampler.State(**fields).log_theta, axis=1)

    def mean_phi(self) -> np.ndarray:
        """The kept samples' mean phi (the current phi before any is kept), K x W
        on the driver, one block at a time."""
        return self.blocks.output("phi_mean", self.n_samples)

    def step(self, m: int, parts) -> dict[str, Any]:
        cfg, ex = self.config, self.executor
        words = ex.words(parts)
        # Columns once per worker: the union of the words of the parts it holds.
        holders = ex.holders(parts.batches)
        groups = by_holder(holders)
        cut = [np.unique(np.concatenate([words[j] for j in g])) for g in groups]
        cols = self.blocks.columns(cut, COLUMN_DTYPE, [holders[g[0]] for g in groups])
        group = {j: i for i, g in enumerate(groups) for j in g}
        key = derive(cfg.seed, streams.GIBBS)
        gibbs = [ex.submit("gibbs", gibbs_from_columns, b, w, cut[group[j]], cols[group[j]],
                           cfg.alpha, cfg.sweeps, key, m, self.kernel, j=j, timed=True)
                 for j, (b, w) in enumerate(zip(parts.batches, parts.words))]
        n_kept = cfg.sweeps - cfg.sweeps // 2
        factor = self.data.train.size / parts.docs.size / n_kept
        h = float(self.schedule(m))
        self.blocks.step(functools.partial(step_block, self.sampler, cfg.beta, factor, h,
                                           cfg.seed, m), gibbs, words,
                         factor if self.sampler.row_totals else None)
        summaries = [ex.submit("gibbs-summary", gibbs_summary, g, j=j)
                     for j, g in enumerate(gibbs)]
        n_tokens = self.blocks.normalise(summaries)
        check_finite(np.isfinite(self.blocks.norm).all(), cfg.sampler, m)
        return {"n_docs": int(parts.docs.size), "n_tokens": int(sum(n_tokens)),
                "step_size": h}

    def keep_sample(self, iteration: int) -> dict[str, np.ndarray]:
        self.blocks.keep()
        self.n_samples += 1
        return {"samples/iteration": np.array([iteration], dtype=np.int64)}

    def score(self) -> float:
        cfg = self.config
        return perplexity(self.executor, self.data.heldout, None, cfg.alpha, cfg.eval_sweeps,
                          cfg.seed, cfg.completion_every,
                          functools.partial(self.blocks.mean_log_columns,
                                            n_samples=self.n_samples))

    def state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """The driver's part of a checkpoint; the blocks write the K x W arrays
        (``held_state``)."""
        return {}, {"n_samples": self.n_samples}

    def held_state(self) -> HeldBlocks:
        return HeldBlocks(self, self.n_samples)

    def restore(self, arrays: dict[str, Any], values: dict[str, Any],
                samples: dict[str, np.ndarray]) -> None:
        """Blocks from a checkpoint's arrays: ``HeldArray`` parts read on the
        workers, or dense arrays the tasks carry."""
        fields = {k.split("/", 1)[1]: v for k, v in arrays.items() if k.startswith("sampler/")}
        self.sampler.check_arrays(fields, (self.config.n_topics, self.data.n_words))
        self.blocks.load(fields, arrays["phi_sum"], self.sampler.State)
        self.n_samples = int(values["n_samples"])

    def sample_rows(self) -> dict[str, int]:
        return {"samples/iteration": self.n_samples}

    def write_run_arrays(self, root: str) -> dict[str, np.ndarray]:
        """Write the run's K x W arrays (``state/...``, ``phi_mean``) into the run's
        Zarr group ``root`` from the workers, block by block; nothing is left for
        the driver to write."""
        names = {f"state/{f}": f"state/{f}" for f in self.sampler.State._fields}
        self.blocks.write(root, {**names, "phi_mean": "phi_mean"}, self.n_samples)
        return {}

    def run_arrays(self) -> dict[str, np.ndarray]:
        fields, phi_sum = self._dense()
        out = {f"state/{k}": v for k, v in fields.items()}
        out["phi_mean"] = (phi_sum / self.n_samples if self.n_samples else
                           np.exp(normalize_log(self.sampler.State(**fields).log_theta, 1)))
        return out

    def report_settings(self) -> dict[str, Any]:
        return {"n_topics": self.config.n_topics, "placement": self.placement}


class HeldBlocks:
    """A checkpoint's K x W arrays (``sampler/<field>``, ``phi_sum``) as the blocks
    hold them (``dscir.runs.checkpoint.HeldState``): each block writes its own
    columns; once the checkpoint is in place the blocks restart from it."""

    def __init__(self, model: LDAWorkersModel, n_samples: int):
        self.model, self.n_samples = model, n_samples
        self.fields = model.sampler.State._fields
        self.names = [f"sampler/{f}" for f in self.fields] + ["phi_sum"]

    def write(self, group: str) -> None:
        names = {f"state/{f}": f"state/sampler/{f}" for f in self.fields}
        self.model.blocks.write(group, {**names, "phi_sum": "state/phi_sum"}, self.n_samples)

    def restart(self, arrays: dict[str, Any]) -> None:
        self.model.restore(arrays, {"n_samples": self.n_samples}, {})
