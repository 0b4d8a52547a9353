"""Numba helpers that spread a batch's documents over the calling thread's numba threads.

A Gibbs kernel runs its documents in groups (``doc_groups``: consecutive
documents of about equal token counts, one per thread: the caller passes
``numba.get_num_threads()``, which a compiled function cannot read and still
be cached), each group on one
thread with scratch of its own. Every document has its own stream (key,
document id) and writes only its own slices (its tokens' assignments and
kept topics, its row of document-topic counts), so what a document draws
does not depend on the group or thread it lands in. The topic-word counts
are summed afterwards from the kept topics (``word_topic_counts``), each
word's column by one thread: integer sums, no shared accumulator, the same
result for any number of threads.
"""

from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(cache=True, nogil=True)
def token_starts(indptr, data):
    """int64 [n + 1]: where each document's tokens start in the batch's token order."""
    n_docs = indptr.size - 1
    out = np.zeros(n_docs + 1, dtype=np.int64)
    for d in range(n_docs):
        n = 0
        for e in range(indptr[d], indptr[d + 1]):
            n += data[e]
        out[d + 1] = out[d] + n
    return out


@nb.njit(cache=True, nogil=True)
def batch_tokens(indptr, data, local_words, tok_ptr):
    """int32 [n_tokens]: every document's tokens (local word ids), document d at
    ``tok_ptr[d]:tok_ptr[d + 1]``."""
    tokens = np.empty(tok_ptr[-1], dtype=np.int32)
    n = 0
    for e in range(indptr[-1]):
        for _ in range(data[e]):
            tokens[n] = local_words[e]
            n += 1
    return tokens


@nb.njit(cache=True, nogil=True)
def doc_groups(tok_ptr, n_groups):
    """Bounds int64 [n_groups + 1] of ``n_groups`` groups of consecutive documents
    with about equal numbers of tokens (some may be empty)."""
    targets = tok_ptr[-1] * np.arange(n_groups + 1) // n_groups
    bounds = np.searchsorted(tok_ptr, targets).astype(np.int64)
    bounds[0], bounds[n_groups] = 0, tok_ptr.size - 1
    return bounds


@nb.njit(cache=True, nogil=True)
def _by_word(tokens, n_cols):
    """Where each word's tokens start in ``order`` (int64 [U + 1]), and ``order``:
    the token positions grouped by word (a counting sort)."""
    start = np.zeros(n_cols + 1, dtype=np.int64)
    for i in range(tokens.size):
        start[tokens[i] + 1] += 1
    for w in range(n_cols):
        start[w + 1] += start[w]
    order = np.empty(tokens.size, dtype=np.int64)
    at = start[:n_cols].copy()
    for i in range(tokens.size):
        w = tokens[i]
        order[at[w]] = i
        at[w] += 1
    return start, order


@nb.njit(cache=True, nogil=True)
def _count_words(lo, hi, start, order, kept, out):
    for w in range(lo, hi):
        for j in range(start[w], start[w + 1]):
            i = order[j]
            for r in range(kept.shape[0]):
                out[kept[r, i], w] += 1


@nb.njit(cache=True, nogil=True, parallel=True)
def word_topic_counts(tokens, kept, n_topics, n_cols, n_groups):
    """int64 [K, U]: how often each topic is among the kept topics ``kept``
    [n_kept, n_tokens] of each word's tokens; words in ``n_groups`` ranges of
    about equal tokens, one per thread."""
    start, order = _by_word(tokens, n_cols)
    out = np.zeros((n_topics, n_cols), dtype=np.int64)
    targets = tokens.size * np.arange(n_groups + 1) // n_groups
    bounds = np.searchsorted(start, targets)
    bounds[0], bounds[n_groups] = 0, n_cols
    for g in nb.prange(n_groups):
        _count_words(bounds[g], bounds[g + 1], start, order, kept, out)
    return out
