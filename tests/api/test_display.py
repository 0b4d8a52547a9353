"""Notebook display: trace plots and top-word tables of fitted models."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import dscir  # noqa: E402
from dscir.display import TopicTable  # noqa: E402
from dscir.errors import DscirError  # noqa: E402


@pytest.fixture(scope="module")
def lda_model(synthetic_store, two_workers):
    store, _ = synthetic_store
    return dscir.LDA(n_topics=4, n_iter=6, eval_every=2, batch_size=30, sweeps=6,
                     eval_sweeps=6, progress=False).fit(store, client=two_workers)


def test_lda_plot_draws_the_recorded_traces(lda_model):
    fig = lda_model.plot()
    perplexity, throughput, split = fig.axes[:3]
    x, y = perplexity.lines[0].get_data()
    assert list(x) == [2, 4, 6] and list(y) == [e.perplexity for e in lda_model.evaluations_]
    h = lda_model.history_
    np.testing.assert_allclose(throughput.lines[0].get_ydata(), h["n_docs"] / h["wall"])
    assert len(split.collections) == 4  # compute, transfer, queue, update stacked
    top = split.collections[-1].get_paths()[0].vertices[:, 1].max()
    assert top == pytest.approx(h["wall"].max())
    fig2, axes = plt.subplots(1, 3)
    assert lda_model.plot(ax=axes) is fig2
    with pytest.raises(ValueError, match="3 axes"):
        lda_model.plot(ax=axes[:2])


def test_lda_top_words_table(lda_model):
    table = lda_model.top_words_table(5)
    assert len(table) == 4
    assert [[w for w, _ in words] for _, words in table.rows] == lda_model.top_words(5)
    for k, words in table.rows:
        probs = [p for _, p in words]
        assert probs == sorted(probs, reverse=True)
        assert probs[0] == pytest.approx(lda_model.topic_word_[k].max())
    html = table._repr_html_()
    assert html.startswith("<table>") and html.count("<tr>") == 5
    assert str(table).splitlines()[0] == "topic 0: " + " ".join(lda_model.top_words(5)[0])
    assert "<table>" in lda_model._repr_html_()


def test_unfitted_models_say_so():
    with pytest.raises(DscirError, match="not fitted"):
        dscir.LDA().plot()
    with pytest.raises(DscirError, match="not fitted"):
        dscir.DPMixture().top_words_table()


def test_dp_mixture_plot_and_clusters_table(dpmm_store, two_workers):
    path, _ = dpmm_store
    model = dscir.DPMixture(batch_size=100, n_iter=6, eval_every=3, burn_in=0, thin=3,
                            progress=False).fit(path, client=two_workers)
    fig = model.plot()
    score, clusters, alpha = fig.axes[:3]
    assert list(score.lines[0].get_ydata()) == [e.log_predictive for e in model.evaluations_]
    assert list(clusters.lines[0].get_ydata()) == list(model.history_["n_clusters"])
    table = model.top_words_table(3)
    sizes = np.bincount(model.labels_[model.labels_ >= 0])
    assert len(table) == model.n_clusters_ == np.count_nonzero(sizes)
    assert [k for k, _ in table.rows][0] == int(np.argmax(sizes))
    assert table.label == "cluster" and str(table).startswith("cluster ")


def test_topic_table_to_pandas():
    pd = pytest.importorskip("pandas")
    t = TopicTable.from_matrix(np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]]), ["a", "b", "c"], 2)
    df = t.to_pandas()
    assert isinstance(df, pd.DataFrame)
    assert df.loc[1, "1"] == "c (0.600)" and df.loc[0, "2"] == "b (0.200)"


def test_a_fit_without_held_out_scores_says_how_to_get_them():
    """At the default eval_every=0 the score panel says how to get a score."""
    rng = np.random.default_rng(0)
    model = dscir.LDA(n_topics=2, n_iter=2, batch_size=10, progress=False).fit(
        rng.integers(0, 3, (20, 6)))
    assert model.evaluations_ == []
    score = model.plot().axes[0]
    assert not score.lines
    assert [t.get_text() for t in score.texts] == [
        "no held-out score: fit with eval_every=N\n(a store with held-out documents)\n"
        "to score every N iterations"]
