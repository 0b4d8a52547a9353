"""R-hat / ESS (ArviZ) on chains with known answers, topic matching across chains,
and the seeds of a multi-chain fit. Pure arrays: no cluster."""

from __future__ import annotations

import numpy as np
import pytest

from dscir.rng import domains
from dscir.diagnostics import convergence as cv
from dscir.diagnostics.matching import align_chains, hellinger, match_topics

pytest.importorskip("arviz")


def ar1_chains(n_chains: int, n_draws: int, rho: float, seed: int, dim: int = 1) -> np.ndarray:
    """Exact AR(1) kernels x' = rho x + sqrt(1 - rho^2) z, each chain started in N(0, 1):
    every draw is exactly N(0, 1); the lag-k autocorrelation is rho^k."""
    rng = np.random.default_rng(seed)
    x = np.empty((n_chains, n_draws, dim))
    x[:, 0] = rng.normal(size=(n_chains, dim))
    for t in range(1, n_draws):
        x[:, t] = rho * x[:, t - 1] + np.sqrt(1 - rho**2) * rng.normal(size=(n_chains, dim))
    return x


def test_rhat_near_one_and_ess_of_an_exact_ar1_kernel():
    # Guards against an ESS that ignores autocorrelation (it would give about
    # n = 8000, three times the truth n (1 - rho) / (1 + rho) = 2667) and against
    # an R-hat that is not 1 on chains of one exact kernel.
    x = ar1_chains(4, 2000, 0.5, seed=1, dim=4)
    assert np.all(np.abs(cv.rhat(x) - 1) < 0.01)
    truth = 8000 * (1 - 0.5) / (1 + 0.5)
    assert np.all((cv.ess(x) > 0.8 * truth) & (cv.ess(x) < 1.25 * truth)), cv.ess(x)


def test_rhat_flags_chains_stuck_at_different_values():
    x = ar1_chains(4, 500, 0.5, seed=2) + np.arange(4)[:, None, None] * 1.0
    assert cv.rhat(x)[0] > 1.1


def test_too_few_draws_is_one_clear_error():
    from dscir.errors import DscirError

    with pytest.raises(DscirError, match="at least 4 draws"):
        cv.rhat(np.zeros((2, 3)))


def test_hellinger_against_its_definition():
    rng = np.random.default_rng(3)
    p, q = rng.dirichlet(np.ones(7), 3), rng.dirichlet(np.ones(7), 4)
    brute = np.array([[np.sqrt(0.5 * np.sum((np.sqrt(a) - np.sqrt(b)) ** 2)) for b in q]
                      for a in p])
    assert np.allclose(hellinger(p, q), brute)
    assert np.allclose(np.diag(hellinger(p, p)), 0, atol=1e-7)


def permuted_topic_chains(n_chains=3, n_draws=200, K=6, W=40, seed=5):
    """Chains of an exact posterior sampler of K topics (independent Dirichlet
    draws around fixed topics), chain c's topics relabelled by perms[c]
    (chain 0 unpermuted): stored topic j of chain c is true topic perms[c][j]."""
    rng = np.random.default_rng(seed)
    true = rng.dirichlet(np.full(W, 0.2), K)
    perms = [np.roll(np.arange(K), c) for c in range(n_chains)]  # cyclic shifts by c
    phi = np.empty((n_chains, n_draws, K, W))
    for c, perm in enumerate(perms):
        for k in range(K):
            phi[c, :, k] = rng.dirichlet(2000 * true[perm[k]] + 0.01, n_draws)
    return phi, perms


def test_matching_recovers_a_known_permutation():
    phi, perms = permuted_topic_chains()
    for perm in perms[1:]:
        assert not np.array_equal(perm, np.argsort(perm))  # not an involution: the
        # inverse labelling (a transposed assignment) would be caught
    found = align_chains(list(phi.mean(axis=1)))
    for c, perm in enumerate(perms):
        assert np.array_equal(found[c], np.argsort(perm)), c


def test_rhat_of_top_words_large_without_matching_near_one_with():
    phi, _ = permuted_topic_chains()
    top = cv.top_word_ids(phi[0].mean(axis=0), 5)
    unmatched = cv.rhat(cv.topic_draws(phi, top))
    assert np.max(unmatched) > 1.5
    aligned = np.stack([phi[c][:, p] for c, p in enumerate(align_chains(list(phi.mean(1))))])
    matched = cv.rhat(cv.topic_draws(aligned, top))
    assert np.max(matched) < 1.02, matched


def test_match_topics_is_one_to_one_where_greedy_is_not():
    # Reference topics a, b; the other chain's topic 0 is nearest to both, so a
    # per-row argmin would give both reference topics the same label.
    a, b = np.array([0.7, 0.3, 0.0]), np.array([0.3, 0.7, 0.0])
    other = np.array([[0.5, 0.5, 0.0], [0.0, 0.1, 0.9]])
    assert hellinger(np.stack([a, b]), other).argmin(axis=1).tolist() == [0, 0]
    assert sorted(match_topics(np.stack([a, b]), other).tolist()) == [0, 1]


def test_chain_seeds_chain_zero_is_the_seed_and_no_two_collide():
    assert [domains.chain_seed(s, 0) for s in range(5)] == list(range(5))
    seeds = {domains.chain_seed(s, c) for s in range(200) for c in range(8)}
    assert len(seeds) == 200 * 8
    assert all(0 <= s < 2**63 for s in seeds)
    assert domains.chain_seed(7, 3) == domains.chain_seed(7, 3)
