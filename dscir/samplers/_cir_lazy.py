"""Numba internals of the lazy SCIR step (``dscir.samplers.cir_lazy``).

Streams: the catch-up draws of word w (column w - first) come from
mix_in(mix_in(key, TAG_CATCH), w), its step's from mix_in(mix_in(key, TAG_STEP), w),
a drawn normaliser's from mix_in(key, TAG_NORM): named by word, never by block,
worker or order. The tags lie above any row index, so they never meet the dense
sampler's row streams.

Kept samples. Sample j at clock t_j with row totals R_kj adds, for a column last
realized at T_w with values x_kw,

    E[theta_kw(t_j) | x] / R_kj = prior r_kj + (x_kw - prior) e^{-(t_j - T_w)} r_kj,

r_kj = 1 / R_kj. Summed over the kept samples j >= j0 since the column's last
realization: prior (C0_n - C0_j0) + (x - prior) sum_j e^{-(t_j - T_w)} r_j.
C0 is a prefix sum. The second sum is kept per window of clock length
``WINDOW``: c1_j = sum of e^{-(t_i - base)} r_i over the window's samples
before j, so the column's own window gives e^{T_w - base} (total - c1_j0) (the
difference loses at most e^{WINDOW} ulps) and each later window
e^{T_w - base_b} total_b, until e^{-(t - T_w)} x / prior falls below 2^-53.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from dscir.rng import log_gamma, mix_in, new_state
from dscir.samplers.cir import _boost_constants, _log_poisson_gamma

TAG_CATCH = np.uint64(2**63)
TAG_STEP = np.uint64(2**63 + 1)
TAG_NORM = np.uint64(2**63 + 2)
WINDOW = 8.0  # clock length of a kept-sum window
_CUTOFF = -37.0  # log 2^-53: a later window's term is below one ulp of the prior's


@nb.njit(cache=True, _nrt=False)
def _column(s, lt_w, prior, counts, i, scale, g):
    """Column lt_w after the exact CIR transition over ``g`` with shapes
    prior + scale * counts[:, i] (prior alone when scale == 0), in place."""
    log_scale = np.log(-np.expm1(-g))
    log_ratio = -g - log_scale
    cached = -1.0
    d = c = inv_a = 0.0
    for k in range(lt_w.size):
        a = prior if scale == 0.0 else prior + scale * counts[k, i]
        if a < 0.5 and a != cached:
            cached = a
            d, c, inv_a = _boost_constants(a)
        lt_w[k] = log_scale + _log_poisson_gamma(s, a, lt_w[k] + log_ratio, d, c, inv_a)


@nb.njit(cache=True, _nrt=False)
def _flush(lt_w, t_w, j0, n, prior, c0, c1, window, base, total, n_windows, out):
    """Add the kept samples j0..n-1's Rao-Blackwellised phi of one column into
    ``out`` (K); returns the entries visited."""
    a = window[j0]
    fa = np.exp(t_w - base[a])
    x_max = 0.0
    for k in range(lt_w.size):
        x = np.exp(lt_w[k])
        x_max = max(x_max, x)
        out[k] += prior * (c0[n, k] - c0[j0, k]) + (x - prior) * fa * (total[a, k] - c1[j0, k])
    visited = lt_w.size
    cutoff = _CUTOFF - max(0.0, np.log(x_max / prior)) if x_max > 0.0 else _CUTOFF
    for b in range(a + 1, n_windows):
        f = t_w - base[b]
        if f < cutoff:
            break
        fb = np.exp(f)
        for k in range(lt_w.size):
            out[k] += (np.exp(lt_w[k]) - prior) * fb * total[b, k]
        visited += lt_w.size
    return visited


@nb.njit(cache=True)
def advance(lt, last, sums, col_sums, words, counts, prior, scale, clock, h, key, first, at,
            phi_sum, c0, c1, window, base, total, n, n_windows, has_kept):
    """Touch (h == 0) or step (h > 0) the columns ``words``: pending kept terms
    added, catch-up over the gap, the step over h, the row sums updated.
    Returns the number of entries visited."""
    n_k = lt.shape[1]
    visited = 0
    new_clock = clock + h
    if h > 0.0:
        eh = np.exp(-h)
        for k in range(n_k):
            sums[0, k] *= eh
            sums[1, k] *= eh * eh
            sums[2, k] = 0.0
        col_sums[0] *= eh
        col_sums[1] *= eh * eh
        visited += n_k
    key_c = mix_in(key, TAG_CATCH)
    key_s = mix_in(key, TAG_STEP)
    for i in range(words.size):
        w = words[i]
        gap = clock - last[w]
        if gap <= 0.0 and h == 0.0:
            continue
        if has_kept and at[w] < n:
            visited += _flush(lt[w], last[w], at[w], n, prior, c0, c1, window, base, total,
                              n_windows, phi_sum[w])
        at[w] = n
        e = np.exp(-(new_clock - last[w]))
        for k in range(n_k):
            x = np.exp(lt[w, k])
            sums[0, k] -= x * e
            sums[1, k] -= x * e * e
        word = np.uint64(first + w)
        if gap > 0.0:
            _column(new_state(mix_in(key_c, word)), lt[w], prior, counts, i, 0.0, gap)
        if h > 0.0:
            _column(new_state(mix_in(key_s, word)), lt[w], prior, counts, i, scale, h)
        for k in range(n_k):
            x = np.exp(lt[w, k])
            sums[0, k] += x
            sums[1, k] += x
            sums[2, k] += x
        col_sums[0] += 1.0 - e
        col_sums[1] += 1.0 - e * e
        last[w] = new_clock
        visited += n_k
    return visited


@nb.njit(cache=True)
def record_keep(t_kept, c0, c1, window, base, total, n, n_windows, clock, r):
    """Kept sample n at ``clock`` with 1 / row totals ``r``; returns the window count."""
    if n_windows == 0 or clock - base[n_windows - 1] > WINDOW:
        base[n_windows] = clock
        total[n_windows, :] = 0.0
        n_windows += 1
    a = n_windows - 1
    t_kept[n] = clock
    window[n] = a
    e = np.exp(-(clock - base[a]))
    for k in range(r.size):
        c1[n, k] = total[a, k]
        total[a, k] += e * r[k]
        c0[n + 1, k] = c0[n, k] + r[k]
    return n_windows


@nb.njit(cache=True, parallel=True)
def flush_all(lt, last, at, out, c0, c1, window, base, total, n, n_windows, prior):
    """Every column's pending kept terms added into ``out`` (W x K); ``at`` unchanged."""
    for w in nb.prange(lt.shape[0]):
        if at[w] < n:
            _flush(lt[w], last[w], at[w], n, prior, c0, c1, window, base, total, n_windows,
                   out[w])


@nb.njit(cache=True)
def draw_normaliser(m, key, tag):
    """Row totals: the fresh sum m[2] plus a Gamma draw with mean m[0] - m[2] and
    variance m[1] (the lazy part's conditional moments); the mean where either is 0."""
    s = new_state(mix_in(key, tag))
    out = np.empty(m.shape[1])
    for k in range(m.shape[1]):
        mu = m[0, k] - m[2, k]
        out[k] = m[0, k]
        if mu > 0.0 and m[1, k] > 0.0:
            r = m[2, k] + math.exp(log_gamma(s, mu * mu / m[1, k])) * (m[1, k] / mu)
            if r > 0.0:
                out[k] = r
    return out
