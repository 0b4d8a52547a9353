"""Initial mixture components seeded from documents (k-means++ for multinomials).

Starting a mixture's components from the prior (or from Gamma(1, 1) noise) is
harmless on a few hundred words, but over 10^4 words the first allocation is
decided by noise: a document's likelihood under a random component is a sum of
~100 independent log-Gamma terms, so the chain starts from a random partition
and, because the Gibbs and slice moves change one allocation at a time, never
splits the merged clusters it builds from it. Seeding puts each initial
component on a document instead::

    theta_j = a0 + a0 W x_{d_j} / n_{d_j}

(half the prior mass a0 W on the seed document's word frequencies, half flat),
and picks the seeds d_1, d_2, ... as k-means++ does (Arthur & Vassilvitskii
2007), with the cost of a candidate document i the per-token log-likelihood
gap between its own seeded component and the best chosen so far,

    cost_i = (log p(x_i | theta_i) - max_j log p(x_i | theta_j)) / n_i  >= 0,

drawn with probability proportional to the cost: documents unlike every seed
are likely seeds. An initial state is not part of the target: the chain stays
a correct sampler of the same posterior whatever its start.
"""

from __future__ import annotations

import numpy as np

from dscir.errors import DscirError
from dscir.rng import derive

SEED_CANDIDATES = 2000  # documents the seeds are chosen from (a sample of larger corpora)


def seed_log_theta(indptr, indices, data, n_words: int, rows: np.ndarray,
                   a0: float) -> np.ndarray:
    """log theta (len(rows) x W) of the components seeded on CSR ``rows``."""
    out = np.full((len(rows), n_words), np.log(a0))
    for j, i in enumerate(rows):
        a, b = indptr[i], indptr[i + 1]
        x = np.asarray(data[a:b], np.float64)
        out[j, indices[a:b]] = np.log(a0 + a0 * n_words * x / x.sum())
    return out


def choose_seeds(indptr, indices, data, n_words: int, n_seeds: int, a0: float,
                 key: int) -> np.ndarray:
    """Rows of the CSR documents chosen as seeds by the k-means++ rule above
    (fewer than ``n_seeds`` only if every document is already some seed's
    copy); the first is uniform. The stream is ``key``."""
    indptr = np.asarray(indptr, np.int64)
    indices = np.asarray(indices, np.int64)
    data = np.asarray(data, np.float64)
    n_docs = indptr.size - 1
    lengths = np.diff(indptr)
    words = np.flatnonzero(lengths > 0)  # empty documents cost 0: never seeds
    if words.size == 0:
        raise DscirError("seeding needs a document with at least one word")
    doc_of = np.repeat(np.arange(n_docs), lengths)
    tokens = np.maximum(np.bincount(doc_of, weights=data, minlength=n_docs), 1.0)
    own = np.bincount(doc_of, weights=data * np.log(a0 + a0 * n_words * data / tokens[doc_of]),
                      minlength=n_docs)
    rng = np.random.Generator(np.random.PCG64(key))
    best = np.full(n_docs, -np.inf)
    seeds = [int(words[rng.integers(words.size)])]
    while len(seeds) < n_seeds:
        log_theta = seed_log_theta(indptr, indices, data, n_words, seeds[-1:], a0)[0]
        best = np.maximum(best, np.bincount(doc_of, weights=data * log_theta[indices],
                                            minlength=n_docs))
        cost = np.maximum(own - best, 0.0) / tokens
        if cost.sum() <= 0.0:
            break
        seeds.append(int(rng.choice(n_docs, p=cost / cost.sum())))
    return np.array(seeds, np.int64)


def seeded_components(indptr, indices, data, n_words: int, n_seeds: int, a0: float,
                      key: int) -> np.ndarray:
    """log theta (K x W) of ``n_seeds`` components seeded by k-means++ on the CSR
    documents (K = n_seeds unless the documents run out of distinct seeds; then
    the rest are flat, theta = a0)."""
    rows = choose_seeds(indptr, indices, data, n_words, n_seeds, a0, key)
    out = np.full((n_seeds, n_words), np.log(a0))
    out[: rows.size] = seed_log_theta(indptr, indices, data, n_words, rows, a0)
    return out


def candidate_rows(n_docs: int, key: int, n_candidates: int = SEED_CANDIDATES) -> np.ndarray:
    """Sorted positions of the documents the seeds are chosen from: all of them, or
    ``n_candidates`` drawn without replacement from the stream ``key``."""
    if n_docs <= n_candidates:
        return np.arange(n_docs, dtype=np.int64)
    rng = np.random.Generator(np.random.PCG64(key))
    return np.sort(rng.choice(n_docs, size=n_candidates, replace=False)).astype(np.int64)


def seed_csr(indptr, indices, data, n_words: int, n_seeds: int, a0: float,
             key: int) -> np.ndarray:
    """Seeded log theta (n_seeds x W) from the candidate rows of in-memory CSR
    documents (the exact samplers): candidates from (key, 0), seeds from (key, 1)."""
    return seeded_components(*candidate_csr(indptr, indices, data, derive(key, 0)),
                             n_words, n_seeds, a0, derive(key, 1))


def candidate_csr(indptr, indices, data, key: int):
    """(indptr, indices, data) of the candidate rows (``candidate_rows``, stream
    ``key``) of in-memory CSR documents."""
    indptr = np.asarray(indptr, np.int64)
    rows = candidate_rows(indptr.size - 1, key)
    take = np.concatenate([np.arange(indptr[r], indptr[r + 1]) for r in rows])
    sub_indptr = np.concatenate([[0], np.cumsum(indptr[rows + 1] - indptr[rows])])
    return sub_indptr, np.asarray(indices)[take], np.asarray(data)[take]


def document_rows(batch, words):
    """Worker task: the batch's documents themselves (CSR), for seeding."""
    return batch


def read_candidates(executor, docs: np.ndarray, key: int):
    """The candidate documents among ``docs`` (ids) and their CSR arrays, read by
    ``executor``'s workers; the candidates of ``seed_csr`` on the same documents."""
    ids = np.asarray(docs)[candidate_rows(docs.size, derive(key, 0))]
    parts = executor.read(ids, "read-seeds")
    batches = executor.run("seeds", document_rows, parts, [()] * len(parts.parts))
    lengths = np.concatenate([np.diff(b.indptr) for b in batches])
    return ids, (np.concatenate([[0], np.cumsum(lengths)]),
                 np.concatenate([b.indices for b in batches]),
                 np.concatenate([b.data for b in batches]))


def seed_documents(executor, docs: np.ndarray, n_words: int, n_seeds: int, a0: float,
                   key: int) -> np.ndarray:
    """The ids of the documents ``seed_on_workers`` seeds the components on."""
    ids, csr = read_candidates(executor, docs, key)
    return ids[choose_seeds(*csr, n_words, n_seeds, a0, derive(key, 1))]


def seed_on_workers(executor, docs: np.ndarray, n_words: int, n_seeds: int, a0: float,
                    key: int) -> np.ndarray:
    """Seeded log theta from candidates among ``docs`` read by ``executor``'s
    workers; the same streams and candidates as ``seed_csr`` on the same documents."""
    _, csr = read_candidates(executor, docs, key)
    return seeded_components(*csr, n_words, n_seeds, a0, derive(key, 1))
