"""Numba internals of the large-K Gibbs kernel: Metropolis-Hastings with a
word proposal drawn through block alias tables.

The target of a token is the dense kernel's conditional
p(z_i = k) ∝ (alpha + n_dk^{¬i}) phi_{k,w_i}. Each visit of a token runs
``MH_CYCLES`` cycles of two independence proposals (LightLDA; Yuan et al. 2015):

- the word proposal q_w(k) ∝ phi_{k,w}, accepted with
  min(1, (alpha + n_dt^{¬i}) / (alpha + n_ds^{¬i})). It is drawn in O(1) in two
  steps: a block of ``BLOCK`` topics from an alias table (Walker 1977; Vose 1991)
  over the word's block sums, then a topic inside the block by a search of its
  ``BLOCK`` weights, one 64-byte line. Built once per call for each word of the
  batch (phi is fixed during the call): O(K) to sum, O(K / BLOCK) alias entries;
- the document proposal q_d(k) ∝ alpha + n_dk^{¬i}, drawn in O(1) as a uniform
  topic (probability K alpha / (K alpha + N_d − 1)) or else the topic of another
  token of the document, chosen uniformly among the N_d − 1 others; accepted
  with min(1, phi_{t,w} / phi_{s,w}).

Each proposal with its acceptance is a Metropolis-Hastings step whose
stationary law is the conditional itself (the ratios above are exactly
π(t) q(s) / (π(s) q(t))), so a sweep leaves p(z | w, phi) invariant, as the
dense sweep does.

phi is held as word-major rows [U, K] (zero-padded to whole blocks, aligned so
that a block is one cache line), and block sums are summed in the order the
search inside a block adds, so the word proposal draws phi_{k,w} / Σ_k phi_{k,w}
to float64 rounding, as the alias table alone did.

Speed: a token costs O(MH_CYCLES) whatever K, but its reads land at random in
its word's row, so at large K the cost is memory latency. The proposals do not
depend on the chain's state, so a sweep of a document first draws all of them,
in passes that each prefetch what the next one reads (random numbers, then the
block alias entries, then the rows' lines), and then moves the tokens one by
one, their few remaining reads (the phi of other tokens' topics) prefetched too.
"""

from __future__ import annotations

import numba as nb
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from dscir.models.lda._threads import batch_tokens, doc_groups, token_starts, word_topic_counts
from dscir.rng import mix_in, new_state, uniform_regs

MH_CYCLES = 2
#: Topics per block of the word proposal: 8 float64 weights, one 64-byte line.
BLOCK = 8


@intrinsic
def _prefetch(typingctx, arr, index):
    """Hint the CPU to load arr[index] (a tuple of integers) into cache: no
    result, no fault, and unlike a load it never holds the core up."""
    sig = types.void(arr, index)

    def codegen(context, builder, signature, args):
        arr_type, index_type = signature.args
        array = context.make_array(arr_type)(context, builder, args[0])
        index = [context.cast(builder, v, t, types.intp)
                 for v, t in zip(cgutils.unpack_tuple(builder, args[1]), index_type)]
        ptr = cgutils.get_item_pointer(context, builder, arr_type, array, index,
                                       wraparound=False)
        i8p, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
            "llvm.prefetch.p0")
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])  # read, keep, data
        return context.get_dummy_value()

    return sig, codegen


@nb.njit(cache=True, nogil=True)
def _alias_row(weights, table, small, large):
    """Vose's alias table of ``weights`` (non-negative, positive sum) into
    ``table`` [n, 2]: index k is kept with probability table[k, 0], else it is
    table[k, 1] (an index, exact as a float64). Interleaved, so a draw reads
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
    """Alias tables float64 [U, n, 2] (keep probability, alias) of the rows of ``rows`` [U, n]."""
    n_cols, n_topics = rows.shape
    table = np.empty((n_cols, n_topics, 2), dtype=np.float64)
    small = np.empty(n_topics, dtype=np.int64)
    large = np.empty(n_topics, dtype=np.int64)
    for w in range(n_cols):
        _alias_row(rows[w], table[w], small, large)
    return table


@nb.njit(cache=True, nogil=True)
def word_rows(phi_cols):
    """The rows [U, K rounded up to BLOCK] of ``phi_cols`` [K, U] (zero-padded,
    64-byte aligned) and their block sums [U, K / BLOCK] (added in the order
    ``_in_block`` adds, so a block's last partial sum is its sum)."""
    n_topics, n_cols = phi_cols.shape
    n_blocks = (n_topics + BLOCK - 1) // BLOCK
    width = n_blocks * BLOCK
    flat = np.empty(n_cols * width + BLOCK, dtype=np.float64)
    start = ((-flat.ctypes.data) % 64) // 8
    rows = flat[start:start + n_cols * width].reshape(n_cols, width)
    sums = np.empty((n_cols, n_blocks))
    for b in range(n_blocks):  # a block of topics at a time: BLOCK rows of phi_cols read together
        lo, hi = b * BLOCK, min(b * BLOCK + BLOCK, n_topics)
        for w in range(n_cols):
            c = 0.0
            for k in range(lo, hi):
                rows[w, k] = phi_cols[k, w]
                c += phi_cols[k, w]
            for k in range(hi, lo + BLOCK):
                rows[w, k] = 0.0
            sums[w, b] = c
    return rows, sums


@nb.njit(cache=True, nogil=True, inline="always")
def _in_block(rows, w, b, target):
    """The topic of block b of word w whose partial sums straddle ``target``
    (uniform on [0, block sum)): topic k with probability rows[w, k] / block sum."""
    base = b * BLOCK
    c = 0.0
    k = 0
    for j in range(base, base + BLOCK):
        c += rows[w, j]
        k += c <= target
    if k == BLOCK:  # target rounded up to the block's sum: the last positive weight
        k = BLOCK - 1
        while rows[w, base + k] == 0.0:
            k -= 1
    return base + k


@nb.njit(cache=True, nogil=True)
def proposal_buffers(longest):
    """Per-token scratch of a sweep's proposals: topics int32 [n, 2 MH_CYCLES + 1]
    (slot 0: the initial topic, slots 1..MH_CYCLES: word proposals, then the
    document proposals, a topic t >= 0 or −1 − j for token j's topic), their phi
    (same slots; the phi of a token's topic is read when moving), and uniforms
    [n, 2 (MH_CYCLES + 1) + 2 MH_CYCLES]."""
    slots = 2 * MH_CYCLES + 1
    return (np.empty((longest, slots), dtype=np.int32),
            np.empty((longest, slots), dtype=np.float64),
            np.empty((longest, 4 * MH_CYCLES + 2), dtype=np.float64))


@nb.njit(cache=True, nogil=True)
def _propose(tokens, lo, hi, n_tok, init, z, rows, sums, table, n_topics, alpha, state, buf):
    """Draw the proposals of tokens lo..hi-1 for one pass (the sequential start if
    ``init``: token i's document proposal picks among tokens 0..i-1, and slot 0
    gets its initial topic; else among all n_tok tokens but i, whose current
    topics z are prefetched for the moves)."""
    prop, phis, unif = buf
    k_alpha = n_topics * alpha
    n_blocks = sums.shape[1]
    first = 0 if init else 1
    s0, s1, s2, s3 = state[0], state[1], state[2], state[3]
    for i in range(lo, hi):
        w = tokens[i]
        for c in range(first, MH_CYCLES + 1):
            u, s0, s1, s2, s3 = uniform_regs(s0, s1, s2, s3)
            u *= n_blocks
            b = min(int(u), n_blocks - 1)
            _prefetch(table, (w, b, 0))
            prop[i, c] = b
            unif[i, 2 * c] = u - b
            u, s0, s1, s2, s3 = uniform_regs(s0, s1, s2, s3)
            unif[i, 2 * c + 1] = u
        n_other = i if init else n_tok - 1
        for c in range(MH_CYCLES):
            u, s0, s1, s2, s3 = uniform_regs(s0, s1, s2, s3)
            u *= k_alpha + n_other
            if u < k_alpha:
                t = min(int(u / alpha), n_topics - 1)
                _prefetch(rows, (w, t))
            else:
                j = min(int(u - k_alpha), n_other - 1)
                if j >= i:
                    j += 1
                t = -1 - j
            prop[i, MH_CYCLES + 1 + c] = t
            a = 2 * MH_CYCLES + 2 + 2 * c
            u, s0, s1, s2, s3 = uniform_regs(s0, s1, s2, s3)
            unif[i, a] = u
            u, s0, s1, s2, s3 = uniform_regs(s0, s1, s2, s3)
            unif[i, a + 1] = u
    state[0], state[1], state[2], state[3] = s0, s1, s2, s3
    _resolve(tokens, lo, hi, first, init, z, rows, sums, table, prop, phis, unif)


@nb.njit(cache=True, nogil=True)
def _resolve(tokens, lo, hi, first, init, z, rows, sums, table, prop, phis, unif):
    """The word proposals' topics (alias entry, then the search inside the block)
    and the phi values of every proposal of tokens lo..hi-1, from ``_propose``'s
    draws; prefetches the current topics' lines of the moves to come."""
    for i in range(lo, hi):  # block alias entries
        w = tokens[i]
        for c in range(first, MH_CYCLES + 1):
            b = prop[i, c]
            if unif[i, 2 * c] >= table[w, b, 0]:
                b = int(table[w, b, 1])
                prop[i, c] = b
            _prefetch(rows, (w, b * BLOCK))
            _prefetch(sums, (w, b))
    for i in range(lo, hi):  # the rows' lines
        w = tokens[i]
        for c in range(first, MH_CYCLES + 1):
            b = prop[i, c]
            k = _in_block(rows, w, b, unif[i, 2 * c + 1] * sums[w, b])
            prop[i, c] = k
            phis[i, c] = rows[w, k]
        for c in range(MH_CYCLES + 1, 2 * MH_CYCLES + 1):
            t = prop[i, c]
            if t >= 0:
                phis[i, c] = rows[w, t]
            elif not init:
                _prefetch(rows, (w, z[-1 - t]))


@nb.njit(cache=True, nogil=True)
def _moves(tokens, lo, hi, init, z, z_phi, rows, ndk, alpha, buf):
    """Move tokens lo..hi-1 by their drawn proposals: MH_CYCLES word/document
    cycles each, from the initial topic if ``init``, else from z[i] (whose
    phi is z_phi[i]); ``ndk`` counts the document's placed tokens."""
    prop, phis, unif = buf
    for i in range(lo, hi):
        w = tokens[i]
        if init:
            s = prop[i, 0]
            phi_s = phis[i, 0]
        else:
            s = z[i]
            phi_s = z_phi[i]
            ndk[s] -= 1.0
        for c in range(MH_CYCLES):
            a = 2 * MH_CYCLES + 2 + 2 * c
            t = prop[i, 1 + c]
            if unif[i, a] * (alpha + ndk[s]) < alpha + ndk[t]:
                s = t
                phi_s = phis[i, 1 + c]
            t = prop[i, MH_CYCLES + 1 + c]
            if t >= 0:
                phi_t = phis[i, MH_CYCLES + 1 + c]
            else:
                t = z[-1 - t]
                phi_t = rows[w, t]
            if unif[i, a + 1] * phi_s < phi_t:
                s = t
                phi_s = phi_t
        z[i] = s
        z_phi[i] = phi_s
        ndk[s] += 1.0


@nb.njit(cache=True, nogil=True)
def _mh_document(tokens, n_tok, z, z_phi, rows, sums, table, alpha, sweeps, state, ndk, buf,
                 kept, doc_acc):
    """The dense ``_sample_document`` with each exact draw replaced by MH cycles.

    z is initialised sequentially: token i starts at a word-proposal draw and
    moves by MH cycles towards (alpha + n_dk^{<i}) phi_{k,w_i}, the counts of
    the tokens before it (the dense kernel's sequential start). Then ``sweeps``
    sweeps; the topics of the last ``sweeps - sweeps // 2`` are stored in
    ``kept`` [sweeps - sweeps // 2, n_tok] and counted into doc_acc [K] token by
    token (no O(K) pass per sweep; the topic-word counts are summed from
    ``kept`` once for the batch, ``_threads.word_topic_counts``).
    """
    n_topics = ndk.size
    ndk[:] = 0.0
    _propose(tokens, 0, n_tok, n_tok, True, z, rows, sums, table, n_topics, alpha, state, buf)
    _moves(tokens, 0, n_tok, True, z, z_phi, rows, ndk, alpha, buf)
    burn = sweeps // 2
    for sweep in range(sweeps):
        _propose(tokens, 0, n_tok, n_tok, False, z, rows, sums, table, n_topics, alpha, state, buf)
        _moves(tokens, 0, n_tok, False, z, z_phi, rows, ndk, alpha, buf)
        if sweep >= burn:
            kept[sweep - burn, :n_tok] = z[:n_tok]
    for i in range(n_tok):
        for r in range(sweeps - burn):
            doc_acc[kept[r, i]] += 1


@nb.njit(cache=True, nogil=True)
def _mh_group(lo, hi, tokens, tok_ptr, docs, rows, sums, table, alpha, sweeps, key, kept,
              doc_topic):
    """Documents lo..hi-1 of a batch, with scratch of their own (one thread's share)."""
    longest = 0
    for d in range(lo, hi):
        longest = max(longest, tok_ptr[d + 1] - tok_ptr[d])
    z = np.empty(longest, dtype=np.int32)
    z_phi = np.empty(longest, dtype=np.float64)
    ndk = np.zeros(doc_topic.shape[1], dtype=np.float64)
    buf = proposal_buffers(longest)
    for d in range(lo, hi):
        a, b = tok_ptr[d], tok_ptr[d + 1]
        state = new_state(mix_in(key, docs[d]))
        _mh_document(tokens[a:b], b - a, z, z_phi, rows, sums, table, alpha, sweeps, state, ndk,
                     buf, kept[:, a:b], doc_topic[d])


@nb.njit(cache=True, nogil=True, parallel=True)
def sparse_gibbs_expectations(indptr, data, docs, phi_cols, local_words, alpha, sweeps, key,
                              n_groups):
    """The MH kernel's ``gibbs_expectations`` (same arguments, same outputs, same
    streams (key, docs[d]) as the dense one's; different draws), its documents
    spread over ``n_groups`` groups, one per thread (``_threads``)."""
    n_topics, n_cols = phi_cols.shape
    rows, sums = word_rows(phi_cols)
    table = alias_tables(sums)
    tok_ptr = token_starts(indptr, data)
    tokens = batch_tokens(indptr, data, local_words, tok_ptr)
    kept = np.empty((sweeps - sweeps // 2, tokens.size), dtype=np.int32)
    doc_topic = np.zeros((indptr.size - 1, n_topics), dtype=np.int64)
    groups = doc_groups(tok_ptr, n_groups)
    for g in nb.prange(groups.size - 1):
        _mh_group(groups[g], groups[g + 1], tokens, tok_ptr, docs, rows, sums, table, alpha,
                  sweeps, key, kept, doc_topic)
    return word_topic_counts(tokens, kept, n_topics, n_cols, n_groups), doc_topic
