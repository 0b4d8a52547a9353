"""The exact position flow of gSGRHMC's splitting (dscir/samplers/_log_flow.py).

ds = r dt, dr = -c/s dt (H = r^2/2 + c log s), reflected at s = 0.

Guarantees, each with the bug it guards against (tests/mutants.py, killed):
- it is the flow: equal to a tight numerical solution of the ODE (scipy's
  DOP853, rtol 1e-12) where the path stays away from 0 (c > 0, and c below
  C_FREE: free); a wrong rate (the erfc relation's constant) fails it;
- through reflections (attractive, where the path hits 0) it keeps H exactly
  and is reversible: flow, flip r, flow again returns to the start; a
  reflection that kept falling, or a phase wrapped at the wrong end, fails it;
- log erfc (beyond erfc's underflow too) and its inverse match scipy, the inverse
  to rounding (a closing Newton step in place of the Halley step fails it).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, special

from dscir.samplers._log_flow import inv_log_erfc, log_erfc, log_flow


def ode_flow(s, r, c, t):
    sol = integrate.solve_ivp(lambda _, y: [y[1], -c / y[0]], [0.0, t], [s, r],
                              rtol=1e-12, atol=1e-14, method="DOP853")
    return sol.y[:, -1]


@pytest.mark.parametrize("s, r, c, t", [
    (1.0, 0.3, 0.4, 0.5), (2.0, -0.5, 0.9, 0.7), (0.3, 2.0, 1.0, 0.2), (4.0, -0.1, 0.05, 3.0),
    (1.5, -0.4, 1e-9, 0.5)])
def test_flow_is_the_ode_solution(s, r, c, t):
    np.testing.assert_allclose(log_flow(s, r, c, t), ode_flow(s, r, c, t), rtol=1e-8,
                               atol=1e-10)


def test_reflected_flow_keeps_the_energy_and_is_reversible():
    """Attractive cases that hit 0 once or many times within t."""
    rng = np.random.default_rng(0)
    hits = 0
    for _ in range(400):
        s, r = math.exp(rng.uniform(-6, 1)), rng.normal()
        c, t = math.exp(rng.uniform(-3, 0)), math.exp(rng.uniform(-3, 0))
        s1, r1 = log_flow(s, r, c, t)
        free = s + t * r
        hits += free < 0
        assert r1 * r1 / 2 + c * math.log(s1) == pytest.approx(r * r / 2 + c * math.log(s),
                                                                abs=1e-9)
        s2, r2 = log_flow(s1, -r1, c, t)
        if s1 > 1e-3 and s > 1e-3:  # away from 0 the flow is well conditioned
            assert (s2, -r2) == pytest.approx((s, r), rel=1e-6, abs=1e-9)
    assert hits > 100


def test_a_falling_orbit_reaches_zero_and_comes_back_up():
    """From (s, r) falling, after the time to reach 0 and as long again, the
    reflected flow is the mirror image: the same s, r negated."""
    s, r, c = 0.5, -0.3, 0.6
    k = math.sqrt(2 * c)
    m = s * math.exp((r / k) ** 2)
    t_hit = m * math.sqrt(math.pi / (2 * c)) * (2 - math.erfc(r / k))
    s1, r1 = log_flow(s, r, c, 2 * t_hit)
    assert (s1, r1) == pytest.approx((s, -r), rel=1e-9)
    assert log_flow(s, r, c, t_hit * (1 - 1e-6))[0] < 1e-2 * s


def test_log_erfc_and_its_inverse_match_scipy():
    qs = np.linspace(-10.0, 40.0, 501)
    ref = np.where(qs < 26, np.log(special.erfc(np.minimum(qs, 26))),
                   np.log(special.erfcx(qs)) - qs * qs)
    np.testing.assert_allclose([log_erfc(q) for q in qs], ref, rtol=1e-13)
    for p in np.linspace(0.0, 40.0, 81):
        assert inv_log_erfc(log_erfc(p), math.nan) == pytest.approx(p, abs=1e-12)


def test_the_inverse_is_the_root_to_rounding():
    """From Giles' start (ell >= -16), the asymptotic one or a given guess, the
    inversion ends at erfc's root to rounding (scipy's erfcinv): guards against a
    Newton step in place of the closing Halley step, or a Halley step of the wrong
    sign (errors near 1e-13 there)."""
    ells = -(10.0 ** np.linspace(-10.0, math.log10(700.0), 3000))
    ref = special.erfcinv(np.exp(ells))
    for guess in (math.nan, 1.001):
        got = np.array([inv_log_erfc(e, r * guess) for e, r in zip(ells, ref)])
        assert np.max(np.abs(got - ref) / (1.0 + ref)) < 4e-15
