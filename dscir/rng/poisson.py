"""Poisson draws for numba kernels: inversion below a mean of 20, PTRS (Hoermann 1993) above."""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from dscir.rng.core import _HALF_LOG_2PI, _MAX_FLOAT, uniform


@nb.njit(cache=True, _nrt=False)
def _stirlerr(n):
    """log(n!) - [(n + 1/2) log n - n + log(2 pi) / 2] for integer n >= 1."""
    if n <= 15.0:
        return math.lgamma(n + 1.0) - (n + 0.5) * np.log(n) + n - _HALF_LOG_2PI
    nn = 1.0 / (n * n)
    return (1.0 / 12 - (1.0 / 360 - (1.0 / 1260 - (1.0 / 1680 - nn / 1188) * nn) * nn) * nn) / n


@nb.njit(cache=True, _nrt=False)
def _bd0(x, m):
    """x log(x/m) + m - x without cancellation (Loader 2000)."""
    if abs(x - m) < 0.1 * (x + m):
        v = (x - m) / (x + m)
        total = (x - m) * v
        ej = 2.0 * x * v
        v2 = v * v
        j = 1
        while True:
            ej *= v2
            nxt = total + ej / (2 * j + 1)
            if nxt == total:
                return nxt
            total = nxt
            j += 1
    return x * np.log(x / m) + m - x


@nb.njit(cache=True, _nrt=False)
def _log_poisson_pmf(k, lam):
    """log P(K = k), K ~ Poisson(lam), accurate even for lam ~ 1e15 and beyond."""
    if k == 0.0:
        return -lam
    return -_stirlerr(k) - _bd0(k, lam) - _HALF_LOG_2PI - 0.5 * np.log(k)


@nb.njit(cache=True, _nrt=False)
def _poisson_small(s, lam):
    """Poisson(lam) for lam < 20 by sequential inversion (faster than PTRS there)."""
    u = uniform(s)
    if u <= 1.0 - lam:  # exp(-lam) >= 1 - lam: certainly 0, no exp needed
        return 0.0
    while True:
        p = np.exp(-lam)
        total = p
        k = 0.0
        while u > total:
            k += 1.0
            p *= lam / k
            nxt = total + p
            if nxt == total:  # rounding left u above the summed cdf: redraw
                break
            total = nxt
        if u <= total:
            return k
        u = uniform(s)


@nb.njit(cache=True, _nrt=False)
def _poisson_ptrs(s, lam):
    """Poisson(lam) for lam >= 20: transformed rejection with squeeze
    (PTRS, Hoermann 1993), with the log-pmf test done via Loader's deviance."""
    b = 0.931 + 2.53 * np.sqrt(lam)
    a = -0.059 + 0.02483 * b
    log_inv_alpha = np.log(1.1239 + 1.1328 / (b - 3.4))
    vr = 0.9277 - 3.6224 / (b - 2.0)
    while True:
        u = uniform(s) - 0.5
        v = uniform(s)
        us = 0.5 - abs(u)
        k = np.floor((2.0 * a / us + b) * u + lam + 0.43)
        if us >= 0.07 and v <= vr:
            return k
        if k < 0.0 or (us < 0.013 and v > us):
            continue
        if np.log(v) + log_inv_alpha - np.log(a / (us * us) + b) <= _log_poisson_pmf(k, lam):
            return k


@nb.njit(cache=True, _nrt=False)
def poisson(s, lam):
    """A Poisson(lam) draw, returned as an integer-valued float64 (a float so
    that any finite lam works: beyond 2^53 the draw is exact up to float spacing,
    far below its standard deviation). Exact for every lam >= 0: inversion below
    20, PTRS (valid from 10) above; lam == 0 gives 0; lam == inf gives inf; NaN or negative lam
    gives NaN."""
    if lam < 20.0:
        if lam >= 0.0:
            return _poisson_small(s, lam)
        return np.nan
    if lam <= _MAX_FLOAT:
        return _poisson_ptrs(s, lam)
    return lam if lam > 0.0 else np.nan
