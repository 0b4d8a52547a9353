"""The collapsed Gibbs sampler for LDA: the exact, single-machine baseline."""

from __future__ import annotations

import numpy as np

from dscir.errors import DscirError
from dscir.models.lda import _gibbs as _k
from dscir.models.lda.gibbs import _check_alpha, _check_int, _csr
from dscir.rng import derive
from dscir.rng.domains import EXACT_START


class CollapsedGibbs:
    """Collapsed Gibbs sampler for LDA (Griffiths & Steyvers 2004), single machine.

    The exact but non-scalable baseline: theta and phi are both integrated out
    and every sweep visits every token of the corpus with
    p(z_i = k) ∝ (n_dk + alpha)(n_kw + beta)/(n_k + W beta). Topics start
    uniformly at random from stream (seed, 0); sweep t draws document d's
    tokens from stream (seed, t, d), so ``run(a); run(b)`` equals ``run(a + b)``.
    """

    def __init__(self, indptr, indices, data, n_topics, alpha, beta, seed, n_words=None):
        indptr, indices, data = _csr(indptr, indices, data)
        self.n_topics = _check_int(n_topics, "n_topics", 1)
        self.alpha = _check_alpha(alpha)
        b = float(beta)
        if not (np.isfinite(b) and b > 0.0):
            raise DscirError(f"beta must be a positive finite number, got {beta!r}")
        self.beta = b
        self.seed = _check_int(seed, "seed", 0)
        if indices.size and indices.min() < 0:
            raise DscirError("indices (word ids) must be non-negative")
        seen = int(indices.max()) + 1 if indices.size else 0
        self.n_words = seen if n_words is None else _check_int(n_words, "n_words", 1)
        if seen > self.n_words:
            raise DscirError(f"word id {seen - 1} is outside the vocabulary of {self.n_words}")
        counts = data.astype(np.int64)
        self._tok_word = np.repeat(indices, counts)
        self._doc_ptr = np.concatenate(([0], np.cumsum(counts)))[indptr].astype(np.int64)
        self._z = np.empty(self._tok_word.size, dtype=np.int32)
        self._nwk = np.zeros((self.n_words, self.n_topics), dtype=np.int32)
        self._ndk = np.zeros((indptr.size - 1, self.n_topics), dtype=np.int32)
        self._nk = np.zeros(self.n_topics, dtype=np.int64)
        _k.collapsed_init(self._doc_ptr, self._tok_word, self._z, self._nwk, self._ndk,
                          self._nk, np.uint64(derive(self.seed, EXACT_START)))
        self.iteration = 0

    @property
    def n_tokens(self) -> int:
        return int(self._tok_word.size)

    @property
    def n_kw(self) -> np.ndarray:
        """Topic-word counts [K, W] (a read-only view)."""
        v = self._nwk.T
        v.flags.writeable = False
        return v

    @property
    def n_dk(self) -> np.ndarray:
        """Document-topic counts [D, K] (a read-only view)."""
        v = self._ndk.view()
        v.flags.writeable = False
        return v

    @property
    def n_k(self) -> np.ndarray:
        """Tokens per topic [K] (a read-only view)."""
        v = self._nk.view()
        v.flags.writeable = False
        return v

    def run(self, n_sweeps: int) -> CollapsedGibbs:
        """Run ``n_sweeps`` full sweeps over the corpus."""
        for _ in range(_check_int(n_sweeps, "n_sweeps", 0)):
            self.iteration += 1
            _k.collapsed_sweep(self._doc_ptr, self._tok_word, self._z, self._nwk, self._ndk,
                               self._nk, self.alpha, self.beta, self.n_words,
                               np.uint64(derive(self.seed, self.iteration)))
        return self

    def topic_word(self) -> np.ndarray:
        """Posterior-mean estimate of phi [K, W]: (n_kw + beta)/(n_k + W beta)."""
        return (self._nwk.T + self.beta) / (self._nk[:, None] + self.n_words * self.beta)

    def __repr__(self) -> str:
        return (f"CollapsedGibbs(n_topics={self.n_topics}, alpha={self.alpha}, "
                f"beta={self.beta}, documents={self._ndk.shape[0]}, tokens={self.n_tokens}, "
                f"iteration={self.iteration})")
