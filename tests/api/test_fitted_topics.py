"""Fitted LDA topics that stay where the workers wrote them (issue 36).

What each test guards against:
- a block's top entries merged into the wrong order, ties broken another way
  than a stable sort of the whole row, or a block's word offset lost
  (``top_entries``/``merge_top`` against ``argsort``);
- documents grouped so that a group's columns exceed the budget or a document
  is dropped (``document_groups``);
- the lazy fitted topics (a dask array over what the blocks wrote) differing
  from the dense mean: a block written at the wrong columns, the transform of a
  group of documents given another group's columns or streams, held-out scores
  from the wrong columns, a loaded run read eagerly (``Run.open``);
- the transform of NumPy topics taking log phi over all W, or differing from
  the dense kernel's (``document_topics``); the same for the score of an
  in-memory matrix (``local_log_columns``);
- the driver building K x W during fit, top_words, transform, score or the
  pyLDAvis view: the memory budget test (mutants ``fitted-topics-gathered``,
  ``fitted-top-words-gathered``, ``fitted-transform-gathered``,
  ``fitted-score-gathered``, ``pyldavis-every-word``, ``pyldavis-topics-gathered``,
  ``fitted-matrix-score-all-columns``);
- the pyLDAvis view's words: each topic's most probable first, then the most
  frequent, rows renormalised over them (``view_words``, ``topic_term``).
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

from dscir.api import fitted
from dscir.models.lda.top_words import merge_top, top_entries
from support.lda import K_TRUE, W
from support.zipf import W as ZIPF_W


@pytest.mark.parametrize("n", [1, 3, 7, 12])
def test_top_entries_of_blocks_are_the_rows_stable_top(n):
    rng = np.random.default_rng(n)
    phi = rng.integers(0, 5, size=(6, 29)).astype(np.float64)  # many ties
    bounds = [0, 4, 11, 12, 29]
    pieces = [top_entries(phi[:, lo:hi], n, lo) for lo, hi in zip(bounds[:-1], bounds[1:])]
    want = np.argsort(-phi, axis=1, kind="stable")[:, :n]
    np.testing.assert_array_equal(merge_top(pieces, n), want)
    values, ids = top_entries(phi, n)
    np.testing.assert_array_equal(ids, want)
    np.testing.assert_array_equal(values, np.take_along_axis(phi, want, axis=1))


def test_document_groups_cover_the_documents_within_the_budget():
    rng = np.random.default_rng(0)
    docs = sp.random(40, 50, density=0.1, format="csr", random_state=rng)
    docs.data[:] = 1
    indptr, indices = docs.indptr, docs.indices
    groups = fitted.document_groups(indptr, indices, 50, 12)
    assert groups[0][0] == 0 and groups[-1][1] == 40
    assert all(a[1] == b[0] for a, b in zip(groups[:-1], groups[1:]))
    for lo, hi in groups:
        used = np.unique(indices[indptr[lo]:indptr[hi]]).size
        assert hi - lo == 1 or used <= 12
        assert hi == 40 or used + np.setdiff1d(indices[indptr[hi]:indptr[hi + 1]],
                                               indices[indptr[lo]:indptr[hi]]).size > 12


def test_the_transform_of_numpy_topics_never_takes_log_phi_over_all_words(monkeypatch):
    """NumPy topics go by the same groups of documents as stored ones: a dense
    log phi over all W would cost K x W x 8 bytes (mutant
    ``fitted-transform-dense-log-phi``); the result is the dense kernel's."""
    from dscir.models.lda import gibbs

    k, w = 20, 100_000
    rng = np.random.default_rng(4)
    phi = rng.dirichlet(np.full(w, 0.05), size=k)
    docs = sp.random(40, w, density=2e-3, format="csr", random_state=rng)
    docs.data = np.ceil(docs.data * 3)
    indptr, indices, data = docs.indptr, docs.indices, docs.data.astype(np.int64)
    want = gibbs.document_topics(indptr, indices, data, np.log(phi), 0.1, 6, 9)
    monkeypatch.setattr(fitted, "COLUMN_ENTRIES", 40 * k)  # several groups
    fitted.document_topics(phi, indptr, indices, data, 0.1, 6, 9)  # compiled and warm
    tracemalloc.start()
    try:
        got = fitted.document_topics(phi, indptr, indices, data, 0.1, 6, 9)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(got, want)
    assert peak < phi.nbytes / 4, f"the transform allocated {peak / 2**20:.1f} MiB"


def test_the_score_of_a_matrix_never_takes_log_phi_over_all_words(tmp_path, monkeypatch):
    """A matrix is scored in this process by groups of documents, each with its
    words' columns alone: log phi over all W would cost K x W x 8 bytes (mutant
    ``fitted-matrix-score-all-columns``); the perplexity is the all-at-once one."""
    from dscir.corpus import Corpus
    from dscir.corpus.temporary import scoring_store
    from dscir.engine.inprocess import InProcessExecutor
    from dscir.models.lda import perplexity

    k, w = 20, 100_000
    rng = np.random.default_rng(5)
    phi = rng.dirichlet(np.full(w, 0.05), size=k)
    docs = sp.random(40, w, density=2e-3, format="csr", random_state=rng)
    docs.data = np.ceil(docs.data * 3)
    monkeypatch.setattr(fitted, "COLUMN_ENTRIES", 40 * k)  # several groups
    with scoring_store(sp.csr_matrix(docs, dtype=np.int64)) as store:
        corpus, ex = Corpus.open(store), InProcessExecutor(store, "lda")
        ids = np.sort(np.asarray(corpus.heldout_docs(), np.int64))
        want = perplexity(ex, ids, phi, 0.1, 6, 9, 10)
        columns, groups = fitted.local_log_columns(phi, corpus, ids)
        assert len(groups) > 1
        perplexity(ex, ids, None, 0.1, 6, 9, 10, columns, groups)  # compiled and warm
        tracemalloc.start()
        try:
            columns, groups = fitted.local_log_columns(phi, corpus, ids)
            got = perplexity(ex, ids, None, 0.1, 6, 9, 10, columns, groups)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert got == want
    assert peak < phi.nbytes / 4, f"the score allocated {peak / 2**20:.1f} MiB"


def test_lazy_topics_are_the_dense_ones(synthetic_store, two_workers, tmp_path,  # noqa: F811
                                        monkeypatch):
    """Above the size limit (set to 0 here) ``topic_word_`` is a dask array over
    what the blocks wrote; every use of it gives what the dense array gives."""
    from dscir.api import LDA

    store, _ = synthetic_store
    args = dict(n_topics=K_TRUE, batch_size=30, sweeps=10, n_iter=5, burn_in=1, thin=2,
                seed=3, placement="workers", block_entries=10 * K_TRUE, progress=False)
    dense = LDA(**args).fit(store, client=two_workers)
    docs = sp.random(30, W, density=0.3, format="csr", random_state=np.random.default_rng(1))
    docs.data = np.ceil(docs.data * 4)
    want = dense.transform(docs)  # one group of documents
    monkeypatch.setattr(fitted, "DENSE_MAX_ENTRIES", 0)
    monkeypatch.setattr(fitted, "COLUMN_ENTRIES", 7 * K_TRUE)  # several groups of documents
    lazy = LDA(**args).fit(store, client=two_workers)
    run = LDA(**args).fit(store, client=two_workers, out=tmp_path / "run")
    loaded = LDA.load(tmp_path / "run")
    np.testing.assert_array_equal(
        run.transform(store, client=two_workers, out=tmp_path / "lazy-topics").compute(),
        dense.transform(store, client=two_workers, out=tmp_path / "topics").compute())
    for est in (lazy, run, loaded):
        assert fitted.is_lazy(est.topic_word_)
        np.testing.assert_array_equal(est.materialize_topic_word(), dense.topic_word_)
        assert est.top_words(5) == dense.top_words(5)
        assert str(est.top_words_table(4)) == str(dense.top_words_table(4))
        np.testing.assert_array_equal(est.transform(docs), want)
        assert est.score(client=two_workers) == dense.score(client=two_workers)
        assert est.score(docs) == dense.score(docs)  # a matrix, in groups, here
        np.testing.assert_array_equal(est.coherence(client=two_workers, top=5).per_topic,
                                      dense.coherence(client=two_workers, top=5).per_topic)


BUDGET_K, BUDGET_W = 200, ZIPF_W


@pytest.mark.slow  # runs with its mutants
def test_the_driver_never_holds_k_by_w(zipf_store, two_workers, tmp_path, monkeypatch):
    """K = 200 x W = 2 x 10^5 topics (320 MB of float64) on the workers: the
    driver's peak Python allocation (tracemalloc: NumPy's buffers included) stays
    below half of K x W x 8 bytes (dask's threads read several stored chunks at
    once) through fit, top_words, transform and score of 100
    documents (a matrix, in this process), score of the store and the pyLDAvis view's arrays (``MAX_ENTRIES`` set to 2^20
    topic-term entries here; ``prepare`` on them is tests/report's); gathering the
    mean onto the driver or reading it whole in any of them breaks the budget."""
    from dscir.api import LDA, pyldavis

    store, counts = zipf_store
    budget = BUDGET_K * BUDGET_W * 8 // 2
    monkeypatch.setattr(pyldavis, "MAX_ENTRIES", 2**20)
    est = LDA(n_topics=BUDGET_K, batch_size=50, sweeps=4, n_iter=1, burn_in=0, seed=0,
              placement="workers", block_entries=2**20, progress=False)
    peaks = {}
    tracemalloc.start()
    try:
        for name, call in [("fit", lambda: est.fit(store, client=two_workers)),
                           ("top_words", lambda: est.top_words(10)),
                           ("transform", lambda: est.transform(counts[:100])),
                           ("score", lambda: est.score(client=two_workers)),
                           ("score matrix", lambda: est.score(counts[:100])),
                           ("pyldavis", lambda: est.to_pyldavis(
                               store, two_workers, out=tmp_path / "topics"))]:
            tracemalloc.reset_peak()
            value = call()
            peaks[name] = tracemalloc.get_traced_memory()[1]
            if name == "transform":
                assert value.shape == (100, BUDGET_K)
            if name == "pyldavis":
                words = pyldavis.MAX_ENTRIES // BUDGET_K
                assert value.topic_term_dists.shape == (BUDGET_K, words)
    finally:
        tracemalloc.stop()
    assert fitted.is_lazy(est.topic_word_) and len(est.top_words(3)) == BUDGET_K
    over = {k: v for k, v in peaks.items() if v > budget}
    assert not over, f"driver peaks (bytes) over the budget of {budget}: {peaks}"
