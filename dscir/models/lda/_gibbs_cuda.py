"""CUDA internals of the LDA Gibbs kernel on a device (see ``gibbs_cuda``).

Imports ``numba.cuda`` at module level: ``gibbs_cuda`` imports this module
only once a device (or numba's CUDA simulator) is known to be there.

One block of ``THREADS`` threads samples one document at a time, blocks taking
documents blockIdx.x, blockIdx.x + gridDim.x, ...: a document's result does
not depend on the grid, nor on which other documents the part holds. Every
thread of a block holds the document's random stream (xoshiro256** seeded from
``mix_in(key, doc)``, as ``dscir.rng`` does) and draws the same numbers, so no
draw is broadcast. A draw from p(k) ∝ q_k is an inverse-CDF search in a fixed
order of the topics: thread t owns t, t + THREADS, ... (reads of a word's row
coalesced), the block scans the THREADS partial sums and the thread owning
the chosen share walks its own topics. Kept (topic, word) pairs are added to
the K x U counts with integer atomics: exact in any order.
"""

from __future__ import annotations

import numpy as np
from numba import config, cuda, float64, uint64

#: Threads per document: a warp on a device; under numba's CUDA simulator (tests),
#: which runs every thread as a Python thread, 4 (the same code, fewer shares).
THREADS = 4 if config.ENABLE_CUDASIM else 32
_I32 = np.dtype(np.int32)  # dynamic shared arrays take a dtype with an itemsize
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_FIVE, _NINE = np.uint64(5), np.uint64(9)
_S7, _S11, _S17, _S19 = np.uint64(7), np.uint64(11), np.uint64(17), np.uint64(19)
_S27, _S30, _S31 = np.uint64(27), np.uint64(30), np.uint64(31)
_S45, _S57 = np.uint64(45), np.uint64(57)
_TWO53 = 1.0 / 9007199254740992.0


@cuda.jit(device=True)
def _mix(z):
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@cuda.jit(device=True)
def _seed(state, key, doc):
    """``state`` := ``dscir.rng.new_state(mix_in(key, doc))``."""
    z = _mix(key + _GOLDEN + _mix(uint64(doc) + _GOLDEN))
    for i in range(4):
        z = z + _GOLDEN
        state[i] = _mix(z)


@cuda.jit(device=True)
def _uniform(s):
    """xoshiro256**'s next output as a double in (0, 1), as ``dscir.rng.uniform``."""
    r = s[1] * _FIVE
    r = ((r << _S7) | (r >> _S57)) * _NINE
    t = s[1] << _S17
    s[2] ^= s[0]
    s[3] ^= s[1]
    s[1] ^= s[2]
    s[0] ^= s[3]
    s[2] ^= t
    s[3] = (s[3] << _S45) | (s[3] >> _S19)
    return (float64(r >> _S11) + 0.5) * _TWO53


@cuda.jit(device=True)
def _share(part, u):
    """(thread, rest): the thread whose partial sum holds u * Σ part, and what is
    left of it there; rounding past the end gives the last positive share."""
    total = 0.0
    for j in range(THREADS):
        total += part[j]
    u *= total
    last = 0
    for j in range(THREADS):
        if part[j] > 0.0:
            last = j
            if u < part[j]:
                return j, u
            u -= part[j]
    return last, part[last]


@cuda.jit(device=True)
def _dense_walk(rows, w, ndk, old, alpha, t, n_topics, u):
    """Thread t's topic holding ``u`` of its share (the last positive one if
    rounding runs past it), q_k = (alpha + n_dk^{¬i}) rows[w, k] as summed."""
    last = t
    for k in range(t, n_topics, THREADS):
        q = (alpha + (ndk[k] - (k == old))) * rows[w, k]
        if q > 0.0:
            last = k
            if u < q:
                return k
            u -= q
    return last


@cuda.jit(device=True)
def _keep(topic_word, z, tok_word, lo, hi, t):
    for i in range(lo + t, hi, THREADS):
        cuda.atomic.add(topic_word, (z[i], tok_word[i]), 1)


@cuda.jit
def dense_counts(tok_ptr, tok_word, docs, rows, alpha, sweeps, burn, key, z, topic_word):
    """Each document's chain p(z_i = k) ∝ (alpha + n_dk^{¬i}) rows[w_i, k]: z drawn
    sequentially, then ``sweeps`` sweeps; the (topic, word) pairs of the sweeps
    from ``burn`` on are added to ``topic_word`` [K, U]. n_dk in dynamic shared
    memory (K int32); token i's own count is left out as it is read, and the
    thread that draws the new topic moves the count, so a token costs two
    barriers."""
    ndk = cuda.shared.array(0, dtype=_I32)
    part = cuda.shared.array(THREADS, dtype=float64)
    state = cuda.local.array(4, dtype=uint64)
    t = cuda.threadIdx.x
    n_topics = rows.shape[1]
    for d in range(cuda.blockIdx.x, docs.size, cuda.gridDim.x):
        _seed(state, key, docs[d])
        lo, hi = tok_ptr[d], tok_ptr[d + 1]
        for k in range(t, n_topics, THREADS):
            ndk[k] = 0
        cuda.syncthreads()
        for sweep in range(-1, sweeps):  # sweep -1: the sequential initialisation
            for i in range(lo, hi):
                w = tok_word[i]
                old = z[i] if sweep >= 0 else -1
                s = 0.0
                for k in range(t, n_topics, THREADS):
                    s += (alpha + (ndk[k] - (k == old))) * rows[w, k]
                part[t] = s
                cuda.syncthreads()
                owner, u = _share(part, _uniform(state))
                if t == owner:
                    k = _dense_walk(rows, w, ndk, old, alpha, t, n_topics, u)
                    if old >= 0:
                        ndk[old] -= 1
                    ndk[k] += 1
                    z[i] = k
                cuda.syncthreads()
            if sweep >= burn:
                _keep(topic_word, z, tok_word, lo, hi, t)
        cuda.syncthreads()


@cuda.jit(device=True)
def _smoothing_topic(cum, w, v):
    """The first k with cum[w, k] > v (its phi is positive): the smoothing bucket's
    draw from phi_{k,w} / Σ_k phi_{k,w}, the last positive topic if v rounds past."""
    n_topics = cum.shape[1]
    if v >= cum[w, n_topics - 1]:
        k = n_topics - 1
        while k > 0 and cum[w, k] == cum[w, k - 1]:
            k -= 1
        return k
    lo, hi = 0, n_topics - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if cum[w, mid] > v:
            hi = mid
        else:
            lo = mid + 1
    return lo


@cuda.jit(device=True)
def _token_walk(rows, w, z, lo, end, skip, t, u):
    """Thread t's token j (lo + t, lo + t + THREADS, ... < end, j != skip) holding
    ``u`` of its share of Σ rows[w, z_j]; its topic z_j."""
    last = 0  # overwritten: a thread is chosen only for a positive share
    for j in range(lo + t, end, THREADS):
        if j == skip:
            continue
        q = rows[w, z[j]]
        if q > 0.0:
            last = z[j]
            if u < q:
                return last
            u -= q
    return last


@cuda.jit
def token_counts(tok_ptr, tok_word, docs, rows, cum, alpha, sweeps, burn, key, z, topic_word):
    """The chain of ``dense_counts`` drawn in two buckets, for large K: p(k) ∝
    alpha phi_kw (a search of the word's cumulative row ``cum``, O(log K)) +
    Σ_{j != i} phi_{z_j, w} [z_j = k] (a token j of the document drawn ∝
    phi_{z_j, w}, O(N_d / THREADS) per thread): the same conditional, with no
    K-sized state."""
    part = cuda.shared.array(THREADS, dtype=float64)
    state = cuda.local.array(4, dtype=uint64)
    t = cuda.threadIdx.x
    n_topics = rows.shape[1]
    for d in range(cuda.blockIdx.x, docs.size, cuda.gridDim.x):
        _seed(state, key, docs[d])
        lo, hi = tok_ptr[d], tok_ptr[d + 1]
        for sweep in range(-1, sweeps):  # sweep -1: the sequential initialisation
            for i in range(lo, hi):
                w = tok_word[i]
                end = i if sweep < 0 else hi
                s = 0.0
                for j in range(lo + t, end, THREADS):
                    if j != i:
                        s += rows[w, z[j]]
                part[t] = s
                cuda.syncthreads()
                smooth = alpha * cum[w, n_topics - 1]
                total = smooth
                for j in range(THREADS):
                    total += part[j]
                u = _uniform(state) * total
                if u < smooth or total == smooth:
                    if t == 0:
                        z[i] = _smoothing_topic(cum, w, u / alpha)
                else:
                    owner, rest = _share(part, (u - smooth) / (total - smooth))
                    if t == owner:
                        z[i] = _token_walk(rows, w, z, lo, end, i, t, rest)
                cuda.syncthreads()
            if sweep >= burn:
                _keep(topic_word, z, tok_word, lo, hi, t)
        cuda.syncthreads()


@cuda.jit
def word_rows(phi_cols, rows):
    """rows[u, k] = phi_cols[k, u] (float64): the word-major copy the samplers read."""
    n_topics, n_cols = phi_cols.shape
    for e in range(cuda.grid(1), n_topics * n_cols, cuda.gridsize(1)):
        k, u = e // n_cols, e % n_cols
        rows[u, k] = phi_cols[k, u]


@cuda.jit
def zero(counts):
    """counts[:, :] = 0 on the device (no K x U zeros sent from the host)."""
    n_cols = counts.shape[1]
    for e in range(cuda.grid(1), counts.shape[0] * n_cols, cuda.gridsize(1)):
        counts[e // n_cols, e % n_cols] = 0


@cuda.jit
def cumulate(rows, cum):
    """cum[u] = the running sums of rows[u], one thread per word."""
    for u in range(cuda.grid(1), rows.shape[0], cuda.gridsize(1)):
        s = 0.0
        for k in range(rows.shape[1]):
            s += rows[u, k]
            cum[u, k] = s


@cuda.jit
def column_nonzeros(topic_word, nnz):
    """nnz[u] = the nonzero entries of column u."""
    for u in range(cuda.grid(1), topic_word.shape[1], cuda.gridsize(1)):
        n = 0
        for k in range(topic_word.shape[0]):
            if topic_word[k, u] != 0:
                n += 1
        nnz[u] = n


@cuda.jit
def column_entries(topic_word, start, topics, values):
    """Column u's nonzero (topic, value) pairs, topics ascending, from start[u] on."""
    for u in range(cuda.grid(1), topic_word.shape[1], cuda.gridsize(1)):
        at = start[u]
        for k in range(topic_word.shape[0]):
            v = topic_word[k, u]
            if v != 0:
                topics[at] = k
                values[at] = v
                at += 1
