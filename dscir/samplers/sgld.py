"""SGLD (Welling & Teh 2011) on the expanded mean: the non-Riemannian baseline.

    theta' = | theta + eps grad log p(theta) + sqrt(2 eps) xi |

with the expanded-mean gradient of ``dscir.samplers._expanded``; mirrored at 0.
Row r draws from stream ``mix_in(key, r)``.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from dscir.rng import ziggurat_normal
from dscir.samplers._expanded import (PositionState, check_theta0, expanded_grad, position_step,
                                      positive, row_start)


State = PositionState


def init(theta0: np.ndarray) -> State:
    return State(check_theta0(theta0, "SGLD"))


def step(state: State, prior, counts: np.ndarray, step_size: float, key: int,
         totals=None) -> State:
    return position_step(_sgld, "SGLD", state, prior, counts, step_size, key, totals)


@nb.njit(parallel=True, cache=True)
def _sgld(theta, prior, counts, eps, key, totals):
    out = np.empty_like(theta)
    noise = np.sqrt(2.0 * eps)
    for r in nb.prange(theta.shape[0]):
        s, total_c, total_t = row_start(key, totals, r)
        for w in range(theta.shape[1]):
            t = theta[r, w]
            grad = expanded_grad(prior[r, w] + counts[r, w], t, total_c / total_t)
            out[r, w] = positive(abs(t + eps * grad + noise * ziggurat_normal(s)))
    return out
