"""The collapsed Gibbs baseline: recovers known topics, keeps its counts consistent."""

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from dscir.errors import DscirError
from dscir.models.lda import CollapsedGibbs

K, W, D, LENGTH, ALPHA = 5, 50, 200, 80, 0.2


def synthetic_corpus(seed=0):
    """A corpus drawn from LDA whose topics each put 95% of their mass on
    their own block of 10 words. Returns CSR arrays, true phi, and the
    phi estimated from the true assignments (the best any sampler can do)."""
    rng = np.random.default_rng(seed)
    phi = np.full((K, W), 0.05 / W)
    for k in range(K):
        phi[k, 10 * k:10 * k + 10] += 0.95 * rng.dirichlet(np.ones(10))
    indptr, indices, data = [0], [], []
    oracle = np.zeros((K, W))
    for _ in range(D):
        z = rng.choice(K, size=LENGTH, p=rng.dirichlet(np.full(K, ALPHA)))
        w = np.array([rng.choice(W, p=phi[k]) for k in z])
        np.add.at(oracle, (z, w), 1)
        words, counts = np.unique(w, return_counts=True)
        indices.extend(words)
        data.extend(counts)
        indptr.append(len(indices))
    oracle = (oracle + 0.01) / (oracle.sum(axis=1, keepdims=True) + W * 0.01)
    return (np.array(indptr), np.array(indices, dtype=np.int32), np.array(data, dtype=np.int32),
            phi, oracle)


def matching_error(estimate, truth):
    """Mean L1 distance between matched topics (Hungarian matching on L1)."""
    cost = np.abs(estimate[:, None, :] - truth[None, :, :]).sum(axis=2)
    rows, cols = linear_sum_assignment(cost)
    return cost[rows, cols].mean()


@pytest.fixture(scope="module")
def corpus():
    return synthetic_corpus()


def test_recovers_known_topics(corpus):
    indptr, indices, data, phi, oracle = corpus
    model = CollapsedGibbs(indptr, indices, data, K, alpha=ALPHA, beta=0.01, seed=1, n_words=W)
    start = matching_error(model.topic_word(), phi)
    model.run(100)
    err = matching_error(model.topic_word(), phi)
    best = matching_error(oracle, phi)
    # From random assignments (error ~1.5 of a maximum 2) to within 0.05 of
    # the error of phi estimated from the true assignments (0.06: the noise of
    # ~3,200 tokens per topic); one Gibbs state adds its own noise (0.095 here).
    assert start > 1.0
    assert err < best + 0.05, (err, best)
    assert model.iteration == 100
    np.testing.assert_allclose(model.topic_word().sum(axis=1), 1.0)


def test_counts_stay_consistent(corpus):
    indptr, indices, data, _, _ = corpus
    model = CollapsedGibbs(indptr, indices, data, K, alpha=ALPHA, beta=0.01, seed=2).run(3)
    n_kw, n_dk, n_k = model.n_kw, model.n_dk, model.n_k
    assert n_kw.shape == (K, W) and n_dk.shape == (D, K)
    assert n_kw.sum() == data.sum() == model.n_tokens
    np.testing.assert_array_equal(n_kw.sum(axis=1), n_k)
    np.testing.assert_array_equal(n_dk.sum(axis=0), n_k)
    np.testing.assert_array_equal(n_kw.sum(axis=0), np.bincount(indices, weights=data))
    np.testing.assert_array_equal(n_dk.sum(axis=1), np.add.reduceat(data, indptr[:-1]))
    with pytest.raises(ValueError):
        n_kw[0, 0] = 1


def test_sweeps_compose_and_are_reproducible(corpus):
    indptr, indices, data, _, _ = corpus
    a = CollapsedGibbs(indptr, indices, data, K, alpha=ALPHA, beta=0.01, seed=3).run(2).run(3)
    b = CollapsedGibbs(indptr, indices, data, K, alpha=ALPHA, beta=0.01, seed=3).run(5)
    c = CollapsedGibbs(indptr, indices, data, K, alpha=ALPHA, beta=0.01, seed=4).run(5)
    np.testing.assert_array_equal(a.n_dk, b.n_dk)
    np.testing.assert_array_equal(a.topic_word(), b.topic_word())
    assert a.iteration == b.iteration == 5
    assert not np.array_equal(a.n_dk, c.n_dk)


def test_empty_documents_and_unused_words():
    indptr = np.array([0, 0, 2, 2, 3, 3])
    indices = np.array([1, 4, 1], dtype=np.int32)
    data = np.array([2, 1, 3], dtype=np.int32)
    model = CollapsedGibbs(indptr, indices, data, 3, alpha=0.5, beta=0.1, seed=0, n_words=8)
    model.run(4)
    np.testing.assert_array_equal(model.n_dk.sum(axis=1), [0, 3, 0, 3, 0])
    assert model.topic_word().shape == (3, 8)
    assert model.n_kw[:, [0, 2, 3, 5, 6, 7]].sum() == 0


@pytest.mark.parametrize("change, message", [
    (dict(n_topics=0), "n_topics"),
    (dict(alpha=-1.0), "alpha"),
    (dict(beta=0.0), "beta"),
    (dict(seed=-2), "seed"),
    (dict(n_words=3), "vocabulary"),
])
def test_invalid_arguments_raise(change, message):
    args = dict(indptr=[0, 2], indices=[0, 4], data=[1, 1], n_topics=2, alpha=0.1, beta=0.1,
                seed=0) | change
    with pytest.raises(DscirError, match=message):
        CollapsedGibbs(**args)
