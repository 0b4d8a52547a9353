"""The dense topics held in this process (``topics.Topics``, ``placement="driver"``)
without a cluster: their columns and log phi are the plain computations on the
row normalisers the blocks give, bit for bit; a step is the sampler's step of
each block on that step's counts alone (its own stream), with nothing carried
to the next; and counts outside the topics are one clear error."""

from __future__ import annotations

import numpy as np
import pytest

from dscir.engine.blocks import Immediate
from dscir.errors import DscirError
from dscir.models.column_blocks import combine, row_lse
from dscir.models.lda.gibbs import phi_columns, phi_columns_of_state
from dscir.models.lda.tasks import SparseCounts
from dscir.models.lda.topics import Topics
from dscir.rng import derive, domains
from dscir.samplers import cir, get_sampler
from support.lda import small_config

K, W = 6, 400
WIDTH = 150  # blocks of 150 words: 0:150, 150:300, 300:400


def _log_theta(seed):
    """A state like a fitted chain's: shapes ~0.2 give log theta down to ~-80."""
    return np.log(np.random.default_rng(seed).gamma(0.2, size=(K, W)) + 1e-300) + 2.0


def _topics(sampler="scir", **kw) -> Topics:
    t = Topics(small_config(n_topics=K, beta=0.18, block_entries=K * WIDTH, **kw), W,
               get_sampler(sampler), "dense", Immediate())
    if sampler == "scir":
        state = cir.State(_log_theta(1))
        t.restore({"sampler/log_theta": state.log_theta, "phi_sum": np.zeros((K, W))}, 0)
    return t


def _sparse(seed, n=300):
    rng = np.random.default_rng(seed)
    flat = np.unique(rng.integers(0, K * W, n))
    topics, words = np.divmod(flat, W)
    order = np.argsort(words, kind="stable")
    return SparseCounts(words[order].astype(np.int32), topics[order].astype(np.int32),
                        rng.integers(1, 40, flat.size)[order], 5, 1000)


def _dense(results):
    counts = np.zeros((K, W), np.int64)
    for r in results:
        counts[r.topics, r.word_ids] += r.values
    return counts


def _norm(log_theta):
    return combine([row_lse(log_theta[:, lo:lo + WIDTH]) for lo in range(0, W, WIDTH)])


@pytest.mark.parametrize("sampler", ["scir", "sgrld"])
def test_columns_and_log_phi_are_the_plain_ones_bit_for_bit(sampler):
    t = _topics(sampler)
    assert t.blocks.in_process and t.blocks.n_blocks == 3
    log_theta = t.state_.log_theta
    log_phi = log_theta - _norm(log_theta)[:, None]
    words = [np.unique(np.random.default_rng(s).integers(0, W, 150)) for s in (2, 3)]
    for got, w in zip(t.columns(words), words):
        np.testing.assert_array_equal(got, phi_columns(log_phi, w).astype(np.float32))
    np.testing.assert_array_equal(t.log_phi(), log_phi)
    assert t.finite()


def test_shifted_columns_follow_numpy_at_infinities_and_nan():
    lt = _log_theta(4)
    lt[:, 7] = -np.inf  # a column of zeros: NaN after the shift, as in NumPy
    lt[2, 9] = np.nan  # a NaN makes its column NaN
    lt[3, 11] = -np.inf
    norm = np.random.default_rng(5).normal(size=(K, 1))
    words = np.array([1, 7, 9, 11, 399], dtype=np.int32)
    with np.errstate(invalid="ignore"):
        want = phi_columns(lt - norm, words)
        got = phi_columns_of_state(lt, norm, words)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(phi_columns_of_state(lt, norm, words.astype(np.int64)),
                                      want)
    assert np.isnan(got[:, 1:3]).all() and np.isfinite(got[:, [0, 3, 4]]).all()


def _step(t, m, results, scale=40.0, h=0.7):
    return t.step(None, m, [(r, None) for r in results], [r.word_ids for r in results],
                  scale, h)


def test_steps_are_each_blocks_sampler_step_on_fresh_counts_each_time():
    """Guards against counts carried from one step to the next, a block stepped
    with another's counts or stream, and a factor other than D / |S| / n_kept."""
    t = _topics()
    sampler, cfg = t.sampler, t.config
    log_theta = t.state_.log_theta
    factor = 40.0 / (cfg.sweeps - cfg.sweeps // 2)
    for m, seeds in enumerate([(10, 11), (12,), (13, 14)]):
        results = [_sparse(s) for s in seeds]
        counts = _dense(results) * factor
        want = np.concatenate([
            sampler.step(cir.State(log_theta[:, lo:lo + WIDTH]), cfg.beta,
                         counts[:, lo:lo + WIDTH], 0.7,
                         derive(cfg.seed, domains.SAMPLER, m, b)).log_theta
            for b, lo in enumerate(range(0, W, WIDTH))], axis=1)
        stats = _step(t, m, results)
        np.testing.assert_array_equal(t.state_.log_theta, want)
        assert stats["n_tokens"] == 1000 * len(seeds)
        log_theta = want


def test_counts_outside_the_topics_are_one_clear_error():
    t = _topics()
    bad = SparseCounts(np.array([2, 3], np.int32), np.array([0, K], np.int32),
                       np.array([3, 4]), 5, 10)
    with pytest.raises(DscirError, match="1 Gibbs count entries lie outside the 6 topics"):
        _step(t, 0, [bad])
