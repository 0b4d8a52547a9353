"""LDA's model-local kernels: per-document Gibbs expectations with phi fixed,
document-completion log-likelihood, and the collapsed Gibbs baseline.

Pure array code (numba, ``nogil`` so Dask worker threads run them in
parallel); no Dask, no I/O. Documents arrive as CSR batches: ``indptr`` (int64,
n + 1), ``indices`` (global word ids), ``data`` (counts). Every random stream is
named by (seed, iteration, document id) through ``dscir.rng``, so a document's
result never depends on which other documents share its batch or worker.
"""

from __future__ import annotations

import numpy as np

from dscir.errors import DscirError
from dscir.models import _lda_kernels as _k
from dscir.rng import derive


def _int_array(x, dtype, name: str) -> np.ndarray:
    a = np.asarray(x)
    if a.ndim != 1 or (a.size and a.dtype.kind not in "iu"):
        raise DscirError(f"{name} must be a 1-d integer array, got shape {a.shape} "
                         f"and dtype {a.dtype}")
    return np.ascontiguousarray(a, dtype=dtype)


def _check_int(value, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise DscirError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _check_alpha(alpha) -> float:
    a = float(alpha)
    if not (np.isfinite(a) and a > 0.0):
        raise DscirError(f"alpha must be a positive finite number, got {alpha!r}")
    return a


def _csr(indptr, indices, data, name: str = "documents"):
    indptr = _int_array(indptr, np.int64, f"{name} indptr")
    indices = _int_array(indices, np.int32, f"{name} indices")
    data = _int_array(data, np.int32, f"{name} data")
    if indptr.size < 1 or indptr[0] != 0 or indptr[-1] != indices.size:
        raise DscirError(f"{name} indptr must start at 0 and end at len(indices) "
                         f"= {indices.size}")
    if np.any(np.diff(indptr) < 0):
        raise DscirError(f"{name} indptr must be non-decreasing")
    if data.size != indices.size:
        raise DscirError(f"{name} data has {data.size} entries but indices has {indices.size}")
    if data.size and data.min() < 0:
        raise DscirError(f"{name} data (word counts) must be non-negative")
    return indptr, indices, data


def _local(local, n_entries: int, n_cols: int, name: str) -> np.ndarray:
    local = _int_array(local, np.int32, name)
    if local.size != n_entries:
        raise DscirError(f"{name} has {local.size} entries but the batch has {n_entries}")
    if local.size and (local.min() < 0 or local.max() >= n_cols):
        raise DscirError(f"{name} must index the {n_cols} given phi columns")
    return local


def _docs(docs, n_docs: int) -> np.ndarray:
    docs = _int_array(docs, np.int64, "docs")
    if docs.size != n_docs:
        raise DscirError(f"docs has {docs.size} ids but the batch has {n_docs} documents")
    if docs.size and docs.min() < 0:
        raise DscirError("docs (document ids) must be non-negative")
    return docs


def _matrix(x, name: str) -> np.ndarray:
    a = np.ascontiguousarray(x, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] < 1:
        raise DscirError(f"{name} must be a 2-d array [K, U] with K >= 1, got shape {a.shape}")
    return a


def gibbs_expectations(indptr, indices, data, docs, phi_cols, local_words, alpha, sweeps,
                       seed, iteration):
    """Topic-assignment counts of a batch of documents under fixed topics.

    For each document, expands counts into tokens, initialises z sequentially
    from the document's stream (seed, iteration, docs[d]), runs ``sweeps``
    collapsed sweeps p(z_i = k) ∝ (alpha + n_dk^{¬i}) phi_{k,w_i} (theta
    integrated out, phi fixed), discards the first ``sweeps // 2`` and sums the
    counts over the remaining ``n_kept`` sweeps.

    ``phi_cols`` [K, U] holds the columns of the U words the batch uses and
    may be rescaled by any positive per-column constant (the conditional is
    invariant; scaling by powers of two gives bit-identical output).
    ``local_words[e]`` is the column of CSR entry e.

    Returns ``(topic_word int64 [K, U], doc_topic int64 [n_docs, K], n_kept)``:
    integer sums over kept sweeps (and, for topic_word, over documents), so a
    reduction over batches is exact in any order; divide by ``n_kept`` once.
    """
    indptr, indices, data = _csr(indptr, indices, data)
    phi_cols = _matrix(phi_cols, "phi_cols")
    if not np.all(np.isfinite(phi_cols)) or (phi_cols.size and phi_cols.min() < 0.0):
        raise DscirError("phi_cols must be finite and non-negative")
    if phi_cols.shape[1] and not np.all(phi_cols.max(axis=0) > 0.0):
        raise DscirError("every phi column must have a positive entry")
    local = _local(local_words, indices.size, phi_cols.shape[1], "local_words")
    docs = _docs(docs, indptr.size - 1)
    alpha = _check_alpha(alpha)
    sweeps = _check_int(sweeps, "sweeps", 2)
    key = np.uint64(derive(_check_int(seed, "seed", 0), _check_int(iteration, "iteration", 0)))
    topic_word, doc_topic = _k.gibbs_expectations(indptr, data, docs, phi_cols, local, alpha,
                                                  sweeps, key)
    return topic_word, doc_topic, sweeps - sweeps // 2


def completion_log_likelihood(obs_indptr, obs_indices, obs_data, test_indptr, test_indices,
                              test_data, docs, log_phi_cols, obs_local, test_local, alpha,
                              sweeps, seed):
    """Document-completion log-likelihood (Wallach et al. 2009) under fixed topics.

    For each document, Gibbs-samples the topics of its observed tokens (stream
    (seed, docs[d]); ``sweeps`` sweeps, the first half discarded) and estimates
    theta_dk as the average over kept sweeps of (n_dk + alpha)/(N_d + K alpha);
    with no observed tokens theta is uniform. Returns ``(loglik float64 [n],
    n_test int64 [n])``: the natural-log sum over the document's test tokens of
    log Σ_k theta_dk phi_kw, and their number. ``log_phi_cols`` [K, U] is log
    phi of the words used (not rescaled; -inf allowed where phi is zero).
    """
    obs_indptr, obs_indices, obs_data = _csr(obs_indptr, obs_indices, obs_data, "observed")
    test_indptr, test_indices, test_data = _csr(test_indptr, test_indices, test_data, "test")
    if obs_indptr.size != test_indptr.size:
        raise DscirError(f"observed part has {obs_indptr.size - 1} documents but the test "
                         f"part has {test_indptr.size - 1}")
    log_phi = _matrix(log_phi_cols, "log_phi_cols")
    if np.any(np.isnan(log_phi)) or np.any(log_phi == np.inf):
        raise DscirError("log_phi_cols must not contain NaN or +inf")
    if log_phi.shape[1] and not np.all(np.isfinite(log_phi.max(axis=0))):
        raise DscirError("every log_phi column must have a finite entry (phi > 0 somewhere)")
    n_cols = log_phi.shape[1]
    obs_local = _local(obs_local, obs_indices.size, n_cols, "obs_local")
    test_local = _local(test_local, test_indices.size, n_cols, "test_local")
    docs = _docs(docs, obs_indptr.size - 1)
    alpha = _check_alpha(alpha)
    sweeps = _check_int(sweeps, "sweeps", 2)
    key = np.uint64(derive(_check_int(seed, "seed", 0)))
    return _k.completion_log_likelihood(obs_indptr, obs_data, test_indptr, test_data, docs,
                                        log_phi, obs_local, test_local, alpha, sweeps, key)


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
                          self._nk, np.uint64(derive(self.seed, 0)))
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
