"""A synthetic corpus drawn from LDA, written to a store block by block.

For corpora of any size (larger than memory): documents are drawn and
appended through ``CorpusWriter`` one block at a time, so memory is bounded
by a block and the writer's shard, never the corpus. The topics are known, so
a fit's held-out perplexity can be read against the generating model's.

Topic k is phi_k ~ Dirichlet(eta) over W words; document d has theta_d ~
Dirichlet(alpha) over K topics and Poisson(doc_length) tokens (at least one),
each drawn topic-then-word. Block b's documents come from the stream (seed,
SYNTHETIC, b) and the topics from (seed, SYNTHETIC): the same arguments give
the same store.
"""

from __future__ import annotations

from pathlib import Path

import numba
import numpy as np

from dscir.corpus.store import Corpus
from dscir.corpus.writer import CorpusWriter
from dscir.errors import CorpusError
from dscir.rng import derive
from dscir.rng.domains import SYNTHETIC


def lda_topics(n_topics: int, n_words: int, eta: float, seed: int) -> np.ndarray:
    """The generating topics: K x W rows drawn from Dirichlet(eta)."""
    rng = np.random.Generator(np.random.PCG64(derive(seed, SYNTHETIC)))
    return rng.dirichlet(np.full(n_words, eta), size=n_topics)


def alias_tables(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Walker's alias tables of each row of ``p`` (rows summing to 1): a draw is
    column j = floor(W u1), kept if u2 < keep[j], else alias[j]."""
    n_rows, n_cols = p.shape
    keep, alias = np.ones((n_rows, n_cols)), np.zeros((n_rows, n_cols), np.int64)
    for r in range(n_rows):
        scaled = p[r] * n_cols
        small = [j for j in range(n_cols) if scaled[j] < 1.0]
        large = [j for j in range(n_cols) if scaled[j] >= 1.0]
        while small and large:
            s, g = small.pop(), large.pop()
            keep[r, s], alias[r, s] = scaled[s], g
            scaled[g] -= 1.0 - scaled[s]
            (small if scaled[g] < 1.0 else large).append(g)
        alias[r] = np.where(keep[r] < 1.0, alias[r], np.arange(n_cols))
    return keep, alias


@numba.njit(cache=True, nogil=True)
def _documents(theta_cdf, keep, alias, lengths, u):
    """Each document's tokens (topic by its CDF, word by the topic's alias table,
    from the uniforms ``u``: 3 per token) counted per word: (entries per
    document, ascending word ids, counts)."""
    n_docs, n_topics = theta_cdf.shape
    n_words = keep.shape[1]
    total = lengths.sum()
    words, counts = np.empty(total, np.int64), np.empty(total, np.int64)
    entries = np.zeros(n_docs, np.int64)
    t = e = 0
    for d in range(n_docs):
        drawn = np.empty(lengths[d], np.int64)
        for i in range(lengths[d]):
            target = u[t, 0] * theta_cdf[d, n_topics - 1]
            z = 0
            while z < n_topics - 1 and theta_cdf[d, z] <= target:
                z += 1
            j = min(int(u[t, 1] * n_words), n_words - 1)
            drawn[i] = j if u[t, 2] < keep[z, j] else alias[z, j]
            t += 1
        drawn.sort()
        for i in range(drawn.size):
            if i == 0 or drawn[i] != drawn[i - 1]:
                words[e], counts[e] = drawn[i], 0
                e += 1
                entries[d] += 1
            counts[e - 1] += 1
    return entries, words[:e], counts[:e]


def lda_block(tables: tuple[np.ndarray, np.ndarray], n_docs: int, alpha: float,
              doc_length: float, rng: np.random.Generator
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n_docs`` documents drawn from LDA with the topics' alias ``tables``:
    (entries per document, word ids ascending within each document, counts)."""
    keep, alias = tables
    theta = rng.dirichlet(np.full(keep.shape[0], alpha), size=n_docs)
    lengths = np.maximum(rng.poisson(doc_length, size=n_docs), 1).astype(np.int64)
    u = rng.random((int(lengths.sum()), 3))
    return _documents(np.cumsum(theta, axis=1), keep, alias, lengths, u)


def write_lda_corpus(path, *, n_docs: int, n_words: int, n_topics: int, doc_length: float,
                     alpha: float = 0.1, eta: float = 0.05, seed: int = 0,
                     block_docs: int = 4096, chunk_docs: int = 256,
                     heldout_every: int | None = 10, overwrite: bool = False,
                     progress: bool = False) -> tuple[Corpus, np.ndarray]:
    """Write an LDA-generated corpus to a new store at ``path`` (every
    ``heldout_every``-th document held out); returns the open store and the
    generating topics (K x W)."""
    for name, value in (("n_docs", n_docs), ("n_words", n_words), ("n_topics", n_topics),
                        ("block_docs", block_docs)):
        if int(value) < 1:
            raise CorpusError(f"{name} must be at least 1, got {value!r}")
    if not (doc_length > 0 and alpha > 0 and eta > 0):
        raise CorpusError(f"doc_length, alpha and eta must be positive, got "
                          f"{doc_length!r}, {alpha!r}, {eta!r}")
    from dscir.progress import tqdm

    phi = lda_topics(n_topics, n_words, eta, seed)
    tables = alias_tables(phi)
    with CorpusWriter(Path(path), overwrite=overwrite, chunk_docs=chunk_docs) as writer:
        for b, lo in enumerate(tqdm(range(0, n_docs, block_docs), disable=not progress,
                                    unit="block")):
            rng = np.random.Generator(np.random.PCG64(derive(seed, SYNTHETIC, b)))
            n = min(block_docs, n_docs - lo)
            lengths, words, counts = lda_block(tables, n, alpha, doc_length, rng)
            writer.add(lengths, words, counts, np.arange(lo, lo + n).astype(str))
        heldout = {"every": heldout_every} if heldout_every else None
        report = {"format": "synthetic-lda", "n_topics": n_topics, "alpha": alpha,
                  "eta": eta, "doc_length": doc_length, "seed": seed,
                  "block_docs": block_docs}
        corpus = writer.finish([f"w{i}" for i in range(n_words)], heldout=heldout,
                               report=report)
    return corpus, phi
