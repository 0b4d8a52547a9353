"""The DP concentration's full conditional: alpha | v ~ Gamma(shape + K, rate - log_rest).

test_dpmm.py's alpha test draws alpha from its prior, sticks given alpha, then
alpha | sticks, and checks the prior comes back: a sampler that ignores the
sticks and draws alpha from its prior passes it too. These tests compare
draws with the exact conditional at FIXED sticks, for two different sticks, so
that alpha must depend on them.

Plausible bug guarded against (see tests/mutants.py): ``sample_alpha`` drawing
from the prior Gamma(shape, rate), ignoring K and log_rest = sum_j log(1 - v_j).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dscir.models.mixtures import dp as dpmm
from dscir.rng import derive
from dscir.samplers import get_sampler

SHAPE, RATE, K = 2.0, 3.0, 5
N = 4000  # KS 1% critical value 0.026


@pytest.mark.parametrize("log_rest", [-0.5, -12.0])
def test_sample_alpha_is_the_exact_conditional(log_rest):
    """Draws at one log_rest ~ Gamma(SHAPE + K, RATE - log_rest) (KS, mean): the
    two log_rest values give means 2.0 and 0.47, the prior's is 0.67."""
    draws = np.array([dpmm.sample_alpha(log_rest, K, SHAPE, RATE, derive(5, r))
                      for r in range(N)])
    exact = stats.gamma(SHAPE + K, scale=1.0 / (RATE - log_rest))
    assert stats.kstest(draws, exact.cdf).statistic < 0.035
    assert abs(draws.mean() / exact.mean() - 1) < 4 * exact.std() / exact.mean() / math.sqrt(N)


def test_global_step_draws_alpha_given_the_new_sticks():
    """global_step's alpha, given the sticks it has just drawn: alpha x (rate -
    log_rest) ~ Gamma(shape + K, 1) whatever the sticks (heavily occupied sticks
    move log_rest far from the prior's)."""
    scir = get_sampler("scir")
    occupancy = np.array([400.0, 300.0, 200.0, 100.0, 50.0])
    counts = np.ones((K, 3))
    scaled, rests = [], []
    for r in range(1500):
        sticks = scir.init(np.ones((K, 2)))
        theta = scir.init(np.ones((K, 3)))
        sticks, _, alpha = dpmm.global_step(
            scir, sticks, theta, 1.0, occupancy, counts, a0=0.5, alpha_prior=(SHAPE, RATE),
            step_sizes=(math.inf, math.inf), keys=[derive(6, r, i) for i in range(3)])
        _, log_rest = dpmm.log_weights(sticks.log_theta)
        rests.append(log_rest)
        scaled.append(alpha * (RATE - log_rest))
    assert np.std(rests) > 0.5  # the sticks vary, and the conditional with them
    assert stats.kstest(scaled, stats.gamma(SHAPE + K).cdf).statistic < 0.045
