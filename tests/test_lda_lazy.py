"""LDA with the lazy SCIR step (scir_step="lazy", topics on the driver): reproducible on
any number of workers and across resume, O(K x minibatch words) per iteration, and
scoring like the dense step."""

from __future__ import annotations

import numpy as np
import pytest

from dscir import streams
from dscir.engine.chain import run_chain
from dscir.errors import DscirError
from dscir.models.lda import LDAConfig
from dscir.models.lda.tasks import SparseCounts
from dscir.models.lda.topics import add_sparse_counts
from dscir.models.lda.topics_lazy import LazyDriverTopics
from dscir.rng import derive
from dscir.runs import write_checkpoint
from dscir.samplers import cir_lazy
from support.chains import lda_chain, topic_corpus
from support.lda import small_config
from support.runs import read_checkpoint_dir


@pytest.fixture(scope="module")
def wide_store(tmp_path_factory) -> str:
    """An LDA corpus (4 sparse topics over 1000 words, 300 documents of 30 tokens):
    a minibatch of 10 documents holds a fifth of the vocabulary, so most columns
    stay lazy over gaps of several iterations (with a vocabulary every minibatch
    covers, the lazy step never has a gap and is the dense one in law)."""
    return topic_corpus(tmp_path_factory.mktemp("lazy") / "wide.zarr", n_docs=300, K=4, W=1000)


def lazy_config(**kw) -> LDAConfig:
    base = dict(scir_step="lazy", batch_size=10, sweeps=10)
    base.update(kw)
    return small_config(**base)


def state_arrays(chain) -> dict[str, np.ndarray]:
    return cir_lazy.to_arrays(chain.model.topics.state_)


def assert_same_state(a: dict, b: dict) -> None:
    assert sorted(a) == sorted(b)
    for name in a:
        assert np.array_equal(a[name], b[name]), name


def test_same_chain_on_one_and_two_workers(wide_store, one_worker, two_workers):
    """Guards against the lazy state depending on the tasks' split or arrival order
    (e.g. counts added per part into overlapping columns, or U taken per part)."""
    path = wide_store
    runs = []
    for client in (one_worker, two_workers):
        chain = lda_chain(client, path, lazy_config(burn_in=2))
        run_chain(chain, 8, progress=False)
        runs.append((state_arrays(chain), chain.model.score(), chain.model.mean_phi()))
        chain.close()
    assert_same_state(runs[0][0], runs[1][0])
    assert runs[0][1] == runs[1][1]
    assert np.array_equal(runs[0][2], runs[1][2])


def test_resumed_chain_equals_uninterrupted(wide_store, two_workers, tmp_path):
    """A checkpoint holds the unrealized state and the kept accumulators: the resumed
    chain, its kept mean and its final (realized) arrays are the uninterrupted ones."""
    path = wide_store
    cfg = lazy_config(burn_in=2)
    whole = lda_chain(two_workers, path, cfg)
    run_chain(whole, 8, progress=False)
    first = lda_chain(two_workers, path, cfg)
    run_chain(first, 5, progress=False)
    write_checkpoint(tmp_path, first.checkpoint())
    second = lda_chain(two_workers, path, cfg)
    second.restore(read_checkpoint_dir(tmp_path))
    assert_same_state(second.model.run_arrays(), first.model.run_arrays())  # a run written now
    run_chain(second, 3, progress=False)
    assert_same_state(state_arrays(second), state_arrays(whole))
    assert second.n_samples == whole.n_samples == 3
    assert_same_state(second.model.run_arrays(), whole.model.run_arrays())
    for chain in (whole, first, second):
        chain.close()


def test_an_iteration_touches_k_times_the_minibatch_words(two_workers, tmp_path):
    """Per iteration the state visited is O(K x U + K) entries for the U distinct
    minibatch words (catch-up, step, kept terms), far below K x W. Guards against a
    K x W pass per iteration (a dense step, a realization or a kept row)."""
    k, w = 10, 20_000
    path = topic_corpus(tmp_path / "wide.zarr", n_docs=200, K=3, W=w)
    chain = lda_chain(two_workers, path, small_config(
        n_topics=k, batch_size=5, sweeps=4, burn_in=2, thin=2, scir_step="lazy"))
    topics = chain.model.topics
    ratios = []
    for _ in range(8):
        before = topics.state_.entries
        chain.step()
        u = topics._u.size
        ratios.append((topics.state_.entries - before) / (k * u + k))
        assert topics.state_.entries - before < k * w / 20
    chain.close()
    assert chain.n_samples == 3
    assert max(ratios) <= 3.0, ratios


def test_held_out_perplexity_within_the_dense_seed_spread(wide_store, two_workers):
    """Three seeds each: the lazy chains' median perplexity lies within the dense
    chains' range widened by 2 % (docs/lazy_scir.md measures the normaliser's
    approximation below the chains' own seed spread). Guards against a wrong
    normaliser or scale that shifts the fitted topics."""
    path = wide_store
    scores = {}
    for step in ("dense", "lazy"):
        scores[step] = []
        for seed in (0, 1, 2):
            chain = lda_chain(two_workers, path, lazy_config(
                scir_step=step, seed=seed, burn_in=30, thin=2))
            run_chain(chain, 50, progress=False)
            scores[step].append(chain.model.score())
            chain.close()
    dense, lazy = scores["dense"], float(np.median(scores["lazy"]))
    assert 0.98 * min(dense) <= lazy <= 1.02 * max(dense), scores


def test_kept_mean_rows_sum_to_one(wide_store, two_workers):
    """Kept samples are recorded with the "mean" normaliser, so each kept phi row
    sums to one. Guards against recording them with the step's "draw" totals."""
    chain = lda_chain(two_workers, wide_store, lazy_config(burn_in=1, thin=1))
    run_chain(chain, 5, progress=False)
    chain.close()
    assert chain.n_samples == 4
    assert np.allclose(chain.model.mean_phi().sum(axis=1), 1.0, rtol=0, atol=1e-9)


def sparse_result(rng, k: int, words: np.ndarray, n_kept: int) -> SparseCounts:
    counts = rng.integers(0, 4, size=(k, words.size)) * (rng.random((k, words.size)) < 0.5)
    topics, cols = np.nonzero(counts.T)[::-1]
    order = np.lexsort((topics, cols))
    return SparseCounts(words.astype(np.int32)[cols[order]], topics[order],
                        counts[topics[order], cols[order]], n_kept, int(counts.sum()))


def test_step_moves_the_minibatch_columns_with_the_scaled_counts():
    """Each iteration catches the union of the parts' words up to the clock and
    steps them with a_hat = beta + (D/|S|) counts / n_kept, the counts of
    overlapping parts added on their columns; the other columns stay lazy. Guards
    against a skipped catch-up, dropping D/|S| or n_kept, or counts on wrong columns."""
    k, w, n_kept, scale = 3, 50, 2, 9.0
    cfg = lazy_config(n_topics=k)
    rng = np.random.default_rng(5)
    topics = LazyDriverTopics(cfg, w, None, "dense")
    expected = cir_lazy.copy(topics.state_)
    for m, h in ((1, 0.3), (2, 0.2), (3, 0.25)):
        words = [np.sort(rng.choice(w, 12, replace=False)) for _ in range(3)]
        results = [sparse_result(rng, k, ws, n_kept) for ws in words]
        columns = topics.columns(words, m=m)
        topics.step(None, m, results, words, scale, h)
        u = np.unique(np.concatenate(words))
        counts = add_sparse_counts(np.zeros((k, w), np.int64), results)[:, u]
        key = derive(cfg.seed, streams.SAMPLER, m)
        expected = cir_lazy.touch(expected, u, cfg.beta, key)
        norm = cir_lazy.normaliser(cir_lazy.moments(expected, cfg.beta), "draw", key)
        lc = cir_lazy.columns(expected, words[1], norm)
        assert np.array_equal(columns[1], np.exp(lc - lc.max(axis=0)))
        expected = cir_lazy.step(expected, u, counts * (scale / n_kept), cfg.beta, h, key)
        assert_same_state(cir_lazy.to_arrays(topics.state_), cir_lazy.to_arrays(expected))
    untouched = np.setdiff1d(np.arange(w), u)
    assert np.all(topics.state_.last[untouched] < 0.75) and np.all(topics.state_.last[u] == 0.75)


@pytest.mark.parametrize("kw, message", [
    ({"scir_step": "fast"}, "scir_step must be one of dense, lazy"),
    ({"scir_step": "lazy", "sampler": "sgrld"}, "scir_step='lazy' needs sampler='scir'"),
    ({"scir_step": "lazy", "warm_start": True, "control_variates": True},
     "scir_step='lazy' does not support control_variates"),
    ({"scir_step": "lazy", "placement": "workers"}, "scir_step='lazy' runs with the topics on"),
])
def test_settings_lazy_cannot_run_are_one_clear_error(kw, message):
    with pytest.raises(DscirError, match=message):
        small_config(**kw)


def test_lazy_stays_on_the_driver_and_old_checkpoints_resume_dense():
    from dscir.models.lda.placement import resolve_placement

    assert resolve_placement(lazy_config(placement="auto"), 10**7) == "driver"
    assert resolve_placement(small_config(placement="auto"), 10**7) == "workers"
    assert LDAConfig.PREDATED["scir_step"] == "dense" and small_config().scir_step == "dense"


def test_divergence_check_reads_the_touched_columns_and_the_row_moments():
    """``finite`` looks at what the iteration touched (O(K U)) and the O(K) row
    moments: a non-finite touched entry is seen; an untouched column is not read."""
    topics = LazyDriverTopics(lazy_config(n_topics=3), 20, None, "dense")
    topics._u = np.array([2, 5])
    assert topics.finite()
    topics.state_.log_theta[7, 1] = np.nan  # not touched this iteration
    assert topics.finite()
    topics.state_.log_theta[5, 1] = np.nan
    assert not topics.finite()
    topics.state_.log_theta[5, 1] = 0.0
    topics.state_.sums[0, 2] = np.inf
    assert not topics.finite()
