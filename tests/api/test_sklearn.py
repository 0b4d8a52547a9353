"""dscir's estimators as scikit-learn estimators (issue 31, deliverable 1).

scikit-learn's own estimator checks run on ``LDA``, ``Mixture`` and
``DPMixture`` with small settings, in this process (no cluster: the corpora are
small); ``EXPECTED_FAILURES`` names every check expected to fail and why
(scikit-learn itself skips ``check_array_api_input`` unless SCIPY_ARRAY_API=1 is
set: dscir's kernels take numpy arrays, so it is not asked for). The
rest guards what the checks do not see: a small matrix runs here and a store on a
cluster, the in-process chain is the cluster's chain bit for bit, pickles keep what scoring needs, a run gives back the
parameters it ran with, matrices are scored, and ``partial_fit`` learns from
new documents under its stated rules.
"""

from __future__ import annotations

import pickle
import warnings

import joblib
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.utils.estimator_checks import parametrize_with_checks

import dscir
from dscir.api import base, load
from dscir.corpus import split_heldout, write_corpus
from dscir.engine import cluster
from dscir.engine.inprocess import InProcessExecutor
from dscir.errors import DscirError
from support.digests import run_digest
from support.recording import RecordingExecutor, RecordingSampler, minibatch

SMALL = dict(n_iter=6, burn_in=2, thin=2, progress=False, seed=0)
ESTIMATORS = [dscir.LDA(n_topics=2, sweeps=4, eval_sweeps=4, **SMALL),
              dscir.Mixture(n_clusters=2, **SMALL), dscir.DPMixture(**SMALL)]

ROW_STREAMS = ("document d's Gibbs stream is keyed by its row d (so a store's transform "
               "equals the in-process transform of its matrix whatever the workers): a "
               "subset or a reordering of the rows draws other streams")
FEW_TOKENS = ("score is document completion, which tests every 10th token of each "
              "document; the check's rows hold fewer than 10 tokens, so there is nothing "
              "to score and score says so")
ONE_CLUSTER = ("the check sets n_clusters=1, and a mixture needs n_clusters >= 2 (one "
               "cluster is a single multinomial)")
CLASSIFIER_TAGS = ("the check reads classifier tags of any estimator with predict_proba; "
                   "Mixture is a clusterer, whose tags have none")

#: Every check expected to fail, by estimator class, with why.
EXPECTED_FAILURES = {
    "LDA": {
        "check_methods_subset_invariance": ROW_STREAMS,
        "check_methods_sample_order_invariance": ROW_STREAMS,
        "check_fit_score_takes_y": FEW_TOKENS,
        "check_pipeline_consistency": FEW_TOKENS,
    },
    "Mixture": {
        "check_dont_overwrite_parameters": ONE_CLUSTER,
        "check_methods_subset_invariance": ONE_CLUSTER,
        "check_fit2d_1sample": ONE_CLUSTER,
        "check_fit2d_1feature": ONE_CLUSTER,
        "check_fit2d_predict1d": ONE_CLUSTER,
        "check_estimator_sparse_array": CLASSIFIER_TAGS,
        "check_estimator_sparse_matrix": CLASSIFIER_TAGS,
    },
    "DPMixture": {},
}


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=lambda est: EXPECTED_FAILURES[
    type(est).__name__])
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)


def counts(n_docs=120, n_words=30, k=3, seed=11, topics=None):
    rng = np.random.default_rng(seed)
    phi = rng.dirichlet(np.full(n_words, 0.1), size=k) if topics is None else topics
    theta = rng.dirichlet(np.full(k, 0.3), size=n_docs)
    return np.array([rng.multinomial(rng.integers(20, 60), t @ phi) for t in theta]), phi


@pytest.fixture(scope="module")
def X():
    return counts()[0]


@pytest.fixture(scope="module")
def store(tmp_path_factory, X):
    path = tmp_path_factory.mktemp("sk") / "corpus.zarr"
    write_corpus(path, sp.csr_matrix(X), vocabulary=[f"w{i}" for i in range(X.shape[1])],
                 chunk_docs=32)
    split_heldout(path, every=6)
    return str(path)


def lda(**kw):
    return dscir.LDA(**{**dict(n_topics=3, batch_size=20, sweeps=8, eval_sweeps=6, n_iter=9,
                               burn_in=3, thin=2, seed=5, policy="reference",
                               progress=False), **kw})


# -- in this process, the same chain ------------------------------------------

class Stop(Exception):
    pass


def test_a_matrix_runs_here_and_a_store_goes_to_a_cluster(store, X, monkeypatch):
    """A store (the main job's input) goes to a cluster, the embedded LocalCluster by
    default; a small in-memory matrix runs here. Guards against a store running in
    this process, or a matrix starting worker processes for a few documents."""
    asked = []

    def spy(client=None, *, local=False, **cluster):
        asked.append(local)
        raise Stop

    monkeypatch.setattr(base, "session", spy)
    monkeypatch.setattr(cluster, "current_client", lambda: None)  # none running here
    for data in (store, X):
        with pytest.raises(Stop):
            lda().fit(data)
    with pytest.raises(Stop):
        lda().fit(X, n_workers=2)
    assert asked == [False, True, False]


@pytest.mark.parametrize("estimator", [
    lambda: lda(sampler="scir"), lambda: lda(sampler="sgrld"),
    lambda: dscir.DPMixture(sampler="scir", batch_size=40, n_init=4, n_iter=9, burn_in=3,
                            thin=2, seed=5, progress=False)])
def test_a_small_fit_here_is_the_clusters_chain(estimator, X, two_workers, tmp_path,
                                                monkeypatch):
    """The in-process chain of a matrix is the cluster's bit for bit: the same reads
    and tasks, by InProcessExecutor instead of Dask."""
    with monkeypatch.context() as m:  # as if no client were running in this process
        m.setattr(cluster, "current_client", lambda: None)
        here = estimator().fit(X, out=tmp_path / "here.zarr", checkpoint_every=4)
    assert isinstance(here._chain.executor, InProcessExecutor)
    there = estimator().fit(X, client=two_workers, out=tmp_path / "there.zarr",
                            checkpoint_every=4)
    assert not isinstance(there._chain.executor, InProcessExecutor)
    assert run_digest(tmp_path / "here.zarr") == run_digest(tmp_path / "there.zarr")


# -- pickling -----------------------------------------------------------------

def test_a_fitted_lda_pickles_and_round_trips_through_joblib(X, tmp_path):
    model = lda().fit(X)
    again = pickle.loads(pickle.dumps(model))
    joblib.dump(model, tmp_path / "m.joblib")
    loaded = joblib.load(tmp_path / "m.joblib")
    for m in (again, loaded):
        assert "_chain" not in vars(m)
        assert np.array_equal(m.components_, model.components_)
        assert np.array_equal(m.transform(X[:7]), model.transform(X[:7]))
        assert m.score(X) == model.score(X)
        assert m.get_params() == model.get_params()


def test_a_pickled_mixture_keeps_the_kept_mean_of_its_held_out_score(store, monkeypatch):
    model = dscir.Mixture(n_clusters=3, sampler="gibbs", n_iter=12, thin=2, eval_every=4,
                          progress=False).fit(store)
    expected = model.score()
    loaded = pickle.loads(pickle.dumps(model))

    def recomputed(*args):
        raise AssertionError("the pickled model recomputed its score: the kept mean is lost")

    monkeypatch.setattr(loaded, "_predictive", recomputed)
    assert loaded.score() == expected


# -- a run gives back its parameters -------------------------------------------

def test_load_gives_back_the_parameters_the_run_used(store, tmp_path):
    model = lda(n_iter=30, eval_every=10, sampler_options={"integrator": "euler"},
                sampler="gsgrhmc", thin=np.int64(2))  # a numpy number is recorded as a number
    model.fit(store, out=tmp_path / "run.zarr")
    loaded = load(tmp_path / "run.zarr")
    assert loaded.get_params() == model.get_params()
    again = clone(loaded).fit(store)
    assert np.array_equal(again.components_, model.components_)


def test_load_gives_back_a_dp_mixtures_pair_parameters(store, tmp_path):
    model = dscir.DPMixture(sampler="gibbs", alpha_prior=(2.0, 0.5), n_iter=6, eval_every=3,
                            progress=False)
    model.fit(store, out=tmp_path / "run.zarr")
    assert load(tmp_path / "run.zarr").get_params() == model.get_params()


# -- scikit-learn's names and inputs ----------------------------------------------

def test_components_is_topic_word_and_fit_transform_is_fit_then_transform(X):
    model = lda()
    theta = model.fit_transform(X)
    assert model.components_ is model.topic_word_
    assert np.array_equal(theta, model.transform(X))
    assert np.array_equal(model.transform(X[:5]), model.transform(sp.csr_matrix(X[:5])))
    assert list(model.get_feature_names_out()) == ["lda0", "lda1", "lda2"]
    assert model.n_features_in_ == X.shape[1]


def test_score_takes_sparse_and_dense_matrices_and_says_what_to_pass_without(X):
    model = lda().fit(sp.csr_matrix(X))
    assert model.store_ is None
    assert model.score(X) == model.score(sp.csr_matrix(X)) == -np.log(model.perplexity(X))
    with pytest.raises(DscirError, match=r"pass the documents, e\.g\. score\(X\)"):
        model.score()


def test_mixtures_score_matrices_and_predict_dense_rows(X):
    for model in (dscir.Mixture(n_clusters=3, n_iter=6, progress=False),
                  dscir.DPMixture(n_iter=6, progress=False)):
        model.fit(X)
        assert np.isfinite(model.score(X)) and model.score(X) == model.score(sp.csr_matrix(X))
        assert np.array_equal(model.predict(X[:9]), model.predict(sp.csr_matrix(X[:9])))


@pytest.mark.parametrize("estimator", [dscir.LDA(n_topics=1), dscir.Mixture(gamma=-1.0),
                                       dscir.DPMixture(thin=0)])
def test_invalid_parameters_raise_a_value_error(estimator, X):
    with pytest.raises(ValueError) as raised:
        estimator.fit(X)
    assert isinstance(raised.value, DscirError)


def test_a_dask_client_given_as_y_is_refused(X):
    class Client:  # what distributed.Client looks like to fit
        def scheduler_info(self):
            return {}

    with pytest.raises(DscirError, match="client=..."):
        lda().fit(X, Client())


# -- partial_fit learns from new documents ----------------------------------------

def test_partial_fit_moves_the_topics_to_the_new_documents(X):
    model = lda(n_iter=20, burn_in=10, thin=1).fit(X)
    new, _ = counts(n_docs=200, seed=3)  # other topics over the same 30 words
    before = model.perplexity(new)
    for _ in range(5):
        model.partial_fit(new)
    assert model.perplexity(new) < 0.9 * before
    assert model.n_documents_seen_ == X.shape[0] + 5 * new.shape[0]
    assert model._chain.model.n_documents == model.n_documents_seen_


def test_a_streams_minibatch_is_scaled_by_the_documents_seen(store):
    """D of D / |S| is the model's ``n_documents`` (partial_fit: the documents seen
    so far), not the store's training documents."""
    from dscir.models.base import Data
    from dscir.models.lda import LDAConfig
    from dscir.models.lda.model import LDAModel

    data = Data.open(store)
    cfg = LDAConfig(n_topics=3, sampler="scir", alpha=0.1, beta=0.5, batch_size=20,
                    step_size=0.5, tau=10.0, kappa=0.33, sweeps=6, seed=3, burn_in=0, thin=1,
                    eval_sweeps=5)
    executor = RecordingExecutor(store, "lda")
    model = LDAModel(cfg, data, executor, n_documents=1000)
    model.topics.sampler = RecordingSampler(model.topics.sampler)
    model.step(0, executor.read(minibatch(data, 20)))
    ints = np.zeros((3, data.n_words), np.int64)
    for r in executor.results:
        np.add.at(ints, (r.topics, r.word_ids), r.values)
    (scaled,) = model.topics.sampler.counts
    np.testing.assert_allclose(scaled, ints * (1000 / 20 / executor.results[0].n_kept),
                               rtol=1e-12)


def test_partial_fit_topics_are_the_calls_own_samples(X):
    model = lda(n_iter=20, burn_in=4, thin=1).fit(X)
    model.partial_fit(X[:30], n_iter=1)  # keeps one sample: the new current phi
    assert model.n_samples_ == 1
    assert np.allclose(model.topic_word_, np.exp(model._chain.model.log_phi()))
    assert model.n_iter_ == 21


def test_partial_fit_continues_after_a_pickle_round_trip(X):
    model = lda(n_iter=20, thin=1).fit(X)
    twin = pickle.loads(pickle.dumps(model))
    model.partial_fit(X[:40])
    twin.partial_fit(X[:40])
    assert np.array_equal(model.components_, twin.components_)


def test_partial_fit_from_scratch_makes_one_pass(X):
    model = lda(batch_size=20).partial_fit(X[:60])
    assert model.n_iter_ == 3 and model.n_documents_seen_ == 60


def test_partial_fit_keeps_the_fitted_vocabulary(X):
    words = [f"w{i}" for i in range(X.shape[1])]
    model = lda().fit(X, vocabulary=words)
    with pytest.raises(DscirError, match="expecting 30 features"):
        model.partial_fit(X[:, :29])
    with pytest.raises(DscirError, match=r"new words \['new'\]"):
        model.partial_fit(X, vocabulary=words[:-1] + ["new"])
    model.partial_fit(X[:40])
    assert list(model.vocabulary_) == words


def test_a_pipeline_and_a_grid_search_take_lda():
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline

    rng = np.random.default_rng(0)
    words = "apple banana cherry dog egg fish goat hat ice jam kite lamp moon nest owl".split()
    texts = [" ".join(rng.choice(words[:7] if i % 2 else words[7:], size=30))
             for i in range(40)]
    pipe = make_pipeline(CountVectorizer(), dscir.LDA(n_topics=2, n_iter=10, progress=False))
    theta = pipe.fit_transform(texts)
    assert theta.shape == (40, 2) and np.allclose(theta.sum(axis=1), 1.0)
    search = GridSearchCV(clone(pipe), {"lda__n_topics": [2, 3]}, cv=2).fit(texts)
    assert search.best_params_["lda__n_topics"] in (2, 3)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))


def test_a_dataframes_columns_are_the_vocabulary(X):
    import pandas as pd

    frame = pd.DataFrame(X, columns=[f"w{i}" for i in range(X.shape[1])])
    model = lda().fit(frame)
    assert list(model.vocabulary_) == list(frame.columns)
    assert np.array_equal(model.transform(frame[:4]), model.transform(X[:4]))
    assert model.feature_names_in_.dtype == object
    assert list(model.feature_names_in_) == list(frame.columns)
    sparse = lda().fit(pd.DataFrame.sparse.from_spmatrix(sp.csr_matrix(X), columns=frame.columns))
    assert np.array_equal(sparse.topic_word_, model.topic_word_)  # the same chain
    assert not hasattr(sparse.fit(X), "feature_names_in_")  # a refit on a plain matrix


def texts_and_words(n: int = 40):
    rng = np.random.default_rng(0)
    words = "apple banana cherry dog egg fish goat hat ice jam kite lamp moon nest owl".split()
    return [" ".join(rng.choice(words[:7] if i % 2 else words[7:], size=30))
            for i in range(n)], words


def test_the_vocabulary_reaches_lda_where_scikit_learn_lets_it():
    """A pipeline's words reach the estimator through a DataFrame (``set_output``:
    ``feature_names_in_``) or ``vocabulary=`` routed to fit; else ``top_words`` says once
    that it has column numbers and takes the words. Guards against the feature names
    dropped (top words as numbers)."""
    from collections import Counter

    from sklearn.feature_extraction import DictVectorizer
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.pipeline import make_pipeline

    texts, words = texts_and_words()
    vocab = set(words)
    small = dict(n_topics=2, n_iter=10, progress=False)
    frames = make_pipeline(DictVectorizer(sparse=False).set_output(transform="pandas"),
                           dscir.LDA(**small)).fit([Counter(t.split()) for t in texts])
    assert set(frames[-1].feature_names_in_) == vocab
    assert {w for row in frames[-1].top_words(5) for w in row} <= vocab

    fixed = sorted(words)
    routed = make_pipeline(CountVectorizer(vocabulary=fixed), dscir.LDA(**small))
    routed.fit(texts, lda__vocabulary=fixed)
    assert {w for row in routed[-1].top_words(5) for w in row} <= vocab

    pipe = make_pipeline(CountVectorizer(), dscir.LDA(**small)).fit(texts)
    with pytest.warns(UserWarning, match="column number only.*get_feature_names_out"):
        numbers = pipe[-1].top_words(5)
    assert {w for row in numbers for w in row} <= {str(i) for i in range(len(words))}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once
        pipe[-1].top_words(5)
        named = pipe[-1].top_words(5, vocabulary=pipe[:-1].get_feature_names_out())
    assert {w for row in named for w in row} <= vocab
    assert str(pipe[-1].top_words_table(3, vocabulary=pipe[:-1].get_feature_names_out()))
    with pytest.raises(DscirError, match="vocabulary has 2 entries, the model 15 columns"):
        pipe[-1].top_words(5, vocabulary=["a", "b"])
