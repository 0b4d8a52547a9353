"""LDA's worker task: a minibatch part's expected topic-word counts.

It runs on the worker that read the part, gets only the phi columns of the
part's words and returns integer counts (the held-out task is in ``evaluation``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from dscir.corpus import CSRBatch
from dscir.models.lda.kernels import gibbs_expectations


class GibbsResult(NamedTuple):
    words: np.ndarray  # int64 [U] global word ids of the columns below
    topic_word: np.ndarray  # int64 [K, U] counts summed over kept sweeps
    n_kept: int
    n_tokens: int


def gibbs_counts(batch: CSRBatch, words: np.ndarray, phi_cols: np.ndarray, alpha: float,
                 sweeps: int, seed: int, iteration: int) -> GibbsResult:
    """Expected topic-word counts of a batch given the phi columns of its words."""
    local = np.searchsorted(words, batch.indices).astype(np.int32)
    topic_word, _, n_kept = gibbs_expectations(
        batch.indptr, batch.indices, batch.data, batch.docs, phi_cols, local,
        alpha, sweeps, seed, iteration,
    )
    return GibbsResult(words, topic_word, int(n_kept), int(batch.data.sum()))
