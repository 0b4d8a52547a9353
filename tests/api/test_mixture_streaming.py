"""``Mixture.partial_fit`` and ``DPMixture.partial_fit``: the mixtures learn from new
documents under the rules of ``dscir.api.streaming`` (issue 31, deliverable 1).

Two halves of a stream come from clusters over the same words that drift
between them; after the second half the components are near its clusters. The scikit-learn side
(first call initialises, the width fixed) is also run by scikit-learn's own
checks in tests/api/test_sklearn.py.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import dscir
from dscir.errors import DscirError

N_WORDS, K = 40, 3


def halves(seed=7):
    """Two sets of 300 documents of 60 tokens from 3 sparse clusters; the second
    half's clusters have drifted: 60 % of each one's mass moved to other words."""
    rng = np.random.default_rng(seed)
    phi_a = rng.dirichlet(np.full(N_WORDS, 0.05), size=K)
    phi_b = 0.4 * phi_a + 0.6 * rng.dirichlet(np.full(N_WORDS, 0.05), size=K)
    out = []
    for phi in (phi_a, phi_b):
        z = rng.integers(0, K, size=300)
        out.append((np.array([rng.multinomial(60, phi[j]) for j in z]), phi))
    return out


def distance(model, phi) -> float:
    """Mean over the true clusters of the L1 distance to the nearest component."""
    c = model.components_
    return float(np.mean([np.abs(c - p).sum(axis=1).min() for p in phi]))


MODELS = {"Mixture": lambda: dscir.Mixture(K, n_iter=30, progress=False, seed=3),
          "DPMixture": lambda: dscir.DPMixture(n_iter=30, progress=False, seed=3)}


@pytest.mark.parametrize("name", MODELS)
def test_partial_fit_moves_the_components_to_the_second_halfs_clusters(name):
    """The first call initialises on half A; calls on half B move the components to
    B's clusters, with D the documents seen. Guards against the new documents
    ignored (no iteration on them) and D left at the first half's size."""
    (a, phi_a), (b, phi_b) = halves()
    model = MODELS[name]().partial_fit(a)
    assert model.n_documents_seen_ == 300 and distance(model, phi_a) < 0.2
    before = distance(model, phi_b)
    for _ in range(4):
        model.partial_fit(b)
    assert distance(model, phi_b) < 0.2 and before > 0.8
    assert model.n_documents_seen_ == 1500 == model._chain.model.n_documents
    assert model.labels_.shape == (300,)


@pytest.mark.parametrize("name", MODELS)
def test_partial_fit_is_a_function_of_the_seed(name):
    """The same seed and calls give the same components, also after a pickle round
    trip between the calls (the pickled model keeps the chain's state)."""
    (a, _), (b, _) = halves()
    one, two = MODELS[name]().fit(a), MODELS[name]().fit(a)
    two = pickle.loads(pickle.dumps(two))
    one.partial_fit(b)
    two.partial_fit(b)
    assert np.array_equal(one.components_, two.components_)
    assert np.array_equal(one.labels_, two.labels_)


def test_a_first_partial_fit_initialises_and_fixes_the_width():
    (a, _), _ = halves()
    words = [f"w{i}" for i in range(N_WORDS)]
    model = dscir.Mixture(K, batch_size=100, progress=False).partial_fit(a, vocabulary=words)
    assert model.n_iter_ == 3 and model.n_features_in_ == N_WORDS
    with pytest.raises(ValueError, match=f"X has {N_WORDS - 1} features, but Mixture is "
                                         f"expecting {N_WORDS} features"):
        model.partial_fit(a[:, :-1])
    with pytest.raises(DscirError, match=r"new words \['new'\]"):
        model.partial_fit(a, vocabulary=words[:-1] + ["new"])
    assert list(model.vocabulary_) == words


def test_the_exact_gibbs_samplers_take_no_stream():
    (a, _), _ = halves()
    for model in (dscir.Mixture(K, "gibbs", n_iter=2, progress=False),
                  dscir.DPMixture("gibbs", n_iter=2, progress=False)):
        with pytest.raises(DscirError, match="partial_fit needs a stochastic sampler"):
            model.partial_fit(a)


def test_a_call_keeps_only_its_own_samples():
    """After a call, the kept samples (which score averages) are that call's. Guards
    against the earlier calls' samples kept with them."""
    (a, _), (b, _) = halves()
    model = dscir.Mixture(K, n_iter=20, burn_in=10, thin=2, progress=False).fit(a)
    assert model.n_samples_ == 5
    model.partial_fit(b, n_iter=4)
    assert model.n_samples_ == 2 == len(model._samples)
    assert np.isfinite(model.score(b[:20]))


@pytest.mark.parametrize("estimator", [dscir.Mixture(2, n_iter=6, progress=False),
                                       dscir.DPMixture(n_iter=6, progress=False),
                                       dscir.LDA(n_topics=2, n_iter=6, progress=False)],
                         ids=lambda e: type(e).__name__)
def test_scikit_learns_partial_fit_check(estimator):
    """scikit-learn's check that a partial_fit of another width is a ValueError (its
    estimator checks yield it only for ClusterMixin clusterers, classifiers and
    regressors, so it is run here)."""
    from sklearn.utils.estimator_checks import check_estimators_partial_fit_n_features

    check_estimators_partial_fit_n_features(type(estimator).__name__, estimator)
