"""SGLD (Welling & Teh 2011) on the expanded mean: the non-Riemannian baseline.

    theta' = | theta + eps grad log p(theta) + sqrt(2 eps) xi |

with the expanded-mean gradient of ``dscir.samplers._expanded``; mirrored at 0.
Row r draws from stream ``mix_in(key, r)``.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from dscir.rng import mix_in, new_state, ziggurat_normal
from dscir.samplers._expanded import TINY, PositionState, as_rows, check_theta0, check_totals


State = PositionState


def init(theta0: np.ndarray) -> State:
    return State(check_theta0(theta0, "SGLD"))


def step(state: State, prior, counts: np.ndarray, step_size: float, key: int,
         totals=None) -> State:
    theta, prior, counts, eps, key = as_rows(state.theta, prior, counts, step_size, key,
                                             "SGLD")
    totals = check_totals(totals, theta, counts, "SGLD")
    return State(_sgld(theta, prior, counts, eps, key, totals).reshape(state.theta.shape))


@nb.njit(parallel=True, cache=True)
def _sgld(theta, prior, counts, eps, key, totals):
    out = np.empty_like(theta)
    noise = np.sqrt(2.0 * eps)
    for r in nb.prange(theta.shape[0]):
        s = new_state(mix_in(key, r))
        total_c, total_t = totals[1, r], totals[0, r]
        ratio = total_c / total_t
        for w in range(theta.shape[1]):
            t = theta[r, w]
            grad = (prior[r, w] + counts[r, w] - 1.0) / t - 1.0 - ratio
            v = abs(t + eps * grad + noise * ziggurat_normal(s))
            out[r, w] = v if v > 0.0 else TINY
    return out
