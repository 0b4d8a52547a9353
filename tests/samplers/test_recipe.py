"""The complete recipe on 1-D targets, as in Fig. 2 of Ma, Chen & Fox (2015).

z = (theta, r), H = U(theta) + r^2/2, a state-dependent metric with
G(theta)^-1 = exp(theta): D = diag(0, e^theta), Q = [[0, -e^{theta/2}],
[e^{theta/2}, 0]]. gSGRHMC keeps the Gamma term (here Gamma_r = e^{theta/2}/2);
the naive state-adaptive SGHMC drops it and samples the wrong law.

This is the recipe itself (``dscir.samplers.recipe``, numpy); the numba gSGRHMC
users run (``dscir.samplers.sgrhmc``) is checked against its naive variant in
tests/samplers/test_sampler_laws.py.
"""

import numpy as np
import pytest

from dscir.samplers import recipe

TARGETS = {
    "gaussian": (lambda t: t**2 / 2, lambda t: t),
    "double-well": (lambda t: t**4 - 2 * t**2, lambda t: 4 * t**3 - 4 * t),
}


def D(z):
    out = np.zeros((z.shape[0], 2, 2))
    out[:, 1, 1] = np.exp(z[:, 0])
    return out


def Q(z):
    out = np.zeros((z.shape[0], 2, 2))
    s = np.exp(z[:, 0] / 2)
    out[:, 0, 1], out[:, 1, 0] = -s, s
    return out


def ks_to_target(samples, U):
    grid = np.linspace(-6, 6, 20001)
    dens = np.exp(-(U(grid) - U(grid).min()))
    cdf = np.cumsum(dens)
    cdf /= cdf[-1]
    x = np.sort(samples)
    f = np.interp(x, grid, cdf)
    n = x.size
    return max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))


def run(U, dU, gamma, seed=0, n_chains=2000, n_steps=3000, eps=0.005):
    rng = np.random.default_rng(seed)
    z = np.column_stack([rng.standard_normal(n_chains) * 0.5, np.zeros(n_chains)])
    grad_H = lambda z: np.column_stack([dU(z[:, 0]), z[:, 1]])  # noqa: E731
    for _ in range(n_steps):
        z = recipe.step(z, grad_H, D, Q, eps, rng, gamma=gamma)
    return z[:, 0]


@pytest.mark.parametrize("target", TARGETS)
def test_gsgrhmc_matches_target_and_naive_is_biased(target):
    U, dU = TARGETS[target]
    good = ks_to_target(run(U, dU, gamma=None), U)
    naive = ks_to_target(run(U, dU, gamma=False), U)
    # 2000 independent final states: the KS 1% critical value is 0.036.
    assert good < 0.05, good
    assert naive > 0.1 and naive > 3 * good, (good, naive)


def test_finite_difference_gamma_matches_the_analytic_term():
    z = np.array([[0.3, 1.0], [-1.2, -0.5]])
    g = recipe.gamma_fd(D, Q, z)
    assert np.allclose(g[:, 0], 0.0, atol=1e-8)
    assert np.allclose(g[:, 1], np.exp(z[:, 0] / 2) / 2, rtol=1e-6)
