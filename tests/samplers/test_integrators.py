"""gSGRHMC's and SGHMC's splitting integrator (docs/integrators.md) against exact laws.

One "splitting" step from (theta, r), force at the step's start:

    B  m = r + eps F(theta)
    A  position flow for eps/2                          (reflected at 0)
    O  r' = e^{-eps gamma(v)} m + sqrt(1 - e^{-2 eps gamma(v)}) xi
    A  position flow for eps/2                          (reflected at 0)

SGHMC: F = grad log p, A: theta <- theta + (eps/2) r, gamma = C. gSGRHMC, in
s = 2 sqrt(theta): F = -sqrt(theta)(1 + c_k./theta_k.) (the smooth part), A the
exact flow of ds = r dt, dr = -(1 - 2a)/s dt (``log_flow``, tested in
test_log_flow.py), gamma = theta = s^2/4.

Guarantees, each with the bug it guards against (tests/mutants.py, killed):
- the O step is the exact Ornstein-Uhlenbeck transition: given (theta, r) the
  new momentum is normal with mean e^{-eps gamma} m and variance
  1 - e^{-2 eps gamma}, at eps gamma near 1 and 5-6 (where the Euler friction
  factor 1 - eps gamma is about -5). A wrong O variance (1 - e^{-eps gamma}) fails it;
- the joint stationary law (Gamma position, N(0, 1) momentum) from many chains
  at step sizes where the Euler step diverges or is visibly biased (asserted
  too, so the tests show what they claim). Fails without the Gamma term
  ((a - 1/2) -> (a - 1)) and with an asymmetric composition (both position
  moves before the O step);
- below a = 1/2 (the density of s singular at 0): chains started in the exact
  law stay in it (Gamma(0.3), where the linear position move's KS was 0.18-0.2
  and Euler's is 0.14 at eps 0.2). Fails with the flow's rate wrong.

KS tolerances: the 1 % critical value 1.63 / sqrt(n) plus the splitting's
measured bias (seeds 0 and 1, recorded next to each case).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import dscir
from dscir.errors import DscirError
from dscir.rng import derive
from dscir.samplers import get_sampler, sghmc, sgrhmc
from dscir.samplers._log_flow import log_flow

N = 2000
KS_1PCT = 1.63 / np.sqrt(N)  # 0.036


def chains(name: str, integrator: str, prior, counts: np.ndarray, eps: float, n_steps: int,
           seed: int = 0, **options):
    """Final states of N independent chains (one row each) from theta = 2, r = 0."""
    sampler = get_sampler(name, integrator=integrator, **options)
    state = sampler.init(np.full((N, counts.size), 2.0))
    c = np.tile(np.asarray(counts, np.float64), (N, 1))
    with np.errstate(all="ignore"):
        for m in range(n_steps):
            state = sampler.step(state, prior, c, eps, derive(seed, m))
    return state


def ks_gamma(x: np.ndarray, a: float) -> float:
    return stats.kstest(x, stats.gamma(a).cdf).statistic


def assert_normal_momentum(r: np.ndarray, tol: float = KS_1PCT + 0.02):
    assert stats.kstest(r, "norm").statistic < tol
    assert abs(r.var() - 1.0) < 0.15, r.var()  # sd of the sample variance: 0.032


@pytest.mark.parametrize("eps", [0.2, 1.0])
def test_gsgrhmc_o_step_is_the_exact_ou_transition(eps):
    """4,000 entries of one row, all at theta = 5.5, r = 0.7, prior 6, no counts (the
    entries do not interact): r' given the step's B and A moves is N(e^{-eps v} m,
    1 - e^{-2 eps v}); theta' is v + (eps/2) sqrt(v) r' exactly."""
    n, theta0, r0, a = 4000, 5.5, 0.7, 6.0
    out = sgrhmc.step(sgrhmc.init(np.full((1, n), theta0), np.full((1, n), r0)), a,
                      np.zeros((1, n)), eps, derive(9, 1))
    m = r0 + eps * ((a - 0.5) / np.sqrt(theta0) - np.sqrt(theta0))
    v = theta0 + 0.5 * eps * np.sqrt(theta0) * m
    assert v > 0 and eps * v > 1.0  # no reflection; eps theta = 1.1 and 6.3 here
    z = (out.r[0] - np.exp(-eps * v) * m) / np.sqrt(1.0 - np.exp(-2.0 * eps * v))
    assert stats.kstest(z, "norm").pvalue > 0.01
    assert abs(z.mean()) < 4 / np.sqrt(n) and abs(z.var() - 1.0) < 4 * np.sqrt(2.0 / n)
    moved = v + 0.5 * eps * np.sqrt(v) * out.r[0]
    assert np.all(moved > 0)  # no reflection
    np.testing.assert_allclose(out.theta[0], moved, rtol=1e-12)


def test_gsgrhmc_o_step_below_one_half_between_two_exact_flows():
    """Prior 0.3 (the flow branch): 4,000 entries at theta = 1.2, r = -0.4, eps = 1.
    Flowing the output back for eps/2 (``log_flow`` with r negated) lands every
    entry on the first flow's end u, with the O step's momentum there, whose law
    is N(e^{-eps v} m, 1 - e^{-2 eps v})."""
    n, theta0, r0, a, eps = 4000, 1.2, -0.4, 0.3, 1.0
    out = sgrhmc.step(sgrhmc.init(np.full((1, n), theta0), np.full((1, n), r0)), a,
                      np.zeros((1, n)), eps, derive(9, 3))
    c, st = 1.0 - 2.0 * a, np.sqrt(theta0)
    u, m = log_flow(2.0 * st, r0 - eps * st, c, eps / 2)
    v = u * u / 4
    back = np.array([log_flow(2.0 * np.sqrt(t), -x, c, eps / 2)
                     for t, x in zip(out.theta[0], out.r[0])])
    np.testing.assert_allclose(back[:, 0], u, rtol=1e-6)
    z = (-back[:, 1] - np.exp(-eps * v) * m) / np.sqrt(1.0 - np.exp(-2.0 * eps * v))
    assert stats.kstest(z, "norm").pvalue > 0.01
    assert abs(z.mean()) < 4 / np.sqrt(n) and abs(z.var() - 1.0) < 4 * np.sqrt(2.0 / n)


@pytest.mark.parametrize("eps, friction", [(0.2, 5.0), (0.5, 12.0)])
def test_sghmc_o_step_is_the_exact_ou_transition(eps, friction):
    """As above for SGHMC (identity metric, friction C): r' ~ N(e^{-eps C} m,
    1 - e^{-2 eps C}) at eps C = 1 and 6; theta' = v + (eps/2) r'."""
    n, theta0, r0, a = 4000, 4.0, -0.6, 5.0
    out = sghmc.step(sghmc.init(np.full((1, n), theta0), np.full((1, n), r0)), a,
                     np.zeros((1, n)), eps, derive(9, 2), friction=friction)
    m = r0 + eps * ((a - 1.0) / theta0 - 1.0)
    v = theta0 + 0.5 * eps * m
    z = (out.r[0] - np.exp(-eps * friction) * m) / np.sqrt(1.0 - np.exp(-2 * eps * friction))
    assert stats.kstest(z, "norm").pvalue > 0.01
    assert abs(z.mean()) < 4 / np.sqrt(n) and abs(z.var() - 1.0) < 4 * np.sqrt(2.0 / n)
    np.testing.assert_allclose(out.theta[0], v + 0.5 * eps * out.r[0], rtol=1e-12)


def test_gsgrhmc_joint_law_where_euler_is_biased():
    """Gamma(3) at eps = 0.2 (500 steps): splitting KS theta 0.020 / 0.023, r 0.020 /
    0.024, var r 1.03 / 0.96 (seeds 0 / 1); Euler KS theta 0.133, var r 1.59."""
    a, eps, steps = 3.0, 0.2, 500
    state = chains("gsgrhmc", "splitting", a, np.zeros(1), eps, steps)
    assert ks_gamma(state.theta[:, 0], a) < KS_1PCT + 0.02
    assert_normal_momentum(state.r[:, 0])
    euler = chains("gsgrhmc", "euler", a, np.zeros(1), eps, steps)
    assert ks_gamma(euler.theta[:, 0], a) > 0.1


def test_gsgrhmc_joint_law_where_euler_diverges():
    """Gamma(10) at eps = 0.5 (320 steps; eps theta up to ~10): Euler's chains leave
    the doubles; splitting KS theta 0.039 / 0.052, mean 9.75 / 9.76, r 0.022 / 0.013,
    var r 1.00 / 1.01 (its first-order bias is visible at this eps, bounded)."""
    a, eps, steps = 10.0, 0.5, 320
    euler = chains("gsgrhmc", "euler", a, np.zeros(1), eps, steps)
    assert not np.all(np.isfinite(euler.r))  # (its theta is then stuck at the floor)
    state = chains("gsgrhmc", "splitting", a, np.zeros(1), eps, steps)
    theta = state.theta[:, 0]
    assert ks_gamma(theta, a) < KS_1PCT + 0.04
    assert abs(theta.mean() - a) < 0.05 * a
    assert_normal_momentum(state.r[:, 0])


def test_sghmc_joint_law_where_euler_diverges():
    """Gamma(5), friction 5, eps = 0.5 (eps C = 2.5 > 2; 160 steps): Euler's theta
    grows without bound (mean ~1e28); splitting KS theta 0.025 / 0.018, r 0.019 /
    0.020, var r 0.97 / 0.98."""
    a, eps, steps = 5.0, 0.5, 160
    euler = chains("sghmc", "euler", a, np.zeros(1), eps, steps, friction=5.0)
    assert not np.all(np.abs(euler.theta) < 1e6)
    state = chains("sghmc", "splitting", a, np.zeros(1), eps, steps, friction=5.0)
    assert ks_gamma(state.theta[:, 0], a) < KS_1PCT + 0.02
    assert_normal_momentum(state.r[:, 0])


def test_gsgrhmc_dirichlet_posterior_at_a_large_step():
    """Prior 1, counts (30, 20, 10), eps = 0.15 (600 steps): phi ~ Dirichlet(31, 21, 11)
    and theta. ~ Gamma(3). Splitting KS of phi_1 0.023 / 0.030, phi_3 0.027 / 0.022,
    total 0.059 / 0.039; Euler's phi_1 0.062 / 0.053, and it diverges at 0.2."""
    counts = np.array([30.0, 20.0, 10.0])
    theta = chains("gsgrhmc", "splitting", 1.0, counts, 0.15, 600).theta
    total = theta.sum(axis=1)
    phi = theta / total[:, None]
    assert stats.kstest(phi[:, 0], stats.beta(31, 32).cdf).statistic < KS_1PCT + 0.02
    assert stats.kstest(phi[:, 2], stats.beta(11, 52).cdf).statistic < KS_1PCT + 0.02
    assert ks_gamma(total, 3.0) < KS_1PCT + 0.045


@pytest.mark.parametrize("eps", [0.05, 0.2])
def test_gsgrhmc_keeps_a_singular_gamma_law(eps):
    """Gamma(0.3) (the density of s = 2 sqrt(theta) is s^{-0.4} e^{-s^2/4}), 4,000
    chains started in the exact joint law, 40 / eps steps: splitting KS theta 0.009 /
    0.013 (eps 0.05 / 0.2, seed 0), var r 0.98 / 0.99; Euler's KS 0.076 / 0.138."""
    n, a = 4000, 0.3
    rng = np.random.default_rng(5)
    theta0, r0 = rng.gamma(a, size=(n, 1)).clip(1e-300), rng.normal(size=(n, 1))
    ends = {}
    for integrator in ("splitting", "euler"):
        sampler = get_sampler("gsgrhmc", integrator=integrator)
        state = sampler.init(theta0, r0)
        with np.errstate(all="ignore"):
            for m in range(int(40 / eps)):
                state = sampler.step(state, a, np.zeros((n, 1)), eps, derive(0, m))
        ends[integrator] = state
    ks = 1.63 / np.sqrt(n)  # 0.026
    assert ks_gamma(ends["splitting"].theta[:, 0], a) < ks
    assert stats.kstest(ends["splitting"].r[:, 0], "norm").statistic < ks
    assert ks_gamma(ends["euler"].theta[:, 0], a) > 0.06


def test_integrator_option_reaches_the_step_and_bad_names_are_one_error():
    """The option selects the kernel (same key, different chains); an unknown
    name is one error naming the choices, from the sampler, LDA and the step."""
    theta = np.full((2, 3), 2.0)
    for name in ("gsgrhmc", "sghmc"):
        default, euler = get_sampler(name), get_sampler(name, integrator="euler")
        assert default.hyperparameters["integrator"] == "splitting"
        a = default.step(default.init(theta), 1.0, np.ones((2, 3)), 0.1, 3)
        b = euler.step(euler.init(theta), 1.0, np.ones((2, 3)), 0.1, 3)
        assert not np.array_equal(a.theta, b.theta)
        with pytest.raises(DscirError, match="integrator must be one of splitting, euler"):
            get_sampler(name, integrator="leapfrog")
    with pytest.raises(DscirError, match="integrator must be one of"):
        sgrhmc.step(sgrhmc.init(theta), 1.0, np.ones((2, 3)), 0.1, 3, integrator="rk4")
    cfg = dscir.LDA(sampler="gsgrhmc", sampler_options={"integrator": "euler"},
                    policy="reference").chain_config()
    assert cfg.sampler_options == {"integrator": "euler"}
    with pytest.raises(DscirError, match="integrator must be one of"):
        dscir.LDA(sampler="sghmc", sampler_options={"integrator": "midpoint"},
                  policy="reference").chain_config()


def test_cli_flags_fill_the_sampler_options():
    """--friction and --integrator together make one sampler_options dict; a bad
    value is named by its flag."""
    import argparse

    from dscir.api.lda_params import PARAMS, SAMPLER_OPTIONS
    from dscir.cli.lda import add_fit_parser
    from dscir.cli.params import estimator_kwargs

    parser = argparse.ArgumentParser()
    add_fit_parser(parser.add_subparsers())

    def options(*argv):
        args = parser.parse_args(["lda", "store", *argv])
        return estimator_kwargs(args, PARAMS, entries=SAMPLER_OPTIONS)["sampler_options"]

    assert options("--friction", "3", "--integrator", "euler") == \
        {"friction": 3.0, "integrator": "euler"}
    assert options() is None
    with pytest.raises(DscirError, match="^--friction must be > 0, got -1.0"):
        options("--friction", "-1")
