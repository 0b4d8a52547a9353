"""Numba kernel of warm-started local chains (see ``dscir.models.lda.warm``).

The same sweeps as ``_kernels.gibbs_expectations`` (``_sweeps`` over the
document's stream), but a document may start from given topic assignments
instead of the sequential initialisation, the burn-in is a parameter, and
the final assignments are returned so the next visit can start from them.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from dscir.models.lda._gibbs import _buffers, _draw, _sweeps
from dscir.models.lda._threads import batch_tokens, doc_groups, word_topic_counts
from dscir.rng import mix_in, new_state


@nb.njit(cache=True, nogil=True)
def _start(tokens, n_tok, z, warm, rows, alpha, state, ndk, q, block):
    """Topic counts of the starting assignment: z as given (``warm``) or drawn
    sequentially from the stream as the cold kernel does."""
    ndk[:] = 0.0
    for i in range(n_tok):
        if warm:
            k = z[i]
        else:
            k = _draw(rows[tokens[i]], ndk, alpha, q, block, state)
            z[i] = k
        ndk[k] += 1.0


@nb.njit(cache=True, nogil=True)
def _warm_group(lo, hi, tokens, tok_ptr, docs, rows, z, warm, alpha, sweeps, burn, key, kept,
                doc_topic):
    """Documents lo..hi-1 of ``gibbs_warm``, with scratch of their own (one thread's share)."""
    n_topics = rows.shape[1]
    ndk = np.zeros(n_topics, dtype=np.float64)
    q, block = _buffers(n_topics)
    for d in range(lo, hi):
        a, b = tok_ptr[d], tok_ptr[d + 1]
        zd = z[a:b]
        state = new_state(mix_in(key, docs[d]))
        _start(tokens[a:b], b - a, zd, warm[d], rows, alpha, state, ndk, q, block)
        _sweeps(tokens[a:b], b - a, zd, rows, alpha, sweeps, burn, state, ndk, q, block,
                kept[:, a:b], doc_topic[d])


@nb.njit(cache=True, nogil=True, parallel=True)
def gibbs_warm(indptr, data, docs, phi_cols, local_words, z, tok_ptr, warm, alpha, sweeps,
               burn, key, n_groups):
    """Kernel of ``warm.gibbs_from``: ``z`` (int32, all documents' tokens, document
    d at ``tok_ptr[d]:tok_ptr[d + 1]``) is read as the start where ``warm[d]`` and
    overwritten with the final assignments. Returns (topic_word int64 [K, U]
    summed over the ``sweeps - burn`` kept sweeps, doc_topic int64 [n, K]); the
    documents are spread over ``n_groups`` groups, one per thread (``_threads``)."""
    n_topics, n_cols = phi_cols.shape
    rows = np.ascontiguousarray(phi_cols.T)
    tokens = batch_tokens(indptr, data, local_words, tok_ptr)
    kept = np.empty((sweeps - burn, tokens.size), dtype=np.int32)
    doc_topic = np.zeros((indptr.size - 1, n_topics), dtype=np.int64)
    groups = doc_groups(tok_ptr, n_groups)
    for g in nb.prange(groups.size - 1):
        _warm_group(groups[g], groups[g + 1], tokens, tok_ptr, docs, rows, z, warm, alpha,
                    sweeps, burn, key, kept, doc_topic)
    return word_topic_counts(tokens, kept, n_topics, n_cols, n_groups), doc_topic
