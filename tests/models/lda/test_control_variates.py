"""Control variates for LDA's a_hat (Dubey et al. 2016) from the stored assignments.

The estimate is exactly unbiased over the choice of minibatch: averaged over
every minibatch of a small corpus it equals the full-data expected counts,
whatever assignments are stored. The stored sum is kept equal to the counts
of the assignments in the run's local state, iteration after iteration.
"""

from __future__ import annotations

import itertools

import numpy as np
import scipy.sparse as sp

from dscir.corpus import CSRBatch
from dscir.engine.chain import Chain, run_chain
from dscir.engine.inprocess import InProcessExecutor
from dscir.engine.local_state import rows_of
from dscir.models.lda import LDAModel
from dscir.models.lda.tasks import add_counts
from dscir.models.lda.vocabulary_blocks import control_variate
from dscir.models.lda.warm import warm_gibbs_counts
from support.lda import small_config

D, K, W = 7, 3, 5


def corpus():
    rng = np.random.default_rng(4)
    m = sp.csr_matrix(rng.integers(0, 3, size=(D, W)) * (rng.random((D, W)) < 0.7))
    m.data = m.data.astype(np.int32)
    lengths = np.asarray(m.sum(axis=1)).ravel()
    return m, lengths, rng


def batch(m, docs) -> CSRBatch:
    sub = m[docs]
    return CSRBatch(sub.indptr.astype(np.int64), sub.indices.astype(np.int32), sub.data,
                    np.asarray(docs, np.int64))


def test_estimate_is_unbiased_over_all_minibatches():
    """Every minibatch of 3 of 7 documents (35 of them): the mean estimate is the
    full-data sum of expected counts, to rounding; with stored assignments far
    from the new ones (drawn at random), and a few documents never visited."""
    m, lengths, rng = corpus()
    words = np.arange(W)
    phi = rng.dirichlet(np.ones(W), size=K)
    warm = np.arange(D) % 3 != 0  # documents 0, 3, 6 have nothing stored
    stored_z = [rng.integers(0, K, n).astype(np.int32) if w else np.full(n, -1, np.int32)
                for n, w in zip(lengths, warm)]

    def run(docs):
        z = np.concatenate([stored_z[d] for d in docs])
        result, _ = warm_gibbs_counts(batch(m, docs), words, np.maximum(z, 0), warm[docs],
                                      phi, 0.3, 4, 1, 9, 2, True)
        return result

    everything = run(np.arange(D))
    stored = everything.stored_before
    full = everything.topic_word / everything.n_kept
    size = 3
    estimates = []
    for docs in itertools.combinations(range(D), size):
        r = run(np.array(docs))
        est = control_variate(stored, add_counts(np.zeros((K, W), np.int64), [r]) / r.n_kept,
                              r.stored_before, D / size)
        estimates.append(est)
    np.testing.assert_allclose(np.mean(estimates, axis=0), full, rtol=1e-12, atol=1e-12)
    # Not a constant: the estimate depends on the minibatch, and is not the plain one.
    assert np.ptp(np.array(estimates), axis=0).max() > 1.0
    assert stored.sum() > 0 and not np.allclose(stored, 0)


def test_stored_sum_is_the_counts_of_the_stored_assignments(synthetic_store):
    """After every iteration (more than two epochs), the model's stored sum equals
    the topic-word counts of every document's latest assignments in the Zarr array."""
    store, _ = synthetic_store
    config = small_config(warm_start=True, sweeps=4, burn_sweeps=1, control_variates=True,
                          batch_size=60)
    chain = Chain(LDAModel, config, store, InProcessExecutor(store, "lda"))
    from dscir.corpus import Corpus

    c = Corpus.open(store)
    for _ in range(10):
        run_chain(chain, 1, progress=False)
        want = np.zeros_like(chain.model.topics.stored)
        train = chain.data.train
        z, _ = rows_of(chain.local, chain.executor.local_values(chain.local), train)
        b = c.read(train)
        words = np.repeat(b.indices, b.data)
        np.add.at(want, (z[z >= 0], words[z >= 0]), 1)
        assert np.array_equal(chain.model.topics.stored, want)
    # documents were revisited: more tokens visited than stored
    assert sum(r["n_tokens"] for r in chain.history) > want.sum()
    assert chain.history[-1]["cv_clipped"] >= 0.0
