"""Finite mixture of multinomials: per-document allocations.

The model::

    x_i | z_i, phi ~ Multinomial(n_i, phi_{z_i}),   z_i | pi ~ Categorical(pi),
    phi_k ~ Dirichlet(a0),   pi ~ Dirichlet(gamma),   k = 1..K (K fixed).

Representation (as the DP mixture's): pi is K Gamma variables normalised,
phi_k a row of K x W Gamma variables normalised; everything on the log scale.
A document's allocation draws from p(z_i = k) ∝ pi_k Mult(x_i | phi_k) in log
space (``allocate``; document ``docs[i]`` draws from the stream (key, doc), so
the draw does not depend on how documents are split into tasks). Integer
statistics per component and the held-out log predictive are the DP mixture's
kernels: the counts are the same sums, and the finite mixture's predictive
log sum_k pi_k Mult(x | phi_k) is the DP's with no mass left for unrepresented
components (log_rest = -inf).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from dscir.errors import DscirError
from dscir.models.mixtures.dp.allocation import (ComponentCounts, allocate_rows, cluster_log_likelihood,
                                       component_counts)
from dscir.models.mixtures.dp.allocation import log_predictive as _dp_log_predictive
from dscir.models.mixtures.predictive import PredictiveAverage

__all__ = ["ComponentCounts", "PredictiveAverage", "Sample", "allocate",
           "allocation_log_weights", "cluster_log_likelihood", "component_counts",
           "log_predictive"]


class Sample(NamedTuple):
    """One posterior sample of the mixture: what prediction and scoring need."""

    log_pi: np.ndarray  # [K]
    log_phi: np.ndarray  # [K, W]


def allocate(indptr, local, data, docs, log_pi, log_phi_cols, key: int) -> np.ndarray:
    """z_i with p(z_i = k) ∝ pi_k prod_w phi_kw^{x_iw}, in log space.

    CSR documents (``indptr``, counts ``data``) whose entry e is column
    ``local[e]`` of ``log_phi_cols`` (K x U, the columns of the words they
    use); document ``docs[i]`` draws one uniform from the stream (key, doc)."""
    out = np.empty(len(docs), dtype=np.int32)
    log_pi = np.ascontiguousarray(log_pi, dtype=np.float64)
    allocate_rows(np.asarray(indptr, np.int64), np.asarray(local, np.int64),
                  np.asarray(data, np.float64), np.asarray(docs, np.int64),
                  np.full(len(docs), np.finfo(np.float64).min), log_pi, log_pi,
                  np.ascontiguousarray(log_phi_cols, dtype=np.float64), np.uint64(key), out)
    if out.size and out.min() < 0:
        raise DscirError("a document has probability 0 (or NaN) under every component")
    return out


def allocation_log_weights(indptr, indices, data, log_pi, log_phi) -> np.ndarray:
    """log p(z_i = k | x_i, pi, phi), normalised (n x K): the exact conditional
    ``allocate`` draws from (for tests and ``predict_proba``)."""
    scores = cluster_log_likelihood(indptr, indices, data, np.asarray(log_pi, np.float64),
                                    np.asarray(log_phi, np.float64))
    top = scores.max(axis=1, keepdims=True)
    return scores - (top + np.log(np.exp(scores - top).sum(axis=1, keepdims=True)))


def log_predictive(indptr, local, data, log_pi, log_phi_cols) -> np.ndarray:
    """Per-document log p(x_i) = log sum_k pi_k Mult(x_i | phi_k) under one
    sample (natural log, multinomial coefficient included): the DP mixture's
    predictive with no unrepresented mass."""
    log_phi_cols = np.asarray(log_phi_cols, np.float64)
    return _dp_log_predictive(indptr, local, data, log_pi, log_phi_cols, -np.inf, 1.0,
                              max(log_phi_cols.shape[1], 1))
