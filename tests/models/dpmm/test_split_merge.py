"""The split-merge moves against the enumerated posterior of a small partition problem,
and in both DP samplers."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import gammaln

from dscir.corpus import Corpus
from dscir.errors import DscirError
from dscir.models.mixtures.dp import GibbsSlice
from dscir.models.mixtures.dp.split_merge import _launch, _scan, split_merge
from dscir.rng import derive, new_state
from support.chains import dpmm_chain
from support.mixtures import adjusted_rand_index, canonical, partitions
from support.mixtures import dpmm_config as config

# Five users over three words: two groups by their words and an empty document
# (its likelihood is 1 under every cluster): 52 partitions.
DOCS = [[3, 0, 0], [2, 1, 0], [0, 0, 3], [0, 1, 2], [0, 0, 0]]
A0, ALPHA = 0.5, 1.2
STEPS = 100_000
# Total variation to the exact law. The chain's own at STEPS was 0.011-0.016 over
# seeds 0-2; dropping the proposal's q gave 0.15, alpha 0.06, Gamma(m_A) Gamma(m_B) 0.04.
TOLERANCE = 0.028


def csr(docs):
    x = np.asarray(docs)
    rows, cols = np.nonzero(x)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=len(x)))])
    return indptr, cols, x[rows, cols]


def log_posterior(z, docs, a0: float, alpha: float) -> float:
    """log p(z | x) up to a constant: alpha^K prod Gamma(m_k) x the clusters'
    Dirichlet-multinomial marginals."""
    x, z = np.asarray(docs, float), np.asarray(z)
    w = x.shape[1]
    out = 0.0
    for k in np.unique(z):
        c = x[z == k].sum(axis=0)
        out += (np.log(alpha) + gammaln((z == k).sum()) + gammaln(a0 * w)
                - gammaln(a0 * w + c.sum()) + np.sum(gammaln(a0 + c) - gammaln(a0)))
    return out


def exact_law(docs, a0, alpha) -> dict:
    states = list(partitions(len(docs)))
    logp = np.array([log_posterior(s, docs, a0, alpha) for s in states])
    p = np.exp(logp - logp.max())
    return dict(zip(states, p / p.sum()))


def chain_law(docs, a0, alpha, steps, seed=0, scans=3) -> tuple[dict, int, int]:
    indptr, indices, data = csr(docs)
    z = np.zeros(len(docs), np.int64)
    counts: dict = {}
    splits = merges = 0
    for t in range(steps):
        z, s, m = split_merge(indptr, indices, data, z, len(docs[0]), a0=a0, alpha=alpha,
                              n_proposals=1, key=derive(seed, t), scans=scans)
        splits, merges = splits + s, merges + m
        key = canonical(z)
        counts[key] = counts.get(key, 0) + 1
    return {k: v / steps for k, v in counts.items()}, splits, merges


def total_variation(p: dict, q: dict) -> float:
    return 0.5 * sum(abs(p.get(k, 0.0) - q.get(k, 0.0)) for k in set(p) | set(q))


def test_split_merge_samples_the_enumerated_partition_posterior():
    """Guards the acceptance ratio: the proposal's probability q, the CRP's alpha and
    Gamma(m) terms, the marginal likelihoods (each mutated in tests/mutants.py) and
    the restricted scan's side counts; the chain must both split and merge."""
    exact = exact_law(DOCS, A0, ALPHA)
    law, splits, merges = chain_law(DOCS, A0, ALPHA, STEPS)
    assert splits > 1000 and merges > 1000
    assert total_variation(law, exact) < TOLERANCE


def test_split_merge_with_no_intermediate_scans_keeps_the_law():
    """The launch state's scans only help mixing; with none the move is still exact."""
    exact = exact_law(DOCS, A0, 3.0)
    law, _, _ = chain_law(DOCS, A0, 3.0, STEPS, seed=1, scans=0)
    assert total_variation(law, exact) < TOLERANCE


def test_restricted_scan_weighs_each_user_by_its_exact_conditional():
    """Guards the restricted scan's bookkeeping (each mutated in tests/mutants.py):
    a user's side weights are m_-u p(x_u | that side without u), its own words
    out of its side, every word's rising factorial in the product (a count above
    the short-count product included), and the sides' counts and sizes follow
    each move. A scan forced along given sides must return the log probability
    of those sides under the exact conditionals, and leave the sides' totals."""
    rng = np.random.default_rng(4)
    n_users, n_words, a0 = 12, 30, 0.5
    docs = rng.poisson(1.5, size=(n_users, n_words))
    docs[:, 0] += 20  # one count past the short-count product in every user
    indptr, indices, data = csr(docs)
    members = np.arange(n_users)  # the last two anchor sides A and B
    ca, cb = np.zeros(n_words), np.zeros(n_words)
    side, nm = _launch(indptr, indices, data, members, ca, cb, new_state(7))
    sides = np.concatenate([side, [0, 1]])  # every member's side at the launch
    forced = rng.integers(0, 2, n_users - 2)
    got = _scan(indptr, indices, data, members[:-2], side, ca, cb, nm, a0, a0 * n_words,
                new_state(8), forced)

    expected = 0.0
    for t in range(n_users - 2):
        logs = []
        for k in (0, 1):
            rest = (sides == k) & (np.arange(n_users) != t)
            c = docs[rest].sum(axis=0)
            logs.append(np.log(rest.sum()) + np.sum(gammaln(c + docs[t] + a0) - gammaln(c + a0))
                        - gammaln(c.sum() + docs[t].sum() + a0 * n_words)
                        + gammaln(c.sum() + a0 * n_words))
        expected += logs[forced[t]] - np.logaddexp(*logs)
        sides[t] = forced[t]
    assert got == pytest.approx(expected, rel=1e-9)
    assert np.array_equal(side, forced)
    for k, c in ((0, ca), (1, cb)):
        assert np.array_equal(c, docs[sides == k].sum(axis=0))
        assert nm[k] == docs[sides == k].sum() and nm[2 + k] == np.sum(sides == k)


def test_split_merge_splits_a_merged_cluster_of_separate_groups():
    """Two groups with disjoint words start merged: the move separates them (a user
    anchoring the other side may stay behind, for the allocation moves to fix)."""
    rng = np.random.default_rng(0)
    docs = np.zeros((40, 20), np.int64)
    for u in range(40):
        lo = 0 if u < 20 else 10
        np.add.at(docs[u], lo + rng.integers(0, 10, 30), 1)
    z, splits, _ = split_merge(*csr(docs), np.zeros(40, np.int64), 20, a0=0.1, alpha=1.0,
                               n_proposals=50, key=3)
    assert splits >= 1
    first, second = (np.bincount(z[g]).argmax() for g in (slice(0, 20), slice(20, 40)))
    assert first != second
    assert np.sum(z[:20] == first) >= 18 and np.sum(z[20:] == second) >= 18


def test_split_merge_checks_its_input():
    indptr, indices, data = csr(DOCS)
    with pytest.raises(DscirError, match="labels for 5 users"):
        split_merge(indptr, indices, data, np.zeros(4, np.int64), 3, a0=1.0, alpha=1.0,
                    n_proposals=1, key=0)
    with pytest.raises(DscirError, match="a0 and alpha must be > 0"):
        split_merge(indptr, indices, data, np.zeros(5, np.int64), 3, a0=0.0, alpha=1.0,
                    n_proposals=1, key=0)


# -- in the samplers ------------------------------------------------------------


def merged_start_chain(client, path, iterations: int, **kw):
    """The stochastic chain started from one component (every user merged)."""
    c = dpmm_chain(client, path, config(n_init=1, **kw))
    for _ in range(iterations):
        c.step()
    c.close()
    return c.model


def test_stochastic_chain_splits_a_merged_start(dpmm_store, two_workers):
    """Started from one component, the allocation moves alone keep the 4 clusters
    merged (ARI -0.02 after 12 iterations); split-merge moves once a pass
    (every 6 iterations) separate them (0.99)."""
    path, truth = dpmm_store
    moved = merged_start_chain(two_workers, path, 12, split_merge=10)
    still = merged_start_chain(two_workers, path, 12)
    train = moved.data.train
    assert adjusted_rand_index(truth[train], moved.z[train]) > 0.95
    assert adjusted_rand_index(truth[train], still.z[train]) < 0.2


def test_split_merge_chain_is_the_same_on_any_workers_and_placement(dpmm_store, one_worker,
                                                                      two_workers):
    """The moves' task, the redrawn components and the new labels' rows give one
    chain on one worker with the components on the driver and on two workers with
    them on the workers."""
    path, _ = dpmm_store
    a = merged_start_chain(one_worker, path, 7, split_merge=10, placement="driver")
    b = merged_start_chain(two_workers, path, 7, split_merge=10, placement="workers")
    assert a.n_clusters > 1
    np.testing.assert_array_equal(a.z, b.z)
    np.testing.assert_array_equal(a.sticks.log_theta, b.sticks.log_theta)
    np.testing.assert_array_equal(a.theta.log_theta, b.theta.log_theta)


def test_exact_gibbs_splits_a_merged_start(dpmm_store):
    """The exact Gibbs slice sampler with the moves: one sweep separates what the
    allocations alone leave merged."""
    path, truth = dpmm_store
    corpus = Corpus.open(path)
    batch = corpus.read(np.arange(corpus.n_docs))
    ari = {}
    for n in (0, 10):
        g = GibbsSlice(batch.indptr, batch.indices, batch.data, corpus.n_words, a0=0.5,
                       alpha_prior=(1.0, 1.0), n_init=1, seed=3, split_merge=n)
        for _ in range(3):
            g.step()
        ari[n] = adjusted_rand_index(truth, g.z)
    assert ari[10] > 0.95 and ari[0] < 0.2
