"""SGRLD: stochastic-gradient Riemannian Langevin dynamics (Patterson & Teh 2013).

Expanded mean with metric G(theta) = diag(theta)^-1, mirrored at 0:

    theta' = | theta + eps (prior + c - theta - c_k. phi) + sqrt(2 eps theta) xi |,

an Euler step of the Langevin diffusion, so it carries discretisation error
(which is what SCIR removes). Row r draws from stream ``mix_in(key, r)``.
"""

from __future__ import annotations

import numbers

import numba as nb
import numpy as np

from dscir.errors import DscirError
from dscir.rng import ziggurat_normal
from dscir.samplers._expanded import (PositionState, check_theta0, check_totals, position_step,
                                      positive, row_start)


State = PositionState


def init(theta0: np.ndarray) -> State:
    return State(check_theta0(theta0, "SGRLD"))


def step(state: State, prior, counts: np.ndarray, step_size: float, key: int,
         totals=None) -> State:
    """One SGRLD step with step size epsilon = ``step_size`` (``totals``: the whole
    rows' theta and count sums, when the state holds some of their columns)."""
    return position_step(_sgrld, "SGRLD", state, prior, counts, step_size, key, totals)


def step_scaled(state: State, prior: float, counts: np.ndarray, factor: float,
                step_size: float, key: int, totals=None) -> State:
    """``step`` with counts = ``counts`` x ``factor`` (integer minibatch counts and
    their scale) and a number as ``prior``, both formed entry by entry inside the
    step: the same state as ``step(state, prior, counts * factor, ...)`` bit for
    bit, without that product or a K x W prior array."""
    theta = np.ascontiguousarray(state.theta, dtype=np.float64)
    counts = np.asarray(counts)
    if counts.shape != theta.shape or counts.dtype.kind not in "iu" or theta.ndim != 2:
        raise DscirError(f"SGRLD counts must be integers of the state's shape "
                         f"{theta.shape}, got {counts.dtype} of shape {counts.shape}")
    prior, factor = float(prior), float(factor)
    if not (np.isfinite(prior) and prior > 0 and np.isfinite(factor) and factor >= 0):
        raise DscirError(f"SGRLD prior must be positive and the counts' factor >= 0, got "
                         f"{prior!r} and {factor!r}")
    if not (isinstance(step_size, numbers.Real) and step_size > 0):
        raise DscirError(f"SGRLD step_size must be a positive number, got {step_size!r}")
    counts = np.ascontiguousarray(counts, dtype=np.int64)
    if totals is None:
        totals = _row_sums_scaled(theta, counts, factor)
    else:
        totals = check_totals(totals, theta, counts, "SGRLD")
    return State(_sgrld_scaled(theta, prior, counts, factor, float(step_size),
                               np.uint64(key), totals))


@nb.njit(cache=True)
def _row_sums_scaled(theta, counts, factor):
    """``_expanded._row_sums`` of (theta, counts x factor), summed in the same order."""
    out = np.empty((2, theta.shape[0]))
    for i in range(theta.shape[0]):
        out[0, i] = theta[i].sum()
        acc = 0.0
        for j in range(counts.shape[1]):
            acc += counts[i, j] * factor
        out[1, i] = acc
    return out


@nb.njit(parallel=True, cache=True)
def _sgrld_scaled(theta, prior, counts, factor, eps, key, totals):
    out = np.empty_like(theta)
    for r in nb.prange(theta.shape[0]):
        s, total_c, total_t = row_start(key, totals, r)
        for w in range(theta.shape[1]):
            out[r, w] = _move(theta[r, w], prior + counts[r, w] * factor, total_c, total_t,
                              eps, s)
    return out


@nb.njit(parallel=True, cache=True)
def _sgrld(theta, prior, counts, eps, key, totals):
    out = np.empty_like(theta)
    for r in nb.prange(theta.shape[0]):
        s, total_c, total_t = row_start(key, totals, r)
        for w in range(theta.shape[1]):
            out[r, w] = _move(theta[r, w], prior[r, w] + counts[r, w], total_c, total_t, eps, s)
    return out


@nb.njit(inline="always")
def _move(t, a, total_c, total_t, eps, s):
    """One entry's step with shape a = prior + scaled counts (the row's totals c_k.,
    theta_k.)."""
    drift = a - t - total_c * t / total_t
    noise = np.sqrt(2.0 * eps * t) * ziggurat_normal(s)
    return positive(abs(t + eps * drift + noise))
