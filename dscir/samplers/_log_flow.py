"""The exact flow of gSGRHMC's position move together with the singular part of its force.

In s = 2 sqrt(theta) gSGRHMC's position move is ds = r dt, and the force's term
(a - 1/2)/sqrt(theta) is (2a - 1)/s. Together they are the Hamiltonian system

    ds = r dt,   dr = -c / s dt,   H = r^2/2 + c log s,   c = 1 - 2a,

solved here in closed form (docs/integrators.md derives it):

* c > 0 (a < 1/2, attractive): with q = r / sqrt(2c), M = s e^{q^2} is
  conserved and erfc(q(t)) = erfc(q0) + sqrt(2c/pi) t / M. The particle reaches
  s = 0 when erfc reaches 2 and is reflected there (s -> -s, r -> -r: q goes
  from -inf to +inf), so the reflected flow is erfc(q(t)) = (...) mod 2.
* c < 0 (a > 1/2, repulsive): with q = r / sqrt(-2c), N = s e^{-q^2} is
  conserved (the lowest point) and s(t) D(q(t)) = s0 D(q0) + sqrt(-c/2) t,
  D Dawson's function; s never reaches 0.
* c = 0: s + r t, reflected at 0.

Positions are s = M e^{-q^2} (or N e^{q^2}) from the solved q, so H is kept
exactly. |c| below ``C_FREE`` is the free flow (q^2 would lose the digits of
log s). Positions below ``S_MIN`` (theta below ~5e-301) are held at S_MIN with
their momentum from the same conserved M, so the orbit's height is kept. An
orbit reflected more than ``PHASE_LOST`` times in one step (its height M is
then below ~1e-12 t) has lost its phase to rounding and is put at its apex
(s = M, r = 0).
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
_RYBICKI_H = 0.2
_RYBICKI_C = tuple(math.exp(-((2 * i + 1) * _RYBICKI_H) ** 2) for i in range(17))


@nb.njit(cache=True)
def log_flow(s, r, c, t):
    """(s, r) after time t of ds = r dt, dr = -c/s dt, reflected at 0 (s > 0, t >= 0)."""
    if abs(c) < C_FREE:
        v = s + t * r
        return (-v, -r) if v < 0.0 else (v, r)
    if c > 0.0:
        return _attractive(s, r, c, t)
    return _repulsive(s, r, -c, t)


@nb.njit(cache=True)
def _attractive(s, r, c, t):
    """The erfc phase x = erfc(q) grows by sqrt(2c/pi) t / M. Falling (q < 0) it is
    kept as y = 2 - x = erfc(-q), so the approach to 0 keeps its digits."""
    k = math.sqrt(2.0 * c)
    q0 = r / k
    log_m = math.log(s) + q0 * q0
    ld = math.log(math.sqrt(2.0 * c / math.pi) * t) - log_m
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
def _repulsive(s, r, b, t):
    k = math.sqrt(2.0 * b)
    q0 = r / k
    w = dawson(q0) + math.sqrt(0.5 * b) * t / s  # s D(q) = s0 D(q0) + sqrt(b/2) t, over s0 e^{-q0^2}
    if w == 0.0:
        return s * math.exp(-q0 * q0), 0.0
    p = inv_log_dawson_integral(q0 * q0 + math.log(abs(w)))
    q = math.copysign(p, w)
    return math.exp(math.log(s) - q0 * q0 + q * q), k * q


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
    """p >= 0 with log erfc(p) = ell (ell <= 0), by Newton from ``guess`` (NaN or
    negative: sqrt(-ell), right of the root as erfc(p) <= e^{-p^2}). log erfc is
    concave and decreasing, so after the first step the iterates decrease to the
    root; a step below 1e-8 leaves an error of order its square."""
    if ell == -math.inf:
        return math.inf
    p = guess if guess >= 0.0 else math.sqrt(-ell)
    for _ in range(100):
        le = log_erfc(p)
        step = (le - ell) * SQRT_PI * 0.5 * math.exp(p * p + le)  # -f / f', f' = -2/(sqrt(pi) erfcx)
        p = max(p + step, 0.0)
        if abs(step) <= 1e-8 * (1.0 + p):
            break
    return p


@nb.njit(cache=True)
def dawson(x):
    """Dawson's function D(x) = e^{-x^2} int_0^x e^{u^2} du (Rybicki's series, h = 0.2; Taylor below 1e-3)."""
    ax = abs(x)
    if ax < 1e-3:
        x2 = x * x
        return x * (1.0 - 2.0 / 3.0 * x2 * (1.0 - 0.4 * x2 * (1.0 - 2.0 / 7.0 * x2 *
                                                                 (1.0 - 2.0 / 9.0 * x2))))
    n0 = 2.0 * round(0.5 * ax / _RYBICKI_H)
    xp = ax - n0 * _RYBICKI_H
    e1 = math.exp(2.0 * xp * _RYBICKI_H)
    e2 = e1 * e1
    d1, d2 = n0 + 1.0, n0 - 1.0
    total = 0.0
    for i in range(17):
        total += _RYBICKI_C[i] * (e1 / d1 + 1.0 / (d2 * e1))
        d1 += 2.0
        d2 -= 2.0
        e1 *= e2
    return math.copysign(math.exp(-xp * xp) * total / SQRT_PI, x)


@nb.njit(cache=True)
def inv_log_dawson_integral(ell):
    """p >= 0 with log G(p) = ell, G(p) = int_0^p e^{u^2} du = e^{p^2} D(p); (log G)' = 1/D.
    Newton kept inside a bracket (bisection when it leaves it)."""
    lo, hi = 0.0, 1.0
    while hi * hi + math.log(dawson(hi)) < ell:
        lo, hi = hi, 2.0 * hi
    p = math.exp(ell) if ell < -1.0 else 0.5 * (lo + hi)
    for _ in range(200):
        d = dawson(p)
        f = p * p + math.log(d) - ell
        if f > 0.0:
            hi = p
        else:
            lo = p
        nxt = p - f * d
        if not lo < nxt < hi:
            nxt = 0.5 * (lo + hi)
        if abs(nxt - p) <= 1e-15 * (1.0 + p):
            return nxt
        p = nxt
    return p
