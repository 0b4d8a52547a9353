"""The one chain loop: any model, any executor.

``Chain`` owns the engine's side of a chain: the iteration counter (which
fixes the step-size schedule and names every random stream), the minibatch
position, prefetching the next minibatch while this one is sampled, thinning
(a sample is kept every ``thin`` iterations after ``burn_in``), the history of
per-iteration statistics and timings, held-out scores and checkpoints. The
model (``dscir.models.base.Model``) owns its parameters and their update.
``run_chain`` advances a chain with scores, checkpoints, events and progress.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from dscir import monitor
from dscir.engine.interrupts import held
from dscir.engine.local_state import LocalState, state_dtype
from dscir.engine.minibatch import EpochPosition, next_minibatch
from dscir.engine.parts import Timing
from dscir.errors import DscirError
from dscir.models.base import Data
from dscir.runs.checkpoint import Checkpoint, absolute_store, nested

log = logging.getLogger(__name__)


class _Pending(NamedTuple):
    iteration: int
    after: EpochPosition
    parts: Any


def _columns(records: list[dict[str, Any]], fields) -> dict[str, np.ndarray]:
    return {f: np.array([r[f] for r in records]) for f in fields}


class Chain:
    """A chain of ``model_type`` on ``store``, its tasks run by ``executor``.

    ``model_options`` go to the model's constructor (e.g. whether it keeps
    its samples in memory); they do not change the chain. A model whose
    ``local_values`` is a number keeps per-document state between visits
    (``dscir.engine.local_state``) in ``local_dir`` (None: a temporary
    directory; a checkpointed run's ``local`` group, so it can resume).
    ``stopping`` (a ``dscir.engine.stopping.Stopping``): a chain of unknown length
    whose burn-in and end its held-out scores decide (None: ``config.burn_in``
    and the iterations asked for); the documents it sets aside to score
    (``stopping.aside``) are held out of training.
    """

    def __init__(self, model_type, config, store: str, executor, *, local_dir: str | None = None,
                 stopping=None, **model_options):
        self.config = config
        self.stopping = stopping
        self.data = Data.open(store)
        if stopping is not None and stopping.aside.size:
            self.data = self.data.setting_aside(stopping.aside)
        self.store = self.data.store
        self.executor = executor
        self.model = model_type(config, self.data, executor, **model_options)
        self.local = self._local_state(local_dir)
        if self.model.minibatch and config.batch_size > self.data.train.size:
            raise DscirError(f"batch_size={config.batch_size} exceeds the "
                             f"{self.data.train.size} training documents of {self.store}")
        self.iteration = 0
        self.position = EpochPosition()
        self.n_samples = 0
        self.last_sample: dict[str, np.ndarray] | None = None  # rows, when the last step kept one
        self.history: list[dict[str, Any]] = []
        self.evaluations: list[NamedTuple] = []
        self._pending: _Pending | None = None

    def _local_state(self, local_dir: str | None) -> LocalState | None:
        n_values = self.model.local_values
        if n_values is None:
            return None
        from dscir.corpus import Corpus

        corpus = Corpus.open(self.store)
        lengths = corpus.doc_lengths
        lengths[self.data.heldout] = 0  # never visited by a minibatch
        self.model.local = LocalState(None if local_dir is None else str(local_dir), lengths,
                                      corpus.chunk_docs, state_dtype(n_values))
        return self.model.local

    @property
    def client(self):
        return self.executor.client

    def attach(self, executor) -> None:
        """Run the next iterations on ``executor`` (e.g. a new cluster's); the local
        state is flushed first, so the new executor reads it back."""
        if self.local is not None:
            self.executor.flush(self.local)
        self.executor = self.model.executor = executor
        self._pending = None

    # -- one iteration -------------------------------------------------------

    def _read(self, iteration: int, position: EpochPosition) -> _Pending:
        docs, after = next_minibatch(self.data.train, self.config.batch_size,
                                     self.config.seed, position)
        return _Pending(iteration, after, self.executor.read(docs, iteration=iteration))

    def step(self, prefetch: bool = True) -> dict[str, Any]:
        """Run one iteration; returns its statistics (also appended to ``history``)."""
        m, cfg = self.iteration, self.config
        start = time.perf_counter()
        self.executor.timing = Timing()
        self.executor.iteration = m
        parts, after = None, self.position
        if self.model.minibatch:
            pending = self._pending
            if pending is None or pending.iteration != m:
                pending = self._read(m, self.position)
            self._pending = self._read(m + 1, pending.after) if prefetch else None
            parts, after = pending.parts, pending.after
        stats = self.model.step(m, parts)
        self.position = after
        self.iteration = m + 1
        self.last_sample = None
        burn_in = cfg.burn_in if self.stopping is None else self.stopping.burn_in
        if self.iteration > burn_in and (self.iteration - burn_in) % cfg.thin == 0:
            self.last_sample = self.model.keep_sample(self.iteration)
            self.n_samples += 1
        timing = self.executor.timing
        wall = time.perf_counter() - start
        record = {"iteration": self.iteration, **stats, **timing.split(wall)}
        self.history.append(record)
        return record

    def evaluate(self) -> NamedTuple:
        """Score the held-out documents now and record it."""
        model = self.model
        record = model.Evaluation(self.iteration, model.score(), **model.evaluation_extras())
        self.evaluations.append(record)
        return record

    def close(self) -> None:
        """Release prefetched reads still held on the workers."""
        self._pending = None

    # -- checkpoints ---------------------------------------------------------

    def checkpoint(self) -> Checkpoint:
        """The whole chain now, as arrays and JSON values (copies), and the arrays
        a model leaves to their holders to write (``held_state``). The local state
        is flushed (one chunk per shard changed) and the chunks it names are kept
        until the next checkpoint is taken."""
        arrays, values = self.model.state()
        if self.stopping is not None:
            values = {**values, "stopping": self.stopping.state()}
        if self.local is not None:
            self.executor.flush(self.local)
            self.local.protect()
            arrays = {**arrays, **{f"local/{k}": v for k, v in self.local.arrays().items()}}
        return Checkpoint(
            model=self.model.name, config=self.config.to_dict(),
            store=absolute_store(self.store), iteration=self.iteration,
            position=tuple(self.position), n_samples=self.n_samples,
            sample_rows=self.model.sample_rows(),
            arrays={k: np.array(v) for k, v in arrays.items()}, values=dict(values),
            history=self.history_arrays(), evaluations=self.evaluation_arrays(),
            held=self.model.held_state())

    def restore(self, ckpt: Checkpoint, samples: dict[str, np.ndarray] | None = None) -> None:
        """Continue from ``ckpt`` (of this model, configuration and corpus); ``samples``
        are the run's kept samples up to it (for models that hold them)."""
        ckpt.check(self.model.name, self.config.to_dict(), self.store,
                   getattr(self.config, "PREDATED", None))
        arrays = {k: v for k, v in ckpt.arrays.items() if not k.startswith("local/")}
        self.model.restore(arrays, ckpt.values, samples or {})
        if self.stopping is not None:
            self.stopping.restore(ckpt.values["stopping"])
        if self.local is not None:
            self.local.restore(nested(ckpt.arrays, "local"))
        self.iteration = ckpt.iteration
        self.position = EpochPosition(*ckpt.position)
        self.n_samples = ckpt.n_samples
        self.last_sample = None
        self._restore_records(ckpt)

    def _restore_records(self, ckpt: Checkpoint) -> None:
        """The history and the held-out scores up to ``ckpt``."""
        h = ckpt.history
        self.history = [dict(zip(h, (v.item() for v in row))) for row in zip(*h.values())]
        ev = ckpt.evaluations
        self.evaluations = [self.model.Evaluation(*(v.item() for v in row))
                            for row in zip(*(ev[f] for f in self.model.Evaluation._fields))]
        self._pending = None

    def adopt(self, ckpt: Checkpoint) -> None:
        """Continue ``ckpt``'s parameters on this chain's corpus, other documents
        than the checkpoint's (a stream): the model's arrays, the iteration count
        (the step-size schedule and the random streams go on), the history and the
        scores; not the minibatch position, the documents' local state or the
        kept-sample count (``ckpt.n_samples``, given as the model's)."""
        arrays = {k: v for k, v in ckpt.arrays.items() if not k.startswith("local/")}
        self.model.restore(arrays, {**ckpt.values, "n_samples": ckpt.n_samples}, {})
        self.iteration = ckpt.iteration
        self.n_samples = ckpt.n_samples
        self._restore_records(ckpt)

    def history_arrays(self) -> dict[str, np.ndarray]:
        return _columns(self.history, self.history[0] if self.history else ())

    def evaluation_arrays(self) -> dict[str, np.ndarray]:
        fields = self.model.Evaluation._fields
        out = _columns([e._asdict() for e in self.evaluations], fields)
        if not self.evaluations:
            out["iteration"] = out["iteration"].astype(np.int64)
        return out


class _Checkpoints:
    """When ``run_chain`` checkpoints: at every multiple of ``every`` iterations, after
    the first iteration that ends ``interval`` seconds or more after the last
    checkpoint (or the start), and where an interrupt was held."""

    def __init__(self, save: Callable[[Chain], None] | None, every: int, interval: float):
        self.save, self.every, self.interval = save, every, interval
        self.since = time.monotonic()

    def after(self, chain: Chain, interrupted: bool) -> None:
        """Checkpoint ``chain`` after its iteration if one is due."""
        if self.save is None:
            return
        due = interrupted or (self.every > 0 and chain.iteration % self.every == 0) or \
            (self.interval > 0 and time.monotonic() - self.since >= self.interval)
        if due:
            self.save(chain)
            self.since = time.monotonic()


def run_chain(chain: Chain, n_iter: int, *, eval_every: int = 0,
              on_sample: Callable[[dict[str, np.ndarray]], None] | None = None,
              checkpoint: Callable[[Chain], None] | None = None, checkpoint_every: int = 0,
              checkpoint_interval: float = 0.0, progress: bool = True,
              chain_index: int | None = None) -> list[NamedTuple]:
    """Advance ``chain`` by ``n_iter`` iterations, scoring held-out documents at
    every iteration that is a multiple of ``eval_every`` (and at the end) when
    ``eval_every > 0``; returns the new scores (also in ``chain.evaluations``).

    A chain with a ``stopping`` rule scores where the rule asks, and ends where it
    decides (at most ``n_iter`` iterations). ``on_sample(rows)`` receives each
    kept sample's rows; ``checkpoint(chain)`` is called after an iteration's sample
    and score: at every multiple of ``checkpoint_every``, once ``checkpoint_interval``
    seconds of wall time have passed since the last, and at Ctrl-C or SIGTERM (held
    to the end of the iteration, ``dscir.engine.interrupts.held``; then raised). A
    checkpoint never changes the chain, so one taken where the clock says leaves it
    reproducible. ``chain_index`` (chains run side by side) names the chain on its
    progress bar and gives the bar its own line.
    """
    from dscir.progress import tqdm

    cfg, model = chain.config, chain.model
    report = monitor.RunReporter(
        chain.client, model.name, metric=model.metric, sampler=cfg.sampler,
        store=os.path.basename(chain.store.rstrip("/")), batch_size=cfg.batch_size,
        seed=cfg.seed, **model.report_settings())
    if chain.client is not None:
        monitor.ensure_monitor(chain.client)
    report.start(chain.iteration, chain.iteration + n_iter)
    new: list[NamedTuple] = []
    which = "" if chain_index is None else f" chain {chain_index}"
    bar = tqdm(total=chain.iteration + n_iter, initial=chain.iteration, disable=not progress,
               unit="it", desc=f"dscir {model.name} ({cfg.sampler}){which}",
               position=chain_index, leave=True)
    saves = _Checkpoints(checkpoint, checkpoint_every, checkpoint_interval)
    status = "failed"
    try:
        with held(checkpoint is not None) as interrupt:
            for i in range(n_iter):
                if chain.stopping is not None and chain.stopping.done(chain.iteration):
                    break
                stats = chain.step(prefetch=i + 1 < n_iter)
                report.iteration(**stats)
                if on_sample is not None and chain.last_sample is not None:
                    on_sample(chain.last_sample)
                if _score_due(chain, eval_every, last=i + 1 == n_iter):
                    new.append(_evaluate(chain, report))
                saves.after(chain, interrupt.pending)
                interrupt.raise_pending()
                _show(bar, model, stats, chain.evaluations, chain.stopping)
        status = "finished"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        bar.close()
        chain.close()
        report.finish(chain.iteration, status)
    return new


def _show(bar, model, stats: dict[str, Any], evaluations: list[NamedTuple],
          stopping=None) -> None:
    """One more iteration on the progress bar, with its statistics, last score and
    the stopping rule's state (e.g. "kept mean, Δ/pass 0.40% (stop < 0.10%)")."""
    postfix = model.progress(stats)
    if evaluations:
        postfix[model.metric] = f"{evaluations[-1][1]:.4g}"
    if stopping is not None:
        postfix["stop"] = stopping.progress()
    bar.set_postfix(postfix, refresh=False)
    bar.update(1)


def _score_due(chain: Chain, eval_every: int, last: bool) -> bool:
    """Whether the chain scores its held-out documents after this iteration."""
    if chain.stopping is not None:
        return chain.stopping.due(chain.iteration)
    return eval_every > 0 and (chain.iteration % eval_every == 0 or last)


def _evaluate(chain: Chain, report) -> NamedTuple:
    """Score the held-out documents, report it (also as a log line, the progress a
    redirected log without bars shows) and give it to the stopping rule."""
    record = chain.evaluate()
    log.info("%s iteration %d: held-out %s %.6g", chain.model.name, chain.iteration,
             chain.model.metric, record[1])
    report.evaluation(chain.iteration, record[1], **dict(zip(record._fields[2:], record[2:])))
    if chain.stopping is not None:
        chain.stopping.observe(chain.iteration, chain.model.stopping_score(record[1]))
    return record
