"""What the DP and the finite mixture share: kept samples, their held-out score,
the run's arrays and the named groups of a checkpoint's arrays.

A mixture model says how to draw its current ``sample()``, score one on the
held-out documents (``score_sample``), lay a sample out as rows of the run's
``samples/`` arrays (``sample_arrays``) and name its weights (``log_weights_of``);
the base keeps the samples' held-out log predictive as a running log-space
average (``dscir.models.mixtures.predictive``).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

import numpy as np

from dscir.errors import DscirError
from dscir.models.base import Data, ModelDefaults
from dscir.models.mixtures.predictive import KeptSamples, no_heldout
from dscir.samplers import get_sampler


class MixtureRunConfig:
    """What both mixtures' configurations (dataclasses made from their parameters) share."""

    # Settings added after checkpoint format 2, at the value a chain had before
    # they existed (see LDAConfig.PREDATED).
    PREDATED: ClassVar[dict[str, Any]] = {"init": "random", "policy": "reference",
                                          "placement": "driver"}

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def group(arrays: dict[str, np.ndarray], name: str) -> dict[str, np.ndarray]:
    """The arrays under ``name/``, keyed by the rest of their names."""
    prefix = name + "/"
    return {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)}


class MixtureBase(ModelDefaults):
    """Kept samples and their held-out log predictive, for either mixture."""

    metric = "log_predictive"
    unit = "documents"  # what the model's rows are, in messages
    fit_is_state = True  # labels and components of the final state (``Model.fit_is_state``)
    #: The stochastic models' components (``components``); the Gibbs ones have none.
    held: Any = None
    #: The group of the run's ``state/`` arrays that holds the components' fields.
    state_group: ClassVar[str] = "components"

    def __init__(self, config, data: Data, executor, keep_samples: bool = True):
        if data.train.size == 0:
            raise DscirError(f"{data.store} has no training {self.unit}")
        self.config, self.data, self.executor = config, data, executor
        self.kept = KeptSamples(keep_samples)
        self._heldout_tokens: int | None = None  # of the held-out documents (``stopping_score``)
        # D of the minibatch scale D / |S|: the training rows, or the documents a stream
        # has seen so far (``dscir.api.streaming``).
        self.n_documents = int(data.train.size)

    def _start_stochastic(self, z0: np.ndarray, refusal: str) -> None:
        """The configuration's first-order sampler (a momentum one is refused, the
        error starting with ``refusal``) and every row's allocation: ``z0`` for the
        training rows, -1 for the held-out ones."""
        self.sampler = get_sampler(self.config.sampler)
        if self.sampler.momentum:
            raise DscirError(f"{refusal}; {self.config.sampler} is not supported (use scir, "
                             "sgrld or gibbs)")
        self.z = np.full(self.data.n_docs, -1, dtype=np.int32)
        self.z[self.data.train] = z0

    # by subclass
    def sample(self):
        raise NotImplementedError

    def score_sample(self, sample) -> np.ndarray:
        raise NotImplementedError

    def labels(self) -> np.ndarray:
        """Every row's last allocation (-1 for held-out rows)."""
        raise NotImplementedError

    def parameters(self) -> dict[str, np.ndarray]:
        """The state's arrays: ``driver_parameters`` and the components' fields."""
        out = self.driver_parameters()
        out.update({f"{self.state_group}/{k}": v for k, v in self.component_fields().items()})
        return out

    def driver_parameters(self) -> dict[str, np.ndarray]:
        """The state's arrays other than the K x W components' (weights, labels)."""
        raise NotImplementedError

    def component_fields(self) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def weights_sample(self):
        """The current sample without its K x W components (``log_phi`` None)."""
        raise NotImplementedError

    @property
    def workers_hold_components(self) -> bool:
        return getattr(self.held, "placement", None) == "workers"

    @staticmethod
    def sample_arrays(iteration: int, sample) -> dict[str, np.ndarray]:
        raise NotImplementedError

    @staticmethod
    def log_weights_of(sample) -> np.ndarray:
        raise NotImplementedError

    def _on_keep(self, sample) -> None:
        """Bookkeeping of a sample about to be kept (none by default)."""

    def score_current(self) -> np.ndarray:
        """Per-row held-out log predictive under the current state (a model whose
        components live elsewhere scores them where they are)."""
        return self.score_sample(self.sample())

    def keep_sample(self, iteration: int) -> dict[str, np.ndarray]:
        sample = self.sample()
        self._on_keep(sample)
        self.kept.add(sample, self.score_current() if self.data.heldout.size else None)
        return self.sample_arrays(iteration, sample)

    def stopping_score(self, score: float) -> float:
        """The per-token perplexity of the held-out documents, exp(-sum log p(x_d) /
        their tokens), from ``score`` (their mean log predictive): a relative change
        of the mean log predictive per document is that change over the nats per
        token (about 5 on text), so read as it is the rule's tolerance would be
        several times looser for a mixture than for LDA."""
        if self._heldout_tokens is None:
            from dscir.corpus import Corpus

            lengths = Corpus.open(self.data.store).doc_lengths
            self._heldout_tokens = int(lengths[self.data.heldout].sum())
        return math.exp(-score * self.data.heldout.size / max(self._heldout_tokens, 1))

    def score(self) -> float:
        """Average held-out log predictive: over the kept samples, or under the
        current state while none is kept."""
        if self.data.heldout.size == 0:
            raise no_heldout(self.data.store, self.unit)
        return self.kept.score_or(self.score_current)

    def run_arrays(self) -> dict[str, np.ndarray]:
        sample = self.sample()
        out = {"weights": np.exp(self.log_weights_of(sample)),
               "components": np.exp(sample.log_phi), "labels": self.labels()}
        out.update({f"state/{k}": v for k, v in self.parameters().items()})
        return out

    def write_run_arrays(self, root: str) -> dict[str, np.ndarray]:
        """``run_arrays``; with the components on the workers their blocks write
        ``components`` and the components' state into the run's group ``root``
        and the driver is left the rest."""
        if not self.workers_hold_components:
            return self.run_arrays()
        self.held.write_run_arrays(root, self.state_group)
        out = {"weights": np.exp(self.log_weights_of(self.weights_sample())),
               "labels": self.labels()}
        out.update({f"state/{k}": v for k, v in self.driver_parameters().items()})
        return out

    def report_settings(self) -> dict[str, Any]:
        return {}
