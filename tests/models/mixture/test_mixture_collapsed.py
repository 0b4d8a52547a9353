"""The collapsed Gibbs sampler of the Dirichlet-multinomial mixture, against
exact answers on a tiny case: every allocation of 5 documents to 3 clusters
enumerated (3^5 = 243 states), the posterior p(z | x) by the closed-form
Dirichlet-multinomial marginal likelihood."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats
from scipy.special import gammaln

from dscir.corpus import write_corpus
from dscir.errors import DscirError
from dscir.models.mixtures.dp.allocation import log_rising
from dscir.models.mixtures.finite.collapsed import (CollapsedMixtureGibbs, collapsed_start_csr,
                                                   collapsed_start_on_workers,
                                                   conditional_log_weights, log_joint)
from support.recording import ThreeParts

K, W, GAMMA, A0 = 3, 4, 0.7, 0.3
X = sp.csr_matrix(np.array([[3, 0, 1, 0], [2, 1, 0, 0], [0, 0, 2, 3], [0, 1, 3, 1],
                            [1, 2, 0, 0]]))
STATES = np.array(list(itertools.product(range(K), repeat=X.shape[0])))


def brute_log_joint(z) -> float:
    """log p(z, x) by the textbook formula, one cluster at a time."""
    x = X.toarray()
    total = gammaln(K * GAMMA) - gammaln(len(z) + K * GAMMA)
    for k in range(K):
        rows = x[np.asarray(z) == k]
        c = rows.sum(axis=0)
        total += gammaln(len(rows) + GAMMA) - gammaln(GAMMA)
        total += gammaln(W * A0) - gammaln(c.sum() + W * A0)
        total += np.sum(gammaln(c + A0) - gammaln(A0))
    return float(total)


def exact_posterior() -> np.ndarray:
    logp = np.array([brute_log_joint(z) for z in STATES])
    return np.exp(logp - np.logaddexp.reduce(logp))


def test_a_count_scores_as_the_lgamma_difference():
    """A word's count n in a cluster's score: log Gamma(x + n) - log Gamma(x), as a
    product for short counts and by lgamma beyond. Guards against the product
    one factor short or long."""
    for x in (1e-3, 0.3, 7.25, 1e5):
        for n in range(1, 21):
            want = np.log(x + np.arange(n)).sum()  # exact to rounding, as lgamma's is not
            assert log_rising(x, n) == pytest.approx(want, rel=1e-9)


def test_log_joint_is_the_textbook_formula():
    for z in STATES[::17]:
        assert log_joint(X.indptr, X.indices, X.data, z, K, W, GAMMA, A0) == pytest.approx(
            brute_log_joint(z), rel=1e-12)


def test_conditional_is_the_ratio_of_enumerated_joints():
    """p(z_i = k | z_-i) = p(z with z_i = k) / sum_j p(z with z_i = j), for every
    document of a few states."""
    for z in STATES[::31]:
        for i in range(X.shape[0]):
            joints = []
            for k in range(K):
                zk = z.copy()
                zk[i] = k
                joints.append(brute_log_joint(zk))
            expected = np.array(joints) - np.logaddexp.reduce(joints)
            got = conditional_log_weights(X.indptr, X.indices, X.data, z, i, K, W, GAMMA, A0)
            np.testing.assert_allclose(got, expected, atol=1e-10)


def state_frequencies(seed: int, sweeps: int) -> np.ndarray:
    g = CollapsedMixtureGibbs(X.indptr, X.indices, X.data, W, n_clusters=K, gamma=GAMMA,
                              a0=A0, seed=seed)
    index = K ** np.arange(X.shape[0])[::-1]
    counts = np.zeros(len(STATES))
    for _ in range(sweeps):
        g.step()
        counts[int(g.z @ index)] += 1
        m, n, c = g.m.copy(), g.n.copy(), g.c.copy()  # the counts follow the moves
        assert m.sum() == X.shape[0] and np.array_equal(c.sum(axis=1), n)
    return counts


def test_chain_visits_the_enumerated_posterior():
    """20,000 sweeps (seed 3): the visits to the 243 states against the exact
    posterior by a chi-square test on the states of expected count >= 5;
    a sampler that drops the weights' term (m_k + gamma) is rejected."""
    counts = state_frequencies(3, 20_000)
    p = exact_posterior()
    keep = p * counts.sum() >= 5
    observed = np.append(counts[keep], counts[~keep].sum())
    expected = counts.sum() * np.append(p[keep], p[~keep].sum())
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    wrong = np.exp([brute_log_joint(z) - sum(gammaln(np.bincount(z, minlength=K) + GAMMA))
                    for z in STATES])
    wrong /= wrong.sum()
    expected_wrong = counts.sum() * np.append(wrong[keep], wrong[~keep].sum())
    assert stats.chisquare(observed, expected_wrong).pvalue < 1e-6


def test_same_chain_from_the_same_seed_and_bad_input():
    a, b = state_frequencies(5, 50), state_frequencies(5, 50)
    np.testing.assert_array_equal(a, b)
    with pytest.raises(DscirError, match="a0"):
        CollapsedMixtureGibbs(X.indptr, X.indices, X.data, W, n_clusters=K, gamma=1.0,
                              a0=0.0, seed=0)
    with pytest.raises(DscirError, match="init"):
        CollapsedMixtureGibbs(X.indptr, X.indices, X.data, W, n_clusters=K, gamma=1.0,
                              a0=1.0, seed=0, init="spectral")


def test_start_read_by_workers_equals_the_in_memory_start(tmp_path):
    """The stochastic sampler's collapsed start is read in parts by the workers;
    it must equal the exact sampler's start on the same documents."""
    from dscir.corpus import Corpus
    from dscir.engine.inprocess import InProcessExecutor

    rng = np.random.default_rng(0)
    x = sp.csr_matrix(rng.poisson(0.3, size=(300, 50)) + np.eye(300, 50, dtype=int))
    path = str(tmp_path / "c.zarr")
    write_corpus(path, x, chunk_docs=64)
    batch = Corpus.open(path).read(np.arange(300))
    model = {"n_clusters": 4, "gamma": 1.0, "a0": 0.2}
    expected = collapsed_start_csr(batch.indptr, batch.indices, batch.data, 50, key=9, **model)
    for executor in (InProcessExecutor(path, "mixture"), ThreeParts(path, "mixture")):
        got = collapsed_start_on_workers(executor, np.arange(300), 50, key=9, **model)
        for g, e in zip(got, expected):
            np.testing.assert_array_equal(g, e)
