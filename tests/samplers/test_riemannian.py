"""SGRLD, gSGRHMC, SGLD and SGHMC on a Dirichlet posterior with exact (full-data) counts."""

import numpy as np
import pytest

from dscir.errors import DscirError
from dscir.rng import derive
from dscir.samplers import get_sampler

PRIOR = 1.0
COUNTS = np.array([30.0, 20.0, 10.0])
# (sampler, step size, steps, prior). In the expanded mean the total theta.
# is Gamma(3 prior): with prior 1 it comes close to 0, where the identity-metric
# samplers (SGLD, SGHMC) are unstable - the weakness the Riemannian metric
# removes - so they are checked with prior 5.
CASES = [("sgrld", 0.01, 1500, 1.0), ("gsgrhmc", 0.01, 4000, 1.0),
         ("sgld", 0.01, 6000, 5.0), ("sghmc", 0.01, 6000, 5.0)]


def run(name: str, eps: float, n_steps: int, n_chains: int = 200, seed: int = 0,
        prior: float = PRIOR):
    sampler = get_sampler(name)
    theta0 = np.random.default_rng(seed).gamma(5.0, 5.0, size=(n_chains, 3))
    state = sampler.init(theta0)
    counts = np.tile(COUNTS, (n_chains, 1))
    phis = []
    for m in range(n_steps):
        state = sampler.step(state, prior, counts, eps, derive(seed, m))
        if m >= n_steps // 2:
            lt = state.log_theta
            phis.append(np.exp(lt - np.logaddexp.reduce(lt, axis=1, keepdims=True)))
    return state, np.array(phis)


@pytest.mark.parametrize("name, eps, n_steps, prior", CASES)
def test_posterior_mean_of_phi(name, eps, n_steps, prior):
    state, phis = run(name, eps, n_steps, prior=prior)
    mean = (prior + COUNTS) / (3 * prior + COUNTS.sum())  # Dirichlet(prior + n) mean
    assert np.all(np.isfinite(state.log_theta)) and np.all(state.theta > 0)
    # 200 chains x n_steps/2 kept steps; autocorrelated, so a loose-but-meaningful 0.02
    # (the prior mean 1/3 is >= 0.1 away from phi_1's posterior mean).
    assert np.allclose(phis.mean(axis=(0, 1)), mean, atol=0.02), phis.mean(axis=(0, 1))


@pytest.mark.parametrize("name, eps, _, __", CASES)
def test_reproducible_and_inputs_untouched(name, eps, _, __):
    sampler = get_sampler(name)
    theta0 = np.full((4, 3), 2.0)
    state = sampler.init(theta0)
    counts = np.tile(COUNTS, (4, 1))
    before = [x.copy() for x in state]
    a = sampler.step(state, PRIOR, counts, eps, 7)
    b = sampler.step(state, PRIOR, counts, eps, 7)
    c = sampler.step(state, PRIOR, counts, eps, 8)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not np.array_equal(a.theta, c.theta)
    assert all(np.array_equal(x, y) for x, y in zip(state, before))


@pytest.mark.parametrize("name", ["sgrld", "gsgrhmc"])
def test_tiny_prior_stays_positive(name):
    sampler = get_sampler(name)
    state = sampler.init(np.full((5, 50), 0.01))
    counts = np.zeros((5, 50))
    counts[:, :3] = 100.0
    for m in range(2000):
        state = sampler.step(state, 1e-4, counts, 0.01, derive(1, m))
    assert np.all(state.theta > 0) and np.all(np.isfinite(state.log_theta))


def test_bad_arguments():
    sgrld = get_sampler("sgrld")
    state = sgrld.init(np.ones((2, 3)))
    with pytest.raises(DscirError, match="counts have shape"):
        sgrld.step(state, 1.0, np.ones(3), 0.1, 0)
    with pytest.raises(DscirError, match="step_size"):
        sgrld.step(state, 1.0, np.ones((2, 3)), -1.0, 0)
    with pytest.raises(DscirError, match="prior"):
        sgrld.step(state, 0.0, np.ones((2, 3)), 0.1, 0)
    with pytest.raises(DscirError, match="theta0"):
        sgrld.init(np.array([1.0, -1.0]))
    with pytest.raises(DscirError, match="unknown sampler"):
        get_sampler("nuts")
