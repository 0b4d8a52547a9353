"""A tiny document whose exact assignment posterior is enumerated, and random batches
run through the Gibbs kernels."""

from __future__ import annotations

import itertools

import numpy as np
from scipy.special import gammaln, logsumexp

from dscir.models.lda import gibbs_expectations

# A tiny document: global words 7, 3, 11 with counts 2, 1, 1 (N = 4 tokens),
# K = 3 topics; column j of PHI belongs to word WORDS[j].
WORDS = np.array([3, 7, 11])
DOC_IND = np.array([7, 3, 11], dtype=np.int32)
DOC_CNT = np.array([2, 1, 1], dtype=np.int32)
PHI = np.array([[0.50, 0.10, 0.05],
                [0.30, 0.60, 0.15],
                [0.20, 0.30, 0.80]])
ALPHA = 0.1


def _tokens():
    return np.repeat(np.searchsorted(WORDS, DOC_IND), DOC_CNT)


def exact_assignment_posterior(phi, alpha):
    """All K^N assignments z of the tiny document and p(z | w, phi, alpha), theta
    integrated out: p(z) ∝ Π_i phi[z_i, w_i] · Π_k Γ(alpha + n_k) / Γ(alpha)."""
    tok = _tokens()
    n_topics = phi.shape[0]
    zs = np.array(list(itertools.product(range(n_topics), repeat=tok.size)))
    logp = np.log(phi[zs, tok]).sum(axis=1)
    counts = np.stack([(zs == k).sum(axis=1) for k in range(n_topics)], axis=1)
    logp += (gammaln(alpha + counts) - gammaln(alpha)).sum(axis=1)
    return zs, counts, np.exp(logp - logsumexp(logp))


def exact_expected_counts(phi, alpha):
    """E[n_kw] [K, U] for the tiny document under the exact posterior."""
    zs, _, p = exact_assignment_posterior(phi, alpha)
    out = np.zeros_like(phi)
    for z, pz in zip(zs, p):
        np.add.at(out, (z, _tokens()), pz)
    return out


def _copies(n_copies):
    """The tiny document repeated n_copies times as one CSR batch."""
    indptr = np.arange(n_copies + 1, dtype=np.int64) * DOC_IND.size
    indices = np.tile(DOC_IND, n_copies)
    data = np.tile(DOC_CNT, n_copies)
    return indptr, indices, data, np.searchsorted(WORDS, indices).astype(np.int32)


def _random_batch(n_docs=12, n_words=40, n_topics=6, seed=0):
    rng = np.random.default_rng(seed)
    indptr, indices, data = [0], [], []
    for _ in range(n_docs):
        w = np.unique(rng.integers(0, n_words, size=rng.integers(0, 30)))
        indices.extend(w)
        data.extend(rng.integers(1, 4, size=w.size))
        indptr.append(len(indices))
    indices = np.array(indices, dtype=np.int32)
    phi = rng.gamma(0.3, size=(n_topics, n_words))
    return (np.array(indptr, dtype=np.int64), indices, np.array(data, dtype=np.int32),
            phi / phi.sum(axis=1, keepdims=True))


def _run(indptr, indices, data, docs, phi, sweeps=10, seed=5, iteration=2, alpha=0.2,
         kernel="dense"):
    words = np.unique(indices)
    cols = phi[:, words]
    cols = cols / cols.max(axis=0)
    local = np.searchsorted(words, indices).astype(np.int32)
    tw, dt, n_kept = gibbs_expectations(indptr, indices, data, docs, cols, local, alpha,
                                        sweeps, seed, iteration, kernel)
    full = np.zeros(phi.shape, dtype=np.int64)
    full[:, words] = tw
    return full, dt, n_kept


def batch_estimates(phi_cols, kernel="dense", n_batches=40, per_batch=50, sweeps=40):
    """Independent estimates of E[n_kw] of the tiny document: one per batch of its
    copies with distinct ids, by the Gibbs ``kernel``."""
    indptr, indices, data, local = _copies(per_batch)
    out = []
    for b in range(n_batches):
        docs = np.arange(b * per_batch, (b + 1) * per_batch)
        tw, _, n_kept = gibbs_expectations(indptr, indices, data, docs, phi_cols, local,
                                           ALPHA, sweeps, 3, 0, kernel)
        out.append(tw / (per_batch * n_kept))
    return np.array(out)
