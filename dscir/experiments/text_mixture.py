"""Synthetic mixtures of multinomials that look like text, with known clusters.

Words have Zipf-like base frequencies p_w ∝ (r_w + 2.7)^-1.07 (r_w a random
rank); each of the K components multiplies the base by its own log-normal
factors (sigma ``spread``) and puts ``specific`` of its mass uniformly on
``n_specific`` words of its own (disjoint between components); documents draw
a component from ``weights`` (default uniform) and a length uniform in
``lengths``, then their tokens. ``text_mixture`` returns the counts (CSR) and
the true labels.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp


class TextMixture(NamedTuple):
    counts: sp.csr_matrix  # documents x words, int64
    labels: np.ndarray  # int64 [N] true component of each document
    phi: np.ndarray  # K x W the components' word distributions


def component_distributions(n_words: int, n_clusters: int, rng, *, specific: float = 0.25,
                            n_specific: int | None = None, spread: float = 0.5) -> np.ndarray:
    """K x W word distributions: shared Zipf base, per-component log-normal tilt,
    ``specific`` of each component's mass on its own words."""
    if n_specific is None:
        n_specific = max(5, min(n_words // (2 * n_clusters), 200))
    if n_specific * n_clusters > n_words:
        raise ValueError(f"{n_clusters} x {n_specific} specific words exceed W = {n_words}")
    base = (rng.permutation(n_words) + 2.7) ** -1.07
    phi = base * np.exp(spread * rng.standard_normal((n_clusters, n_words)))
    phi /= phi.sum(axis=1, keepdims=True)
    own = rng.permutation(n_words)[: n_specific * n_clusters].reshape(n_clusters, n_specific)
    boost = np.zeros_like(phi)
    np.put_along_axis(boost, own, 1.0 / n_specific, axis=1)
    return (1.0 - specific) * phi + specific * boost


def text_mixture(n_docs: int, n_words: int, n_clusters: int = 20, seed: int = 0, *,
                 lengths: tuple[int, int] = (50, 300), weights=None, **shape) -> TextMixture:
    """``n_docs`` documents from a random text-like mixture (see the module)."""
    rng = np.random.default_rng(seed)
    phi = component_distributions(n_words, n_clusters, rng, **shape)
    p = np.full(n_clusters, 1.0 / n_clusters) if weights is None else np.asarray(weights)
    labels = rng.choice(n_clusters, size=n_docs, p=p)
    sizes = rng.integers(lengths[0], lengths[1] + 1, size=n_docs)
    cdf = np.cumsum(phi, axis=1)
    cdf[:, -1] = 1.0
    rows, cols = [], []
    for k in range(n_clusters):
        docs = np.flatnonzero(labels == k)
        tokens = np.searchsorted(cdf[k], rng.random(int(sizes[docs].sum())), side="right")
        rows.append(np.repeat(docs, sizes[docs]))
        cols.append(tokens)
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    counts = sp.csr_matrix((np.ones(rows.size, np.int64), (rows, cols)),
                           shape=(n_docs, n_words))
    counts.sum_duplicates()
    return TextMixture(counts, labels.astype(np.int64), phi)
