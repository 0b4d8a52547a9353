"""Warm-started local chains: a document's Gibbs chain starts where its last visit ended.

With phi fixed, the collapsed Gibbs sweep over a document's topic assignments
z leaves p(z | w, phi) invariant whatever z it starts from; the start only
decides how far from that law the first sweeps are. A cold start draws z
sequentially under the current phi and needs a long burn-in on every visit;
a warm start reuses the assignments of the document's last visit, drawn
under a phi a few updates older, which is already close to the target, so
a few sweeps with a short burn-in suffice. Each visit is still a valid
Gibbs chain for p(z | w, phi_m): only its starting point changes, so the
expected counts it returns have a smaller start-up bias at equal sweeps.

Where the assignments live between visits, and how retries and resumes keep
them exact, is the engine's business (``dscir.engine.local_state``): the
task here is pure, z in and z out. Random numbers come from the same stream
as a cold visit, (seed, GIBBS, iteration, document).
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from dscir.corpus import CSRBatch
from dscir.errors import DscirError
from dscir.models.lda import _warm
from dscir.models.lda.gibbs import _check_alpha, _check_int, _csr, _docs, _local, _matrix
from dscir.rng import derive


class WarmResult(NamedTuple):
    words: np.ndarray  # int64 [U] global word ids of the columns below
    topic_word: np.ndarray  # int64 [K, U] counts summed over kept sweeps
    n_kept: int
    n_tokens: int
    stored_before: np.ndarray | None  # int64 [K, U] counts of the stored z read (warm docs)
    stored_after: np.ndarray | None  # int64 [K, U] counts of the z written


def token_offsets(indptr, data) -> np.ndarray:
    """int64 [n + 1]: where each document's tokens start in the batch's token order."""
    per_entry = np.concatenate([[0], np.cumsum(data, dtype=np.int64)])
    return per_entry[np.asarray(indptr, dtype=np.int64)]


def gibbs_from(indptr, indices, data, docs, phi_cols, local_words, z, warm, alpha, sweeps,
               burn, seed, iteration):
    """``gibbs_expectations`` from given starting assignments.

    ``z`` int32 [n_tokens]: the batch's tokens' topics in document order
    (expanded as the kernel does), read as the start of document d where
    ``warm[d]``; documents not warm start as a cold visit does. The first
    ``burn`` of ``sweeps`` sweeps are discarded. Returns ``(topic_word int64
    [K, U], doc_topic int64 [n, K], n_kept, z_out int32 [n_tokens])``; with
    ``warm`` all False and ``burn = sweeps // 2`` the counts equal
    ``gibbs_expectations``' bit for bit.
    """
    indptr, indices, data = _csr(indptr, indices, data)
    phi_cols = _matrix(phi_cols, "phi_cols")
    if not np.all(np.isfinite(phi_cols)) or (phi_cols.size and phi_cols.min() < 0.0):
        raise DscirError("phi_cols must be finite and non-negative")
    local = _local(local_words, indices.size, phi_cols.shape[1], "local_words")
    docs = _docs(docs, indptr.size - 1)
    sweeps = _check_int(sweeps, "sweeps", 1)
    burn = _check_int(burn, "burn", 0)
    if burn >= sweeps:
        raise DscirError(f"burn={burn} must be smaller than sweeps={sweeps}")
    tok_ptr = token_offsets(indptr, data)
    z = np.array(z, dtype=np.int32)
    warm = np.asarray(warm, dtype=np.bool_)
    if z.shape != (int(tok_ptr[-1]),) or warm.shape != (docs.size,):
        raise DscirError(f"z must hold the batch's {int(tok_ptr[-1])} tokens and warm its "
                         f"{docs.size} documents, got {z.shape} and {warm.shape}")
    starts = np.repeat(warm, np.diff(tok_ptr))
    if starts.any() and (z[starts].min() < 0 or z[starts].max() >= phi_cols.shape[0]):
        raise DscirError(f"warm assignments must be topics 0..{phi_cols.shape[0] - 1}")
    key = np.uint64(derive(_check_int(seed, "seed", 0), _check_int(iteration, "iteration", 0)))
    topic_word, doc_topic = _warm.gibbs_warm(indptr, data, docs, phi_cols, local, z, tok_ptr,
                                             warm, _check_alpha(alpha), sweeps, burn, key,
                                             numba.get_num_threads())
    return topic_word, doc_topic, sweeps - burn, z


def warm_gibbs_counts(batch: CSRBatch, words: np.ndarray, z: np.ndarray, warm: np.ndarray,
                      phi_cols: np.ndarray, alpha: float, sweeps: int, burn: int, seed: int,
                      iteration: int, stored: bool) -> tuple[WarmResult, np.ndarray]:
    """A minibatch part's expected counts from its documents' stored assignments
    ``z`` (where ``warm``), and the assignments to store. With ``stored``, also
    the topic-word counts of the assignments read (warm documents only) and
    written: the control values the driver's control variates need."""
    local = np.searchsorted(words, batch.indices).astype(np.int32)
    topic_word, _, n_kept, z_out = gibbs_from(batch.indptr, batch.indices, batch.data,
                                              batch.docs, phi_cols, local, z, warm, alpha,
                                              sweeps, burn, seed, iteration)
    before = after = None
    if stored:
        k, u = topic_word.shape
        z_read = np.where(np.repeat(warm, np.diff(token_offsets(batch.indptr, batch.data))),
                          np.asarray(z, np.int32), -1)
        before = _counts_of(batch, local, z_read, k, u)
        after = _counts_of(batch, local, z_out, k, u)
    result = WarmResult(words, topic_word, int(n_kept), int(batch.data.sum()), before, after)
    return result, z_out


def _counts_of(batch: CSRBatch, local: np.ndarray, z: np.ndarray, k: int, u: int) -> np.ndarray:
    """Topic-word counts of assignments ``z``, tokens marked -1 left out."""
    tokens = np.repeat(local, batch.data)
    keep = z >= 0
    out = np.zeros((k, u), dtype=np.int64)
    np.add.at(out, (z[keep], tokens[keep]), 1)
    return out
