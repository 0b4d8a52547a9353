"""The finite mixture's worker tasks: allocations and held-out scores of a batch."""

from __future__ import annotations

import numpy as np

from dscir.corpus import CSRBatch
from dscir.models.mixtures.dp.tasks import AllocationResult, allocation_result
from dscir.models.mixtures.finite.allocation import allocate, log_predictive


def allocate_docs(batch: CSRBatch, words: np.ndarray, log_phi_cols: np.ndarray,
                  log_pi: np.ndarray, key: int) -> AllocationResult:
    """Allocate a batch of documents given log pi and log phi of their words
    (K x U), and return integer statistics per component."""
    local = np.searchsorted(words, batch.indices)
    z = allocate(batch.indptr, local, batch.data, batch.docs, log_pi, log_phi_cols, key)
    return allocation_result(batch, local, words, z)


def doc_log_predictive(batch: CSRBatch, words: np.ndarray, log_pi: np.ndarray,
                       log_phi_cols: np.ndarray) -> np.ndarray:
    """Per-document log predictive of a batch under one sample (log phi of its words)."""
    local = np.searchsorted(words, batch.indices)
    return log_predictive(batch.indptr, local, batch.data, log_pi, log_phi_cols)
