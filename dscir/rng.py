"""Counter-based random streams for numba kernels.

Every random number in dscir comes from a stream named by a tuple of integers,
for example ``(seed, iteration, document_id)`` or ``(seed, iteration, row)``.
A stream key is a 64-bit hash of that tuple (SplitMix64 finaliser); a stream
state is four 64-bit words of xoshiro256** seeded from the key. Because streams
are named by what they are for, never by which worker or thread draws them, a
run gives the same numbers whatever the number of workers or threads and
whatever order tasks finish in.

All functions here are ``numba.njit`` and can be called from other kernels;
``derive`` is also usable from Python.
"""

from __future__ import annotations

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


@nb.njit(cache=True)
def normal(s):
    """Standard normal draw (Box-Muller; one value per call, none cached)."""
    u1 = uniform(s)
    u2 = uniform(s)
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)
