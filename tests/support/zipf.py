"""A Zipf-drawn corpus over a vocabulary large enough that K x W topics are a
memory budget (the driver-memory tests of the fitted topics and components)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

#: The vocabulary: K = 100 topics over it are 160 MB of float64.
W = 200_000


def zipf_counts(n_docs: int = 200, length: int = 100, seed: int = 0) -> sp.csr_matrix:
    """``n_docs`` documents of ``length`` words drawn with probability ∝ rank^-1.07."""
    rng = np.random.default_rng(seed)
    p = (np.arange(W) + 1.0) ** -1.07
    tokens = rng.choice(W, size=(n_docs, length), p=p / p.sum())
    rows = np.repeat(np.arange(n_docs), length)
    counts = sp.csr_matrix((np.ones(rows.size, np.int32), (rows, tokens.ravel())),
                           shape=(n_docs, W))
    counts.sum_duplicates()
    return counts
