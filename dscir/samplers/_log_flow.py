"""The exact flow of gSGRHMC's position move together with the singular part of its force.

In s = 2 sqrt(theta) gSGRHMC's position move is ds = r dt, and the force's term
(a - 1/2)/sqrt(theta) is (2a - 1)/s. For a < 1/2 together they are the
Hamiltonian system (docs/integrators.md derives its solution)

    ds = r dt,   dr = -c / s dt,   H = r^2/2 + c log s,   c = 1 - 2a > 0.

With q = r / sqrt(2c), M = s e^{q^2} is conserved (the orbit's height) and
erfc(q(t)) = erfc(q0) + sqrt(2c/pi) t / M. The particle reaches s = 0 when erfc
reaches 2 and is reflected there (s -> -s, r -> -r: q goes from -inf to +inf),
so the reflected flow is erfc(q(t)) = (...) mod 2.

Positions are s = M e^{-q^2} from the solved q, so H is kept exactly. c below
``C_FREE`` is the free flow (q^2 would lose the digits of log s). Positions
below ``S_MIN`` (theta below ~5e-301) are held at S_MIN with their momentum
from the same conserved M, so the orbit's height is kept. An orbit reflected
more than ``PHASE_LOST`` times in one step (its height M is then below
~1e-12 t) has lost its phase to rounding and is put at its apex (s = M, r = 0).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

SQRT_PI = math.sqrt(math.pi)
LOG2 = math.log(2.0)
S_MIN = 1e-150
LOG_S_MIN = math.log(S_MIN)
C_FREE = 1e-8
PHASE_LOST = 2.0**40
HALLEY_FROM = 2e-6
GILES_FROM = -16.0


@nb.njit(cache=True)
def log_flow(s, r, c, t, rate=math.nan):
    """(s, r) after time t of ds = r dt, dr = -c/s dt, reflected at 0 (s > 0, c >= 0,
    t >= 0); ``rate``: ``log_rate(c, t)`` if the caller has it (NaN: computed)."""
    if c < C_FREE:
        v = s + t * r
        return (-v, -r) if v < 0.0 else (v, r)
    return _attractive(s, r, c, t, log_rate(c, t) if math.isnan(rate) else rate)


@nb.njit(cache=True)
def log_rate(c, t):
    """log(sqrt(2c/pi) t): the erfc phase grows by e^this / M over t (a step's entries
    of one c share it)."""
    return math.log(math.sqrt(2.0 * c / math.pi) * t)


@nb.njit(cache=True)
def _attractive(s, r, c, t, rate):
    """The erfc phase x = erfc(q) grows by sqrt(2c/pi) t / M. Falling (q < 0) it is
    kept as y = 2 - x = erfc(-q), so the approach to 0 keeps its digits."""
    k = math.sqrt(2.0 * c)
    q0 = r / k
    log_m = math.log(s) + q0 * q0
    ld = rate - log_m
    mid = s + 0.5 * t * r  # the leapfrog's q: Newton's first guess
    guess = (r - t * c / mid) / k if mid > 0.0 else math.nan
    if q0 < 0.0:
        ly = log_erfc(-q0)
        if ld < ly:  # still falling after t
            return _on_orbit(log_m, -inv_log_erfc(ly + math.log1p(-math.exp(ld - ly)),
                                                  -guess), k)
        lx = ld + math.log1p(-math.exp(ly - ld)) if ld > ly else -math.inf  # reflected
    else:
        lx = _logaddexp(log_erfc(q0), ld)
    if lx <= 0.0:
        return _on_orbit(log_m, inv_log_erfc(lx, guess), k)
    x = math.exp(lx)  # reflected again (erfc wraps from 2 to 0) ...
    x = 1.0 if x > PHASE_LOST else x - 2.0 * np.floor(0.5 * x)  # ... or at the apex
    if x <= 1.0:
        return _on_orbit(log_m, inv_log_erfc(math.log(x), math.nan) if x > 0.0 else math.inf, k)
    return _on_orbit(log_m, -inv_log_erfc(math.log(2.0 - x), math.nan), k)


@nb.njit(cache=True)
def _on_orbit(log_m, q, k):
    """(s, r) = (M e^{-q^2}, k q), held at S_MIN with q from the same M."""
    log_s = log_m - q * q
    if log_s < LOG_S_MIN:
        q = math.copysign(math.sqrt(max(log_m - LOG_S_MIN, 0.0)), q)
        log_s = LOG_S_MIN
    return math.exp(log_s), k * q


@nb.njit(cache=True)
def _logaddexp(x, y):
    hi, lo = (x, y) if x > y else (y, x)
    if lo == -math.inf:
        return hi
    return hi + math.log1p(math.exp(lo - hi))


@nb.njit(cache=True)
def log_erfc(q):
    """log erfc(q) for any q; q >= 26 by the Laplace continued fraction (erfc underflows)."""
    if q < 26.0:
        return math.log(math.erfc(q))
    f = q
    for n in range(30, 0, -1):
        f = q + 0.5 * n / f
    return -q * q - math.log(SQRT_PI * f)


@nb.njit(cache=True)
def inv_log_erfc(ell, guess):
    """p >= 0 with log erfc(p) = ell (ell <= 0), by Newton from Giles' approximation
    (``_giles_erfcinv``) or, for ell below ``GILES_FROM``, from ``guess`` (NaN or
    negative: the asymptotic root), finished by one Halley step; the start decides
    only how many steps are taken. With g = -d log erfc/dp = 2 e^{-p^2}/(sqrt(pi) erfc(p)),
    g' = g (g - 2p), and 0 < g - 2p <= 2 / sqrt(pi): log erfc is concave and
    decreasing, so after the first Newton step the iterates decrease to the root;
    once the Newton step d is below ``HALLEY_FROM`` the Halley step
    d / (1 + d (g - 2p) / 2) (cubic: its error is of order d^3, below 1e-17) ends
    it, one evaluation of erfc sooner than a Newton step below 1e-8 would."""
    if ell == -math.inf:
        return math.inf
    if ell >= GILES_FROM:
        p = _giles_erfcinv(ell)
    else:
        # erfc(p) ~ e^{-p^2} / (sqrt(pi) p): p^2 ~ -ell - log(pi (-ell)) / 2
        p = guess if guess >= 0.0 else math.sqrt(-ell - 0.5 * math.log(-math.pi * ell))
    for _ in range(100):
        le = log_erfc(p)
        inv_g = SQRT_PI * 0.5 * math.exp(p * p + le)
        step = (le - ell) * inv_g
        if abs(step) <= HALLEY_FROM:
            return max(p + step / (1.0 + 0.5 * step * (1.0 / inv_g - 2.0 * p)), 0.0)
        p = max(p + step, 0.0)
    return p


@nb.njit(cache=True)
def _giles_erfcinv(ell):
    """erfc^-1(e^ell) within 3.2e-7 for ell >= ``GILES_FROM`` (Giles 2012's
    single-precision erfinv of y = 1 - e^ell, w = -log(1 - y^2) taken from ell
    without cancellation): a start from which the Halley step ends the inversion."""
    y = -math.expm1(ell)  # valid while w = -log(1 - y^2) stays in float32's range
    w = -ell - math.log1p(y)
    if w < 5.0:
        w -= 2.5
        p = 2.81022636e-08
        for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                  -0.00125372503, -0.00417768164, 0.246640727, 1.50140941):
            p = c + p * w
    else:
        w = math.sqrt(w) - 3.0
        p = -0.000200214257
        for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                  -0.0076224613, 0.00943887047, 1.00167406, 2.83297682):
            p = c + p * w
    return p * y
