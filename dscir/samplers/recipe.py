"""The complete recipe (Ma, Chen & Fox 2015) as a generic SDE step.

For H(z) with a positive semidefinite D(z) and a skew-symmetric Q(z), the
diffusion

    dz = [-(D(z) + Q(z)) grad H(z) + Gamma(z)] dt + sqrt(2 D(z)) dW,
    Gamma_i(z) = sum_j d(D_ij + Q_ij)(z) / dz_j,

leaves exp(-H) invariant. ``step`` is its Euler step for a batch of states,
with Gamma from central finite differences of D + Q (so any user D and Q work;
``gamma=None``), or from a given function. Omitting Gamma (``gamma=False``)
gives the "naive" state-adaptive samplers whose bias the recipe's correction
removes. Plain numpy: meant for small dimensions and tests; the LDA samplers
are specialised numba kernels derived from the same recipe (see sgrhmc.py).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

Matrix = Callable[[np.ndarray], np.ndarray]  # (n, d) -> (n, d, d)


def gamma_fd(D: Matrix, Q: Matrix, z: np.ndarray, h: float = 1e-5) -> np.ndarray:
    """Gamma_i = sum_j d(D + Q)_ij / dz_j by central differences, for states z (n, d)."""
    n, d = z.shape
    out = np.zeros((n, d))
    for j in range(d):
        e = np.zeros(d)
        e[j] = h
        diff = (D(z + e) + Q(z + e) - D(z - e) - Q(z - e)) / (2 * h)
        out += diff[:, :, j]
    return out


def step(z: np.ndarray, grad_H: Callable[[np.ndarray], np.ndarray], D: Matrix, Q: Matrix,
         eps: float, rng: np.random.Generator,
         gamma: Callable[[np.ndarray], np.ndarray] | None | bool = None) -> np.ndarray:
    """One Euler step of the recipe's SDE for states ``z`` of shape (n, d)."""
    Dz, Qz = D(z), Q(z)
    drift = -np.einsum("nij,nj->ni", Dz + Qz, grad_H(z))
    if gamma is None:
        drift += gamma_fd(D, Q, z)
    elif gamma is not False:
        drift += gamma(z)
    w, v = np.linalg.eigh(Dz)  # sqrt of a PSD (possibly singular) D
    root = np.einsum("nij,nj,nkj->nik", v, np.sqrt(np.clip(w, 0, None)), v)
    noise = np.einsum("nij,nj->ni", root, rng.standard_normal(z.shape))
    return z + eps * drift + np.sqrt(2 * eps) * noise
