"""LDA's per-document Gibbs sampling: the Gibbs expectations with phi fixed and
document-completion log-likelihood, validated around the numba code in ``_kernels``.

Pure array code (numba, ``nogil``, each call's documents spread over the
calling thread's numba threads, ``numba.set_num_threads``); no Dask, no I/O.
Documents arrive as CSR batches: ``indptr`` (int64, n + 1), ``indices``
(global word ids), ``data`` (counts). Every random stream is named by (seed,
iteration, document id) through ``dscir.rng``, so a document's result never
depends on which other documents share its batch, worker or thread.
"""

from __future__ import annotations

import numba
import numpy as np

from dscir.errors import DscirError
from dscir.models.lda import _gibbs as _k
from dscir.models.lda import _sparse
from dscir.rng import derive

KERNELS = ("auto", "dense", "sparse")

#: From this many topics on, ``kernel="auto"`` samples with the Metropolis-Hastings
#: kernel: it runs faster per sweep than the dense one from a few hundred topics on,
#: but its chains mix more slowly per sweep, so the switch sits where it wins per
#: unit of error (chosen by benchmarks/lda_kernel_large_k.py at commit 36c1d4f).
SPARSE_FROM_K = 400


def resolve_kernel(kernel: str, n_topics: int) -> str:
    """``"dense"`` or ``"sparse"``: ``kernel`` itself, or for ``"auto"`` the faster
    one at ``n_topics`` (sparse from SPARSE_FROM_K topics on)."""
    if kernel not in KERNELS:
        raise DscirError(f"kernel must be one of {', '.join(KERNELS)}, got {kernel!r}")
    if kernel == "auto":
        return "sparse" if n_topics >= SPARSE_FROM_K else "dense"
    return kernel


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


def _matrix(x, name: str, float32: bool = False) -> np.ndarray:
    """``x`` as a C-contiguous float64 array (float32 kept as it is with ``float32``)."""
    a = np.asarray(x)
    a = np.ascontiguousarray(a, dtype=np.float32 if float32 and a.dtype == np.float32
                             else np.float64)
    if a.ndim != 2 or a.shape[0] < 1:
        raise DscirError(f"{name} must be a 2-d array [K, U] with K >= 1, got shape {a.shape}")
    return a


def gibbs_expectations(indptr, indices, data, docs, phi_cols, local_words, alpha, sweeps,
                       seed, iteration, kernel="dense"):
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

    ``kernel``: ``"dense"`` draws each token exactly (O(K) per token);
    ``"sparse"`` moves it by Metropolis-Hastings with alias-table proposals
    (O(1) per token, O(K) per distinct word), which leaves the same conditional
    invariant (``_sparse``); ``"auto"`` picks by K (``resolve_kernel``).
    """
    indptr, indices, data = _csr(indptr, indices, data)
    # the sparse kernel copies the columns into float64 word rows itself (the same
    # values): float32 columns (the wire's) stay float32, no K x U float64 copy
    phi_cols = _matrix(phi_cols, "phi_cols", float32=True)
    sparse = resolve_kernel(kernel, phi_cols.shape[0]) == "sparse"
    if not sparse:
        phi_cols = np.ascontiguousarray(phi_cols, dtype=np.float64)
    if not np.all(np.isfinite(phi_cols)) or (phi_cols.size and phi_cols.min() < 0.0):
        raise DscirError("phi_cols must be finite and non-negative")
    if phi_cols.shape[1] and not np.all(phi_cols.max(axis=0) > 0.0):
        raise DscirError("every phi column must have a positive entry")
    local = _local(local_words, indices.size, phi_cols.shape[1], "local_words")
    docs = _docs(docs, indptr.size - 1)
    alpha = _check_alpha(alpha)
    sweeps = _check_int(sweeps, "sweeps", 2)
    key = np.uint64(derive(_check_int(seed, "seed", 0), _check_int(iteration, "iteration", 0)))
    run = _sparse.sparse_gibbs_expectations if sparse else _k.gibbs_expectations
    topic_word, doc_topic = run(indptr, data, docs, phi_cols, local, alpha, sweeps, key,
                                numba.get_num_threads())
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
                                        log_phi, obs_local, test_local, alpha, sweeps, key,
                                        numba.get_num_threads())


def phi_columns(log_phi: np.ndarray, words: np.ndarray) -> np.ndarray:
    """The phi columns of ``words``, each rescaled by its maximum: the Gibbs
    conditional of a token is invariant to it, and beta = 1e-4 topics no longer
    underflow to an all-zero column."""
    cols = log_phi[:, words]
    return np.exp(cols - cols.max(axis=0, keepdims=True))


def phi_columns_of_state(log_theta: np.ndarray, log_norm: np.ndarray,
                         words: np.ndarray) -> np.ndarray:
    """``phi_columns(log_theta - log_norm, words)`` bit for bit (log_norm: each
    row's log sum of theta, K values) without forming log phi over all W words:
    K x U reads and one K x U array (numba), then NumPy's exp in place."""
    log_theta = np.ascontiguousarray(log_theta, dtype=np.float64)
    out = np.empty((log_theta.shape[0], len(words)))
    _k.shifted_log_columns(log_theta, np.ascontiguousarray(log_norm, dtype=np.float64).ravel(),
                           np.asarray(words), out)
    return np.exp(out, out=out)


def document_topics(indptr, indices, data, log_phi: np.ndarray, alpha: float, sweeps: int,
                    key: int, docs=None) -> np.ndarray:
    """Topic proportions (n x K) of documents under fixed phi: the Gibbs kernel's
    kept document-topic counts plus alpha, normalised. ``docs`` names each
    document's stream (default 0..n-1, the rows' positions)."""
    indptr, indices, data = _csr(indptr, indices, data)
    words = np.unique(indices)
    local = np.searchsorted(words, indices).astype(np.int32)
    n = indptr.size - 1
    docs = np.arange(n, dtype=np.int64) if docs is None else docs
    return topic_proportions(indptr, indices, data, docs,
                             np.ascontiguousarray(phi_columns(log_phi, words)), local, alpha,
                             sweeps, key)


def topic_proportions(indptr, indices, data, docs, phi_cols, local_words, alpha: float,
                      sweeps: int, key: int) -> np.ndarray:
    """``document_topics`` given the (rescaled) phi columns of the words used:
    float64 [n, K], document d's stream (key, 0, docs[d])."""
    _, doc_topic, n_kept = gibbs_expectations(indptr, indices, data, docs, phi_cols,
                                              local_words, alpha, sweeps, key, 0)
    theta = doc_topic / n_kept + alpha
    return theta / theta.sum(axis=1, keepdims=True)
