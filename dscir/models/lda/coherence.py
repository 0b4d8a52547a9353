"""Topic coherence (UMass, UCI, NPMI, C_v) from whole-document co-occurrence counts.

A dscir store holds each document as a bag of words (word ids and counts), not
its token order, so a word pair's "co-occurrence" here is always *whole-document*
co-occurrence: D(w) is the number of reference documents containing w at least
once and D(w_i, w_j) the number containing both (D(w, w) = D(w)); n is the
number of reference documents (all of them, empty ones included). The
sliding-window estimates (Newman et al.'s UCI with 10-token windows, Röder et
al.'s C_v with 110-token windows) need token positions and cannot be computed
from a store: ``check_window`` refuses them. With window = document these are
the boolean-document estimates gensim's ``u_mass`` uses, and what its ``c_uci``,
``c_npmi`` and ``c_v`` compute when every document is a single window.

For each topic, w_1, ..., w_N are its top N words by decreasing probability
(ties: the lower word id first), P(w) = D(w) / n, P(w_i, w_j) = D(w_i, w_j) / n,
eps = 1e-12 (gensim's epsilon) and

* ``u_mass`` (Mimno et al. 2011): the mean over the N(N-1)/2 pairs i > j (w_j
  ranked higher) of log((D(w_i, w_j) + 1) / D(w_j)), conditioning on the
  higher-ranked word. (gensim's u_mass uses log((D(w_i, w_j)/n + eps) /
  (D(w_j)/n)) instead of the +1 smoothing.)
* ``c_uci`` (PMI): the mean over pairs i != j of
  log((P(w_i, w_j) + eps) / (P(w_i) P(w_j))).
* ``c_npmi``: the mean over pairs i != j of that PMI divided by
  -log(P(w_i, w_j) + eps).
* ``c_v`` (Röder et al. 2015, one-set segmentation, indirect cosine): with
  v_i = (NPMI(w_i, w_1), ..., NPMI(w_i, w_N)) (NPMI(w, w) included, from
  D(w, w) = D(w)) and s = v_1 + ... + v_N, the mean over i of cos(v_i, s).

The symmetric measures average over the ordered pairs i != j, as gensim does;
the value is the same as over the unordered ones. A topic with a top word that
no reference document contains has an undefined value (NaN); the mean over
topics skips those. All counts are integers summed exactly, so the values do
not depend on how the documents were split between workers.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from dscir.corpus import CSRBatch
from dscir.errors import DscirError

EPSILON = 1e-12
MEASURES = ("u_mass", "c_uci", "c_npmi", "c_v")
BLOCK_DOCS = 100_000  # documents counted per round on the cluster


class Counts(NamedTuple):
    """Whole-document occurrence counts of each topic's top words."""

    n_docs: int
    doc_freq: np.ndarray  # int64 [K, N]: D(w_i) of topic k's i-th word
    pair_freq: np.ndarray  # int64 [K, N, N]: D(w_i, w_j), symmetric, diagonal = doc_freq

    def __add__(self, other: Counts) -> Counts:  # type: ignore[override]
        return Counts(self.n_docs + other.n_docs, self.doc_freq + other.doc_freq,
                      self.pair_freq + other.pair_freq)


class Coherence(NamedTuple):
    measure: str
    per_topic: np.ndarray  # float64 [K]; NaN where a top word is in no reference document
    mean: float  # over the topics whose value is defined
    top: int
    n_docs: int


def check_measure(measure: str) -> str:
    if measure not in MEASURES:
        raise DscirError(f"unknown coherence measure {measure!r}; choose one of "
                         f"{', '.join(MEASURES)}")
    return measure


def check_window(window) -> None:
    """Only whole-document co-occurrence (window None or "document") is computable."""
    if window is None or window == "document":
        return
    raise DscirError(
        f"window={window!r}: a dscir store holds each document as a bag of words, "
        "without token order, so sliding windows cannot be computed from it; use "
        "whole-document co-occurrence (window=None / --window document), which is "
        "what gensim's u_mass uses and c_uci/c_npmi/c_v use with window = document")


def check_top(top: int, n_words: int) -> None:
    """One clear error for a number of top words coherence cannot use."""
    if not 2 <= top <= n_words:
        raise DscirError(f"top={top}: coherence needs at least 2 top words and at most the "
                         f"{n_words} words of the vocabulary")


def top_word_ids(phi: np.ndarray, top: int) -> np.ndarray:
    """int64 [K, top]: each row's ``top`` largest entries, largest first (ties: lower id)."""
    phi = np.asarray(phi)
    check_top(top, phi.shape[1])
    return np.argsort(-phi, axis=1, kind="stable")[:, :top].astype(np.int64)


def cooccurrence_counts(batch: CSRBatch, words: np.ndarray, top_ids: np.ndarray) -> Counts:
    """The worker task: D(w) and D(w_i, w_j) of every topic's top words over a batch.

    ``top_ids`` is int64 [K, N] (global word ids); ``words`` (the batch's
    distinct words) is not needed. Integer counts, exact."""
    top_ids = np.asarray(top_ids, np.int64)
    k, n = top_ids.shape
    n_docs = int(batch.docs.size)
    vocab = np.unique(top_ids)  # the columns of the document x top-word incidence matrix
    indices = np.asarray(batch.indices, np.int64)
    pos = np.searchsorted(vocab, indices)
    hit = (pos < vocab.size) & (vocab[np.minimum(pos, vocab.size - 1)] == indices)
    rows = np.repeat(np.arange(n_docs), np.diff(np.asarray(batch.indptr, np.int64)))
    # word ids are distinct within a document, so the entries are 0/1
    b = sp.csc_matrix((np.ones(int(hit.sum()), np.int64), (rows[hit], pos[hit])),
                      shape=(n_docs, vocab.size))
    cols = np.searchsorted(vocab, top_ids)
    pair = np.empty((k, n, n), np.int64)
    for t in range(k):
        bt = b[:, cols[t]]
        pair[t] = (bt.T @ bt).toarray()
    doc_freq = np.ascontiguousarray(np.diagonal(pair, axis1=1, axis2=2))
    return Counts(n_docs, doc_freq, pair)


def count(executor, docs: np.ndarray, top_ids: np.ndarray,
          block_docs: int = BLOCK_DOCS) -> Counts:
    """The counts of ``docs`` (store rows) by ``executor``'s tasks, in rounds of
    ``block_docs`` documents, summed exactly on the driver."""
    docs = np.sort(np.asarray(docs, np.int64))
    k, n = top_ids.shape
    total = Counts(0, np.zeros((k, n), np.int64), np.zeros((k, n, n), np.int64))
    for start in range(0, docs.size, block_docs):
        parts = executor.read(docs[start:start + block_docs], "read-coherence")
        for c in executor.run("coherence", cooccurrence_counts, parts,
                              [(top_ids,)] * len(parts.parts)):
            total = total + c
    return total


def _npmi_terms(counts: Counts) -> tuple[np.ndarray, np.ndarray]:
    """PMI and NPMI of every ordered pair (i, j), diagonal included, [K, N, N]."""
    n = float(counts.n_docs)
    p = counts.doc_freq / n
    pj = counts.pair_freq / n
    pmi = np.log((pj + EPSILON) / (p[:, :, None] * p[:, None, :]))
    return pmi, pmi / -np.log(pj + EPSILON)


def measure_values(counts: Counts, measure: str) -> np.ndarray:
    """float64 [K]: the coherence of each topic from its counts (module docstring)."""
    check_measure(measure)
    k, n = counts.doc_freq.shape
    off = ~np.eye(n, dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        if measure == "u_mass":
            i, j = np.tril_indices(n, -1)  # i > j: w_j is the higher-ranked word
            d = counts.pair_freq[:, i, j].astype(np.float64)
            values = np.log((d + 1.0) / counts.doc_freq[:, j]).mean(axis=1)
        elif measure in ("c_uci", "c_npmi"):
            pmi, npmi = _npmi_terms(counts)
            values = (pmi if measure == "c_uci" else npmi)[:, off].mean(axis=1)
        else:  # c_v
            _, v = _npmi_terms(counts)
            s = v.sum(axis=1)  # [K, N]: the context vector of the whole set
            cos = (v @ s[:, :, None])[:, :, 0] / (
                np.linalg.norm(v, axis=2) * np.linalg.norm(s, axis=1)[:, None])
            values = cos.mean(axis=1)
    values = np.asarray(values, np.float64)
    values[(counts.doc_freq == 0).any(axis=1)] = np.nan
    return values


def coherence(counts: Counts, measure: str, top: int) -> Coherence:
    if counts.n_docs == 0:
        raise DscirError("the reference store has no documents to count co-occurrences in")
    values = measure_values(counts, measure)
    defined = values[~np.isnan(values)]
    mean = float(defined.mean()) if defined.size else float("nan")
    return Coherence(measure, values, mean, int(top), int(counts.n_docs))
