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
from dscir.rng import ziggurat_normal
from dscir.samplers._expanded import (MomentumState, expanded_grad, init_momentum,
                                      momentum_step, positive, reflect, row_start)


State = MomentumState


def init(theta0: np.ndarray, r0: np.ndarray | None = None) -> State:
    return init_momentum(theta0, r0, "SGHMC")


def step(state: State, prior, counts: np.ndarray, step_size: float, key: int,
         friction: float = 1.0, totals=None, integrator: str = "splitting") -> State:
    if not friction > 0:
        raise DscirError(f"SGHMC friction must be positive, got {friction!r}")
    return momentum_step((_sghmc, _splitting), "SGHMC", state, prior, counts, step_size, key,
                         totals, integrator, float(friction))


@nb.njit(parallel=True, cache=True)
def _sghmc(theta, r, prior, counts, eps, key, totals, friction):
    t_out = np.empty_like(theta)
    r_out = np.empty_like(r)
    noise = np.sqrt(2.0 * friction * eps)
    for i in nb.prange(theta.shape[0]):
        s, total_c, total_t = row_start(key, totals, i)
        for w in range(theta.shape[1]):
            t = theta[i, w]
            grad = expanded_grad(prior[i, w] + counts[i, w], t, total_c / total_t)
            m = r[i, w] + eps * grad - eps * friction * r[i, w] + noise * ziggurat_normal(s)
            v, r_out[i, w] = reflect(t + eps * m, m)
            t_out[i, w] = positive(v)
    return t_out, r_out


@nb.njit(parallel=True, cache=True)
def _splitting(theta, r, prior, counts, eps, key, totals, friction):
    t_out = np.empty_like(theta)
    r_out = np.empty_like(r)
    lead = 0.5 * eps  # the position move before the O step; eps - lead after it
    decay = np.exp(-eps * friction)
    noise = np.sqrt(-np.expm1(-2.0 * eps * friction))
    for i in nb.prange(theta.shape[0]):
        s, total_c, total_t = row_start(key, totals, i)
        for w in range(theta.shape[1]):
            t = theta[i, w]
            m = r[i, w] + eps * expanded_grad(prior[i, w] + counts[i, w], t, total_c / total_t)
            v, m = reflect(t + lead * m, m)
            m = decay * m + noise * ziggurat_normal(s)
            v, r_out[i, w] = reflect(v + (eps - lead) * m, m)
            t_out[i, w] = positive(v)
    return t_out, r_out
