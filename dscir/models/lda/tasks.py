"""LDA's worker tasks: a minibatch part's expected topic-word counts, and the
topic proportions of a block of documents (``LDA.transform`` of a store).

They run on the worker that read the part and get only the phi columns of the
part's words (the held-out task is in ``evaluation``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from dscir.corpus import CSRBatch
from dscir.models.lda import gibbs_cuda
from dscir.models.lda._gibbs import nonzero_by_column
from dscir.models.lda.gibbs import gibbs_expectations, topic_proportions


class GibbsResult(NamedTuple):
    words: np.ndarray  # int64 [U] global word ids of the columns below
    topic_word: np.ndarray  # int64 [K, U] counts summed over kept sweeps
    n_kept: int
    n_tokens: int


def add_counts(counts: np.ndarray, results: list[GibbsResult]) -> np.ndarray:
    """The tasks' K x U integer counts added into the K x W ``counts`` (exact in any
    order)."""
    for r in results:
        counts[:, r.words] += r.topic_word
    return counts


def gibbs_counts(batch: CSRBatch, words: np.ndarray, phi_cols: np.ndarray, alpha: float,
                 sweeps: int, seed: int, iteration: int, kernel: str = "dense") -> GibbsResult:
    """Expected topic-word counts of a batch given the phi columns of its words."""
    local = np.searchsorted(words, batch.indices).astype(np.int32)
    topic_word, _, n_kept = gibbs_expectations(
        batch.indptr, batch.indices, batch.data, batch.docs, phi_cols, local,
        alpha, sweeps, seed, iteration, kernel,
    )
    return GibbsResult(words, topic_word, int(n_kept), int(batch.data.sum()))


class SparseCounts(NamedTuple):
    """A Gibbs task's counts as the vocabulary blocks take them: its nonzero
    (topic, word) entries, ordered by word. At most tokens x kept sweeps of the
    K x U entries are nonzero (far fewer at large K), so this is what crosses
    the wire and what a block adds, not the dense K x U matrix."""

    word_ids: np.ndarray  # int32 [nnz] global word ids, ascending
    topics: np.ndarray  # int32 [nnz]
    values: np.ndarray  # int64 [nnz] counts summed over kept sweeps, > 0
    n_kept: int
    n_tokens: int


def sparse_counts(result: GibbsResult) -> SparseCounts:
    """``result``'s nonzero counts, exactly, ordered by word."""
    cols, topics, values = nonzero_by_column(result.topic_word)
    return SparseCounts(result.words.astype(np.int32)[cols], topics, values, result.n_kept,
                        result.n_tokens)


def gibbs_sparse_counts(batch: CSRBatch, words: np.ndarray, *args) -> SparseCounts:
    """``gibbs_counts`` as its nonzero counts (16 bytes each against 8 per dense
    K x U entry): fewer bytes back whenever fewer than half are nonzero. A
    ``kernel`` named by ``gibbs_cuda.device_kernel`` runs on the worker's GPU."""
    if gibbs_cuda.on_device(args[-1]):
        return SparseCounts(*gibbs_cuda.gibbs_sparse_counts(batch, words, *args))
    return sparse_counts(gibbs_counts(batch, words, *args))


def block_topics(batch: CSRBatch, words: np.ndarray, phi_cols: np.ndarray, alpha: float,
                 sweeps: int, key: int) -> np.ndarray:
    """Topic proportions float32 [n, K] of a block of documents given the
    (rescaled) phi columns of its words; document d's stream is (key, 0,
    batch.docs[d]), so a document's row does not depend on its block."""
    local = np.searchsorted(words, batch.indices).astype(np.int32)
    theta = topic_proportions(batch.indptr, batch.indices, batch.data, batch.docs, phi_cols,
                              local, alpha, sweeps, key)
    return theta.astype(np.float32)


def block_topics_spread(batch: CSRBatch, words: np.ndarray, phi_cols: np.ndarray,
                        sample_cols: np.ndarray, alpha: float, sweeps: int,
                        key: int) -> tuple[np.ndarray, np.ndarray]:
    """``block_topics`` under the mean phi, and the standard deviation float32
    [n, K] of the proportions across the kept phi samples ``sample_cols``
    [S, K, U] (each document's stream is the same under every sample)."""
    local = np.searchsorted(words, batch.indices).astype(np.int32)
    each = np.stack([topic_proportions(batch.indptr, batch.indices, batch.data, batch.docs,
                                       np.ascontiguousarray(cols), local, alpha, sweeps, key)
                     for cols in sample_cols])
    theta = block_topics(batch, words, phi_cols, alpha, sweeps, key)
    return theta, each.std(axis=0).astype(np.float32)


def block_term_counts(batch: CSRBatch, words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The length (tokens) of each document of a block, int64 [n], and the count of
    each of the block's distinct ``words`` in it, int64 [len(words)]: the document
    lengths and term frequencies pyLDAvis asks for, one block at a time."""
    rows = np.repeat(np.arange(batch.docs.size), np.diff(batch.indptr))
    data = batch.data.astype(np.int64)
    lengths = np.zeros(batch.docs.size, np.int64)
    np.add.at(lengths, rows, data)
    counts = np.zeros(words.size, np.int64)
    np.add.at(counts, np.searchsorted(words, batch.indices), data)
    return lengths, counts
