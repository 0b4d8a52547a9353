"""The LDA driver: minibatches out to workers, exact counts back, one sampler step.

One iteration ``m``:

1. take the next minibatch S of training documents (``minibatch``);
2. split S (sorted, so store-chunk contiguous) into parts and have workers read
   them from the Zarr store - the documents stay on the workers; each part
   reports only the distinct words it uses;
3. send each part the phi columns of its words (K x U, rescaled per word by
   the column maximum, which leaves the Gibbs conditional unchanged and keeps
   beta = 1e-4 topics from underflowing) and run the Gibbs kernel there;
4. add the returned integer counts into a K x W matrix (exact in any order, so
   the result does not depend on the number of workers or on which task
   finishes first), scale by D / |S| / n_kept and apply the sampler step with
   a_hat = beta + counts.

The next minibatch is read while the current one is sampled. Timings of each
iteration are split into Gibbs work (the slowest task), waiting for the
cluster beyond that (communication and scheduling) and the driver's update.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
import typing
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from distributed import Client, Future

from dscir.corpus import Corpus
from dscir.distributed import monitor, streams, tasks
from dscir.distributed.minibatch import EpochPosition, next_minibatch
from dscir.distributed.runstore import absolute_store, check_continues, flat, nested
from dscir.errors import DscirError
from dscir.rng import derive
from dscir.samplers import get_sampler
from dscir.samplers.schedules import constant, polynomial


@dataclass(frozen=True)
class LDAConfig:
    """Everything that determines an LDA chain (with the corpus and the seed)."""

    n_topics: int
    sampler: str
    alpha: float
    beta: float
    batch_size: int
    step_size: float
    tau: float | None  # None: constant step size; else h (1 + m / tau) ** -kappa
    kappa: float
    sweeps: int
    seed: int
    burn_in: int = 0  # iterations before posterior samples are kept
    thin: int = 10  # keep every thin-th iteration after burn_in
    eval_sweeps: int = 100
    completion_every: int = 10

    def schedule(self) -> Callable[[int], float]:
        if self.tau is None:
            return constant(self.step_size)
        return polynomial(self.step_size, self.tau, self.kappa)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class IterationStats(NamedTuple):
    iteration: int
    n_docs: int
    n_tokens: int
    step_size: float
    wall: float  # seconds for the whole iteration
    gibbs: float  # slowest Gibbs task
    wait: float  # waiting on the cluster beyond the slowest task
    update: float  # driver: phi columns, reduction and sampler step


@dataclass
class Evaluation:
    iteration: int
    perplexity: float


_HISTORY_DTYPES = {f: np.int64 if t is int else np.float64
                   for f, t in typing.get_type_hints(IterationStats).items()}


@dataclass
class Checkpoint:
    """A chain at one iteration, as arrays and JSON values (no pickle)."""

    config: dict[str, Any]  # LDAConfig.to_dict()
    store: str
    iteration: int
    position: EpochPosition
    state: dict[str, np.ndarray]  # the sampler state's fields
    phi_sum: np.ndarray  # running sum of the kept phi samples
    n_samples: int
    history: dict[str, np.ndarray]  # IterationStats fields
    evaluations: dict[str, np.ndarray]  # iteration, perplexity

    def to_stored(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """JSON metadata and named arrays (``runstore.write_checkpoint``)."""
        arrays = flat(state=self.state, history=self.history, evaluations=self.evaluations)
        arrays["phi_sum"] = self.phi_sum
        epoch, offset = self.position
        meta = {"config": self.config, "store": self.store, "iteration": int(self.iteration),
                "epoch": int(epoch), "offset": int(offset), "n_samples": int(self.n_samples)}
        return meta, arrays

    @classmethod
    def from_stored(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> Checkpoint:
        return cls(
            config=dict(meta["config"]), store=meta["store"], iteration=int(meta["iteration"]),
            position=EpochPosition(int(meta["epoch"]), int(meta["offset"])),
            state=nested(arrays, "state"), phi_sum=arrays["phi_sum"],
            n_samples=int(meta["n_samples"]), history=nested(arrays, "history"),
            evaluations=nested(arrays, "evaluations"),
        )

    def sample_rows(self) -> dict[str, int]:
        """Rows of the run's sample arrays that belong to the chain up to here."""
        return {"samples/phi": self.n_samples, "samples/iteration": self.n_samples}

    def check(self, config: LDAConfig, store: str) -> None:
        """Raise unless this checkpoint continues a chain of ``config`` on ``store``."""
        check_continues(self.config, self.store, config, store)


class _Part(NamedTuple):
    docs: np.ndarray
    batch: Future
    words: Future


class _Pending(NamedTuple):
    iteration: int
    docs: np.ndarray
    after: EpochPosition
    parts: list[_Part]


def log_phi(log_theta: np.ndarray) -> np.ndarray:
    """Row-normalised log topic-word probabilities (log-sum-exp, no underflow)."""
    top = log_theta.max(axis=1, keepdims=True)
    log_norm = top + np.log(np.exp(log_theta - top).sum(axis=1, keepdims=True))
    return log_theta - log_norm


def add_counts(counts: np.ndarray, results: list[tasks.GibbsResult]) -> np.ndarray:
    """Add tasks' K x U integer counts into the K x W total (exact in any order)."""
    for r in results:
        counts[:, r.words] += r.topic_word
    return counts


def _split(docs: np.ndarray, n_parts: int) -> list[np.ndarray]:
    return [p for p in np.array_split(docs, min(n_parts, docs.size)) if p.size]


class LDADriver:
    """Owns one LDA chain; workers own the data.

    ``state``, ``iteration``, ``position`` and the running sum of kept phi
    samples are the whole chain: every random stream is named by (seed,
    iteration, ...) or (seed, epoch), and the step size is a function of the
    iteration, so ``checkpoint``/``restore`` of these continue it exactly.
    ``history`` records per-iteration timings, ``evaluations`` held-out scores.
    """

    def __init__(self, client: Client, store: str, config: LDAConfig):
        self.client = client
        self.store = str(store)
        self.config = config
        corpus = Corpus.open(self.store)
        self.n_docs_total = corpus.n_docs
        self.n_words = corpus.n_words
        self.train_docs = np.asarray(corpus.train_docs(), dtype=np.int64)
        self.heldout_docs = np.asarray(corpus.heldout_docs(), dtype=np.int64)
        if config.batch_size > self.train_docs.size:
            raise DscirError(
                f"batch_size={config.batch_size} exceeds the {self.train_docs.size} "
                f"training documents of {self.store}"
            )
        self.sampler = get_sampler(config.sampler)
        self.schedule = config.schedule()
        rng = np.random.Generator(np.random.PCG64(derive(config.seed, streams.INIT)))
        theta0 = rng.gamma(1.0, 1.0, size=(config.n_topics, self.n_words))
        self.state = self.sampler.init(theta0)
        self.iteration = 0
        self.position = EpochPosition()
        self.phi_sum = np.zeros((config.n_topics, self.n_words))
        self.n_samples = 0
        self.last_sample: np.ndarray | None = None  # phi, when the last step kept a sample
        self.history: list[IterationStats] = []
        self.evaluations: list[Evaluation] = []
        self._token = uuid.uuid4().hex[:8]
        self._pending: _Pending | None = None

    # -- posterior summaries -------------------------------------------------

    def log_phi(self) -> np.ndarray:
        """log phi of the current state."""
        return log_phi(self.state.log_theta)

    def mean_phi(self) -> np.ndarray:
        """Average of the kept phi samples (the current phi if none is kept yet)."""
        if self.n_samples == 0:
            return np.exp(self.log_phi())
        return self.phi_sum / self.n_samples

    # -- checkpoints ---------------------------------------------------------

    def checkpoint(self) -> Checkpoint:
        """The whole chain now, as arrays and JSON values (copies)."""
        return Checkpoint(
            config=self.config.to_dict(),
            store=absolute_store(self.store),
            iteration=self.iteration,
            position=self.position,
            state={k: np.array(v) for k, v in self.state._asdict().items()},
            phi_sum=self.phi_sum.copy(),
            n_samples=self.n_samples,
            history={
                f: np.array([getattr(s, f) for s in self.history], dtype=_HISTORY_DTYPES[f])
                for f in IterationStats._fields
            },
            evaluations={
                "iteration": np.array([e.iteration for e in self.evaluations], np.int64),
                "perplexity": np.array([e.perplexity for e in self.evaluations], np.float64),
            },
        )

    def restore(self, ckpt: Checkpoint) -> None:
        """Continue from ``ckpt``, which must come from this configuration and corpus."""
        ckpt.check(self.config, self.store)
        fields = set(self.sampler.State._fields)
        shape = self.phi_sum.shape
        if set(ckpt.state) != fields or any(v.shape != shape for v in ckpt.state.values()):
            raise DscirError(
                f"the checkpoint's sampler state ({sorted(ckpt.state)}) does not fit a "
                f"{self.config.sampler} chain of shape {shape}"
            )
        self.state = self.sampler.State(**{k: np.array(v) for k, v in ckpt.state.items()})
        self.iteration = ckpt.iteration
        self.position = EpochPosition(*ckpt.position)
        self.phi_sum = np.array(ckpt.phi_sum, dtype=np.float64)
        self.n_samples = ckpt.n_samples
        self.last_sample = None
        self.history = [
            IterationStats(*(t.item() for t in row))
            for row in zip(*(ckpt.history[f] for f in IterationStats._fields))
        ]
        self.evaluations = [
            Evaluation(int(i), float(p))
            for i, p in zip(ckpt.evaluations["iteration"], ckpt.evaluations["perplexity"])
        ]
        self._pending = None

    # -- one iteration -------------------------------------------------------

    @property
    def _n_parts(self) -> int:
        """Two tasks per worker thread: enough to balance, few enough to stay cheap."""
        return max(2 * sum(self.client.nthreads().values()), 1)

    def _submit_reads(self, iteration: int, position: EpochPosition) -> _Pending:
        docs, after = next_minibatch(
            self.train_docs, self.config.batch_size, self.config.seed, position
        )
        parts = []
        for j, part in enumerate(_split(docs, self._n_parts)):
            batch = self.client.submit(
                tasks.read_batch, self.store, part,
                key=(f"dscir-read-{self._token}", iteration, j),
            )
            words = self.client.submit(
                tasks.batch_words, batch, key=(f"dscir-words-{self._token}", iteration, j)
            )
            parts.append(_Part(part, batch, words))
        return _Pending(iteration, docs, after, parts)

    def step(self, prefetch: bool = True) -> IterationStats:
        """Run one iteration of the chain."""
        cfg = self.config
        m = self.iteration
        start = time.perf_counter()
        pending = self._pending
        if pending is None or pending.iteration != m:
            pending = self._submit_reads(m, self.position)
        self._pending = self._submit_reads(m + 1, pending.after) if prefetch else None

        words = self.client.gather([p.words for p in pending.parts])
        t0 = time.perf_counter()
        lphi = self.log_phi()
        gibbs = []
        for j, (part, w) in enumerate(zip(pending.parts, words)):
            cols = lphi[:, w]
            cols = np.exp(cols - cols.max(axis=0, keepdims=True))
            gibbs.append(
                self.client.submit(
                    tasks.gibbs_counts, part.batch, w, cols, cfg.alpha, cfg.sweeps,
                    derive(cfg.seed, streams.GIBBS), m,
                    key=(f"dscir-gibbs-{self._token}", m, j),
                )
            )
        driver = time.perf_counter() - t0
        results: list[tasks.GibbsResult] = self.client.gather(gibbs)
        t0 = time.perf_counter()
        # Integer sums: exact whatever order the tasks finished or are added in.
        counts = add_counts(np.zeros((cfg.n_topics, self.n_words), dtype=np.int64), results)
        driver += time.perf_counter() - t0
        waited = time.perf_counter() - start - driver

        t0 = time.perf_counter()
        n_kept = results[0].n_kept
        scale = self.train_docs.size / pending.docs.size / n_kept
        h = float(self.schedule(m))
        key = derive(cfg.seed, streams.SAMPLER, m)
        self.state = self.sampler.step(self.state, cfg.beta, counts * scale, h, key)
        self.position = pending.after
        self.iteration = m + 1
        self.last_sample = None
        if self.iteration > cfg.burn_in and (self.iteration - cfg.burn_in) % cfg.thin == 0:
            self.last_sample = np.exp(self.log_phi())
            self.phi_sum += self.last_sample
            self.n_samples += 1
        driver += time.perf_counter() - t0

        slowest = max(r.seconds for r in results)
        stats = IterationStats(
            iteration=self.iteration,
            n_docs=int(pending.docs.size),
            n_tokens=int(sum(r.n_tokens for r in results)),
            step_size=h,
            wall=time.perf_counter() - start,
            gibbs=slowest,
            wait=max(waited - slowest, 0.0),
            update=driver,
        )
        self.history.append(stats)
        return stats

    def close(self) -> None:
        """Release prefetched reads still held on the workers."""
        self._pending = None

    # -- held-out evaluation -------------------------------------------------

    def perplexity(self, docs: np.ndarray | None = None, store: str | None = None) -> float:
        """Document-completion perplexity of held-out documents under the mean phi.

        Every ``completion_every``-th token of each document is held out, the
        document's topic weights are estimated by Gibbs sampling on the rest
        with phi fixed, and the result is exp(-(sum of natural-log p(test
        token)) / (number of test tokens)).
        """
        return evaluate_perplexity(
            self.client, store or self.store,
            self.heldout_docs if docs is None else np.asarray(docs, dtype=np.int64),
            self.mean_phi(), self.config.alpha, self.config.eval_sweeps,
            self.config.seed, self.config.completion_every, self._n_parts,
        )


def evaluate_perplexity(
    client: Client,
    store: str,
    docs: np.ndarray,
    phi: np.ndarray,
    alpha: float,
    sweeps: int,
    seed: int,
    every: int,
    n_parts: int,
) -> float:
    """Document-completion perplexity of ``docs`` of ``store`` under ``phi``, on workers."""
    if docs.size == 0:
        raise DscirError(
            f"{store} has no held-out documents to score; split it first "
            "(dscir ingest --heldout, or dscir.corpus.split_heldout)"
        )
    with np.errstate(divide="ignore"):
        lphi = np.log(phi)
    # Each task gets the log phi columns of its documents' words as an argument,
    # never scattered data: a worker lost mid-evaluation costs a recomputation.
    token = uuid.uuid4().hex[:8]
    batches = [
        client.submit(tasks.read_batch, store, part, key=(f"dscir-read-heldout-{token}", j))
        for j, part in enumerate(_split(np.sort(docs), n_parts))
    ]
    words = client.gather([
        client.submit(tasks.batch_words, b, key=(f"dscir-words-heldout-{token}", j))
        for j, b in enumerate(batches)
    ])
    futures = [
        client.submit(
            tasks.completion_scores, b, w, np.ascontiguousarray(lphi[:, w]), alpha, sweeps,
            derive(seed, streams.EVALUATION), every,
            key=(f"dscir-perplexity-{token}", j),
        )
        for j, (b, w) in enumerate(zip(batches, words))
    ]
    results: list[tasks.CompletionResult] = client.gather(futures)
    n_test = sum(r.n_test for r in results)
    if n_test == 0:
        raise DscirError("the held-out documents have no test tokens")
    # fsum is exactly rounded, so the score does not depend on how the documents
    # were split into tasks (the number of workers) or on the order of the parts.
    loglik = math.fsum(np.concatenate([r.loglik for r in results]).tolist())
    return float(np.exp(-loglik / n_test))


def run_chain(
    driver: LDADriver,
    n_iter: int,
    *,
    eval_every: int = 0,
    on_sample: Callable[[int, np.ndarray], None] | None = None,
    checkpoint: Callable[[LDADriver], None] | None = None,
    checkpoint_every: int = 0,
    progress: bool = True,
) -> list[Evaluation]:
    """Advance ``driver`` by ``n_iter`` iterations, scoring held-out documents
    at every iteration that is a multiple of ``eval_every`` (and at the end)
    when ``eval_every > 0``; returns the new scores (also in ``driver.evaluations``).

    ``on_sample(iteration, phi)`` receives each kept posterior sample;
    ``checkpoint(driver)`` is called at every multiple of ``checkpoint_every``,
    after that iteration's sample and score. Both count the chain's iterations,
    so a resumed chain scores and checkpoints where an uninterrupted one does.
    """
    from tqdm.auto import tqdm

    cfg = driver.config
    report = monitor.RunReporter(
        driver.client, "lda", metric="perplexity", sampler=cfg.sampler,
        store=os.path.basename(driver.store.rstrip("/")), n_topics=cfg.n_topics,
        batch_size=cfg.batch_size, seed=cfg.seed,
    )
    if driver.client is not None:
        monitor.ensure_monitor(driver.client)
    report.start(driver.iteration, driver.iteration + n_iter)
    evaluations: list[Evaluation] = []
    bar = tqdm(total=driver.iteration + n_iter, initial=driver.iteration,
               disable=not progress, unit="it", desc="dscir lda")
    status = "failed"
    try:
        for i in range(n_iter):
            stats = driver.step(prefetch=i + 1 < n_iter)
            m = driver.iteration
            report.iteration(**stats._asdict())
            postfix = {"docs/s": f"{stats.n_docs / stats.wall:.0f}",
                       "tokens/s": f"{stats.n_tokens / stats.wall:.3g}"}
            if on_sample is not None and driver.last_sample is not None:
                on_sample(m, driver.last_sample)
            if eval_every > 0 and (m % eval_every == 0 or i + 1 == n_iter):
                evaluations.append(Evaluation(m, driver.perplexity()))
                driver.evaluations.append(evaluations[-1])
                report.evaluation(m, evaluations[-1].perplexity)
            if checkpoint is not None and checkpoint_every > 0 and m % checkpoint_every == 0:
                checkpoint(driver)
            if driver.evaluations:
                postfix["perplexity"] = f"{driver.evaluations[-1].perplexity:.1f}"
            bar.set_postfix(postfix, refresh=False)
            bar.update(1)
        status = "finished"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        bar.close()
        driver.close()
        report.finish(driver.iteration, status)
    return evaluations
