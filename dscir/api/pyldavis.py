"""The arrays pyLDAvis asks for, computed over a corpus store on the cluster.

``pyLDAvis.prepare(topic_term_dists, doc_topic_dists, doc_lengths, vocab,
term_frequency)``: the topics are the fit's ``topic_word_``; the document-topic
proportions are the store transform (``dscir.api.transform``, restartable,
written to Zarr); the document lengths and term frequencies are counted by one
worker task per block of the store's documents (``block_term_counts``), so a
store larger than the driver's memory is never read into it. pyLDAvis itself
then holds the n_docs x K proportions in memory and a dense topic-term matrix
(several pandas copies of it): above ``MAX_ENTRIES`` entries that matrix covers
only ``MAX_ENTRIES // K`` words (``view_words``), read from the fitted topics
a stored block of columns at a time, never K x W.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from dscir.errors import DscirError

#: At most this many topic-term entries (32 MB of float64) go to pyLDAvis.
MAX_ENTRIES = 2**22
#: Each topic's most probable words the restricted view takes first (pyLDAvis's ``R``).
RELEVANT = 30


class PyLDAvisData(NamedTuple):
    """``pyLDAvis.prepare``'s positional arguments, by their names there."""

    topic_term_dists: np.ndarray  # [K, W'], rows sum to 1 (W' = W up to MAX_ENTRIES entries)
    doc_topic_dists: np.ndarray  # [n_docs, K], rows sum to 1
    doc_lengths: np.ndarray  # [n_docs] tokens
    vocab: list[str]  # [W']
    term_frequency: np.ndarray  # [W'] tokens of each word in the store

    def prepare(self, **options):
        """``pyLDAvis.prepare`` of these arrays (topics in dscir's order, numbered from
        0, one process: ``sort_topics=False, start_index=0, n_jobs=1`` unless given)."""
        options = {"sort_topics": False, "start_index": 0, "n_jobs": 1, **options}
        return pyldavis().prepare(*self, **options)


def pyldavis():
    """The ``pyLDAvis`` module, or one clear error naming the extra that installs it."""
    try:
        import pyLDAvis
    except ImportError:
        raise DscirError("the pyLDAvis view needs pyLDAvis: pip install 'dscir[pyldavis]' "
                         "(or pip install pyLDAvis)") from None
    return pyLDAvis


def corpus_counts(executor, n_docs: int, chunk_docs: int, n_words: int):
    """Document lengths int64 [n_docs] and term frequencies int64 [n_words] of the
    executor's store, one task per block of ``chunk_docs`` documents."""
    from dscir.models.lda.tasks import block_term_counts

    lengths = np.zeros(n_docs, np.int64)
    freq = np.zeros(n_words, np.int64)
    blocks = [np.arange(lo, min(lo + chunk_docs, n_docs)) for lo in range(0, n_docs, chunk_docs)]
    width = executor.n_parts
    for i in range(0, len(blocks), width):
        window = blocks[i : i + width]
        parts = executor.read_blocks(window, "read-counts")
        words = executor.words(parts)
        results = executor.run("term-counts", block_term_counts, parts, [()] * len(window))
        for block, w, (n, counts) in zip(window, words, results):
            lengths[block] = n
            freq[w] += counts
    return lengths, freq


def check_view(n_topics: int, n_words: int) -> None:
    """The error for more topics than a restricted view can show ``RELEVANT`` words of."""
    if n_topics * n_words > MAX_ENTRIES and MAX_ENTRIES // n_topics < RELEVANT:
        raise DscirError(f"the pyLDAvis view holds at most {MAX_ENTRIES} topic-term entries "
                         f"(dscir.api.pyldavis.MAX_ENTRIES): {RELEVANT} words for each of at "
                         f"most {MAX_ENTRIES // RELEVANT} topics, not {n_topics}")


def view_words(topics, freq: np.ndarray) -> np.ndarray:
    """The sorted word ids pyLDAvis gets: every word when K x W is at most
    ``MAX_ENTRIES``, else ``MAX_ENTRIES // K`` of them: each topic's most probable
    words rank by rank (all topics' first, then their second, ... up to
    ``RELEVANT``), then the most frequent words of the store."""
    from dscir.api import fitted

    k, w = topics.shape
    n = MAX_ENTRIES // k
    if n >= w:
        return np.arange(w)
    check_view(k, w)
    ranked = fitted.top_ids(topics, RELEVANT).T.ravel()
    candidates = np.concatenate([ranked, np.argsort(-freq, kind="stable")])
    _, first = np.unique(candidates, return_index=True)
    return np.sort(candidates[np.sort(first)[:n]])


def topic_term(topics, words: np.ndarray) -> np.ndarray:
    """float64 [K, len(words)]: the topics' columns of ``words``, each row
    renormalised over them (pyLDAvis asks for rows that sum to 1)."""
    from dscir.api import fitted

    phi = fitted.topic_columns(topics, words)
    phi /= phi.sum(axis=1, keepdims=True)
    return phi


def pyldavis_data(model, store: str, client=None, *, out, sweeps: int | None = None,
                  **cluster) -> PyLDAvisData:
    """``LDA.to_pyldavis``: the transform of ``store`` into ``out`` (resumed if there),
    then its lengths and term frequencies, all on one cluster; the topics over
    ``view_words``."""
    from dscir.api.session import executor_for, session
    from dscir.api.transform import check_transform, transform_store
    from dscir.corpus import Corpus

    check_transform(model, store)
    check_view(*model.topic_word_.shape)
    c = Corpus.open(store)
    with session(client, **cluster) as cl:
        topics = transform_store(model, store, cl, out=out, sweeps=sweeps).compute()
        with executor_for("lda", store, cl, resident=True) as ex:
            lengths, freq = corpus_counts(ex, c.n_docs, c.chunk_docs, c.n_words)
    if lengths.sum() == 0:
        raise DscirError(f"{store} has no tokens to visualise")
    words = view_words(model.topic_word_, freq)
    theta = np.asarray(topics, np.float64)
    return PyLDAvisData(topic_term(model.topic_word_, words),
                        theta / theta.sum(axis=1, keepdims=True), lengths,
                        [str(model.vocabulary_[w]) for w in words], freq[words])
