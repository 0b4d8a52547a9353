"""The expanded-mean parameterisation shared by SGRLD, gSGRHMC, SGLD and SGHMC.

theta_kw > 0 with phi_k = theta_k / theta_k. ; prior Gamma(prior, 1) on each
entry and a multinomial likelihood on phi_k with (scaled) counts c_kw give

    grad log p(theta)_kw = (prior + c_kw - 1) / theta_kw - 1 - c_k. / theta_k. .

Positivity is kept by reflection at 0 (theta -> |theta|); a value that lands
exactly on 0 is set to the smallest positive double so its log stays finite.

The step reads its rows' totals theta_k. and c_k.; a state that holds only
some columns of its rows (the parameters on the workers, in vocabulary
blocks) is given the whole rows' totals (``check_totals``).

The Hamiltonian samplers (gSGRHMC, SGHMC) have two integrators
(``INTEGRATORS``, docs/integrators.md): "splitting" (the default), a BAOAB
splitting whose friction and noise are an exact Ornstein-Uhlenbeck step, and
"euler", the papers' explicit step, kept to reproduce them.
"""

from __future__ import annotations

import numbers
from typing import NamedTuple

import numba as nb
import numpy as np

from dscir.errors import DscirError
from dscir.rng import mix_in, new_state

TINY = 5e-324
INTEGRATORS = ("splitting", "euler")


def check_integrator(integrator, name: str) -> str:
    if integrator not in INTEGRATORS:
        raise DscirError(f"{name} integrator must be one of {', '.join(INTEGRATORS)}, "
                         f"got {integrator!r}")
    return integrator


@nb.njit(inline="always")
def reflect(v, m):
    """A position below 0 and its momentum, reflected (theta -> -theta, r -> -r)."""
    if v < 0.0:
        return -v, -m
    return v, m


@nb.njit(inline="always")
def row_start(key, totals, i):
    """Row i's random stream (``mix_in(key, i)``) and its whole-row totals c_k., theta_k.."""
    return new_state(mix_in(key, i)), totals[1, i], totals[0, i]


@nb.njit(inline="always")
def expanded_grad(a, t, ratio):
    """grad log p(theta)_kw = (a - 1) / theta_kw - 1 - c_k. / theta_k., a = prior + c_kw."""
    return (a - 1.0) / t - 1.0 - ratio


@nb.njit(inline="always")
def positive(v):
    """A reflected position that landed exactly on 0, moved to the smallest double."""
    return v if v > 0.0 else TINY


def position_step(kernel, name: str, state: PositionState, prior, counts, step_size, key,
                  totals, *args) -> PositionState:
    """One step of a first-order sampler: ``kernel(theta, prior, counts, eps, key,
    totals, *args)`` on the validated rows, in the state's shape."""
    theta, prior, counts, eps, key = as_rows(state.theta, prior, counts, step_size, key, name)
    totals = check_totals(totals, theta, counts, name)
    out = kernel(theta, prior, counts, eps, key, totals, *args)
    return PositionState(out.reshape(state.theta.shape))


def momentum_step(kernels, name: str, state: MomentumState, prior, counts, step_size, key,
                  totals, integrator, *args) -> MomentumState:
    """One step of a Hamiltonian sampler: ``kernels`` (euler, splitting), the one of
    ``integrator`` called as ``kernel(theta, r, prior, counts, eps, key, totals, *args)``."""
    euler, splitting = kernels
    kernel = euler if check_integrator(integrator, name) == "euler" else splitting
    theta, prior, counts, eps, key = as_rows(state.theta, prior, counts, step_size, key, name)
    r = np.ascontiguousarray(state.r, dtype=np.float64).reshape(theta.shape)
    totals = check_totals(totals, theta, counts, name)
    t2, r2 = kernel(theta, r, prior, counts, eps, key, totals, *args)
    return MomentumState(t2.reshape(state.theta.shape), r2.reshape(state.theta.shape))


def as_rows(theta: np.ndarray, prior, counts: np.ndarray, step_size, key, name: str):
    """Validated 2-D views (rows = simplices) and a per-entry prior array."""
    theta = np.asarray(theta, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.float64)
    if counts.shape != theta.shape:
        raise DscirError(f"{name} counts have shape {counts.shape}, the state {theta.shape}")
    prior = np.asarray(prior, dtype=np.float64)
    if not np.all(np.isfinite(prior) & (prior > 0)):
        raise DscirError(f"{name} prior must be positive and finite")
    try:
        prior = np.broadcast_to(prior, theta.shape)
    except ValueError:
        raise DscirError(f"{name} prior of shape {prior.shape} does not broadcast to "
                         f"{theta.shape}") from None
    if not isinstance(step_size, numbers.Real) or not step_size > 0:
        raise DscirError(f"{name} step_size must be a positive number, got {step_size!r}")
    if not isinstance(key, numbers.Integral) or key < 0:
        raise DscirError(f"{name} key must be a non-negative integer stream key")
    cols = theta.shape[-1] if theta.ndim else 1
    rows = lambda x: np.ascontiguousarray(x).reshape(-1, cols)  # noqa: E731
    return rows(theta), rows(prior), rows(counts), float(step_size), np.uint64(key)


def check_totals(totals, theta: np.ndarray, counts: np.ndarray, name: str) -> np.ndarray:
    """[2, rows]: theta's and the counts' whole-row sums, given (``totals``, for a
    state holding some columns of its rows) or the rows' own sums (None)."""
    if totals is None:
        return _row_sums(theta, counts)
    totals = np.asarray(totals, dtype=np.float64)
    n_rows = theta.shape[0]
    if totals.shape != (2, n_rows) or not np.all(np.isfinite(totals)) or \
            not np.all(totals[0] > 0) or not np.all(totals[1] >= 0):
        raise DscirError(f"{name} totals must be finite [2, {n_rows}] row sums (theta > 0, "
                         f"counts >= 0), got shape {totals.shape}")
    return totals


@nb.njit(cache=True)
def _row_sums(theta, counts):
    out = np.empty((2, theta.shape[0]))
    for i in range(theta.shape[0]):
        out[0, i] = theta[i].sum()
        out[1, i] = counts[i].sum()
    return out


def check_theta0(theta0, name: str) -> np.ndarray:
    theta0 = np.array(theta0, dtype=np.float64)
    if not np.all(np.isfinite(theta0) & (theta0 > 0)):
        raise DscirError(f"{name} theta0 must be positive and finite everywhere")
    return theta0


class PositionState(NamedTuple):
    """State of the first-order samplers (SGRLD, SGLD)."""

    theta: np.ndarray

    @property
    def log_theta(self) -> np.ndarray:
        return np.log(self.theta)


class MomentumState(NamedTuple):
    """State of the Hamiltonian samplers (gSGRHMC, SGHMC): position and momentum."""

    theta: np.ndarray
    r: np.ndarray

    @property
    def log_theta(self) -> np.ndarray:
        return np.log(self.theta)


def init_momentum(theta0, r0, name: str) -> MomentumState:
    theta0 = check_theta0(theta0, name)
    r0 = np.zeros_like(theta0) if r0 is None else np.array(r0, dtype=np.float64)
    if r0.shape != theta0.shape:
        raise DscirError(f"{name} r0 has shape {r0.shape}, theta0 {theta0.shape}")
    return MomentumState(theta0, r0)
