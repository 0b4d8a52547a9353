"""Collapsed Gibbs sampler of the finite mixture of multinomials (the
Dirichlet-multinomial mixture; Nigam et al. 2000, Yin & Wang's GSDMM 2014).

With pi ~ Dirichlet(gamma) and phi_k ~ Dirichlet(a0) integrated out, document
i's allocation given every other one is

    p(z_i = k | z_-i, x) ∝ (m_k + gamma)
        * prod_w Gamma(c_kw + a0 + x_iw) / Gamma(c_kw + a0)
        * Gamma(n_k + a0 W) / Gamma(n_k + a0 W + n_i),

m_k, c_kw and n_k the documents, word counts and tokens of cluster k without
document i. One sweep draws every document in turn from this conditional
(``conditional_log_weights`` gives it, for tests), so the chain's stationary
law is the exact posterior of the allocations under the model the uncollapsed
samplers sample: the quality reference they are held to, on one process.

Streams (``dscir.rng.domains``): the start (seed, MIXTURE_COLLAPSED); sweep t >= 1
draws document ``doc_ids[i]``'s uniform from (derive(seed, MIXTURE_COLLAPSED,
t), doc).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np
from scipy.special import gammaln

from dscir.rng import domains
from dscir.errors import DscirError
from dscir.models.mixtures.dp.allocation import draw_log_scores, log_rising
from dscir.models.mixtures.finite.allocation import allocate
from dscir.models.mixtures.seeding import candidate_csr, read_candidates, seed_csr
from dscir.rng import derive, mix_in, new_state

START_SWEEPS = 10  # collapsed sweeps on the candidate documents for init="collapsed"


@nb.njit(cache=True, nogil=True)
def _doc_scores(indptr, indices, data, i, m, n, ct, gamma, a0, a0w, score):
    """Fill ``score`` with the unnormalised log conditional of document i (removed);
    ``ct`` the word counts per cluster as W x K, so a word's K counts are read
    together (each cluster's terms are still added in the document's order)."""
    length = 0.0
    for p in range(indptr[i], indptr[i + 1]):
        length += data[p]
    for k in range(m.size):
        score[k] = (math.log(m[k] + gamma) + math.lgamma(n[k] + a0w)
                    - math.lgamma(n[k] + a0w + length))
    for p in range(indptr[i], indptr[i + 1]):
        row, x = ct[indices[p]], data[p]
        for k in range(m.size):
            score[k] += log_rising(row[k] + a0, x)
    top = -np.inf
    for k in range(m.size):
        if score[k] > top:
            top = score[k]
    return top


@nb.njit(cache=True, nogil=True)
def _move(indptr, indices, data, i, k, sign, m, n, ct):
    m[k] += sign
    for p in range(indptr[i], indptr[i + 1]):
        ct[indices[p], k] += sign * data[p]
        n[k] += sign * data[p]


@nb.njit(cache=True, nogil=True)
def _sweep(indptr, indices, data, docs, z, m, n, c, gamma, a0, a0w, key):
    """One sweep over the documents in order; ``c`` (K x W) is updated in place."""
    ct = np.ascontiguousarray(c.T)
    score = np.empty(m.size)
    for i in range(docs.size):
        _move(indptr, indices, data, i, z[i], -1, m, n, ct)
        top = _doc_scores(indptr, indices, data, i, m, n, ct, gamma, a0, a0w, score)
        k = draw_log_scores(score, top, new_state(mix_in(key, docs[i])))
        z[i] = k
        _move(indptr, indices, data, i, k, 1, m, n, ct)
    c[:] = ct.T


def counts_of(indptr, indices, data, z, n_clusters: int, n_words: int):
    """(m [K], n [K], c [K x W]): documents, tokens and word counts per cluster."""
    doc_of = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
    c = np.zeros((n_clusters, n_words), np.int64)
    np.add.at(c, (z[doc_of], indices), data)
    return np.bincount(z, minlength=n_clusters).astype(np.int64), c.sum(axis=1), c


def log_joint(indptr, indices, data, z, n_clusters: int, n_words: int, gamma: float,
              a0: float) -> float:
    """log p(z, x) with pi and phi integrated out, up to the documents' multinomial
    coefficients (which do not depend on z): the exact target of a sweep."""
    m, n, c = counts_of(np.asarray(indptr, np.int64), np.asarray(indices, np.int64),
                        np.asarray(data, np.int64), np.asarray(z, np.int64), n_clusters,
                        n_words)
    weights = (gammaln(n_clusters * gamma) - gammaln(m.sum() + n_clusters * gamma)
               + np.sum(gammaln(m + gamma) - gammaln(gamma)))
    words = np.sum(gammaln(a0 * n_words) - gammaln(n + a0 * n_words))
    words += np.sum(gammaln(c + a0) - gammaln(a0))
    return float(weights + words)


def conditional_log_weights(indptr, indices, data, z, i: int, n_clusters: int, n_words: int,
                            gamma: float, a0: float) -> np.ndarray:
    """log p(z_i = k | z_-i, x), normalised (K): the conditional a sweep draws from."""
    indptr, indices, data = (np.asarray(a, np.int64) for a in (indptr, indices, data))
    keep = np.ones(indptr.size - 1, bool)
    keep[i] = False
    m, n, c = counts_of(indptr, indices, data, np.asarray(z, np.int64), n_clusters, n_words)
    ct = np.ascontiguousarray(c.T)
    _move(indptr, indices, data, i, int(z[i]), -1, m, n, ct)
    score = np.empty(n_clusters)
    _doc_scores(indptr, indices, data, i, m, n, ct, float(gamma), float(a0),
                float(a0) * n_words, score)
    return score - np.logaddexp.reduce(score)


class CollapsedMixtureGibbs:
    """Collapsed Gibbs on in-memory CSR documents; ``step()`` is one sweep.

    ``init="random"``: uniform allocations; ``"kmeans++"``: each document on its
    most likely of K components seeded on documents (``dscir.models.mixtures.seeding``).
    """

    def __init__(self, indptr, indices, data, n_words: int, *, n_clusters: int, gamma: float,
                 a0: float, seed: int, doc_ids=None, init: str = "random"):
        self.indptr = np.asarray(indptr, np.int64)
        self.indices = np.asarray(indices, np.int64)
        self.data = np.asarray(data, np.int64)
        self.n_words, self.n_clusters = int(n_words), int(n_clusters)
        if n_clusters < 1:
            raise DscirError(f"n_clusters must be >= 1, got {n_clusters}")
        if self.indices.size and (self.indices.min() < 0 or self.indices.max() >= n_words):
            raise DscirError(f"word ids must lie in 0..{n_words - 1}")
        if not (gamma > 0 and a0 > 0):
            raise DscirError(f"gamma and a0 must be > 0, got {gamma} and {a0}")
        self.gamma, self.a0, self.seed = float(gamma), float(a0), int(seed)
        n_docs = self.indptr.size - 1
        self.doc_ids = (np.arange(n_docs, dtype=np.int64) if doc_ids is None
                        else np.asarray(doc_ids, np.int64))
        start = derive(self.seed, domains.MIXTURE_COLLAPSED)
        if init == "kmeans++":
            log_theta = seed_csr(self.indptr, self.indices, self.data, n_words, n_clusters,
                                 a0, start)
            log_phi = log_theta - np.logaddexp.reduce(log_theta, axis=1, keepdims=True)
            self.z = allocate(self.indptr, self.indices, self.data, self.doc_ids,
                              np.zeros(n_clusters), log_phi, start).astype(np.int64)
        elif init == "random":
            rng = np.random.Generator(np.random.PCG64(start))
            self.z = rng.integers(0, n_clusters, size=n_docs).astype(np.int64)
        else:
            raise DscirError(f"init must be 'random' or 'kmeans++', got {init!r}")
        self.m, self.n, self.c = counts_of(self.indptr, self.indices, self.data, self.z,
                                           n_clusters, n_words)
        self.iteration = 0

    @property
    def n_occupied(self) -> int:
        return int(np.count_nonzero(self.m))

    def step(self) -> None:
        self.iteration += 1
        key = derive(self.seed, domains.MIXTURE_COLLAPSED, self.iteration)
        _sweep(self.indptr, self.indices, self.data, self.doc_ids, self.z, self.m, self.n,
               self.c, self.gamma, self.a0, self.a0 * self.n_words, np.uint64(key))

    def posterior_mean(self) -> tuple[np.ndarray, np.ndarray]:
        """E[pi | z] and E[phi | z, x] (K, K x W) at the current allocations."""
        pi = (self.m + self.gamma) / (self.m.sum() + self.n_clusters * self.gamma)
        phi = (self.c + self.a0) / (self.n[:, None] + self.a0 * self.n_words)
        return pi, phi


def start_from_candidates(indptr, indices, data, n_words: int, *, n_clusters: int,
                          gamma: float, a0: float, key: int, n_total: int,
                          sweeps: int = START_SWEEPS) -> tuple[np.ndarray, np.ndarray]:
    """Initial (log weight gammas [K], log component gammas [K x W]) of an
    uncollapsed chain (``init="collapsed"``): ``sweeps`` collapsed sweeps from
    uniform allocations on the CSR candidate documents, then the Gamma(gamma +
    m_hat) and Gamma(a0 + c_hat) means with the counts scaled to ``n_total``
    documents. The start is not part of the target: the chain samples the same
    posterior from it."""
    g = CollapsedMixtureGibbs(indptr, indices, data, n_words, n_clusters=n_clusters,
                              gamma=gamma, a0=a0, seed=derive(key, 1), init="random")
    for _ in range(sweeps):
        g.step()
    scale = n_total / max(g.indptr.size - 1, 1)
    return np.log(gamma + g.m * scale), np.log(a0 + g.c * scale)


def collapsed_start_csr(indptr, indices, data, n_words: int, *, key: int, **model):
    """``start_from_candidates`` on the candidates of in-memory CSR documents
    (the exact sampler): candidates from (key, 0)."""
    n_total = np.asarray(indptr).size - 1
    return start_from_candidates(*candidate_csr(indptr, indices, data, derive(key, 0)),
                                 n_words, key=key, n_total=n_total, **model)


def collapsed_start_on_workers(executor, docs: np.ndarray, n_words: int, *, key: int,
                               **model):
    """``start_from_candidates`` on candidates among ``docs`` read by ``executor``'s
    workers: the same candidates and start as ``collapsed_start_csr``."""
    _, csr = read_candidates(executor, docs, key)
    return start_from_candidates(*csr, n_words, key=key, n_total=int(np.asarray(docs).size),
                                 **model)
