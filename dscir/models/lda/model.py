"""LDA on the engine: one iteration from phi to counts and back.

Iteration ``m``: the engine has read the minibatch's parts on the workers;
each part gets the phi columns of its words (K x U, rescaled per word by the
column maximum, which leaves the Gibbs conditional unchanged and keeps
beta = 1e-4 topics from underflowing) and runs the Gibbs kernel there; the
returned integer counts are added into a K x W matrix (exact in any order,
so the result does not depend on the number of workers or on which task
finishes first), scaled by D / |S| / n_kept, and the sampler steps with
a_hat = beta + counts.

With ``warm_start`` the tasks start each document from its assignments at its
last visit (``dscir.models.lda.warm``; the engine stores them); with
``control_variates`` a_hat is ``control_variate``'s estimate from those
stored assignments instead.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from dscir import streams
from dscir.errors import DscirError
from dscir.models.base import Data
from dscir.models.lda.config import LDAConfig
from dscir.models.lda.evaluation import perplexity
from dscir.models.lda.kernels import phi_columns, resolve_kernel
from dscir.models.lda.placement import check_model_placement
from dscir.models.lda.tasks import GibbsResult, SparseCounts, gibbs_sparse_counts
from dscir.models.lda.warm import warm_gibbs_counts
from dscir.rng import derive
from dscir.samplers import get_sampler
from dscir.samplers.simplex import normalize_log


def add_counts(counts: np.ndarray, results: list[GibbsResult]) -> np.ndarray:
    """Add tasks' K x U integer counts into the K x W total (exact in any order)."""
    for r in results:
        counts[:, r.words] += r.topic_word
    return counts


def add_sparse_counts(counts: np.ndarray, results: list[SparseCounts]) -> np.ndarray:
    """Add tasks' nonzero integer counts into the K x W total (exact in any order;
    a (topic, word) entry occurs once in a result)."""
    for r in results:
        counts[r.topics, r.word_ids] += r.values
    return counts


def control_variate(stored: np.ndarray, minibatch: np.ndarray, minibatch_stored: np.ndarray,
                    scale: float) -> np.ndarray:
    """Dubey et al.'s estimate of the full-data expected counts: ``stored`` (every
    training document's stored-assignment counts, summed) + ``scale`` (D/|S|) x
    (the minibatch's expected counts - its documents' stored counts). Over a
    uniformly drawn minibatch its mean is the full-data sum whatever is stored;
    its variance falls as the stored assignments approach the new ones."""
    return stored + scale * (minibatch - minibatch_stored)


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
    """An LDA chain's topics (a sampler state over K x W) and the running mean of
    the kept phi samples."""

    name = "lda"
    metric = "perplexity"
    Evaluation = LDAEvaluation
    minibatch = True
    placement = "driver"

    def __init__(self, config: LDAConfig, data: Data, executor):
        check_model_placement(self.placement, config, data.n_words)
        self.config, self.data, self.executor = config, data, executor
        self.sampler = get_sampler(config.sampler, **config.sampler_options)
        self.kernel = resolve_kernel(config.kernel, config.n_topics)
        self.schedule = config.schedule()
        rng = np.random.Generator(np.random.PCG64(derive(config.seed, streams.INIT)))
        self.state_ = self.sampler.init(rng.gamma(1.0, 1.0, size=(config.n_topics,
                                                                  data.n_words)))
        self.phi_sum = np.zeros((config.n_topics, data.n_words))
        self.n_samples = 0
        # Warm starts: the engine gives the documents' stored assignments (token
        # topics, K values) as ``local``; control variates keep their counts' sum.
        self.local_values = config.n_topics if config.warm_start else None
        self.local = None
        self.stored = self._zeros() if config.control_variates else None
        self._log_phi, self._log_phi_of = None, None

    def log_phi(self) -> np.ndarray:
        """log phi of the current state (read-only; computed once per state: a kept
        iteration's sample and the next step's columns share it)."""
        if self._log_phi_of is not self.state_:
            self._log_phi = normalize_log(self.state_.log_theta, axis=1)
            self._log_phi.flags.writeable = False
            self._log_phi_of = self.state_
        return self._log_phi

    def mean_phi(self) -> np.ndarray:
        """Average of the kept phi samples (the current phi if none is kept yet)."""
        if self.n_samples == 0:
            return np.exp(self.log_phi())
        return self.phi_sum / self.n_samples

    def step(self, m: int, parts) -> dict[str, Any]:
        cfg = self.config
        lphi = self.log_phi()
        key = derive(cfg.seed, streams.GIBBS)
        cols = [phi_columns(lphi, w) for w in self.executor.words(parts)]
        if cfg.warm_start:
            args = [(c, cfg.alpha, cfg.sweeps, cfg.burn, key, m, cfg.control_variates)
                    for c in cols]
            results = self.executor.run("gibbs", warm_gibbs_counts, parts, args, local=self.local)
        else:
            args = [(c, cfg.alpha, cfg.sweeps, key, m, self.kernel) for c in cols]
            results = self.executor.run("gibbs", gibbs_sparse_counts, parts, args)
        # Integer sums: exact whatever order the tasks finished or are added in.
        add = add_counts if cfg.warm_start else add_sparse_counts
        counts = add(self._zeros(), results)
        stats = {"n_docs": int(parts.docs.size),
                 "n_tokens": int(sum(r.n_tokens for r in results))}
        scale = self.data.train.size / parts.docs.size
        if cfg.control_variates:
            a_hat, stats["cv_clipped"] = self._control_variate(counts, results, scale)
        else:
            a_hat = counts * (scale / results[0].n_kept)
        h = float(self.schedule(m))
        self.state_ = self.sampler.step(self.state_, cfg.beta, a_hat, h,
                                        derive(cfg.seed, streams.SAMPLER, m))
        check_finite(np.isfinite(self._row_log_max()).all(), cfg.sampler, m)
        return {**stats, "step_size": h}

    def _row_log_max(self) -> np.ndarray:
        """log max_w theta_kw per row, O(K W) compares and only K logs for a
        linear-scale state (its ``log_theta`` would take K W)."""
        if self.sampler.log_scale:
            return self.state_.log_theta.max(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(self.state_.theta.max(axis=1))

    def _zeros(self) -> np.ndarray:
        return np.zeros((self.config.n_topics, self.data.n_words), np.int64)

    def _control_variate(self, counts, results, scale) -> tuple[np.ndarray, float]:
        """a_hat - beta by ``control_variate``, then ``stored`` takes the
        minibatch's new assignments; negative entries are clipped to 0 (the
        samplers need a_hat >= beta) and the clipped share is returned."""
        before = add_counts(self._zeros(), [r._replace(topic_word=r.stored_before)
                                            for r in results])
        after = add_counts(self._zeros(), [r._replace(topic_word=r.stored_after)
                                           for r in results])
        estimate = control_variate(self.stored, counts / results[0].n_kept, before, scale)
        self.stored += after - before
        clipped = estimate < 0
        return np.where(clipped, 0.0, estimate), float(clipped.mean())

    def keep_sample(self, iteration: int) -> dict[str, np.ndarray]:
        phi = np.exp(self.log_phi())
        self.phi_sum += phi
        self.n_samples += 1
        return {"samples/phi": phi.astype(np.float32)[None],
                "samples/iteration": np.array([iteration], dtype=np.int64)}

    def score(self) -> float:
        cfg = self.config
        return perplexity(self.executor, self.data.heldout, self.mean_phi(), cfg.alpha,
                          cfg.eval_sweeps, cfg.seed, cfg.completion_every)

    def evaluation_extras(self) -> dict[str, Any]:
        return {}

    def state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        arrays = {f"sampler/{k}": v for k, v in self.sampler.arrays(self.state_).items()}
        arrays["phi_sum"] = self.phi_sum
        if self.stored is not None:
            arrays["stored_counts"] = self.stored
        return arrays, {"n_samples": self.n_samples}

    def restore(self, arrays: dict[str, np.ndarray], values: dict[str, Any],
                samples: dict[str, np.ndarray]) -> None:
        fields = {k.split("/", 1)[1]: v for k, v in arrays.items() if k.startswith("sampler/")}
        self.state_ = self.sampler.from_arrays(fields, self.phi_sum.shape)
        self.phi_sum = np.array(arrays["phi_sum"], dtype=np.float64)
        self.n_samples = int(values["n_samples"])
        if self.stored is not None:
            self.stored = np.array(arrays["stored_counts"], dtype=np.int64)

    def sample_rows(self) -> dict[str, int]:
        return {"samples/phi": self.n_samples, "samples/iteration": self.n_samples}

    def run_arrays(self) -> dict[str, np.ndarray]:
        out = {f"state/{k}": v for k, v in self.sampler.arrays(self.state_).items()}
        out["phi_mean"] = self.mean_phi()
        return out

    def report_settings(self) -> dict[str, Any]:
        return {"n_topics": self.config.n_topics, "placement": self.placement}

    def progress(self, stats: dict[str, Any]) -> dict[str, str]:
        return {"docs/s": f"{stats['n_docs'] / stats['wall']:.0f}",
                "tokens/s": f"{stats['n_tokens'] / stats['wall']:.3g}"}
