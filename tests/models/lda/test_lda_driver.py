"""The LDA driver on real Dask clusters: recovery, reproducibility, exact reductions."""

from __future__ import annotations

import numpy as np
import pytest

from dscir.api import LDA
from dscir.corpus import Corpus
from dscir.engine.minibatch import EpochPosition, next_minibatch
from dscir.models.lda import vocabulary_blocks as vb
from dscir.models.lda.tasks import GibbsResult, sparse_counts
from dscir.samplers import cir
from dscir.runs import Run
from dscir.errors import DscirError
from support.chains import lda_chain
from support.lda import K_TRUE, W, small_config, topic_error

def test_minibatches_cover_an_epoch_without_replacement():
    docs = np.arange(100, dtype=np.int64) * 3
    pos, seen = EpochPosition(), []
    for _ in range(4):
        batch, pos = next_minibatch(docs, 25, seed=9, position=pos)
        seen.append(batch)
    assert np.array_equal(np.sort(np.concatenate(seen)), docs)
    again, _ = next_minibatch(docs, 25, seed=9, position=EpochPosition())
    assert np.array_equal(again, seen[0])
    batch, pos = next_minibatch(docs, 30, seed=9, position=EpochPosition(0, 90))
    assert pos == EpochPosition(1, 30) and np.unique(batch).size == 30


def test_scir_recovers_known_topics(synthetic_store, two_workers):
    path, phi = synthetic_store
    driver = lda_chain(two_workers, path, small_config(burn_in=60, thin=2))
    before = topic_error(np.exp(driver.model.log_phi()), phi)
    for _ in range(100):
        driver.step()
    driver.close()
    after = topic_error(driver.model.mean_phi(), phi)
    # Random Gamma(1) topics are ~1.3 apart in L1 from the truth; the fit is close.
    assert before > 1.0
    assert after < 0.25, after
    assert driver.n_samples == 20
    assert np.isfinite(driver.model.score())


def test_same_seed_same_chain_with_one_and_two_workers(synthetic_store, one_worker, two_workers):
    path, _ = synthetic_store
    runs, scores = [], []
    for client in (one_worker, two_workers):
        driver = lda_chain(client, path, small_config())
        for _ in range(6):
            driver.step()
        driver.close()
        runs.append(driver.model.topics.state_.log_theta)
        scores.append(driver.model.score())  # 2 and 4 scoring tasks: the same float
    assert np.array_equal(runs[0], runs[1])
    assert scores[0] == scores[1]


def _block(lo: int = 0, width: int = W) -> vb.Block:
    """A block of 3 topics over words ``lo:lo + width``."""
    return vb.new_block(0, lo, cir.State(np.zeros((3, width))), None)


def test_reduction_is_exact_in_any_arrival_order():
    rng = np.random.default_rng(0)
    results = [
        GibbsResult(np.sort(rng.choice(W, 12, replace=False)),
                    rng.integers(0, 10**12, size=(3, 12)), 10, 0)
        for _ in range(6)
    ]
    first = vb.dense_counts(_block(), results)
    for _ in range(5):
        order = rng.permutation(len(results))
        assert np.array_equal(vb.dense_counts(_block(), [results[i] for i in order]), first)


def test_sparse_reduction_is_the_dense_one():
    """A block adds the tasks' nonzero counts (what crosses the wire) into the
    same totals as their dense K x U matrices, in any order, where parts share
    words. Guards against a part's counts overwriting another's."""
    rng = np.random.default_rng(1)
    results = []
    for _ in range(4):
        counts = rng.integers(0, 5, size=(3, 15)) * (rng.random((3, 15)) < 0.4)
        results.append(GibbsResult(np.sort(rng.choice(W, 15, replace=False)), counts, 5, 0))
    assert len(set().union(*(r.words for r in results))) < sum(r.words.size for r in results)
    dense = vb.dense_counts(_block(), results)
    sparse = [sparse_counts(r) for r in results]
    for _ in range(3):
        order = rng.permutation(len(sparse))
        assert np.array_equal(vb.block_counts(_block(), [sparse[i] for i in order]), dense)
    # A block takes its own words' counts, at its offset.
    np.testing.assert_array_equal(vb.block_counts(_block(10, 20), sparse), dense[:, 10:30])
    np.testing.assert_array_equal(vb.dense_counts(_block(10, 20), results), dense[:, 10:30])


def test_every_sampler_runs_and_stays_finite(synthetic_store, two_workers):
    path, _ = synthetic_store
    for name, beta, step in [("sgrld", 1e-4, 0.01), ("gsgrhmc", 1e-4, 0.02),
                             ("sgld", 0.5, 1e-4), ("sghmc", 0.5, 1e-4)]:
        driver = lda_chain(two_workers, path, small_config(sampler=name, beta=beta,
                                                           step_size=step, tau=None))
        for _ in range(3):
            driver.step()
        driver.close()
        assert np.all(np.isfinite(driver.model.log_phi())), name


@pytest.mark.parametrize("placement", ["driver", "workers"])
def test_a_diverged_chain_is_one_clear_error(synthetic_store, two_workers, placement):
    """gSGRHMC's Euler step far past its stability edge loses finite topics within a
    few iterations: the step that did it raises one error naming the divergence
    and the remedy (not the next Gibbs tasks' complaint about their columns)."""
    path, _ = synthetic_store
    config = small_config(sampler="gsgrhmc", beta=1e-4, step_size=20.0, tau=None,
                          placement=placement, block_entries=10 * 3,
                          sampler_options={"integrator": "euler"})
    driver = lda_chain(two_workers, path, config)
    with pytest.raises(DscirError, match="gsgrhmc chain diverged at iteration"):
        for _ in range(30):
            driver.step()
    driver.close()


def test_estimator_fit_writes_a_run_and_transforms(synthetic_store, two_workers, tmp_path):
    path, _ = synthetic_store
    model = LDA(n_topics=K_TRUE, batch_size=30, sweeps=20, n_iter=20, thin=2, eval_every=10,
                eval_sweeps=20, seed=1, progress=False)
    model.fit(path, client=two_workers, out=tmp_path / "run")
    assert model.topic_word_.shape == (K_TRUE, W)
    assert np.allclose(model.topic_word_.sum(axis=1), 1.0)
    assert [e.iteration for e in model.evaluations_] == [10, 20]
    run = Run.open(tmp_path / "run")
    assert run.iteration == 20 and run.n_samples == 5
    assert np.allclose(run.phi_mean, model.topic_word_)
    kept = run.samples()
    iterations, samples = kept["iteration"], kept["phi"]
    assert list(iterations) == [12, 14, 16, 18, 20] and samples.shape == (5, K_TRUE, W)
    # Each kept row is that iteration's phi (float32): their mean is the kept mean.
    np.testing.assert_allclose(samples.astype(np.float64).mean(axis=0), run.phi_mean,
                               rtol=1e-5, atol=1e-8)
    docs = Corpus.open(path).read(np.arange(5))
    theta = model.transform(docs)
    assert theta.shape == (5, K_TRUE) and np.allclose(theta.sum(axis=1), 1.0)
    assert len(model.top_words(3)) == K_TRUE
    assert "LDA(" in repr(model) and "<table>" in model._repr_html_()
    model.partial_fit(path, client=two_workers, n_iter=2)  # the same documents again
    assert model.n_iter_ == 22
    with pytest.raises(DscirError, match="exists"):
        model.fit(path, client=two_workers, out=tmp_path / "run")


@pytest.mark.parametrize("params, message", [
    ({"n_topics": 1}, "n_topics must be >= 2"),
    ({"alpha": -1.0}, "alpha must be > 0"),
    ({"sampler": "gibbs"}, "sampler must be one of"),
    ({"kappa": 2.0}, "kappa must be <= 1"),
    ({"batch_size": 0}, "batch_size must be >= 1"),
    ({"sweeps": 1.5}, "sweeps must be an integer"),
])
def test_invalid_hyperparameters_are_named(params, message):
    with pytest.raises(DscirError, match=message):
        LDA(**params).chain_config()


def test_batch_larger_than_corpus_is_an_error(synthetic_store, two_workers):
    path, _ = synthetic_store
    with pytest.raises(DscirError, match="exceeds"):
        lda_chain(two_workers, path, small_config(batch_size=10_000))
