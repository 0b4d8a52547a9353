"""The arrays pyLDAvis asks for, computed over a corpus store on the cluster.

``pyLDAvis.prepare(topic_term_dists, doc_topic_dists, doc_lengths, vocab,
term_frequency)``: the topics are the fit's ``topic_word_``; the document-topic
proportions are the store transform (``dscir.api.transform``, restartable,
written to Zarr); the document lengths and term frequencies are counted by one
worker task per block of the store's documents (``block_term_counts``), so a
store larger than the driver's memory is never read into it. pyLDAvis itself
then holds the n_docs x K proportions in memory, and the K x W topics: lazy
fitted topics (``dscir.api.fitted``) stay a dask array until ``prepare``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from dscir.errors import DscirError


class PyLDAvisData(NamedTuple):
    """``pyLDAvis.prepare``'s positional arguments, by their names there."""

    topic_term_dists: np.ndarray  # [K, W], rows sum to 1 (a dask array for lazy topics)
    doc_topic_dists: np.ndarray  # [n_docs, K], rows sum to 1
    doc_lengths: np.ndarray  # [n_docs] tokens
    vocab: list[str]  # [W]
    term_frequency: np.ndarray  # [W] tokens of each word in the store

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


def pyldavis_data(model, store: str, client=None, *, out, sweeps: int | None = None,
                  **cluster) -> PyLDAvisData:
    """``LDA.to_pyldavis``: the transform of ``store`` into ``out`` (resumed if there),
    then its lengths and term frequencies, all on one cluster."""
    from dscir.api.session import executor_for, session
    from dscir.api.transform import check_transform, transform_store
    from dscir.corpus import Corpus

    check_transform(model, store)
    c = Corpus.open(store)
    with session(client, **cluster) as cl:
        topics = transform_store(model, store, cl, out=out, sweeps=sweeps).compute()
        with executor_for("lda", store, cl) as ex:
            lengths, freq = corpus_counts(ex, c.n_docs, c.chunk_docs, c.n_words)
    if lengths.sum() == 0:
        raise DscirError(f"{store} has no tokens to visualise")
    phi = model.topic_word_  # lazy topics stay lazy: prepare() reads them whole
    theta = np.asarray(topics, np.float64)
    return PyLDAvisData(phi / phi.sum(axis=1, keepdims=True),
                        theta / theta.sum(axis=1, keepdims=True), lengths,
                        [str(v) for v in model.vocabulary_], freq)
