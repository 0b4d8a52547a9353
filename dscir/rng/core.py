"""Stream keys and the continuous draws: uniform, normal, exponential, gamma, beta."""

from __future__ import annotations

import math

import numba as nb
import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_U30 = np.uint64(30)
_U27 = np.uint64(27)
_U31 = np.uint64(31)
_U11 = np.uint64(11)
_U17 = np.uint64(17)
_U45 = np.uint64(45)
_U7 = np.uint64(7)
_U23 = np.uint64(23)
_U64_1 = np.uint64(1)
_FIVE = np.uint64(5)
_NINE = np.uint64(9)
_TWO53 = 1.0 / 9007199254740992.0


@nb.njit(inline="always", cache=True)
def _mix(z):
    z = (z ^ (z >> _U30)) * _M1
    z = (z ^ (z >> _U27)) * _M2
    return z ^ (z >> _U31)


@nb.njit(cache=True)
def mix_in(key, value):
    """Fold one integer into a stream key (order-sensitive)."""
    return _mix(np.uint64(key) + _GOLDEN + _mix(np.uint64(value) + _GOLDEN))


def derive(*parts: int) -> int:
    """Stream key for a tuple of non-negative integers, e.g. ``derive(seed, it, doc)``."""
    key = np.uint64(0x5D5C1A9E5C1A9E5D)
    for p in parts:
        if p < 0:
            raise ValueError(f"stream key parts must be non-negative integers, got {p}")
        key = np.uint64(mix_in(key, np.uint64(p)))
    return int(key)


@nb.njit(cache=True)
def new_state(key):
    """xoshiro256** state (uint64[4]) for a stream key."""
    s = np.empty(4, dtype=np.uint64)
    z = np.uint64(key)
    for i in range(4):
        z = z + _GOLDEN
        s[i] = _mix(z)
    return s


@nb.njit(inline="always", cache=True)
def _rotl(x, k):
    return (x << np.uint64(k)) | (x >> np.uint64(64 - k))


@nb.njit(cache=True)
def next_u64(s):
    """Next 64-bit output of a stream (advances ``s`` in place)."""
    result = _rotl(s[1] * _FIVE, 7) * _NINE
    t = s[1] << _U17
    s[2] ^= s[0]
    s[3] ^= s[1]
    s[1] ^= s[2]
    s[0] ^= s[3]
    s[2] ^= t
    s[3] = _rotl(s[3], 45)
    return result


@nb.njit(cache=True)
def uniform(s):
    """Uniform double in the open interval (0, 1): never 0, so ``log`` is safe."""
    return (np.float64(next_u64(s) >> _U11) + 0.5) * _TWO53


@nb.njit(inline="always", cache=True)
def uniform_regs(s0, s1, s2, s3):
    """``uniform`` on a state held in four scalars: returns (u, s0, s1, s2, s3).
    The same numbers as ``uniform`` on the array [s0, s1, s2, s3]; in a hot loop
    the scalars stay in registers, where the array form reloads and stores the
    state on every draw (load the state once before the loop, store it after)."""
    result = _rotl(s1 * _FIVE, 7) * _NINE
    t = s1 << _U17
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = _rotl(s3, 45)
    return (np.float64(result >> _U11) + 0.5) * _TWO53, s0, s1, s2, s3


@nb.njit(cache=True)
def normal(s):
    """Standard normal draw (Box-Muller; one value per call, none cached)."""
    u1 = uniform(s)
    u2 = uniform(s)
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)


# --- Ziggurat tables for the standard normal (256 layers, Marsaglia & Tsang 2000;
# layer index, sign and a 52-bit abscissa all come from one 64-bit output, as in
# numpy's generator, so no bits are shared between the choices).
def _ziggurat_tables():
    r = 3.6541528853610088
    v = r * np.exp(-0.5 * r * r) + np.sqrt(np.pi / 2) * math.erfc(r / np.sqrt(2.0))
    m = 2.0**52
    k = np.zeros(256)
    w = np.zeros(256)
    f = np.zeros(256)
    q = v / np.exp(-0.5 * r * r)
    k[0] = r / q * m
    w[0] = q / m
    w[255] = r / m
    f[0] = 1.0
    f[255] = np.exp(-0.5 * r * r)
    x, prev = r, r
    for i in range(254, 0, -1):
        x = np.sqrt(-2.0 * np.log(v / x + np.exp(-0.5 * x * x)))
        k[i + 1] = x / prev * m
        prev = x
        f[i] = np.exp(-0.5 * x * x)
        w[i] = x / m
    return r, k.astype(np.int64), w, f


_ZIG_R, _ZIG_K, _ZIG_W, _ZIG_F = _ziggurat_tables()


def _exp_ziggurat_tables():
    """Tables for Exp(1): 256 layers, base strip of width r = 7.697 plus its tail."""
    r = 7.69711747013104972
    v = (r + 1.0) * np.exp(-r)
    m = 2.0**53
    k = np.zeros(256)
    w = np.zeros(256)
    f = np.zeros(256)
    q = v / np.exp(-r)
    k[0] = r / q * m
    w[0] = q / m
    w[255] = r / m
    f[0] = 1.0
    f[255] = np.exp(-r)
    x, prev = r, r
    for i in range(254, 0, -1):
        x = -np.log(v / x + np.exp(-x))
        k[i + 1] = x / prev * m
        prev = x
        f[i] = np.exp(-x)
        w[i] = x / m
    return r, k.astype(np.int64), w, f


_EZIG_R, _EZIG_K, _EZIG_W, _EZIG_F = _exp_ziggurat_tables()
_ZIG_INV_R = 1.0 / _ZIG_R
_U8 = np.uint64(8)
_U9 = np.uint64(9)
_LOW8 = np.uint64(0xFF)
_BIT = np.uint64(1)
_LOW52 = np.uint64(0x000FFFFFFFFFFFFF)
_MAX_FLOAT = np.finfo(np.float64).max
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


@nb.njit(cache=True, _nrt=False)
def _ziggurat_edge(s, bits):
    """The rare (~1.5%) ziggurat cases: the base strip's tail and the wedges,
    then plain retries; kept out of line so the fast path inlines."""
    while True:
        idx = np.int64(bits & _LOW8)
        rabs = np.int64((bits >> _U9) & _LOW52)
        x = np.float64(rabs) * _ZIG_W[idx]
        sign = 1.0 - 2.0 * np.float64(np.int64((bits >> _U8) & _BIT))
        if rabs < _ZIG_K[idx]:
            return sign * x
        if idx == 0:
            while True:
                xx = -_ZIG_INV_R * np.log(uniform(s))
                yy = -np.log(uniform(s))
                if yy + yy > xx * xx:
                    return sign * (_ZIG_R + xx)
        if (_ZIG_F[idx - 1] - _ZIG_F[idx]) * uniform(s) + _ZIG_F[idx] < np.exp(-0.5 * x * x):
            return sign * x
        bits = next_u64(s)


@nb.njit(cache=True, _nrt=False)
def ziggurat_normal(s):
    """Standard normal draw by the ziggurat method: one 64-bit output ~98.5% of
    the time, several times faster than ``normal`` (kept for existing streams)."""
    bits = next_u64(s)
    idx = np.int64(bits & _LOW8)
    rabs = np.int64((bits >> _U9) & _LOW52)
    if rabs < _ZIG_K[idx]:
        return (1.0 - 2.0 * np.float64(np.int64((bits >> _U8) & _BIT))) * (
            np.float64(rabs) * _ZIG_W[idx]
        )
    return _ziggurat_edge(s, bits)


@nb.njit(cache=True, _nrt=False)
def _exponential_edge(s, bits):
    """The rare (~1.1%) cases of ``exponential``: tail, wedges and retries."""
    while True:
        idx = np.int64(bits & _LOW8)
        rabs = np.int64(bits >> _U11)
        x = np.float64(rabs) * _EZIG_W[idx]
        if rabs < _EZIG_K[idx]:
            return x
        if idx == 0:
            return _EZIG_R - np.log(uniform(s))  # memoryless tail
        if (_EZIG_F[idx - 1] - _EZIG_F[idx]) * uniform(s) + _EZIG_F[idx] < np.exp(-x):
            return x
        bits = next_u64(s)


@nb.njit(cache=True, _nrt=False)
def exponential(s):
    """Exp(1) draw (= -log U) by the ziggurat method: no log ~99% of the time."""
    bits = next_u64(s)
    idx = np.int64(bits & _LOW8)
    rabs = np.int64(bits >> _U11)
    if rabs < _EZIG_K[idx]:
        return np.float64(rabs) * _EZIG_W[idx]
    return _exponential_edge(s, bits)


@nb.njit(cache=True, _nrt=False)
def _gamma_ge1(s, shape):
    """Gamma(shape, 1) draw for shape >= 1 (Marsaglia & Tsang 2000)."""
    d = shape - 1.0 / 3.0
    return gamma_mt(s, d, 1.0 / np.sqrt(9.0 * d))


@nb.njit(cache=True, _nrt=False)
def gamma_mt(s, d, c):
    """Gamma(d + 1/3, 1) draw, d >= 2/3, c = 1 / sqrt(9 d): Marsaglia-Tsang with
    its constants precomputed, for loops that draw many gammas of one shape."""
    while True:
        x = ziggurat_normal(s)
        t = 1.0 + c * x
        if t <= 0.0:
            continue
        v = t * t * t
        u = uniform(s)
        x2 = x * x
        if u < 1.0 - 0.0331 * x2 * x2:
            return d * v
        if np.log(u) < 0.5 * x2 + d * (1.0 - v + np.log(v)):
            return d * v


@nb.njit(cache=True, _nrt=False)
def log_gamma(s, shape):
    """log of a Gamma(shape, 1) draw; finite for every shape > 0.

    Shape >= 1: Marsaglia-Tsang. Shape < 1: log G(a) = log G(a + 1) + log(U) / a
    (-log U drawn as an Exp(1) variate), exact and computed on the log scale, so
    tiny shapes (1e-8, 1e-300) give finite values far below log(1e-308) instead
    of underflowing; the result is clamped at -1.8e308 (reached only for shapes
    below ~1e-307). Shape 0 gives -inf (Gamma(0) is the point mass at 0);
    negative or NaN shapes give NaN.
    """
    if shape >= 1.0:
        return np.log(_gamma_ge1(s, shape))
    if shape > 0.0:
        lg = np.log(_gamma_ge1(s, shape + 1.0)) - exponential(s) / shape
        return lg if lg > -_MAX_FLOAT else -_MAX_FLOAT
    if shape == 0.0:
        return -np.inf
    return np.nan


@nb.njit(cache=True, _nrt=False)
def gamma(s, shape):
    """A Gamma(shape, 1) draw. For small shapes the value underflows to 0 with
    probability ~ (1e-308)^shape (1e-3 at shape 0.01, 0.93 at 1e-4):
    use ``log_gamma`` wherever a log is taken later."""
    if shape >= 1.0:
        return _gamma_ge1(s, shape)
    return np.exp(log_gamma(s, shape))


@nb.njit(cache=True, _nrt=False)
def log_beta(s, a, b):
    """(log V, log(1 - V)) for V ~ Beta(a, b), from two log-gamma draws, so both
    stay finite for tiny a and b where V or 1 - V would round to 0 or 1."""
    la = log_gamma(s, a)
    lb = log_gamma(s, b)
    top = max(la, lb)
    lse = top + np.log1p(np.exp(-abs(la - lb)))
    return la - lse, lb - lse
