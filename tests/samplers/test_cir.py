"""SCIR: the exact CIR transition and the properties that follow from it
(Baker et al. 2018): exact Gamma(a, 1) stationarity for any h, the one-step
noncentral chi-square law, composition of steps, Corollary 4.2 under a noisy
a_hat, tiny shapes, reproducibility and validation."""

import numba
import numpy as np
import pytest
from scipy import stats

from dscir.errors import DscirError
from dscir.rng import derive
from dscir.samplers import cir

P_MIN = 1e-3  # KS / chi-square p-values with fixed seeds must exceed this


def exact_log_gamma(a, n, seed):
    """log Gamma(a) draws from scipy (an independent generator)."""
    return stats.loggamma(a).rvs(n, random_state=np.random.default_rng(seed))


@pytest.mark.parametrize("h", [0.01, 1.0, 10.0])
@pytest.mark.parametrize("a", [1e-4, 0.01, 0.1, 1.0, 100.0])
def test_gamma_is_stationary_for_any_h(a, h):
    # 20,000 independent chains, each started from an exact Gamma(a) draw: if the
    # transition preserves Gamma(a), after any number of steps the chains are
    # 20,000 iid Gamma(a) values, which is what KS assumes. Logs are compared
    # with scipy's loggamma (the law of log G), so a = 1e-4 does not underflow.
    n = 20_000
    state = cir.init_log(exact_log_gamma(a, n, seed=1))
    for m in range(3):
        state = cir.step(state, a, np.zeros(n), h, derive(11, m))
    assert np.all(np.isfinite(state.log_theta))
    assert stats.kstest(state.log_theta, stats.loggamma(a).cdf).pvalue > P_MIN


def test_mixed_shapes_along_a_row_are_each_stationary():
    # per-entry shapes as in a topic row: the prior alone (repeated) and
    # prior + counts of all sizes, interleaved, so the kernel switches between
    # its small-shape and large-shape draws; probability integral transforms
    # u = F_a(theta) of all entries together must be Uniform(0, 1)
    n, prior = 30_000, 0.1
    rng = np.random.default_rng(3)
    counts = np.where(rng.random(n) < 0.5, 0.0, rng.choice([0.05, 0.3, 0.4, 2.0, 50.0], n))
    a = prior + counts
    state = cir.init_log(stats.loggamma(a).rvs(random_state=rng))
    for m in range(2):
        state = cir.step(state, prior, counts, 0.7, derive(19, m))
    assert stats.kstest(stats.loggamma(a).cdf(state.log_theta), "uniform").pvalue > P_MIN


@pytest.mark.parametrize("h", [0.01, 1.0, 10.0])
@pytest.mark.parametrize("a", [0.1, 0.5, 1.0, 7.3, 100.0])
@pytest.mark.parametrize("theta0", [2.0, 1e4])
def test_one_step_is_the_noncentral_chi_square(a, h, theta0):
    # Stationarity alone would also hold for "theta' = theta"; this checks the
    # law of one step from a fixed point: (1 - e^-h)/2 times a noncentral
    # chi-square, 2a degrees of freedom, noncentrality 2 theta e^-h / (1 - e^-h).
    n = 20_000
    out = np.exp(cir.transition(np.full(n, np.log(theta0)), a, h, derive(12)))
    scale = -np.expm1(-h)
    law = stats.ncx2(2 * a, 2 * theta0 * np.exp(-h) / scale, scale=scale / 2)
    assert stats.kstest(out, law.cdf).pvalue > P_MIN


def test_transitions_compose():
    n = 20_000
    h1, h2 = 0.3, 0.7
    for a in [0.2, 3.0]:
        start = np.full(n, np.log(1.5))
        once = cir.transition(start, a, h1 + h2, derive(13, 0))
        twice = cir.transition(cir.transition(start, a, h1, derive(13, 1)), a, h2, derive(13, 2))
        assert stats.ks_2samp(once, twice).pvalue > P_MIN
        # and the comparison has power: one step of h1 alone is clearly different
        assert stats.ks_2samp(once, cir.transition(start, a, h1, derive(13, 3))).pvalue < 1e-6


@pytest.mark.parametrize("h,n_steps", [(0.5, 10), (0.1, 5), (2.0, 3)])
def test_noisy_a_hat_matches_corollary_4_2(h, n_steps):
    # a_hat = prior + counts with counts = 4 Exp(1), fresh for every chain and
    # step: E[a_hat] = a = 5, Var[a_hat] = 16. Corollary 4.2 (DESIGN.md):
    #   E[theta_M] = theta0 e^{-Mh} + a (1 - e^{-Mh})
    #   Var[theta_M] = a (1 - e^{-Mh})^2 + 2 theta0 e^{-Mh} (1 - e^{-Mh})
    #                  + (1 - e^{-2Mh}) (1 - e^{-h}) / (1 + e^{-h}) Var[a_hat]
    n, prior, theta0 = 400_000, 1.0, 0.3
    a, var_a_hat = prior + 4.0, 16.0
    rng = np.random.default_rng(5)
    state = cir.init(np.full(n, theta0))
    for m in range(n_steps):
        state = cir.step(state, prior, 4.0 * rng.exponential(size=n), h, derive(14, m))
    theta = state.theta
    decay = np.exp(-n_steps * h)
    mean = theta0 * decay + a * (1 - decay)
    var_cir = a * (1 - decay) ** 2 + 2 * theta0 * decay * (1 - decay)
    var = var_cir + (1 - decay**2) * (-np.expm1(-h)) / (1 + np.exp(-h)) * var_a_hat
    # tolerances: 4 standard errors, from the sample's own moments
    centred = theta - theta.mean()
    se_mean = np.sqrt(var / n)
    se_var = np.sqrt((np.mean(centred**4) - np.mean(centred**2) ** 2) / n)
    assert abs(theta.mean() - mean) < 4 * se_mean
    assert abs(theta.var() - var) < 4 * se_var
    # the noise term is resolved: ignoring it would fail the variance check
    assert (var - var_cir) > 8 * se_var


@pytest.mark.parametrize("prior", [1e-4, 1e-6])
def test_tiny_shapes_stay_finite_for_1e5_steps(prior):
    # a vector of 300 entries with sparse, occasionally large counts: entries
    # fall far below 1e-308 and climb back; the log state must stay finite
    n, n_steps = 300, 100_000
    rng = np.random.default_rng(6)
    pool = np.where(rng.random((64, n)) < 0.01, rng.exponential(50.0, (64, n)), 0.0)
    state = cir.init(np.ones(n))
    lowest, highest = np.inf, -np.inf
    for m in range(n_steps):
        state = cir.step(state, prior, pool[m % 64], 0.5, derive(15, m))
        lo, hi = state.log_theta.min(), state.log_theta.max()
        assert np.isfinite(lo) and np.isfinite(hi)
        lowest, highest = min(lowest, lo), max(highest, hi)
    assert lowest < np.log(np.finfo(float).tiny) - 1000  # the underflow regime was visited
    assert highest > np.log(10.0)  # and the chains came back up with counts


def test_same_key_same_draws_and_keys_differ():
    lt = np.log(np.random.default_rng(7).gamma(1.0, size=(4, 50)))
    counts = np.arange(200.0).reshape(4, 50)
    a = cir.step(cir.State(lt), 0.3, counts, 0.5, derive(1, 2))
    b = cir.step(cir.State(lt), 0.3, counts, 0.5, derive(1, 2))
    c = cir.step(cir.State(lt), 0.3, counts, 0.5, derive(1, 3))
    np.testing.assert_array_equal(a.log_theta, b.log_theta)
    assert np.all(a.log_theta != c.log_theta)


def test_independent_of_thread_count_and_of_other_rows():
    lt = np.log(np.random.default_rng(8).gamma(0.5, size=(64, 2048)))  # parallel kernel
    counts = np.where(np.random.default_rng(9).random(lt.shape) < 0.1, 30.0, 0.0)
    key = derive(16)
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = cir.step(cir.State(lt), 0.1, counts, 0.5, key).log_theta
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        two = cir.step(cir.State(lt), 0.1, counts, 0.5, key).log_theta
    finally:
        numba.set_num_threads(threads)
    np.testing.assert_array_equal(one, two)
    # a row's draws depend on its index only: the first rows alone (the serial
    # kernel) reproduce the first rows of the whole matrix
    head = cir.step(cir.State(lt[:3]), 0.1, counts[:3], 0.5, key).log_theta
    np.testing.assert_array_equal(head, one[:3])


def test_shapes_prior_arrays_and_inputs_untouched():
    rng = np.random.default_rng(10)
    lt = np.log(rng.gamma(1.0, size=(2, 3, 5)))
    counts = rng.exponential(size=(2, 3, 5))
    lt_copy, counts_copy = lt.copy(), counts.copy()
    scalar = cir.step(cir.State(lt), 0.5, counts, 0.2, derive(17))
    per_word = cir.step(cir.State(lt), np.full(5, 0.5), counts, 0.2, derive(17))
    np.testing.assert_array_equal(scalar.log_theta, per_word.log_theta)
    assert scalar.log_theta.shape == (2, 3, 5)
    np.testing.assert_array_equal(lt, lt_copy)
    np.testing.assert_array_equal(counts, counts_copy)
    assert cir.step(cir.init(2.0), 1.0, 0.0, 0.1, 1).log_theta.shape == ()
    np.testing.assert_array_equal(cir.State(np.array([0.0, -800.0])).theta, [1.0, 0.0])


def test_sample_stationary_is_gamma():
    a = np.array([[1e-3], [0.7], [30.0]]) * np.ones((3, 20_000))
    log_g = cir.sample_stationary(a, derive(18))
    for row, shape in zip(log_g, [1e-3, 0.7, 30.0]):
        assert stats.kstest(row, stats.loggamma(shape).cdf).pvalue > P_MIN


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"prior": 0.0}, "prior must be positive"),
        ({"prior": np.nan}, "prior must be positive"),
        ({"prior": np.ones(3)}, "does not broadcast"),
        ({"counts": np.zeros(5)}, "counts have shape"),
        ({"counts": np.array([0.0, -1.0, 0.0, 0.0])}, "1 of 4 entries"),
        ({"counts": np.array([0.0, np.inf, 0.0, 0.0])}, "1 of 4 entries"),
        ({"step_size": 0.0}, "step_size must be a positive number"),
        ({"step_size": np.nan}, "step_size must be a positive number"),
        ({"step_size": "0.1"}, "step_size must be a positive number"),
        ({"key": -1}, "stream key"),
        ({"key": 1.5}, "stream key"),
    ],
)
def test_step_validation(kwargs, match):
    args = {"prior": 0.5, "counts": np.zeros(4), "step_size": 0.1, "key": 3} | kwargs
    with pytest.raises(DscirError, match=match):
        cir.step(cir.init(np.ones(4)), **args)


def test_init_validation():
    with pytest.raises(DscirError, match="theta0 must be positive"):
        cir.init(np.array([1.0, 0.0]))
    with pytest.raises(DscirError, match="log_theta0 must be finite"):
        cir.init_log(np.array([1.0, -np.inf]))
    with pytest.raises(DscirError, match="does not broadcast"):
        cir.transition(np.zeros((2, 3)), np.ones(2), 0.1, 1)
