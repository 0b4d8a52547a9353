"""LDA on the engine: one model whose topics live where the placement says.

``LDAModel`` owns what does not depend on where the topics are: the sampler
and its step-size schedule, the Gibbs kernel, the iteration's statistics,
the divergence check, the kept-sample bookkeeping and the held-out score. Its
``topics`` (a ``topics.TopicState``) own the K x W state: the class of the
SCIR step (``TOPIC_STATES``: ``topics.Topics`` for the dense step,
``topics_lazy.LazyTopics`` for the lazy one), its vocabulary blocks in the
form of the configuration's placement (this process or the workers), resolved
on the corpus (``placement.resolve_placement``: the estimator resolves it
first, so the run records what ran).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from dscir.errors import DscirError
from dscir.models.base import Data
from dscir.models.lda.config import LDAConfig
from dscir.models.lda.gibbs_cuda import check_device, device_kernel
from dscir.models.lda.evaluation import perplexity
from dscir.models.lda.gibbs import resolve_kernel
from dscir.models.lda.placement import resolve_placement
from dscir.models.lda.topics import Topics
from dscir.models.lda.topics_lazy import LazyTopics
from dscir.samplers import get_sampler


#: The ``TopicState`` class of each SCIR step (``config.scir_step``), built on the
#: resolved placement's blocks.
TOPIC_STATES: dict[str, type] = {"dense": Topics, "lazy": LazyTopics}


class LDAEvaluation(NamedTuple):
    iteration: int
    perplexity: float


def check_finite(finite: bool, sampler: str, m: int) -> None:
    """One clear error when the topics stopped being finite numbers at iteration
    ``m`` (a stochastic-gradient step too large for these counts), instead of
    the worker tasks' complaint about their columns one iteration later."""
    if not finite:
        raise DscirError(f"the {sampler} chain diverged at iteration {m}: its topics are no "
                         f"longer finite numbers; use a smaller step_size (or "
                         f"policy='reference', the papers' settings)")


class LDAModel:
    """An LDA chain: its topics (``topics``, a ``TopicState`` of the resolved
    placement) and how an iteration moves them."""

    name = "lda"
    fit_is_state = False  # the topics are the kept samples' mean (``Model.fit_is_state``)
    resident = True  # integer counts added exactly in any order (``base.Model.resident``)
    metric = "perplexity"
    Evaluation = LDAEvaluation
    minibatch = True

    def __init__(self, config: LDAConfig, data: Data, executor, n_documents: int | None = None):
        self.config, self.data, self.executor = config, data, executor
        # D of the minibatch scale D / |S|: the store's training documents, or the
        # documents a stream has brought so far (``partial_fit``).
        self.n_documents = int(data.train.size if n_documents is None else n_documents)
        self.sampler = get_sampler(config.sampler, **(config.sampler_options or {}))
        self.kernel = device_kernel(resolve_kernel(config.kernel, config.n_topics),
                                    config.device)
        if config.device == "cuda":  # the Gibbs tasks on GPU workers (or here)
            executor.require("gibbs", {"GPU": 1}, check_device)
        self.schedule = config.schedule()
        if config.scir_step == "auto":
            raise DscirError("scir_step='auto' is chosen on the corpus (dscir.LDA(...)"
                             ".chain_config(store)); a chain's configuration runs 'dense' "
                             "or 'lazy'")
        placement = resolve_placement(config, data.n_words)
        topics = TOPIC_STATES[config.scir_step]  # its blocks in the placement's form
        self.topics = topics(config, data.n_words, self.sampler, self.kernel, executor,
                             placement)
        # Warm starts: the engine gives the documents' stored assignments (token
        # topics, K values) as ``local``.
        self.local_values = config.n_topics if config.warm_start else None
        self.local = None

    @property
    def placement(self) -> str:
        return self.topics.placement

    def log_phi(self) -> np.ndarray:
        """log phi of the current state, K x W on the driver."""
        return self.topics.log_phi()

    def mean_phi(self) -> np.ndarray:
        """Average of the kept phi samples (the current phi if none is kept yet)."""
        return self.topics.mean_phi()

    def write_mean(self, root: str) -> None:
        """Write the kept samples' mean phi as ``phi_mean`` into the Zarr group
        ``root`` from the workers holding the topics (``placement="workers"``)."""
        self.topics.write_mean(root)

    def step(self, m: int, parts) -> dict[str, Any]:
        cfg, ex = self.config, self.executor
        words = ex.words(parts)
        results = self.topics.gibbs(ex, m, parts, words, self.local)
        scale = self.n_documents / parts.docs.size
        h = float(self.schedule(m))
        stats = self.topics.step(ex, m, results, words, scale, h)
        check_finite(self.topics.finite(), cfg.sampler, m)
        return {"n_docs": int(parts.docs.size), **stats, "step_size": h}

    def keep_sample(self, iteration: int) -> dict[str, np.ndarray]:
        rows = self.topics.keep()
        return {**rows, "samples/iteration": np.array([iteration], dtype=np.int64)}

    def score(self) -> float:
        cfg = self.config
        return perplexity(self.executor, self.data.heldout, None, cfg.alpha, cfg.eval_sweeps,
                          cfg.seed, cfg.completion_every, self.topics.mean_log_columns)

    def evaluation_extras(self) -> dict[str, Any]:
        return {}

    def stopping_score(self, score: float) -> float:
        return score  # a perplexity per token already

    def state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        return self.topics.arrays(), {"n_samples": self.topics.n_samples}

    def held_state(self):
        """The checkpoint arrays the workers write (None with the topics on the driver)."""
        return self.topics.held()

    def restore(self, arrays: dict[str, Any], values: dict[str, Any],
                samples: dict[str, np.ndarray]) -> None:
        self.topics.restore(arrays, int(values["n_samples"]))

    def sample_rows(self) -> dict[str, int]:
        n = self.topics.n_samples
        return {**{name: n for name in self.topics.kept_rows}, "samples/iteration": n}

    def run_arrays(self) -> dict[str, np.ndarray]:
        return self.topics.run_arrays()

    def write_run_arrays(self, root: str) -> dict[str, np.ndarray]:
        return self.topics.write_run_arrays(root)

    def report_settings(self) -> dict[str, Any]:
        return {"n_topics": self.config.n_topics, "placement": self.placement}

    def progress(self, stats: dict[str, Any]) -> dict[str, str]:
        return {"docs/s": f"{stats['n_docs'] / stats['wall']:.0f}",
                "tokens/s": f"{stats['n_tokens'] / stats['wall']:.3g}"}
