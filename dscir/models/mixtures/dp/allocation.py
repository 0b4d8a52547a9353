"""Dirichlet-process mixture of multinomials: the slice-sampler pieces.

The model (users x areas counts in dscir's msweb example)::

    x_i | z_i, phi ~ Multinomial(n_i, phi_{z_i}),   phi_j ~ Dirichlet(a0),
    w_j = v_j prod_{l<j} (1 - v_l),  v_j ~ Beta(1, alpha),  alpha ~ Gamma(shape, rate).

Representation (shared by the exact and the stochastic samplers): the
components are Gamma variables theta_jw ~ Gamma(a0, 1), phi_j = theta_j /
theta_j. ; each stick break is two Gamma variables, v_j = G1_j / (G1_j + G2_j)
with G1 ~ Gamma(1 + m_j), G2 ~ Gamma(alpha + M_j) under the full conditional
(m_j users in component j, M_j = sum_{l>j} m_l). So one K x 2 array of stick
gammas and one K x W array of component gammas carry the whole state besides
alpha and the allocations, and the SCIR (or SGRLD) step of
``dscir.samplers`` moves both; an exact draw is the SCIR transition over an
infinite time. Everything is on the log scale: with a0 = 0.001 component
entries are far below the smallest double, and deep sticks carry weights like
1e-3000.

Slice sampler (Walker 2007; Kalli, Griffin & Walker 2011): u_i ~ U(0,
w_{z_i}); the represented components are extended with prior draws until
sum_j w_j > 1 - min_i u_i (``new_sticks``); then z_i is drawn over the finite
set {j : w_j > u_i} with probability proportional to Mult(x_i | phi_j)
(``allocate``). After each allocation the clusters are relabelled
(``dscir.models.mixtures.dp.relabel``: an exact move that closes the holes emptied
components leave); components past the last label in use are dropped, being
exact prior draws that are redrawn when needed.

alpha | v: with K represented sticks and the rest marginalised, the full
conditional under a Gamma(shape, rate) prior is Gamma(shape + K, rate -
sum_{j<=K} log(1 - v_j)) (Escobar & West's conjugate update, written for the
stick-breaking representation; ``sample_alpha``).

Random streams: per-user draws (slices, allocations) come from the stream
(key, user id), so they do not depend on how users are split into batches.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba as nb
import numpy as np
from scipy.special import gammaln

from dscir.errors import DscirError
from dscir.rng import mix_in, new_state, uniform


#: Counts up to this are scored by the log of a product, not two lgammas.
RISING_PRODUCT = 8


@nb.njit(cache=True, nogil=True, inline="always")
def log_rising(x, n):
    """log Gamma(x + n) - log Gamma(x) = log x (x + 1) ... (x + n - 1) for a count
    n >= 1: for the short counts of text one log of the product, a few times
    cheaper than two lgammas and no less accurate."""
    if n > RISING_PRODUCT:
        return math.lgamma(x + n) - math.lgamma(x)
    prod = x
    for j in range(1, n):
        prod *= x + j
    return math.log(prod)


# -- slices and allocations (per user) ------------------------------------------


@nb.njit(cache=True, nogil=True)
def _slice_log_u(log_wz, users, key, out):
    for i in range(users.size):
        s = new_state(mix_in(key, users[i]))
        out[i] = log_wz[i] + np.log(uniform(s))


def slice_log_u(log_w: np.ndarray, z: np.ndarray, users: np.ndarray, key: int) -> np.ndarray:
    """log u_i for u_i ~ U(0, w_{z_i}); user ``users[i]`` draws from (key, user)."""
    z = np.asarray(z, dtype=np.int64)
    if z.size and (z.min() < 0 or z.max() >= log_w.size):
        raise DscirError(f"allocations must lie in 0..{log_w.size - 1}")
    out = np.empty(z.size)
    _slice_log_u(np.ascontiguousarray(log_w[z]), np.asarray(users, np.int64), np.uint64(key), out)
    return out


@nb.njit(inline="always")
def add_log_likelihood(acc, indptr, local, data, log_phi, i, j):
    """``acc`` plus row i's multinomial log likelihood under component j (without the
    coefficient): sum_p data[p] log phi[j, word p], added in the row's order."""
    for p in range(indptr[i], indptr[i + 1]):
        acc += data[p] * log_phi[j, local[p]]
    return acc


@nb.njit(cache=True, nogil=True)
def draw_log_scores(score, top, s):
    """An index drawn with probability ∝ exp(score) (``top``: the largest score),
    by one uniform of ``s``; -1 when every score is -inf (or ``top`` is NaN).
    Overwrites ``score`` with the unnormalised weights."""
    if not top > -np.inf:
        return -1
    total = 0.0
    for j in range(score.size):
        score[j] = np.exp(score[j] - top) if score[j] > -np.inf else 0.0
        total += score[j]
    r = uniform(s) * total
    pick = -1
    for j in range(score.size):
        if score[j] > 0.0:
            pick = j
            r -= score[j]
            if r <= 0.0:
                break
    return pick


@nb.njit(cache=True, nogil=True)
def allocate_rows(indptr, local, data, rows, log_floor, log_gate, log_start, log_phi, key, out):
    """Row i draws among the components j with log_gate[j] >= log_floor[i], by
    log_start[j] plus its log likelihood, from the stream (key, rows[i]). The DP's
    slice: gate log w, floor log u_i, start 0; the finite mixture: gate and start
    log pi, floor the lowest double (only pi_k = 0 is excluded)."""
    score = np.empty(log_gate.size)
    for i in range(rows.size):
        s = new_state(mix_in(key, rows[i]))
        top = -np.inf
        for j in range(log_gate.size):
            score[j] = -np.inf
            if log_gate[j] >= log_floor[i]:
                score[j] = add_log_likelihood(log_start[j], indptr, local, data, log_phi, i, j)
                if score[j] > top:
                    top = score[j]
        out[i] = draw_log_scores(score, top, s)


def allocate(indptr, local, data, users, log_u, log_w, log_phi_cols, key: int) -> np.ndarray:
    """z_i over {j : w_j >= u_i} with p(z_i = j) ∝ prod_w phi_jw^{x_iw}, in log space.

    CSR users (``indptr``, counts ``data``) whose entry e is column ``local[e]``
    of ``log_phi_cols`` (K x U, the columns of the areas they use); user
    ``users[i]`` draws from the stream (key, user). Each u_i must lie below some
    w_j (it does when drawn by ``slice_log_u``)."""
    out = np.empty(len(users), dtype=np.int32)
    log_w = np.ascontiguousarray(log_w, dtype=np.float64)
    allocate_rows(np.asarray(indptr, np.int64), np.asarray(local, np.int64),
                  np.asarray(data, np.float64), np.asarray(users, np.int64),
                  np.asarray(log_u, np.float64), log_w, np.zeros(log_w.size),
                  np.ascontiguousarray(log_phi_cols, dtype=np.float64), np.uint64(key), out)
    if out.size and out.min() < 0:
        raise DscirError("a slice variable lies above every stick weight")
    return out


class ComponentCounts(NamedTuple):
    """Integer sufficient statistics of allocated users over their components."""

    components: np.ndarray  # int64 [C] sorted component ids that have users
    users: np.ndarray  # int64 [C] users in each
    counts: np.ndarray  # int64 [C, U] summed counts over the U local columns


def component_counts(indptr, local, data, z, n_cols: int) -> ComponentCounts:
    """Users and summed counts per occupied component (exact integer sums)."""
    z = np.asarray(z, dtype=np.int64)
    comps, inv, users = np.unique(z, return_inverse=True, return_counts=True)
    rows = np.repeat(inv, np.diff(np.asarray(indptr, np.int64)))
    flat = np.bincount(rows * n_cols + np.asarray(local, np.int64),
                       weights=np.asarray(data, np.float64), minlength=comps.size * n_cols)
    return ComponentCounts(comps.astype(np.int64), users.astype(np.int64),
                           np.rint(flat).astype(np.int64).reshape(comps.size, n_cols))


# -- held-out score ---------------------------------------------------------------


@nb.njit(cache=True, nogil=True)
def _log_predictive(indptr, local, data, log_w, log_phi, log_rest, a0, n_words, out):
    n_comp = log_w.size
    lg_a0 = math.lgamma(a0)
    lg_wa0 = math.lgamma(n_words * a0)
    terms = np.empty(n_comp + 1)
    for i in range(indptr.size - 1):
        n = 0.0
        coef = 0.0
        prior = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            n += data[p]
            coef -= math.lgamma(data[p] + 1.0)
            prior += math.lgamma(data[p] + a0) - lg_a0
        coef += math.lgamma(n + 1.0)
        # the unrepresented components, integrated over the prior: Dirichlet-multinomial
        top = log_rest + prior + lg_wa0 - math.lgamma(n + n_words * a0)
        terms[n_comp] = top
        for j in range(n_comp):
            acc = add_log_likelihood(log_w[j], indptr, local, data, log_phi, i, j)
            terms[j] = acc
            if acc > top:
                top = acc
        total = 0.0
        for j in range(n_comp + 1):
            total += np.exp(terms[j] - top)
        out[i] = coef + top + np.log(total)


def log_predictive(indptr, local, data, log_w, log_phi_cols, log_rest: float, a0: float,
                   n_words: int) -> np.ndarray:
    """Per-user log p(x_i) = log [sum_j w_j Mult(x_i | phi_j) + w_rest DirMult(x_i | a0)]
    under one posterior sample (natural log, multinomial coefficient included);
    the last term integrates the components not represented over their prior."""
    out = np.empty(len(indptr) - 1)
    _log_predictive(np.asarray(indptr, np.int64), np.asarray(local, np.int64),
                    np.asarray(data, np.float64), np.ascontiguousarray(log_w, dtype=np.float64),
                    np.ascontiguousarray(log_phi_cols, dtype=np.float64), float(log_rest),
                    float(a0), int(n_words), out)
    return out


class Sample(NamedTuple):
    """One posterior sample of the mixture: what prediction and scoring need."""

    log_w: np.ndarray  # [K]
    log_phi: np.ndarray  # [K, W]
    log_rest: float
    alpha: float


def cluster_log_likelihood(indptr, indices, data, log_w: np.ndarray,
                           log_phi: np.ndarray) -> np.ndarray:
    """log w_j + sum_w x_iw log phi_jw for every user i and component j (n x K):
    the allocation's log weights without the slice, multinomial coefficient dropped."""
    indptr = np.asarray(indptr, np.int64)
    rows = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
    out = np.zeros((indptr.size - 1, log_w.size))
    np.add.at(out, rows, np.asarray(data)[:, None] * log_phi[:, np.asarray(indices)].T)
    return out + log_w


def responsibility_sums(indptr, indices, data, log_w: np.ndarray, log_phi: np.ndarray,
                        log_rest: float, a0: float, n_words: int) -> np.ndarray:
    """sum_i r_ij [K + 1] over the users: r_ij ∝ w_j Mult(x_i | phi_j) for the K
    represented components and, last, ∝ rest DirMult(x_i | a0) for the others
    (their likelihood averaged over the prior, as in ``log_predictive``).
    ``log_phi`` [K, U]: the columns ``indices`` points into."""
    indptr = np.asarray(indptr, np.int64)
    x = np.asarray(data, np.float64)
    rows = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
    n = np.bincount(rows, weights=x, minlength=indptr.size - 1)
    prior = np.bincount(rows, weights=gammaln(x + a0) - gammaln(a0), minlength=n.size)
    rest = log_rest + prior + gammaln(n_words * a0) - gammaln(n + n_words * a0)
    logs = np.concatenate([cluster_log_likelihood(indptr, indices, x, log_w, log_phi),
                           rest[:, None]], axis=1)
    logs -= logs.max(axis=1, keepdims=True)
    r = np.exp(logs)
    return (r / r.sum(axis=1, keepdims=True)).sum(axis=0)
