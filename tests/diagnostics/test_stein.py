"""The KSD of LDA runs (dscir.diagnostics.stein, dscir.api.stein): the score against
finite differences of an exactly enumerated log posterior, exact against biased
samples of a conjugate posterior, and the cluster's count estimate against the
exact expected counts (unbiased, with the D / |S| scale)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp

from dscir.diagnostics.ksd import ksd
from dscir.diagnostics.stein import complete_totals, conjugate_score, lda_score

ALPHA, BETA = 0.3, 0.7
# tiny documents (word ids): every topic assignment can be enumerated
DOCS = [[0, 1], [2, 2, 1], [0], [1, 2], [0, 0, 2], [2]]
K, W = 2, 3


def log_dm(m: np.ndarray) -> float:
    """log p(z) of assignments with topic counts ``m`` under Dirichlet(alpha) proportions."""
    n = m.sum()
    return (math.lgamma(K * ALPHA) - math.lgamma(K * ALPHA + n)
            + sum(math.lgamma(ALPHA + c) - math.lgamma(ALPHA) for c in m))


def exact(phi: np.ndarray) -> tuple[float, np.ndarray]:
    """log p(w | phi) and E[topic-word counts | w, phi], summed over DOCS, by
    enumerating every assignment of every document."""
    total, counts = 0.0, np.zeros((K, W))
    for doc in DOCS:
        logs, tallies = [], []
        for z in itertools.product(range(K), repeat=len(doc)):
            m = np.bincount(z, minlength=K)
            logs.append(log_dm(m) + sum(np.log(phi[k, w]) for k, w in zip(z, doc)))
            t = np.zeros((K, W))
            for k, w in zip(z, doc):
                t[k, w] += 1
            tallies.append(t)
        logs = np.array(logs)
        top = logs.max()
        p = np.exp(logs - top)
        total += top + np.log(p.sum())
        counts += np.tensordot(p / p.sum(), np.array(tallies), axes=1)
    return total, counts


def log_posterior(eta: np.ndarray) -> float:
    """log p(eta | w) up to a constant: Gamma(beta, 1) prior on theta = exp(eta) with
    its Jacobian, and the exact likelihood through phi = theta / T."""
    theta = np.exp(eta)
    phi = theta / theta.sum(axis=1, keepdims=True)
    return float(np.sum(BETA * eta - theta)) + exact(phi)[0]


def test_score_is_the_gradient_of_the_exact_log_posterior():
    """A dropped Jacobian (beta - 1), prior (-theta) or n_k term, or the score in
    theta instead of eta, gives a different gradient."""
    rng = np.random.default_rng(4)
    eta = np.log(rng.gamma(1.0, 1.0, size=(K, W)))
    theta = np.exp(eta)
    phi = theta / theta.sum(axis=1, keepdims=True)
    _, counts = exact(phi)
    got_eta, got = lda_score(phi, theta.sum(axis=1), counts, BETA, np.arange(W))
    np.testing.assert_allclose(got_eta, eta.ravel(), rtol=1e-12)
    h, want = 1e-5, np.zeros(K * W)
    for j in range(K * W):
        e = np.zeros(K * W)
        e[j] = h
        want[j] = (log_posterior(eta + e.reshape(K, W))
                   - log_posterior(eta - e.reshape(K, W))) / (2 * h)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    # a subset of words gives those coordinates of the full score
    _, sub = lda_score(phi, theta.sum(axis=1), counts, BETA, np.array([0, 2]))
    np.testing.assert_allclose(sub, got.reshape(K, W)[:, [0, 2]].ravel())


def conjugate_draws(rng, n: np.ndarray, beta: float, size: int, inflate: float = 1.0):
    """theta = T phi with T ~ Gamma(W beta, 1) and phi ~ Dirichlet(beta + inflate n):
    the exact posterior of the expanded mean when inflate = 1."""
    phi = rng.dirichlet(beta + inflate * n, size=size)
    totals = np.array([complete_totals(rng, 1, n.size, beta)[0] for _ in range(size)])
    return totals[:, None] * phi


def test_exact_samples_of_a_conjugate_posterior_give_a_small_ksd_biased_a_large_one():
    """Exact draws against draws from an over-confident posterior (counts x 2, as a
    too-large step's bias looks) and a shifted one. A wrong score (no Jacobian,
    no prior term) makes the exact draws look biased."""
    n = np.array([12.0, 3.0, 0.0, 7.0, 1.0])
    beta = 0.5
    rng = np.random.default_rng(8)
    values = {}
    for name, inflate in [("exact", 1.0), ("confident", 2.0), ("flat", 0.5)]:
        theta = conjugate_draws(rng, n, beta, 1000, inflate)
        values[name] = ksd(np.log(theta), conjugate_score(theta, beta, n))
    theta = conjugate_draws(rng, n, beta, 1000) * 1.5  # shifted in log theta
    values["shifted"] = ksd(np.log(theta), conjugate_score(theta, beta, n))
    # exact draws sit at the V-statistic's own 1/sqrt(S) level (0.26-0.29 over
    # seeds at S = 1000); the biased sets at 0.7-1.3
    assert values["exact"] < 0.4, values
    for name in ("confident", "flat", "shifted"):
        assert values[name] > 2 * values["exact"], values


def tiny_store(path) -> str:
    from dscir.corpus import write_corpus

    x = np.zeros((len(DOCS), W), np.int64)
    for d, doc in enumerate(DOCS):
        for w in doc:
            x[d, w] += 1
    write_corpus(path, sp.csr_matrix(x), vocabulary=[f"w{i}" for i in range(W)])
    return str(path)


def counts_problem(tmp_path):
    """The tiny corpus on an in-process executor, an LDA configuration, a phi, the
    exact expected counts under it and the training documents."""
    from dscir.engine.inprocess import InProcessExecutor
    from dscir.models.lda import LDAConfig

    store = tiny_store(tmp_path / "tiny.zarr")
    cfg = LDAConfig(n_topics=K, sampler="scir", alpha=ALPHA, beta=BETA, batch_size=2,
                    step_size=0.1, tau=None, kappa=0.0, sweeps=20, seed=1, kernel="dense")
    phi = np.array([[0.6, 0.3, 0.1], [0.1, 0.2, 0.7]])
    _, want = exact(phi)
    executor = InProcessExecutor(store, "lda")
    train = np.arange(len(DOCS))
    return executor, cfg, phi, want, train


def test_minibatch_count_estimate_is_unbiased_for_the_full_data_counts(tmp_path):
    """The average over many minibatches (2 of 6 documents, each scaled by D/|S| = 3)
    is E[counts | w, phi] over all documents; a missing or wrong scale, or
    expectations of the wrong documents, moves it by far more than 5 standard errors."""
    from dscir.api.stein import estimated_counts

    executor, cfg, phi, want, train = counts_problem(tmp_path)
    rng = np.random.default_rng(2)
    draws = np.array([estimated_counts(executor, train, cfg, phi,
                                       np.sort(rng.choice(train, 2, replace=False)), i)
                      for i in range(500)])
    mean, se = draws.mean(axis=0), draws.std(axis=0) / np.sqrt(len(draws))
    assert np.all(np.abs(mean - want) < 5 * se + 1e-9), (mean, want, se)
    assert draws.sum(axis=(1, 2)).mean() == pytest.approx(sum(map(len, DOCS)), rel=0.05)


def test_full_data_counts_have_no_minibatch_noise(tmp_path):
    """With every document (batch "all": scale 1) each estimate's word totals are the
    corpus's exactly, and its mean over the Gibbs task's streams is the exact
    enumeration; only the within-document Gibbs average remains random."""
    from dscir.api.stein import check_batch_size, estimated_counts

    executor, cfg, phi, want, train = counts_problem(tmp_path)
    assert check_batch_size("all", cfg.batch_size, train.size, "documents") == train.size
    draws = np.array([estimated_counts(executor, train, cfg, phi, train, i)
                      for i in range(200)])
    words = np.bincount(np.concatenate(DOCS), minlength=W)
    np.testing.assert_allclose(draws.sum(axis=1), np.tile(words, (len(draws), 1)), rtol=1e-12)
    mean, se = draws.mean(axis=0), draws.std(axis=0) / np.sqrt(len(draws))
    assert np.all(np.abs(mean - want) < 5 * se + 1e-9), (mean, want, se)
