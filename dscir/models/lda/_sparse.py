"""Numba internals of the large-K Gibbs kernel: Metropolis-Hastings with alias tables.

The target of a token is the dense kernel's conditional
p(z_i = k) ∝ (alpha + n_dk^{¬i}) phi_{k,w_i}. Each visit of a token runs
``MH_CYCLES`` cycles of two independence proposals (LightLDA; Yuan et al. 2015):

- the word proposal q_w(k) ∝ phi_{k,w}, drawn in O(1) from an alias table built
  once per call for each word the batch uses (phi is fixed during the call);
  accepted with min(1, (alpha + n_dt^{¬i}) / (alpha + n_ds^{¬i}));
- the document proposal q_d(k) ∝ alpha + n_dk^{¬i}, drawn in O(1) as a uniform
  topic (probability K alpha / (K alpha + N_d − 1)) or else the topic of another
  token of the document, chosen uniformly among the N_d − 1 others; accepted
  with min(1, phi_{t,w} / phi_{s,w}).

Each proposal with its acceptance is a Metropolis-Hastings step whose
stationary law is the conditional itself (the ratios above are exactly
π(t) q(s) / (π(s) q(t))), so a sweep leaves p(z | w, phi) invariant, as the
dense sweep does. A token costs O(MH_CYCLES) whatever K; building the tables
costs O(K) per distinct word of the batch, once per call, shared by all sweeps.
Alias tables (Walker 1977; Vose 1991) are word-major ([U, K]) like the dense
kernel's rows.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from dscir.models.lda._kernels import _expand, _longest
from dscir.rng import mix_in, new_state, uniform

MH_CYCLES = 2


@nb.njit(cache=True, nogil=True)
def _alias_row(weights, table, small, large):
    """Vose's alias table of ``weights`` (non-negative, positive sum) into
    ``table`` [K, 2]: topic k is kept with probability table[k, 0], else it is
    table[k, 1] (a topic id, exact as a float64). Interleaved, so a draw reads
    one cache line."""
    n = weights.size
    total = 0.0
    top = 0
    for k in range(n):
        total += weights[k]
        if weights[k] > weights[top]:
            top = k
    n_small, n_large = 0, 0
    for k in range(n):
        table[k, 0] = weights[k] * n / total
        table[k, 1] = k
        if table[k, 0] < 1.0:
            small[n_small] = k
            n_small += 1
        else:
            large[n_large] = k
            n_large += 1
    while n_small > 0 and n_large > 0:
        n_small -= 1
        s = small[n_small]
        g = large[n_large - 1]
        table[s, 1] = g
        table[g, 0] = (table[g, 0] + table[s, 0]) - 1.0
        if table[g, 0] < 1.0:
            n_large -= 1
            small[n_small] = g
            n_small += 1
    for j in range(n_large):  # left over by rounding: probability one
        table[large[j], 0] = 1.0
    for j in range(n_small):
        if weights[small[j]] > 0.0:
            table[small[j], 0] = 1.0
        else:  # a zero weight is never drawn
            table[small[j], 1] = top


@nb.njit(cache=True, nogil=True)
def alias_tables(rows):
    """Alias tables float64 [U, K, 2] (keep probability, alias) of the rows of ``rows``."""
    n_cols, n_topics = rows.shape
    table = np.empty((n_cols, n_topics, 2), dtype=np.float64)
    small = np.empty(n_topics, dtype=np.int64)
    large = np.empty(n_topics, dtype=np.int64)
    for w in range(n_cols):
        _alias_row(rows[w], table[w], small, large)
    return table


@nb.njit(cache=True, nogil=True, inline="always")
def _alias_draw(table, w, n_topics, state):
    """A topic from word w's alias table (indexing, not a view: no refcounting)."""
    u = uniform(state) * n_topics
    k = min(int(u), n_topics - 1)
    return k if u - k < table[w, k, 0] else int(table[w, k, 1])


@nb.njit(cache=True, nogil=True, inline="always")
def _mh_token(i, w, s, n_other, z, rows, table, ndk, alpha, state):
    """The topic after MH_CYCLES word/document proposal cycles from topic ``s``
    for token i of word w; ``ndk`` excludes token i, and the document proposal
    picks among the ``n_other`` tokens z[j], j < n_other + (j >= i), i.e. all but i."""
    n_topics = ndk.size
    k_alpha = n_topics * alpha
    phi_s = -1.0  # rows[w, s], read when first needed (a cache miss at large K)
    for _ in range(MH_CYCLES):
        t = _alias_draw(table, w, n_topics, state)
        if t != s and uniform(state) * (alpha + ndk[s]) < alpha + ndk[t]:
            s = t
            phi_s = -1.0
        u = uniform(state) * (k_alpha + n_other)
        if u < k_alpha:
            t = min(int(u / alpha), n_topics - 1)
        else:
            j = min(int(u - k_alpha), n_other - 1)
            if j >= i:
                j += 1
            t = z[j]
        if t != s:
            if phi_s < 0.0:
                phi_s = rows[w, s]
            phi_t = rows[w, t]
            if uniform(state) * phi_s < phi_t:
                s = t
                phi_s = phi_t
    return s


@nb.njit(cache=True, nogil=True)
def _mh_document(tokens, n_tok, z, rows, table, alpha, sweeps, state, ndk, kept,
                 topic_word, doc_acc):
    """The dense ``_sample_document`` with each exact draw replaced by MH cycles.

    z is initialised sequentially: token i starts at a word-proposal draw and
    moves by MH cycles towards (alpha + n_dk^{<i}) phi_{k,w_i}, the counts of
    the tokens before it (the dense kernel's sequential start). Then ``sweeps``
    sweeps; the topics of the last ``sweeps - sweeps // 2`` are stored in
    ``kept`` and then counted into doc_acc [K] and topic_word [K, U] token by
    token (the writes of a word's kept topics fall together, not one cache miss
    per token and sweep; and no O(K) pass per sweep).
    """
    n_topics = ndk.size
    ndk[:] = 0.0
    for i in range(n_tok):
        w = tokens[i]
        s = _alias_draw(table, w, n_topics, state)
        k = _mh_token(i, w, s, i, z, rows, table, ndk, alpha, state)
        z[i] = k
        ndk[k] += 1.0
    burn = sweeps // 2
    for sweep in range(sweeps):
        for i in range(n_tok):
            w = tokens[i]
            ndk[z[i]] -= 1.0
            k = _mh_token(i, w, z[i], n_tok - 1, z, rows, table, ndk, alpha, state)
            z[i] = k
            ndk[k] += 1.0
        if sweep >= burn:
            kept[sweep - burn, :n_tok] = z[:n_tok]
    for i in range(n_tok):
        w = tokens[i]
        for r in range(sweeps - burn):
            k = kept[r, i]
            topic_word[k, w] += 1
            doc_acc[k] += 1


@nb.njit(cache=True, nogil=True)
def sparse_gibbs_expectations(indptr, data, docs, phi_cols, local_words, alpha, sweeps, key):
    """The MH kernel's ``gibbs_expectations`` (same arguments, same outputs, same
    streams (key, docs[d]) as the dense one's; different draws)."""
    n_topics, n_cols = phi_cols.shape
    n_docs = indptr.size - 1
    rows = np.ascontiguousarray(phi_cols.T)
    table = alias_tables(rows)
    topic_word = np.zeros((n_topics, n_cols), dtype=np.int64)
    doc_topic = np.zeros((n_docs, n_topics), dtype=np.int64)
    longest = _longest(indptr, data)
    tokens = np.empty(longest, dtype=np.int32)
    z = np.empty(longest, dtype=np.int32)
    kept = np.empty((sweeps - sweeps // 2, longest), dtype=np.int32)
    ndk = np.zeros(n_topics, dtype=np.float64)
    for d in range(n_docs):
        n_tok = _expand(indptr, data, local_words, d, tokens)
        state = new_state(mix_in(key, docs[d]))
        _mh_document(tokens, n_tok, z, rows, table, alpha, sweeps, state, ndk, kept,
                     topic_word, doc_topic[d])
    return topic_word, doc_topic
