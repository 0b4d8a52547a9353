"""SGRLD: stochastic-gradient Riemannian Langevin dynamics (Patterson & Teh 2013).

Expanded mean with metric G(theta) = diag(theta)^-1, mirrored at 0:

    theta' = | theta + eps (prior + c - theta - c_k. phi) + sqrt(2 eps theta) xi |,

an Euler step of the Langevin diffusion, so it carries discretisation error
(which is what SCIR removes). Row r draws from stream ``mix_in(key, r)``.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from dscir.rng import ziggurat_normal
from dscir.samplers._expanded import (PositionState, check_theta0, position_step, positive,
                                      row_start)


State = PositionState


def init(theta0: np.ndarray) -> State:
    return State(check_theta0(theta0, "SGRLD"))


def step(state: State, prior, counts: np.ndarray, step_size: float, key: int,
         totals=None) -> State:
    """One SGRLD step with step size epsilon = ``step_size`` (``totals``: the whole
    rows' theta and count sums, when the state holds some of their columns)."""
    return position_step(_sgrld, "SGRLD", state, prior, counts, step_size, key, totals)


@nb.njit(parallel=True, cache=True)
def _sgrld(theta, prior, counts, eps, key, totals):
    out = np.empty_like(theta)
    for r in nb.prange(theta.shape[0]):
        s, total_c, total_t = row_start(key, totals, r)
        for w in range(theta.shape[1]):
            t = theta[r, w]
            drift = prior[r, w] + counts[r, w] - t - total_c * t / total_t
            noise = np.sqrt(2.0 * eps * t) * ziggurat_normal(s)
            out[r, w] = positive(abs(t + eps * drift + noise))
    return out
