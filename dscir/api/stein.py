"""The kernel Stein discrepancy of an LDA run's kept samples, scored on the cluster.

For each kept phi sample s of a chain: a minibatch of ``batch_size`` training
documents and the totals T (``complete_totals``) are drawn from the stream
(chain seed, KSD, s); the model's own Gibbs task (``gibbs_counts``) gives the
minibatch's expected topic-word counts given phi, scaled by D / |S| (the
samplers' estimator, unbiased for the full-data counts); ``lda_score`` turns
them into the score in eta = log theta at every topic x the ``n_words`` most
frequent words of the store (``dscir.diagnostics.stein`` derives it), and
``ksd`` measures the samples against it. Every number is a function of the
run, the store and the options alone, whatever the workers.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from dscir import streams
from dscir.diagnostics.ksd import ksd
from dscir.diagnostics.stein import complete_totals, lda_score
from dscir.errors import DscirError
from dscir.rng import derive


class KSDResult(NamedTuple):
    """The KSD of each chain of a run, and what it was taken over."""

    values: list[float]  # one per chain
    words: np.ndarray  # the word ids of the subset (all topics of each)
    n_samples: int  # kept samples per chain
    batch_size: int  # documents per score estimate


def frequent_words(executor, store: str, n_words: int) -> np.ndarray:
    """The ``n_words`` most frequent words of the store (all its documents; ties by
    word id), sorted."""
    from dscir.api.pyldavis import corpus_counts
    from dscir.corpus import Corpus

    corpus = Corpus.open(store)
    n_docs, vocab = corpus.doc_lengths.size, len(corpus.vocabulary)
    _, freq = corpus_counts(executor, n_docs, 512, vocab)
    order = np.lexsort((np.arange(vocab), -freq))
    return np.sort(order[: min(n_words, vocab)])


def estimated_counts(executor, train: np.ndarray, config, phi: np.ndarray, batch: np.ndarray,
                     index: int) -> np.ndarray:
    """Patterson & Teh's estimate [K, W] of the full-data expected topic-word
    counts given ``phi``: the Gibbs expectations of the documents ``batch`` (one
    kept sample's minibatch) times D / |S|."""
    from dscir.models.lda.kernels import phi_columns
    from dscir.models.lda.model import add_counts
    from dscir.models.lda.tasks import gibbs_counts

    parts = executor.read(batch, "ksd-read", iteration=index)
    lphi = np.log(np.asarray(phi, np.float64))
    key = derive(config.seed, streams.KSD)
    args = [(phi_columns(lphi, w), config.alpha, config.sweeps, key, index, config.kernel)
            for w in executor.words(parts)]
    results = executor.run("ksd-gibbs", gibbs_counts, parts, args)
    counts = add_counts(np.zeros(phi.shape, np.int64), results)
    return counts * (train.size / batch.size / results[0].n_kept)


def chain_ksd(executor, train: np.ndarray, config, phi_samples: np.ndarray,
              words: np.ndarray, batch_size: int) -> float:
    """The KSD of one chain's kept phi samples [S, K, W] (see the module)."""
    eta, score = [], []
    for s, phi in enumerate(phi_samples):
        phi = np.asarray(phi, np.float64)
        phi = phi / phi.sum(axis=1, keepdims=True)  # kept as float32
        rng = np.random.Generator(np.random.PCG64(derive(config.seed, streams.KSD, s)))
        batch = np.sort(rng.choice(train, batch_size, replace=False))
        totals = complete_totals(rng, *phi.shape, config.beta)
        counts = estimated_counts(executor, train, config, phi, batch, s)
        e, g = lda_score(phi, totals, counts, config.beta, words)
        eta.append(e)
        score.append(g)
    return ksd(np.array(eta), np.array(score))


def run_ksd(runs, executor, *, n_words: int = 10, batch_size: int | None = None,
            words: np.ndarray | None = None) -> KSDResult:
    """The KSD of every chain of an LDA run (``runs`` from ``open_chains``) over all
    topics x ``words`` (default: ``frequent_words``); ``batch_size`` defaults to
    the run's own."""
    from dscir.corpus import Corpus
    from dscir.models.lda import LDAConfig

    if runs[0].model != "lda":
        raise DscirError(f"the KSD is implemented for LDA runs, not {runs[0].model} runs")
    configs = [LDAConfig(**r.config) for r in runs]
    train = np.asarray(Corpus.open(runs[0].store).train_docs(), np.int64)
    batch_size = configs[0].batch_size if batch_size is None else int(batch_size)
    if not 1 <= batch_size <= train.size:
        raise DscirError(f"the KSD's batch_size must be in 1..{train.size} (the training "
                         f"documents), got {batch_size}")
    if n_words < 1:
        raise DscirError(f"the KSD's n_words must be >= 1, got {n_words}")
    if words is None:
        words = frequent_words(executor, runs[0].store, n_words)
    values = []
    for r, cfg in zip(runs, configs):
        phi = r.samples().get("phi")
        if phi is None or len(phi) < 2:
            raise DscirError(f"{r.path} kept fewer than 2 samples; the KSD needs several "
                             "(more iterations after burn_in, or a smaller thin)")
        values.append(chain_ksd(executor, train, cfg, phi, words, batch_size))
    return KSDResult(values, words, int(len(runs[0].samples()["phi"])), batch_size)
