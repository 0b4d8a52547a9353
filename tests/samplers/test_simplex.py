"""Beta and Dirichlet draws from (SCIR) gammas, on the log scale."""

import numpy as np
import pytest
from scipy import stats

from dscir.rng import derive
from dscir.samplers.cir import sample_stationary
from dscir.samplers.simplex import (
    beta_from_log_gammas,
    normalize_log,
    stick_breaking_log_weights,
)


def test_normalize_log_matches_direct_and_survives_underflow():
    theta = np.random.default_rng(0).gamma(1.0, size=(3, 7))
    np.testing.assert_allclose(
        np.exp(normalize_log(np.log(theta))), theta / theta.sum(-1, keepdims=True), rtol=1e-12
    )
    np.testing.assert_allclose(
        np.exp(normalize_log(np.log(theta), axis=0)), theta / theta.sum(0), rtol=1e-12
    )
    # entries whose theta underflows keep exact log ratios
    log_phi = normalize_log(np.array([-1e6, -1e6 + 2.0, -2e6]))
    top = np.log1p(np.exp(-2.0))
    np.testing.assert_allclose(log_phi[:2], [-2.0 - top, -top])
    assert log_phi[2] == pytest.approx(-1e6 - 2.0 - top, abs=1e-9)


def test_dirichlet_marginals_from_gammas():
    # phi = G / sum G with G_i ~ Gamma(alpha_i): marginal phi_i ~ Beta(alpha_i, sum - alpha_i)
    alpha = np.array([0.1, 2.0, 5.0])
    log_phi = normalize_log(sample_stationary(np.broadcast_to(alpha, (20_000, 3)), derive(1)))
    for i, a in enumerate(alpha):
        law = stats.beta(a, alpha.sum() - a)
        assert stats.kstest(np.exp(log_phi[:, i]), law.cdf).pvalue > 1e-3


@pytest.mark.parametrize("a,b", [(1.0, 4.0), (0.3, 0.3), (20.0, 2.0)])
def test_beta_from_two_gammas(a, b):
    n = 20_000
    log_v, log_1mv = beta_from_log_gammas(
        sample_stationary(np.full(n, a), derive(2, 0)),
        sample_stationary(np.full(n, b), derive(2, 1)),
    )
    np.testing.assert_allclose(np.logaddexp(log_v, log_1mv), 0.0, atol=1e-12)
    assert stats.kstest(np.exp(log_v), stats.beta(a, b).cdf).pvalue > 1e-3


def test_beta_extremes_stay_finite():
    log_v, log_1mv = beta_from_log_gammas(np.array([-1e6, 0.0]), np.array([0.0, -1e6]))
    np.testing.assert_allclose(log_v, [-1e6, 0.0])
    np.testing.assert_allclose(log_1mv, [0.0, -1e6])


def test_stick_breaking_weights():
    v = np.array([0.5, 0.25, 0.2])
    log_w, log_rest = stick_breaking_log_weights(np.log(v), np.log1p(-v))
    np.testing.assert_allclose(np.exp(log_w), [0.5, 0.125, 0.075])
    assert np.exp(log_rest) == pytest.approx(0.3)
    # rows of breaks from gammas: weights and rest always sum to one
    log_v, log_1mv = beta_from_log_gammas(
        sample_stationary(np.full((4, 6), 1.0), derive(3, 0)),
        sample_stationary(np.full((4, 6), 2.0), derive(3, 1)),
    )
    log_w, log_rest = stick_breaking_log_weights(log_v, log_1mv)
    np.testing.assert_allclose(np.exp(log_w).sum(-1) + np.exp(log_rest), 1.0, rtol=1e-12)
    assert stick_breaking_log_weights(np.zeros((2, 0)), np.zeros((2, 0)))[1].tolist() == [0.0, 0.0]
