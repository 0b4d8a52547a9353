"""The driver's topic state (``topics.DriverTopics``) without a cluster: its
step, its phi columns and log phi equal the plain computations they replace,
bit for bit (the chain digests rest on them), and its counts buffer holds no
counts from one step to the next."""

from __future__ import annotations

import numpy as np
import pytest

from dscir.errors import DscirError
from dscir.models.lda.kernels import phi_columns, phi_columns_of_state
from dscir.models.lda.tasks import GibbsResult, SparseCounts
from dscir.models.lda.topics import DriverTopics
from dscir.rng import derive
from dscir.rng import domains
from dscir.samplers import cir, get_sampler
from dscir.samplers.simplex import normalize_log
from support.lda import small_config

K, W = 6, 400


def _log_theta(seed):
    """A state like a fitted chain's: shapes ~0.2 give log theta down to ~-80."""
    return np.log(np.random.default_rng(seed).gamma(0.2, size=(K, W)) + 1e-300) + 2.0


def _topics(sampler="scir", **kw):
    t = DriverTopics(small_config(n_topics=K, beta=0.18, **kw), W, get_sampler(sampler),
                     "dense")
    if sampler == "scir":
        t.state_ = cir.State(_log_theta(1))
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


@pytest.mark.parametrize("sampler", ["scir", "sgrld"])
def test_columns_and_log_phi_are_the_plain_ones_bit_for_bit(sampler):
    t = _topics(sampler)
    words = [np.unique(np.random.default_rng(s).integers(0, W, 150)) for s in (2, 3)]
    log_phi = normalize_log(t.state_.log_theta, axis=1)
    for got, w in zip(t.columns(words), words):
        np.testing.assert_array_equal(got, phi_columns(log_phi, w))
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
    return t.step(None, m, results, [r.word_ids for r in results], scale, h)


def test_steps_are_the_sampler_step_on_fresh_counts_each_time():
    t = _topics()
    sampler, cfg = t.sampler, t.config
    state = t.state_
    for m, seeds in enumerate([(10, 11), (12,), (13, 14)]):
        results = [_sparse(s) for s in seeds]
        want = sampler.step(state, cfg.beta, _dense(results) * (40.0 / 5), 0.7,
                            derive(cfg.seed, domains.SAMPLER, m))
        stats = _step(t, m, results)
        np.testing.assert_array_equal(t.state_.log_theta, want.log_theta)
        assert stats["n_tokens"] == 1000 * len(seeds)
        assert not t._counts.any()  # cleared for the next step
        state = want


def test_dense_results_are_cleared_too_and_a_failed_step_leaves_no_counts():
    t = _topics()
    words = np.array([3, 50, 399])
    dense = GibbsResult(words, np.arange(1, 3 * K + 1).reshape(K, 3), 5, 100)
    t.config = small_config(n_topics=K, beta=0.18, warm_start=True)
    t.step(None, 0, [dense], [words], 10.0, 0.5)
    assert not t._counts.any()
    with pytest.raises(DscirError, match="step_size"):
        t.step(None, 1, [dense], [words], 10.0, -1.0)
    assert not t._counts.any()


def test_counts_outside_the_matrix_are_one_clear_error():
    t = _topics()
    bad = SparseCounts(np.array([2, W], np.int32), np.array([0, 1], np.int32),
                       np.array([3, 4]), 5, 10)
    with pytest.raises(DscirError, match="1 Gibbs count entries lie outside the 6 x 400"):
        _step(t, 0, [bad])
    assert not t._counts.any()
