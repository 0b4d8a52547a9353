"""gSGRHMC's Euler integrator piece by piece against Ma, Chen & Fox (2015), Eq. (17),
G = diag(theta)^-1 (the default splitting integrator: tests/samplers/test_integrators.py).

One step of ``dscir.samplers.sgrhmc`` with ``integrator="euler"`` from (theta, r) is

    r'     = r + eps d + sqrt(eps) n,   d = sqrt(theta) grad log p(theta)   (G^-1/2 grad)
                                             + 1 / (2 sqrt(theta))          (Gamma term)
                                             - theta r                      (friction G^-1 r)
                                        n = sqrt(2 theta) xi, xi ~ N(0, 1)  (noise 2 eps G^-1)
    theta' = theta + eps sqrt(theta) r'                                     (G^-1/2 r)

reflected at 0 (theta' -> -theta', r' -> -r'). The normal draws xi depend on the
key, not on eps, so two steps with the same key and step sizes eps and 4 eps
separate the drift from the noise exactly (Delta = r' - r):

    d = (Delta(4 eps) - 2 Delta(eps)) / (2 eps),   n = (Delta(eps) - eps d) / sqrt(eps).

Each piece is then compared with an answer computed independently of the kernel:
the gradient by central finite differences of the expanded-mean log posterior
(the Gamma log density plus the multinomial log likelihood of phi), the
noise with N(0, 2 theta), the position update and the reflection exactly, and
the joint stationary law (theta ~ Gamma(a), r ~ N(0, 1) independent: friction
and noise in balance) from many chains. The Dirichlet-posterior law that
separates the sampler from its naive variant is in test_sampler_laws.py.

Plausible bugs guarded against (tests/mutants.py, all killed): the naive
sampler without the Gamma term, (a - 0.5) -> (a - 1.0); the likelihood's
-c_k. / theta_k. gradient term dropped; identity friction (- r instead of
- theta r); the noise variance halved; the position moved with the old momentum;
the reflection keeping the momentum's sign.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

from dscir.rng import derive
from dscir.samplers import sgrhmc

K, W = 40, 50
EPS = 1e-3


def log_posterior(theta: np.ndarray, prior: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per row: Gamma(prior, 1) on every entry plus sum_w c_w log phi_w (phi = theta / theta.)."""
    log_gamma = (prior - 1.0) * np.log(theta) - theta - special.gammaln(prior)
    phi = theta / theta.sum(axis=1, keepdims=True)
    return log_gamma.sum(axis=1) + (counts * np.log(phi)).sum(axis=1)


def finite_difference_gradient(theta, prior, counts, rel: float = 1e-5) -> np.ndarray:
    """Central differences, one column at a time (the log posterior is a sum over rows)."""
    grad = np.empty_like(theta)
    for w in range(theta.shape[1]):
        h = rel * theta[:, w]
        up, down = theta.copy(), theta.copy()
        up[:, w] += h
        down[:, w] -= h
        grad[:, w] = (log_posterior(up, prior, counts)
                      - log_posterior(down, prior, counts)) / (2 * h)
    return grad


@pytest.fixture(scope="module")
def problem():
    """A small LDA-like state, far enough from 0 that no entry reflects."""
    rng = np.random.default_rng(11)
    theta = rng.gamma(3.0, 1.0, size=(K, W)) + 0.5
    r = rng.normal(0.0, 1.5, size=(K, W))
    prior = rng.choice([1e-4, 0.5, 2.0], size=(K, W))
    counts = rng.poisson(3.0, size=(K, W)) * 7.5  # minibatch counts scaled by D / |S|
    return theta, r, prior, counts


def split_step(theta, r, prior, counts, key: int = 5):
    """(drift d, noise n, one step at EPS) from two steps with the same key."""
    one = sgrhmc.step(sgrhmc.init(theta, r), prior, counts, EPS, key, integrator="euler")
    four = sgrhmc.step(sgrhmc.init(theta, r), prior, counts, 4 * EPS, key, integrator="euler")
    d = ((four.r - r) - 2 * (one.r - r)) / (2 * EPS)
    n = ((one.r - r) - EPS * d) / np.sqrt(EPS)
    return d, n, one


def test_drift_is_the_recipe_drift_with_the_finite_difference_gradient(problem):
    """d = sqrt(theta) grad log p + 1/(2 sqrt theta) - theta r, the gradient by finite
    differences. Fails without the Gamma term (naive sampler: off by 1/(2 sqrt theta)),
    without the -c_k./theta_k. likelihood term, and with identity friction."""
    theta, r, prior, counts = problem
    d, _, _ = split_step(theta, r, prior, counts)
    grad = finite_difference_gradient(theta, prior, counts)
    expected = np.sqrt(theta) * grad + 0.5 / np.sqrt(theta) - theta * r
    # the two-step separation loses ~1e-13 |r| / EPS; finite differences ~1e-9 relative
    np.testing.assert_allclose(d, expected, rtol=1e-6, atol=1e-6)
    # the Gamma term alone is >= 0.16 here: far above the tolerance
    assert np.min(0.5 / np.sqrt(theta)) > 0.1


def test_noise_is_normal_with_variance_2_eps_theta(problem):
    """The noise over sqrt(2 theta) is standard normal (2,000 entries): KS and variance.
    Fails with the variance halved (sd 0.71) or without the metric (variance 2 eps)."""
    theta, r, prior, counts = problem
    _, n, _ = split_step(theta, r, prior, counts)
    z = (n / np.sqrt(2 * theta)).ravel()
    assert stats.kstest(z, "norm").pvalue > 0.01
    # the sample variance of 2,000 normals has sd 0.032
    assert abs(z.var() - 1.0) < 0.13, z.var()


def test_position_moves_with_the_new_momentum_scaled_by_sqrt_theta(problem):
    """theta' = theta + eps sqrt(theta) r' exactly (symplectic Euler, G^-1/2 = sqrt theta).
    Fails when theta moves with the old momentum or with theta instead of sqrt(theta)."""
    theta, r, prior, counts = problem
    _, _, one = split_step(theta, r, prior, counts)
    np.testing.assert_allclose(one.theta, theta + EPS * np.sqrt(theta) * one.r, rtol=1e-13)


def test_reflection_at_zero_flips_position_and_momentum():
    """An entry pushed below 0 comes back as -(theta + eps sqrt(theta) m) with momentum
    -m: so theta' + theta = eps sqrt(theta) r' with r' > 0. Entries that stay positive
    keep theta' - theta = eps sqrt(theta) r'. Fails if the momentum keeps its sign or
    the position is not reflected."""
    theta = np.array([[1e-8, 1e-8, 2.0]])
    r = np.array([[-1e3, -2e3, 0.3]])
    prior, counts = np.full((1, 3), 1e-4), np.zeros((1, 3))
    out = sgrhmc.step(sgrhmc.init(theta, r), prior, counts, 0.01, derive(2, 0),
                      integrator="euler")
    reflected = slice(0, 2)
    assert np.all(out.theta > 0) and np.all(out.r[0, reflected] > 0)
    step = 0.01 * np.sqrt(theta) * out.r
    np.testing.assert_allclose((out.theta + theta)[0, reflected], step[0, reflected], rtol=1e-12)
    np.testing.assert_allclose((out.theta - theta)[0, 2], step[0, 2], rtol=1e-12)
    # the reflected positions are of the size of the move, not stuck at the floor
    assert np.all(out.theta[0, reflected] > 1e-4)


def test_joint_stationary_law_gamma_position_and_normal_momentum():
    """From (theta, r) = (2, 0), 2000 independent Gamma(3) targets (one row, no counts,
    so the entries do not interact): the final theta ~ Gamma(3) and r ~ N(0, 1),
    uncorrelated. The momentum's law checks the balance of friction (theta r) and
    noise (2 eps theta): halving the noise takes r's variance to ~0.5, identity
    friction (- r) to ~E[theta] = 3."""
    n_chains, a, eps, n_steps = 2000, 3.0, 0.02, 1500
    state = sgrhmc.init(np.full((1, n_chains), 2.0))
    zeros = np.zeros((1, n_chains))
    for m in range(n_steps):
        state = sgrhmc.step(state, a, zeros, eps, derive(0, m), integrator="euler")
    theta, r = state.theta[0], state.r[0]
    ks_crit = 1.63 / np.sqrt(n_chains)  # 1% critical value, 0.036
    # Measured with 4000 chains: KS theta 0.018, r 0.012; var r 1.02; corr 0.048 (the
    # Euler step's bias: at eps 0.05 var r is 1.07, at eps 0.01 it is ~1.0).
    assert stats.kstest(theta, stats.gamma(a).cdf).statistic < ks_crit + 0.02
    assert stats.kstest(r, "norm").statistic < ks_crit + 0.015
    assert abs(r.var() - 1.0) < 0.12, r.var()  # sd of the sample variance: 0.032
    assert abs(np.corrcoef(theta, r)[0, 1]) < 0.12  # bias ~0.05, sd 0.022
