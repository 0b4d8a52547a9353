"""Held-out perplexity by document completion (Wallach et al. 2009).

Every ``every``-th token of each held-out document (tokens laid out in word-id
order) is a test token; the document's topic weights are estimated by Gibbs
sampling on the rest with phi fixed, and the perplexity is
exp(-(sum of natural-log p(test token)) / (number of test tokens)).

A perplexity above the vocabulary size (worse than guessing every word
uniformly) is warned of once per store, with the share of the held-out tokens
whose word the training documents never hold: the usual cause, as the topics
give such words only their prior's probability.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from dscir.rng import domains
from dscir.corpus import CSRBatch
from dscir.errors import DscirError
from dscir.models.lda.gibbs import completion_log_likelihood
from dscir.rng import derive


def perplexity(executor, docs: np.ndarray, phi: np.ndarray | None, alpha: float, sweeps: int,
               seed: int, every: int, log_columns: Callable | None = None,
               groups: list[np.ndarray] | None = None, *,
               trained_on: str | None = None) -> float:
    """Document-completion perplexity of ``docs`` under ``phi``, by ``executor``'s tasks.

    ``log_columns(words)`` instead of ``phi`` (None): the log phi columns of each
    part's ``words``, as arrays or futures of tasks (topics held by the workers).
    ``groups`` (sorted document ids covering ``docs``): scored one group after
    another, each group's columns dropped before the next's are built (None: all
    at once). Each document's stream is its own, so the groups change nothing.
    ``trained_on``: the store whose training documents the topics were fitted on
    (None: the scored store's own; "": unknown), for the warning of an absurd value.
    """
    if docs.size == 0:
        raise DscirError(f"{executor.store} has no held-out documents to score; split it "
                         "first (dscir ingest --heldout, or dscir.corpus.split_heldout)")
    if log_columns is None:
        with np.errstate(divide="ignore"):
            lphi = np.log(phi)

        def log_columns(words):
            return [np.ascontiguousarray(lphi[:, w]) for w in words]

    key = derive(seed, domains.EVALUATION)
    results = []
    for group in groups or [np.sort(np.asarray(docs, np.int64))]:
        parts = executor.read(group, "read-heldout")
        # Each task gets the log phi columns of its words as an argument or from a
        # task, never scattered data: a worker lost mid-evaluation costs a recomputation.
        args = [(c, alpha, sweeps, key, every) for c in log_columns(executor.words(parts))]
        results += executor.run("perplexity", completion_scores, parts, args)
        del parts, args  # before the next group's columns
    n_test = sum(r.n_test for r in results)
    if n_test == 0:
        raise DscirError("the held-out documents have no test tokens")
    # fsum is exactly rounded, so the score does not depend on how the documents
    # were split into tasks (the number of workers) or on the order of the parts.
    loglik = math.fsum(np.concatenate([r.loglik for r in results]).tolist())
    value = float(np.exp(-loglik / n_test))
    warn_absurd(value, executor.store, docs, executor.store if trained_on is None else trained_on)
    return value


#: The (scored store, training store) pairs already warned of in this process.
_WARNED: set[tuple[str, str]] = set()


def warn_absurd(value: float, store: str, docs: np.ndarray, trained_on: str) -> None:
    """Warn (once per store) of a perplexity above the vocabulary size, with the share
    of the tokens of ``docs`` whose word no training document of ``trained_on`` holds."""
    from dscir.corpus import Corpus

    if (str(store), trained_on) in _WARNED or not value > (n_words := Corpus.open(store).n_words):
        return
    _WARNED.add((str(store), trained_on))
    why = ""
    try:
        share = unseen_share(store, docs, trained_on) if trained_on else None
    except DscirError:  # the training store moved or gone: the warning without its share
        share = None
    if share is not None:
        why = (f"; {share:.0%} of the held-out tokens are words never seen in the training "
               "documents, which the topics give only their prior's probability")
    warnings.warn(f"held-out perplexity {value:.4g} is above the {n_words:,} words of the "
                  f"vocabulary (worse than guessing every word uniformly){why}: hold out "
                  "documents like the training ones (e.g. --heldout-fraction at ingest) or "
                  "drop rare words (--min-df)", UserWarning, stacklevel=3)


def unseen_share(store: str, docs: np.ndarray, trained_on: str, block: int = 4096) -> float:
    """The share of the tokens of ``docs`` (of ``store``) whose word is in no training
    document of ``trained_on``: one pass over those, block by block, on this process."""
    from dscir.corpus import Corpus

    train = Corpus.open(trained_on)
    seen = np.zeros(train.n_words, dtype=bool)
    ids = np.asarray(train.train_docs(), np.int64)
    for lo in range(0, ids.size, block):
        seen[train.read(ids[lo:lo + block]).indices] = True
    scored, total, unseen = Corpus.open(store), 0, 0
    ids = np.sort(np.asarray(docs, np.int64))
    for lo in range(0, ids.size, block):
        b = scored.read(ids[lo:lo + block])
        total += int(b.data.sum())
        unseen += int(b.data[~seen[b.indices]].sum())
    return unseen / max(total, 1)


def completion_split(batch: CSRBatch, every: int = 10) -> tuple[CSRBatch, CSRBatch]:
    """Document completion: lay each document's tokens out in word-id order and
    send tokens at positions every-1, 2*every-1, ... (every ``every``-th) to test."""
    obs_i, obs_d, test_i, test_d = [], [], [], []
    obs_ptr, test_ptr = [0], [0]
    for d in range(batch.docs.size):
        a, b = batch.indptr[d], batch.indptr[d + 1]
        words, counts = batch.indices[a:b], batch.data[a:b].astype(np.int64)
        ends = np.cumsum(counts)
        starts = ends - counts
        # test tokens at positions p with p % every == every - 1, p in [start, end)
        n_test = (ends + 1) // every - (starts + 1) // every
        keep = counts - n_test
        mo, mt = keep > 0, n_test > 0
        obs_i.append(words[mo]); obs_d.append(keep[mo])
        test_i.append(words[mt]); test_d.append(n_test[mt])
        obs_ptr.append(obs_ptr[-1] + int(mo.sum())); test_ptr.append(test_ptr[-1] + int(mt.sum()))
    cat = lambda ps, dt: np.concatenate(ps).astype(dt) if ps else np.zeros(0, dt)  # noqa: E731
    return (CSRBatch(np.array(obs_ptr, np.int64), cat(obs_i, np.int32), cat(obs_d, np.int32),
                     batch.docs),
            CSRBatch(np.array(test_ptr, np.int64), cat(test_i, np.int32), cat(test_d, np.int32),
                     batch.docs))


class CompletionResult(NamedTuple):
    loglik: np.ndarray  # float64 [n_docs] natural log, summed over each document's test tokens
    n_test: int


def completion_scores(batch: CSRBatch, words: np.ndarray, log_phi_cols: np.ndarray,
                      alpha: float, sweeps: int, seed: int, every: int) -> CompletionResult:
    """Document-completion log-likelihood of held-out documents under fixed phi,
    given the log phi columns of their words."""
    observed, test = completion_split(batch, every=every)
    loglik, n_test = completion_log_likelihood(
        observed.indptr, observed.indices, observed.data,
        test.indptr, test.indices, test.data, batch.docs, log_phi_cols,
        np.searchsorted(words, observed.indices).astype(np.int32),
        np.searchsorted(words, test.indices).astype(np.int32),
        alpha, sweeps, seed,
    )
    return CompletionResult(np.asarray(loglik, np.float64), int(n_test.sum()))
