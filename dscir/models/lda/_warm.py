"""Numba kernel of warm-started local chains (see ``dscir.models.lda.warm``).

The same sweeps as ``_kernels.gibbs_expectations`` (``_sweeps`` over the
document's stream), but a document may start from given topic assignments
instead of the sequential initialisation, the burn-in is a parameter, and
the final assignments are returned so the next visit can start from them.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from dscir.models.lda._kernels import _buffers, _draw, _expand, _longest, _sweeps
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
def gibbs_warm(indptr, data, docs, phi_cols, local_words, z, tok_ptr, warm, alpha, sweeps,
               burn, key):
    """Kernel of ``warm.gibbs_from``: ``z`` (int32, all documents' tokens, document
    d at ``tok_ptr[d]:tok_ptr[d + 1]``) is read as the start where ``warm[d]`` and
    overwritten with the final assignments. Returns (topic_word int64 [K, U]
    summed over the ``sweeps - burn`` kept sweeps, doc_topic int64 [n, K])."""
    n_topics, n_cols = phi_cols.shape
    n_docs = indptr.size - 1
    rows = np.ascontiguousarray(phi_cols.T)
    word_acc = np.zeros((n_cols, n_topics), dtype=np.int64)
    doc_topic = np.zeros((n_docs, n_topics), dtype=np.int64)
    tokens = np.empty(_longest(indptr, data), dtype=np.int32)
    ndk = np.zeros(n_topics, dtype=np.float64)
    q, block = _buffers(n_topics)
    for d in range(n_docs):
        n_tok = _expand(indptr, data, local_words, d, tokens)
        zd = z[tok_ptr[d]:tok_ptr[d + 1]]
        state = new_state(mix_in(key, docs[d]))
        _start(tokens, n_tok, zd, warm[d], rows, alpha, state, ndk, q, block)
        _sweeps(tokens, n_tok, zd, rows, alpha, sweeps, burn, state, ndk, q, block,
                word_acc, doc_topic[d], True)
    return np.ascontiguousarray(word_acc.T), doc_topic

