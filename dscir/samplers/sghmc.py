"""SGHMC (Chen, Fox & Guestrin 2014) on the expanded mean: the Hamiltonian baseline.

With friction C (identity metric), two integrators (docs/integrators.md).
``"euler"``, the paper's step (unstable once eps C > 2):

    r'     = r + eps grad log p(theta) - eps C r + sqrt(2 C eps) xi
    theta' = theta + eps r'

``"splitting"`` (default), BAOAB with one gradient per step at its start:
r <- r + eps grad log p(theta); theta <- theta + eps r / 2;
r <- e^{-eps C} r + sqrt(1 - e^{-2 eps C}) xi (the exact OU step);
theta <- theta + eps r / 2. Every position move is reflected at 0
(theta -> -theta and r -> -r). Row r draws from ``mix_in(key, r)``.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from dscir.errors import DscirError
from dscir.rng import mix_in, new_state, ziggurat_normal
from dscir.samplers._expanded import (TINY, MomentumState, as_rows, check_integrator,
                                      check_totals, init_momentum, reflect)


State = MomentumState


def init(theta0: np.ndarray, r0: np.ndarray | None = None) -> State:
    return init_momentum(theta0, r0, "SGHMC")


def step(state: State, prior, counts: np.ndarray, step_size: float, key: int,
         friction: float = 1.0, totals=None, integrator: str = "splitting") -> State:
    if not friction > 0:
        raise DscirError(f"SGHMC friction must be positive, got {friction!r}")
    kernel = _sghmc if check_integrator(integrator, "SGHMC") == "euler" else _splitting
    theta, prior, counts, eps, key = as_rows(state.theta, prior, counts, step_size, key,
                                             "SGHMC")
    r = np.ascontiguousarray(state.r, dtype=np.float64).reshape(theta.shape)
    totals = check_totals(totals, theta, counts, "SGHMC")
    t2, r2 = kernel(theta, r, prior, counts, eps, float(friction), key, totals)
    return State(t2.reshape(state.theta.shape), r2.reshape(state.theta.shape))


@nb.njit(parallel=True, cache=True)
def _sghmc(theta, r, prior, counts, eps, friction, key, totals):
    t_out = np.empty_like(theta)
    r_out = np.empty_like(r)
    noise = np.sqrt(2.0 * friction * eps)
    for i in nb.prange(theta.shape[0]):
        s = new_state(mix_in(key, i))
        total_c, total_t = totals[1, i], totals[0, i]
        ratio = total_c / total_t
        for w in range(theta.shape[1]):
            t = theta[i, w]
            grad = (prior[i, w] + counts[i, w] - 1.0) / t - 1.0 - ratio
            m = r[i, w] + eps * grad - eps * friction * r[i, w] + noise * ziggurat_normal(s)
            v = t + eps * m
            if v < 0.0:
                v, m = -v, -m
            t_out[i, w] = v if v > 0.0 else TINY
            r_out[i, w] = m
    return t_out, r_out


@nb.njit(parallel=True, cache=True)
def _splitting(theta, r, prior, counts, eps, friction, key, totals):
    t_out = np.empty_like(theta)
    r_out = np.empty_like(r)
    lead = 0.5 * eps  # the position move before the O step; eps - lead after it
    decay = np.exp(-eps * friction)
    noise = np.sqrt(-np.expm1(-2.0 * eps * friction))
    for i in nb.prange(theta.shape[0]):
        s = new_state(mix_in(key, i))
        ratio = totals[1, i] / totals[0, i]
        for w in range(theta.shape[1]):
            t = theta[i, w]
            m = r[i, w] + eps * ((prior[i, w] + counts[i, w] - 1.0) / t - 1.0 - ratio)
            v, m = reflect(t + lead * m, m)
            m = decay * m + noise * ziggurat_normal(s)
            v, m = reflect(v + (eps - lead) * m, m)
            t_out[i, w] = v if v > 0.0 else TINY
            r_out[i, w] = m
    return t_out, r_out
