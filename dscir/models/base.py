"""The model protocol: what a model gives the engine, and what it gets.

A model is a package under ``dscir/models/<name>/``: its configuration and
reference settings, numba kernels, worker tasks, the exact reduction of their
results, its global step given a sampler, its posterior-sample bookkeeping and
its held-out score. The engine (``dscir.engine.chain``) owns everything else:
minibatch order, reads, task placement and keys, the iteration counter,
thinning, history, scores, checkpoints and events.
"""

from __future__ import annotations

from typing import Any, ClassVar, NamedTuple, Protocol

import numpy as np

from dscir.corpus import Corpus


class Data(NamedTuple):
    """What a chain knows of its corpus store (the documents stay in it)."""

    store: str
    n_docs: int
    n_words: int
    train: np.ndarray  # int64 training document ids
    heldout: np.ndarray  # int64 held-out document ids

    @classmethod
    def open(cls, store: str) -> Data:
        c = Corpus.open(str(store))
        return cls(str(store), c.n_docs, c.n_words, np.asarray(c.train_docs(), np.int64),
                   np.asarray(c.heldout_docs(), np.int64))

    def setting_aside(self, docs: np.ndarray) -> Data:
        """The same corpus with the training documents ``docs`` held out (the ones a
        stopping rule sets aside to score)."""
        docs = np.asarray(docs, np.int64)
        return self._replace(train=np.setdiff1d(self.train, docs),
                             heldout=np.union1d(self.heldout, docs))


class Config(Protocol):
    """A model's configuration: everything that, with the corpus, fixes a chain."""

    sampler: str
    seed: int
    batch_size: int
    burn_in: int
    thin: int

    def to_dict(self) -> dict[str, Any]: ...


class Executor(Protocol):
    """Where a model's worker tasks run (``dscir.engine.dask`` or ``.local``).

    Every executor offers ``blocks`` (a model's K x W state in column blocks for a
    resolved placement, held in this process or by the workers:
    ``dscir.engine.blocks.blocks_for``; ``placement.held_blocks``). The Dask
    executor also offers ``submit``/``gather`` (one named, timed task and its
    value), ``holders`` (which worker holds a result) and ``blocked`` (the
    workers' form of the blocks): a model whose parameters live on the workers
    (``models/lda/topics.py``) uses them.
    """

    n_parts: int
    store: str

    def read(self, docs: np.ndarray, what: str = "read", iteration: int | None = None): ...

    def words(self, parts) -> list[np.ndarray]: ...

    def run(self, what: str, fn, parts, args) -> list: ...


class Model(Protocol):
    """One chain's parameters and how they move.

    The constructor is ``Model(config, data, executor, **options)``: it draws the
    initial state from the seed. ``step(m, parts)`` runs iteration ``m`` given the minibatch's parts
    (``None`` for a model with ``minibatch = False``, which sees all its
    training data every iteration); it returns the iteration's statistics
    for the history (numbers, ``n_docs`` among them). Each random draw comes
    from a stream named by (seed, domain, m, ...) (``dscir.rng.domains``).
    """

    name: ClassVar[str]  # run stores, task keys, events: "lda", "dpmm"
    # Whether its documents may stay resident on the workers (the executor's default
    # reads): its tasks return integer counts the driver adds exactly in any order,
    # so grouping a minibatch by the workers holding its documents cannot change
    # the chain.
    resident: ClassVar[bool]
    metric: ClassVar[str]  # the held-out score's name, e.g. "perplexity"
    # Whether the fit's estimates are the chain's final state (the mixtures' labels
    # and components: a mean over kept samples would mix relabelled clusters) rather
    # than a mean over its kept samples (LDA's topics): ``n_iter="auto"`` then reads
    # the current state's score alone (``dscir.engine.stopping.Stopping``).
    fit_is_state: ClassVar[bool]
    Evaluation: ClassVar[type[NamedTuple]]  # (iteration, <metric>, extras...)
    minibatch: bool
    config: Config
    # Values per token the model keeps between visits of a document (None: none);
    # when a number, the engine sets ``local`` to the store of them
    # (``dscir.engine.local_state.LocalState``) and the model passes it to its tasks.
    local_values: int | None
    local: Any

    def step(self, m: int, parts) -> dict[str, Any]: ...

    def keep_sample(self, iteration: int) -> dict[str, np.ndarray]:
        """Record the current state as a posterior sample; rows for the run's
        ``samples/`` arrays."""

    def score(self) -> float:
        """The held-out score now (over the kept samples where the model averages)."""

    def evaluation_extras(self) -> dict[str, Any]: ...

    def stopping_score(self, score: float) -> float:
        """The held-out ``score`` as ``n_iter="auto"``'s rule reads it: a perplexity per
        token (``ModelDefaults``: the score itself)."""

    def state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Arrays and JSON values that, with the engine's counters, continue the chain."""

    def held_state(self) -> Any:
        """Checkpoint arrays that their holders write (a ``HeldState`` of
        ``dscir.runs.checkpoint``: parameters held by the workers), or None."""

    def restore(self, arrays: dict[str, np.ndarray], values: dict[str, Any],
                samples: dict[str, np.ndarray]) -> None: ...

    def sample_rows(self) -> dict[str, int]:
        """Rows of the run's ``samples/`` arrays that belong to the chain so far."""

    def run_arrays(self) -> dict[str, np.ndarray]:
        """The final arrays of a run (``state/...`` and the model's summaries)."""

    def write_run_arrays(self, root: str) -> dict[str, np.ndarray]:
        """The run's final arrays for the driver to write into the run's Zarr group
        ``root``; arrays held by the workers are written there by them and left out."""

    def report_settings(self) -> dict[str, Any]:
        """Settings shown beside the run on the dashboard page (e.g. n_topics)."""

    def progress(self, stats: dict[str, Any]) -> dict[str, Any]:
        """The progress bar's postfix for one iteration's record (the model's
        statistics with the engine's: iteration, wall, compute, transfer, queue,
        update, compute_sum; see ``dscir.engine.parts.Timing``)."""


class ModelDefaults:
    """The ``Model`` members a model whose parameters all live on the driver, and
    which keeps nothing between visits of a document, has: inherit them."""

    local_values: ClassVar[int | None] = None
    local: Any = None
    resident: ClassVar[bool] = False  # documents streamed to the tasks (``Model.resident``)
    fit_is_state: ClassVar[bool] = False  # the fit is a mean over kept samples

    def held_state(self) -> None:
        return None

    def stopping_score(self, score: float) -> float:
        """The held-out ``score`` as the stopping rule reads it: a perplexity per token,
        so its tolerance (a relative change per pass) means the same for every
        model. LDA's score is one."""
        return score

    def write_run_arrays(self, root: str) -> dict[str, np.ndarray]:
        return self.run_arrays()
