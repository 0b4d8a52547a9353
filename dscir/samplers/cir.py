"""SCIR: the stochastic Cox-Ingersoll-Ross sampler (Baker et al. 2018).

The CIR process d theta = (a - theta) dt + sqrt(2 theta) dW has stationary law
Gamma(a, 1) and an exact transition over a time h:

    theta' = (1 - e^{-h}) G,   G ~ Gamma(a + P, 1),   P ~ Poisson(theta e^{-h} / (1 - e^{-h})).

SCIR applies this transition with ``a`` replaced by the minibatch estimate
a_hat = prior + counts at every step, elementwise over an array of any shape
(a K x W topic matrix, a vector). There is no discretisation error: with a
fixed ``a`` the chain is *exactly* Gamma(a, 1) distributed at every step if it
starts so, and converges to it from anywhere, for every h > 0; h only sets how
far the chain moves before a_hat is resampled. Two transitions of h1 and h2
with the same ``a`` are one transition of h1 + h2.

Representation of tiny values: the state holds ``log_theta``, never theta. With
shapes like 1e-4 or 1e-6 most Gamma draws are far below the smallest double
(log G ~ log(U)/a, around -1e4 to -1e6), so the transition works on the log
scale throughout: theta enters only through the Poisson mean
lam = exp(log_theta - h - log(1 - e^{-h})) (where underflow to 0 is harmless:
P = 0 then), and the new state is log(1 - e^{-h}) + log G with log G drawn on
the log scale (``dscir.rng.log_gamma``), finite for every shape > 0.
``State.theta`` = exp(log_theta) therefore underflows to exactly 0 for such
entries; form probabilities with a log-sum-exp over ``log_theta``
(``dscir.samplers.simplex.normalize_log``) instead.

How G is drawn: 2G is a noncentral chi-square with 2a degrees of freedom and
noncentrality 2 lam. For a >= 1/2 it is drawn as (Z + sqrt(2 lam))^2 + 2 G',
Z ~ N(0, 1), G' ~ Gamma(a - 1/2): no Poisson draw (a = 1/2, the LDA reference
prior on an entry without counts, needs just a normal, an exp and a log). For
a < 1/2 (small priors, empty counts) P is drawn and then log Gamma(a + P).
Rates measured by benchmarks/scir_speed.py at commit 36c1d4f.

Randomness: row r (an index over all axes but the last, flattened) draws from
the stream ``mix_in(key, r)`` in order along the row, so results do not depend
on numba's thread count. Large arrays run in parallel over rows (``prange``).
"""

from __future__ import annotations

import math
import numbers
from typing import NamedTuple

import numba as nb
import numpy as np

from dscir.errors import DscirError
from dscir.rng import (
    exponential,
    gamma,
    gamma_mt,
    log_gamma,
    mix_in,
    new_state,
    poisson,
    ziggurat_normal,
)

# Below this many elements the serial kernel is used: a parallel launch costs
# more than it saves on a Dirichlet-study vector, and both give identical draws.
_PARALLEL_MIN_SIZE = 1 << 15
# A Poisson mean below 2^-54 gives P = 0 by inversion with any 53-bit uniform,
# so no draw (and no exp, slow near underflow) is spent on it.
_LOG_LAM_ZERO = -54.0 * math.log(2.0)
_LOG2 = math.log(2.0)
_LOG_MIN_DOUBLE = math.log(5e-324)
_LOG_FLOOR = -np.finfo(np.float64).max


class State(NamedTuple):
    """SCIR state: log theta, any shape, the simplex along the last axis."""

    log_theta: np.ndarray

    @property
    def theta(self) -> np.ndarray:
        """exp(log_theta); entries below ~1e-308 underflow to 0 (see the module notes)."""
        return np.exp(self.log_theta)


def init(theta0: np.ndarray) -> State:
    """State at ``theta0`` (positive and finite; any shape)."""
    theta0 = np.asarray(theta0, dtype=np.float64)
    if not np.all(np.isfinite(theta0) & (theta0 > 0)):
        raise DscirError("SCIR theta0 must be positive and finite everywhere")
    return State(np.log(theta0))


def init_log(log_theta0: np.ndarray) -> State:
    """State at theta = exp(``log_theta0``), for starting values too small for a double."""
    log_theta0 = np.array(log_theta0, dtype=np.float64)
    if not np.all(np.isfinite(log_theta0)):
        raise DscirError("SCIR log_theta0 must be finite everywhere")
    return State(log_theta0)


def step(state: State, prior, counts: np.ndarray, step_size: float, key: int) -> State:
    """One SCIR step: the exact CIR transition over ``step_size`` with
    a_hat = ``prior`` + ``counts`` (prior > 0 broadcastable to theta, counts >= 0
    of theta's shape, the minibatch statistics scaled to the full data)."""
    log_theta = np.asarray(state.log_theta, dtype=np.float64)
    prior = np.asarray(prior, dtype=np.float64)
    if not np.all(np.isfinite(prior) & (prior > 0)):
        raise DscirError("SCIR prior must be positive and finite")
    counts = np.asarray(counts, dtype=np.float64)
    if counts.shape != log_theta.shape:
        raise DscirError(
            f"SCIR counts have shape {counts.shape}, the state has shape {log_theta.shape}"
        )
    if prior.ndim == 0:  # the common case: the kernel adds the prior on the fly
        return State(_run(log_theta, float(prior), counts, step_size, key))
    try:
        fits = np.broadcast_shapes(prior.shape, log_theta.shape) == log_theta.shape
    except ValueError:
        fits = False
    if not fits:
        raise DscirError(
            f"SCIR prior of shape {prior.shape} does not broadcast to {log_theta.shape}"
        )
    return State(_run(log_theta, 0.0, prior + counts, step_size, key))


def step_scaled(state: State, prior: float, counts: np.ndarray, factor: float,
                step_size: float, key: int) -> State:
    """``step`` with counts = ``counts`` x ``factor`` (integer minibatch counts and
    their scale to the full data), formed entry by entry inside the transition:
    the same draws as ``step(state, prior, counts * factor, ...)`` bit for bit,
    without that K x W product. ``prior`` is a number (> 0, finite)."""
    log_theta = np.asarray(state.log_theta, dtype=np.float64)
    prior = float(prior)
    if not (math.isfinite(prior) and prior > 0):
        raise DscirError("SCIR prior must be positive and finite")
    counts = np.asarray(counts)
    if counts.shape != log_theta.shape or counts.dtype.kind not in "iu":
        raise DscirError(f"SCIR counts must be integers of the state's shape "
                         f"{log_theta.shape}, got {counts.dtype} of shape {counts.shape}")
    factor = float(factor)
    if not (math.isfinite(factor) and factor >= 0):
        raise DscirError(f"SCIR counts' factor must be finite and >= 0, got {factor!r}")
    return State(_run(log_theta, prior, counts, step_size, key, factor))


def transition(log_theta: np.ndarray, a, h: float, key: int) -> np.ndarray:
    """log theta' after the exact CIR transition over time ``h`` with shape ``a``
    (> 0 and finite, broadcastable to ``log_theta``); any shape; inputs untouched.
    ``h = inf`` gives fresh draws from the stationary Gamma(a, 1)."""
    log_theta = np.asarray(log_theta, dtype=np.float64)
    a = np.asarray(a, dtype=np.float64)
    try:
        if a.shape != log_theta.shape:
            a = np.broadcast_to(a, log_theta.shape)
    except ValueError:
        raise DscirError(
            f"SCIR shape a of shape {a.shape} does not broadcast to {log_theta.shape}"
        ) from None
    return _run(log_theta, 0.0, a, h, key)


def sample_stationary(a, key: int) -> np.ndarray:
    """log G for independent exact draws G ~ Gamma(a, 1), the CIR's stationary
    law (a > 0 and finite, any shape; the transition over an infinite time)."""
    a = np.array(a, dtype=np.float64)
    return _run(np.zeros(a.shape), 0.0, a, math.inf, key)


def _run(log_theta: np.ndarray, prior: float, counts: np.ndarray, h, key,
         factor: float = 1.0) -> np.ndarray:
    """The transition with a = prior + counts x factor elementwise (counts of
    log_theta's shape; x 1.0 leaves every float as it is)."""
    h = _check_step(h)
    key = _check_key(key)
    shape = log_theta.shape
    if log_theta.size == 0:
        return log_theta.copy()
    cols = shape[-1] if log_theta.ndim else 1
    lt2 = np.ascontiguousarray(log_theta).reshape(-1, cols)
    c2 = np.ascontiguousarray(counts).reshape(-1, cols)
    out = np.empty_like(lt2)
    log_scale = math.log(-math.expm1(-h))  # log(1 - e^{-h})
    log_ratio = -h - log_scale  # log(e^{-h} / (1 - e^{-h}))
    kernel = _transition_parallel if lt2.size >= _PARALLEL_MIN_SIZE else _transition_serial
    n_bad = kernel(lt2, prior, c2, factor, log_scale, log_ratio, np.uint64(key), out)
    if n_bad:
        raise DscirError(
            f"SCIR shape a = prior + counts must be positive and finite; {n_bad} "
            f"of {c2.size} entries are not"
        )
    return out.reshape(shape)


def _check_step(h) -> float:
    if not isinstance(h, numbers.Real) or not float(h) > 0.0:
        raise DscirError(f"SCIR step_size must be a positive number, got {h!r}")
    return float(h)


def _check_key(key) -> int:
    if not isinstance(key, numbers.Integral) or not 0 <= int(key) < 2**64:
        raise DscirError(f"stream key must be an integer in [0, 2**64), got {key!r}")
    return int(key)


@nb.njit(cache=True, _nrt=False, inline="always")
def _log_poisson_gamma(s, a, log_lam, d, c, inv_a):
    """log G for G ~ Gamma(a + P, 1), P ~ Poisson(exp(log_lam)) (see the module
    notes). For a >= 1/2 the sum (Z + sqrt(2 lam))^2 / 2 + Gamma(a - 1/2) is
    formed on the linear scale: it falls below 1e-300 with probability ~1e-150.
    For a < 1/2, (d, c, inv_a) are ``_boost_constants(a)``."""
    if a >= 0.5:
        z = ziggurat_normal(s) + np.exp(0.5 * (log_lam + _LOG2))
        x = 0.5 * z * z
        if a > 0.5:
            x += gamma(s, a - 0.5)
        # x == 0 needs Z == -sqrt(2 lam) to the bit (probability ~2^-52 at lam = 0):
        # keep the log finite by rounding it up to the smallest double
        return np.log(x) if x > 0.0 else _LOG_MIN_DOUBLE
    p = poisson(s, np.exp(log_lam)) if log_lam > _LOG_LAM_ZERO else 0.0
    if p > 0.0:
        return log_gamma(s, a + p)
    # log G(a) = log G(a + 1) - E / a, as in rng.log_gamma, with the constants
    # of the Marsaglia-Tsang draw for a + 1 computed once per distinct a
    lg = np.log(gamma_mt(s, d, c)) - exponential(s) * inv_a
    return lg if lg > _LOG_FLOOR else _LOG_FLOOR


@nb.njit(cache=True, _nrt=False, inline="always")
def _boost_constants(a):
    d = a + 2.0 / 3.0
    return d, 1.0 / np.sqrt(9.0 * d), 1.0 / a


@nb.njit(cache=True, _nrt=False, inline="always")
def _transition_row(log_theta, prior, counts, factor, log_scale, log_ratio, s, out):
    """One row of the transition from stream ``s``; returns the number of bad shapes."""
    n_bad = 0
    cached = -1.0  # the small shape whose constants d, c, inv_a are current
    d = c = inv_a = 0.0
    for j in range(log_theta.size):
        aj = prior + counts[j] * factor
        if not (0.0 < aj < np.inf):
            out[j] = np.nan
            n_bad += 1
            continue
        if aj < 0.5 and aj != cached:  # most small shapes are the prior itself
            cached = aj
            d, c, inv_a = _boost_constants(aj)
        out[j] = log_scale + _log_poisson_gamma(s, aj, log_theta[j] + log_ratio, d, c, inv_a)
    return n_bad


@nb.njit(cache=True, parallel=True)
def _transition_parallel(log_theta, prior, counts, factor, log_scale, log_ratio, key, out):
    n_bad = 0
    for r in nb.prange(log_theta.shape[0]):
        s = new_state(mix_in(key, r))
        n_bad += _transition_row(log_theta[r], prior, counts[r], factor, log_scale, log_ratio, s,
                                 out[r])
    return n_bad


@nb.njit(cache=True)
def _transition_serial(log_theta, prior, counts, factor, log_scale, log_ratio, key, out):
    n_bad = 0
    for r in range(log_theta.shape[0]):
        s = new_state(mix_in(key, r))
        n_bad += _transition_row(log_theta[r], prior, counts[r], factor, log_scale, log_ratio, s,
                                 out[r])
    return n_bad
