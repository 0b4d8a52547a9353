"""The finite mixture's worker tasks: allocations and held-out scores of a batch."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from dscir.corpus import CSRBatch
from dscir.models.mixture.kernels import allocate, component_counts, log_predictive


class AllocationResult(NamedTuple):
    docs: np.ndarray  # int64 [n] the task's documents
    z: np.ndarray  # int32 [n] their new allocations
    components: np.ndarray  # int64 [C] components they occupy
    n_docs: np.ndarray  # int64 [C] documents in each
    words: np.ndarray  # int64 [U] words the documents use
    counts: np.ndarray  # int64 [C, U] summed counts


def allocate_docs(batch: CSRBatch, words: np.ndarray, log_phi_cols: np.ndarray,
                  log_pi: np.ndarray, key: int) -> AllocationResult:
    """Allocate a batch of documents given log pi and log phi of their words
    (K x U), and return integer statistics per component."""
    local = np.searchsorted(words, batch.indices)
    z = allocate(batch.indptr, local, batch.data, batch.docs, log_pi, log_phi_cols, key)
    cc = component_counts(batch.indptr, local, batch.data, z, words.size)
    return AllocationResult(np.asarray(batch.docs, np.int64), z, cc.components, cc.users,
                            words, cc.counts)


def doc_log_predictive(batch: CSRBatch, words: np.ndarray, log_pi: np.ndarray,
                       log_phi_cols: np.ndarray) -> np.ndarray:
    """Per-document log predictive of a batch under one sample (log phi of its words)."""
    local = np.searchsorted(words, batch.indices)
    return log_predictive(batch.indptr, local, batch.data, log_pi, log_phi_cols)
