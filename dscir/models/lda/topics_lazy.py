"""LDA's topics on the driver with the lazy SCIR step: an iteration costs O(K x U + K).

``LazyDriverTopics`` is the ``topics.TopicState`` of ``scir_step="lazy"`` with
the topics on the driver (docs/lazy_scir.md, "Wiring it into the LDA model").
Iteration ``m`` with key ``derive(seed, SAMPLER, m)``: the minibatch's U
distinct words (the union of the parts' words) catch up to the clock
(``cir_lazy.touch``), the row totals are the ``"draw"`` normaliser, each part
gets its columns (log phi rescaled per column, as ``kernels.phi_columns``),
the tasks' integer counts are added into K x U (exact in any order) and the
step moves those U columns with a_hat = beta + counts x D / |S| / n_kept. No
K x W array is made per iteration: a kept sample is recorded with the
``"mean"`` normaliser (its phi added to each column in closed form when the
column is next touched), so the run keeps no ``samples/phi`` rows, only their
mean (``phi_mean``). Checkpoints hold the unrealized state (``to_arrays``),
so the chain does not depend on when they are written; the run's final
``state/log_theta`` is realized on a copy.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from dscir import streams
from dscir.models.lda.tasks import gibbs_sparse_counts
from dscir.models.lda.warm import warm_gibbs_counts
from dscir.rng import derive
from dscir.samplers import cir_lazy


def minibatch_words(words) -> np.ndarray:
    """U: the sorted distinct words of the whole minibatch (the parts' union)."""
    if not len(words):
        return np.zeros(0, np.int64)
    return np.unique(np.concatenate([np.asarray(w, np.int64) for w in words]))


def add_counts_u(counts: np.ndarray, u: np.ndarray, results: list[Any]) -> np.ndarray:
    """Add tasks' integer counts (dense ``GibbsResult`` or ``SparseCounts``) into
    the K x U total of the minibatch's words ``u`` (exact in any order)."""
    for r in results:
        if hasattr(r, "topic_word"):
            counts[:, np.searchsorted(u, r.words)] += r.topic_word
        else:
            counts[r.topics, np.searchsorted(u, r.word_ids)] += r.values
    return counts


class LazyDriverTopics:
    """LDA's topics as one lazy SCIR state (``cir_lazy.State``, W x K) on the driver."""

    placement: ClassVar[str] = "driver"
    kept_rows: ClassVar[tuple[str, ...]] = ()  # a K x W row per kept sample would be O(K W)

    def __init__(self, config, n_words: int, sampler, kernel: str, executor=None):
        self.config, self.kernel = config, kernel
        rng = np.random.Generator(np.random.PCG64(derive(config.seed, streams.INIT)))
        self.state_ = cir_lazy.init(rng.gamma(1.0, 1.0, size=(config.n_topics, n_words)))
        self.n_samples = 0
        self.iteration = 0  # the last iteration stepped (names the final realization's streams)
        self._u = np.zeros(0, np.int64)

    def _key(self, m: int) -> int:
        return derive(self.config.seed, streams.SAMPLER, m)

    def columns(self, words, near=None, m: int = 0) -> list[np.ndarray]:
        """Iteration ``m``'s phi columns of each part's ``words``: the minibatch's
        columns caught up to the clock, row totals by the ``"draw"`` normaliser."""
        beta, key = self.config.beta, self._key(m)
        self._u = minibatch_words(words)
        self.state_ = cir_lazy.touch(self.state_, self._u, beta, key)
        norm = cir_lazy.normaliser(cir_lazy.moments(self.state_, beta), "draw", key)
        out = []
        for w in words:
            lc = cir_lazy.columns(self.state_, np.asarray(w, np.int64), norm)
            out.append(np.ascontiguousarray(np.exp(lc - lc.max(axis=0))))
        return out

    def gibbs(self, executor, m: int, parts, words, local=None) -> list[Any]:
        cfg = self.config
        key = derive(cfg.seed, streams.GIBBS)
        cols = self.columns(words, m=m)
        if cfg.warm_start:
            args = [(c, cfg.alpha, cfg.sweeps, cfg.burn, key, m, False) for c in cols]
            return executor.run("gibbs", warm_gibbs_counts, parts, args, local=local)
        args = [(c, cfg.alpha, cfg.sweeps, key, m, self.kernel) for c in cols]
        return executor.run("gibbs", gibbs_sparse_counts, parts, args)

    def step(self, executor, m: int, results: list[Any], words, scale: float,
             h: float) -> dict[str, Any]:
        """The step of the columns ``gibbs`` touched with their K x U counts."""
        cfg, u = self.config, self._u
        counts = add_counts_u(np.zeros((cfg.n_topics, u.size), np.int64), u, results)
        self.state_ = cir_lazy.step(self.state_, u, counts, cfg.beta, h, self._key(m),
                                    scale / results[0].n_kept)
        self.iteration = m
        return {"n_tokens": int(sum(r.n_tokens for r in results))}

    def finite(self) -> bool:
        """The touched columns and the row moments: O(K U), not O(K W)."""
        return bool(np.isfinite(self.state_.log_theta[self._u]).all()
                    and np.isfinite(cir_lazy.moments(self.state_, self.config.beta)).all())

    def keep(self) -> dict[str, np.ndarray]:
        beta = self.config.beta
        norm = cir_lazy.normaliser(cir_lazy.moments(self.state_, beta), "mean")
        self.state_ = cir_lazy.keep(self.state_, norm)
        self.n_samples += 1
        return {}

    def log_phi(self) -> np.ndarray:
        """log of the current phi's conditional mean, E[theta | x] / E[R | x] (O(K W);
        read-only: a sample would need the columns realized)."""
        current = self.state_._replace(kept=self.state_.kept._replace(n=0))
        with np.errstate(divide="ignore"):
            return np.log(cir_lazy.mean_phi(current, self.config.beta))

    def mean_phi(self) -> np.ndarray:
        """The kept samples' mean phi (before the first keep: ``exp(log_phi())``)."""
        return cir_lazy.mean_phi(self.state_, self.config.beta)

    def mean_log_columns(self, words) -> list[np.ndarray]:
        with np.errstate(divide="ignore"):
            lphi = np.log(self.mean_phi())
        return [np.ascontiguousarray(lphi[:, w]) for w in words]

    def arrays(self) -> dict[str, np.ndarray]:
        arrays = {f"sampler/{k}": v for k, v in cir_lazy.to_arrays(self.state_).items()}
        arrays["lazy_iteration"] = np.array(self.iteration, np.int64)
        return arrays

    def held(self) -> None:
        return None

    def restore(self, arrays: dict[str, Any], n_samples: int) -> None:
        fields = {k.split("/", 1)[1]: np.asarray(v) for k, v in arrays.items()
                  if k.startswith("sampler/")}
        self.state_ = cir_lazy.from_arrays(fields)
        self.iteration = int(np.asarray(arrays["lazy_iteration"]))
        self.n_samples = int(n_samples)

    def run_arrays(self) -> dict[str, np.ndarray]:
        """The final state realized at the clock on a copy (the chain goes on from
        the unrealized one) and the kept mean."""
        final = cir_lazy.realize(cir_lazy.copy(self.state_), self.config.beta,
                                 derive(self.config.seed, streams.SAMPLER, self.iteration, 1))
        return {"state/log_theta": np.ascontiguousarray(cir_lazy.log_theta_kw(final)),
                "phi_mean": self.mean_phi()}

    def write_run_arrays(self, root: str) -> dict[str, np.ndarray]:
        """The run's arrays, for the driver to write."""
        return self.run_arrays()
