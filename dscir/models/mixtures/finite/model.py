"""The finite mixture on the engine: the stochastic sampler and the exact one.

One iteration ``m`` of the stochastic sampler:

1. the engine has read the minibatch S of training documents on the workers;
2. each task gets log pi and the columns of log phi of its words (cut where
   the components' column blocks live, in this process or on the workers:
   ``dscir.models.mixtures.components``), draws z_i ∝ pi_k Mult(x_i | phi_k)
   for its documents and returns integer document and word counts per
   component; they are added exactly, in any order (by each block, its words);
3. with m_hat = (N / |S|) m and c_hat = (N / |S|) c, the sampler (SCIR or
   SGRLD) moves the K weight gammas towards Gamma(gamma + m_hat) and the
   K x W component gammas towards Gamma(a0 + c_hat).

The exact sampler (``MixtureGibbsModel``) runs ``gibbs.FiniteGibbs`` on all
training documents in the driver's process. Both keep every training
document's last allocation (its label) and the held-out log predictive of
their kept samples as a running log-space average (``PredictiveAverage``).
An iteration's statistics and each score carry ``n_clusters``: the clusters
occupied by the training documents' labels (the DP mixture's name for it, which
the dashboard's gauge reads), at most the configuration's K.
Every draw comes from a stream of ``dscir.rng.domains`` (``gibbs.step_keys``), per
document where it belongs to a document, so a run is the same on any number
of workers.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from dscir.errors import DscirError
from dscir.models.base import Data
from dscir.models.mixtures.common import MixtureBase, group
from dscir.models.mixtures.predictive import PredictiveAverage
from dscir.models.mixtures.finite.collapsed import collapsed_start_on_workers
from dscir.models.mixtures.finite.config import MixtureConfig
from dscir.models.mixtures.finite.gibbs import (FiniteGibbs, initial_state, seeding_key, step_keys,
                                        weights_step)
from dscir.models.mixtures.finite.allocation import Sample
from dscir.models.mixtures.components import Components, resolve_placement
from dscir.models.mixtures.finite.tasks import allocate_docs, doc_log_predictive
from dscir.models.mixtures.seeding import seed_on_workers
from dscir.samplers import get_sampler
from dscir.samplers.simplex import normalize_log


def sample_arrays(iteration: int, sample: Sample) -> dict[str, np.ndarray]:
    """One kept sample as rows of the run's ``samples/`` arrays."""
    return {"samples/iteration": np.array([iteration], np.int64),
            "samples/log_pi": np.asarray(sample.log_pi, np.float64)[None],
            "samples/log_phi": np.asarray(sample.log_phi, np.float64)[None]}


def samples_from_arrays(arrays: dict[str, np.ndarray]) -> list[Sample]:
    """The kept samples back from the run's ``samples/`` arrays."""
    if "log_pi" not in arrays:
        return []
    return [Sample(np.array(p), np.array(f)) for p, f in zip(arrays["log_pi"], arrays["log_phi"])]


def doc_scores(executor, docs: np.ndarray, sample: Sample, columns=None) -> np.ndarray:
    """Per-document log predictive of ``docs`` (sorted) under one sample, by tasks
    that get only the columns of log phi of their words (``columns(words)``:
    where they come from when not from ``sample``)."""
    parts = executor.read(np.asarray(docs, np.int64), "read-heldout")
    words = executor.words(parts)
    cols = (columns(words) if columns is not None else
            [np.ascontiguousarray(sample.log_phi[:, w]) for w in words])
    args = [(sample.log_pi, c) for c in cols]
    return np.concatenate(executor.run("score", doc_log_predictive, parts, args))


def predictive_score(executor, docs: np.ndarray, samples: list[Sample], columns=None) -> float:
    """Held-out log predictive of ``docs`` averaged over ``samples`` (in log space
    per document, then the mean over documents; ``columns``: where the one
    sample's log phi columns come from when not from it)."""
    average = PredictiveAverage()
    for sample in samples:
        average.add(doc_scores(executor, docs, sample, columns))
    return average.mean()


class MixtureEvaluation(NamedTuple):
    iteration: int
    log_predictive: float
    n_clusters: int  # occupied clusters (as the DP mixture's; K is the configuration's)


class _FiniteMixture(MixtureBase):
    """What both samplers share: parameters as two sampler states, labels, kept
    samples and their held-out score."""

    name = "mixture"
    resident = False  # its allocations are written in document order
    Evaluation = MixtureEvaluation
    sample_arrays = staticmethod(sample_arrays)

    @staticmethod
    def log_weights_of(sample: Sample) -> np.ndarray:
        return sample.log_pi

    # the state, by subclass: a sampler (``self.sampler``), its two states and labels
    sampler: Any
    weights: Any
    components: Any

    def sample(self) -> Sample:
        return self.weights_sample()._replace(log_phi=self.log_phi())

    def weights_sample(self) -> Sample:
        return Sample(normalize_log(self.weights.log_theta), None)

    def log_phi(self) -> np.ndarray:
        return normalize_log(self.components.log_theta, axis=1)

    def component_fields(self) -> dict[str, np.ndarray]:
        return self.sampler.arrays(self.components)

    @property
    def n_occupied(self) -> int:
        z = self.labels()
        return int(np.count_nonzero(np.bincount(z[z >= 0], minlength=self.config.n_clusters)))

    def score_sample(self, sample: Sample) -> np.ndarray:
        return doc_scores(self.executor, self.data.heldout, sample)

    def evaluation_extras(self) -> dict[str, Any]:
        return {"n_clusters": self.n_occupied}

    def _z(self) -> np.ndarray:
        raise NotImplementedError

    def driver_parameters(self) -> dict[str, np.ndarray]:
        state = {f"weights/{k}": v for k, v in self.sampler.arrays(self.weights).items()}
        state["z"] = self._z()
        return state

    def state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        arrays, values = self.kept.state()
        return {**arrays, **self.parameters()}, values

    def _set_parameters(self, weights, components, z) -> None:
        raise NotImplementedError

    def restore(self, arrays, values, samples) -> None:
        k, w = self.config.n_clusters, self.data.n_words
        self._set_parameters(self.sampler.from_arrays(group(arrays, "weights"), (k,)),
                             self.sampler.from_arrays(group(arrays, "components"), (k, w)),
                             np.array(arrays["z"], dtype=np.int32))
        self.kept.restore(arrays, values, samples_from_arrays(samples) if self.kept.keep else [])

    def sample_rows(self) -> dict[str, int]:
        return {f"samples/{k}": self.kept.n_samples for k in ("iteration", "log_pi", "log_phi")}

    def report_settings(self) -> dict[str, Any]:
        return {"K": self.config.n_clusters}  # not n_clusters: the stat of occupied ones

    def progress(self, stats: dict[str, Any]) -> dict[str, Any]:
        return {"occupied": stats["n_clusters"],
                "docs/s": f"{stats['n_docs'] / stats['wall']:.0f}"}


class MixtureModel(_FiniteMixture):
    """The stochastic sampler (SCIR or SGRLD steps): weights and every training
    document's last allocation on the driver, the components in column blocks
    there or on the workers (``held``, by ``config.placement``); documents on the
    workers."""

    minibatch = True

    def __init__(self, config: MixtureConfig, data: Data, executor, keep_samples: bool = True):
        super().__init__(config, data, executor, keep_samples)
        z0, log_weights, log_components = initial_state(data.train.size, data.n_words,
                                                        config.n_clusters, config.seed)
        self._start_stochastic(z0, "the finite mixture runs without momenta")
        if config.init == "kmeans++":
            log_components = seed_on_workers(executor, data.train, data.n_words,
                                             config.n_clusters, config.a0,
                                             seeding_key(config.seed))
        elif config.init == "collapsed":
            log_weights, log_components = collapsed_start_on_workers(
                executor, data.train, data.n_words, key=seeding_key(config.seed),
                n_clusters=config.n_clusters, gamma=config.gamma, a0=config.a0)
        self.weights = self.sampler.init_log(log_weights)
        placement = resolve_placement(config.placement, config.n_clusters, data.n_words,
                                      executor)
        self.held = Components(executor, self.sampler, self.sampler.init_log(log_components),
                               placement)

    def labels(self) -> np.ndarray:
        return self.z

    def _z(self) -> np.ndarray:
        return self.z

    @property
    def components(self):
        """The components' sampler state (dense, on the driver)."""
        return self.sampler.State(**self.held.fields())

    def log_phi(self) -> np.ndarray:
        return self.held.log_phi()

    def component_fields(self) -> dict[str, np.ndarray]:
        return self.held.fields()

    def _set_parameters(self, weights, components, z) -> None:
        self.weights, self.z = weights, z
        self.held.load(self.sampler.arrays(components))

    def score_current(self) -> np.ndarray:
        return doc_scores(self.executor, self.data.heldout, self.weights_sample(),
                          self.held.columns)

    def step(self, m: int, parts) -> dict[str, Any]:
        cfg, docs = self.config, parts.docs
        k_alloc, k_weights, k_components = step_keys(cfg.seed, m)
        log_pi = normalize_log(self.weights.log_theta)
        words = self.executor.words(parts)
        args = [(c, log_pi, k_alloc) for c in self.held.columns(words)]
        results = self.held.allocate(self.executor, allocate_docs, parts, args)
        scale = self.n_documents / docs.size
        occupancy, n_tokens = self.held.advance(results, words, self.z, a0=cfg.a0, scale=scale,
                                                h=cfg.step_components, key=k_components)
        self.weights = weights_step(self.sampler, self.weights, occupancy * scale,
                                    gamma=cfg.gamma, step_size=cfg.step_weights, key=k_weights)
        return {"n_docs": int(docs.size), "n_tokens": n_tokens, "n_clusters": self.n_occupied}


class MixtureGibbsModel(_FiniteMixture):
    """The exact Gibbs sampler on all training documents, in the driver's process."""

    minibatch = False

    def __init__(self, config: MixtureConfig, data: Data, executor, keep_samples: bool = True):
        super().__init__(config, data, executor, keep_samples)
        self.sampler = get_sampler("scir")  # the layout of its states
        parts = executor.read(data.train)
        if len(parts.batches) != 1 or not hasattr(parts.batches[0], "indptr"):
            raise DscirError("the exact Gibbs sampler runs in this process (a InProcessExecutor)")
        train = parts.batches[0]
        self.gibbs = FiniteGibbs(train.indptr, train.indices, train.data, data.n_words,
                                 n_clusters=config.n_clusters, gamma=config.gamma,
                                 a0=config.a0, seed=config.seed, doc_ids=data.train,
                                 init=config.init)
        self.n_tokens = int(np.asarray(train.data, np.int64).sum())

    weights = property(lambda self: self.gibbs.weights)
    components = property(lambda self: self.gibbs.components)

    def labels(self) -> np.ndarray:
        z = np.full(self.data.n_docs, -1, dtype=np.int32)
        z[self.data.train] = self.gibbs.z
        return z

    def _z(self) -> np.ndarray:
        return self.gibbs.z

    def _set_parameters(self, weights, components, z) -> None:
        self.gibbs.weights, self.gibbs.components, self.gibbs.z = weights, components, z

    def step(self, m: int, parts) -> dict[str, Any]:
        self.gibbs.step(m)
        return {"n_docs": int(self.data.train.size), "n_tokens": self.n_tokens,
                "n_clusters": self.gibbs.n_occupied}


def model_type(sampler: str) -> type[_FiniteMixture]:
    """The model class a sampler runs: exact Gibbs in process, or the stochastic one."""
    return MixtureGibbsModel if sampler == "gibbs" else MixtureModel


def final_sample(config: MixtureConfig, state: dict[str, np.ndarray],
                 with_phi: bool = True) -> Sample:
    """The sample of a run's final ``state/`` arrays (either sampler's layout);
    without its K x W log phi (None, not read) unless ``with_phi``."""
    s = get_sampler("scir" if config.sampler == "gibbs" else config.sampler)
    weights = {k: state[f"weights/{k}"] for k in s.State._fields}
    log_pi = normalize_log(s.from_arrays(weights).log_theta)
    if not with_phi:
        return Sample(log_pi, None)
    return Sample(log_pi,
                  normalize_log(s.from_arrays(group(state, "components")).log_theta, axis=1))
