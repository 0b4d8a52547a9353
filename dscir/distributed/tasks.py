"""Functions that run on Dask workers.

Each composes the corpus reader with a pure model kernel; none touches the
sampler state. A worker opens a store once and keeps it (``open_store``), so a
task carries only a path and document ids, never documents.
"""

from __future__ import annotations

import functools
import time
from typing import NamedTuple

import numpy as np

from dscir.corpus import Corpus, CSRBatch, completion_split
from dscir.models import lda


@functools.lru_cache(maxsize=16)
def open_store(path: str) -> Corpus:
    """The worker process's open handle on a corpus store."""
    return Corpus.open(path)


def read_batch(path: str, docs: np.ndarray) -> CSRBatch:
    """Read documents from the store on the worker (the batch stays there)."""
    return open_store(path).read(docs)


def batch_words(batch: CSRBatch) -> np.ndarray:
    """Sorted distinct word ids of a batch: the phi columns its Gibbs task needs."""
    return np.unique(batch.indices).astype(np.int64)


class GibbsResult(NamedTuple):
    words: np.ndarray  # int64 [U] global word ids of the columns below
    topic_word: np.ndarray  # int64 [K, U] counts summed over kept sweeps
    n_kept: int
    n_tokens: int
    seconds: float


def gibbs_counts(
    batch: CSRBatch,
    words: np.ndarray,
    phi_cols: np.ndarray,
    alpha: float,
    sweeps: int,
    seed: int,
    iteration: int,
) -> GibbsResult:
    """Expected topic-word counts of a batch given the phi columns of its words."""
    start = time.perf_counter()
    local = np.searchsorted(words, batch.indices).astype(np.int32)
    topic_word, _, n_kept = lda.gibbs_expectations(
        batch.indptr, batch.indices, batch.data, batch.docs, phi_cols, local,
        alpha, sweeps, seed, iteration,
    )
    return GibbsResult(
        words, topic_word, int(n_kept), int(batch.data.sum()), time.perf_counter() - start
    )


class CompletionResult(NamedTuple):
    loglik: np.ndarray  # float64 [n_docs] natural log, summed over each document's test tokens
    n_test: int
    n_docs: int
    seconds: float


def completion_scores(
    batch: CSRBatch,
    words: np.ndarray,
    log_phi_cols: np.ndarray,
    alpha: float,
    sweeps: int,
    seed: int,
    every: int,
) -> CompletionResult:
    """Document-completion log-likelihood of held-out documents under fixed phi,
    given the log phi columns of their words (``batch_words(batch)``)."""
    start = time.perf_counter()
    observed, test = completion_split(batch, every=every)
    loglik, n_test = lda.completion_log_likelihood(
        observed.indptr, observed.indices, observed.data,
        test.indptr, test.indices, test.data, batch.docs, log_phi_cols,
        np.searchsorted(words, observed.indices).astype(np.int32),
        np.searchsorted(words, test.indices).astype(np.int32),
        alpha, sweeps, seed,
    )
    return CompletionResult(
        np.asarray(loglik, np.float64), int(n_test.sum()), int(batch.docs.size),
        time.perf_counter() - start
    )
