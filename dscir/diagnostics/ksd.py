"""Kernel Stein discrepancy (KSD) with the inverse multi-quadric kernel.

R-hat and the effective sample size assume an exact MCMC kernel and do not see
the bias of a stochastic-gradient sampler; the KSD measures how far a set of
samples is from the target using only the target's score (Gorham & Mackey
2017; Nemeth & Fearnhead 2021, Sec. 4, who use it to choose the step size).

For samples theta_1..theta_K in R^d and scores s(theta) = grad log pi(theta)
(noisy unbiased estimates allowed),

    KSD = sum_{j=1..d} sqrt( sum_{k,k'} k0_j(theta_k, theta_k') / K^2 ),

    k0_j(x, y) = s_j(x) s_j(y) k(x, y) + s_j(x) d_{y_j} k(x, y)
               + s_j(y) d_{x_j} k(x, y) + d_{x_j} d_{y_j} k(x, y),

with the inverse multi-quadric kernel k(x, y) = (c^2 + ||x - y||^2)^b, c > 0,
-1 < b < 0 (Gaussian or Matern kernels can miss non-convergence when d >= 3).

Kernel derivatives (by hand). Write delta = x - y and u = c^2 + ||delta||^2,
so k = u^b and d_{x_j} u = 2 delta_j, d_{y_j} u = -2 delta_j:

    d_{x_j} k          =  2 b delta_j u^(b-1)
    d_{y_j} k          = -2 b delta_j u^(b-1)
    d_{x_j} d_{y_j} k  = d_{x_j} [-2 b delta_j u^(b-1)]
                       = -2 b u^(b-1) - 4 b (b-1) delta_j^2 u^(b-2)

hence

    k0_j(x, y) = s_j(x) s_j(y) u^b - 2 b delta_j (s_j(x) - s_j(y)) u^(b-1)
                 - 2 b u^(b-1) - 4 b (b-1) delta_j^2 u^(b-2).

Cost is O(K^2 d) time; the K x K matrices are built a block of rows at a time
so that memory stays near ``max_bytes`` whatever K. Pure numpy, no Dask.
"""

from __future__ import annotations

import math

import numpy as np

from dscir.errors import DscirError

# the largest block of K x K work arrays held at once (about eight of them)
_MAX_BYTES = 256 * 2**20


def _check(samples, scores, c, beta) -> tuple[np.ndarray, np.ndarray, float, float]:
    try:
        x = np.asarray(samples, dtype=np.float64)
        s = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise DscirError(f"ksd: samples and scores must be numeric arrays ({err})") from None
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
        raise DscirError(f"ksd: samples must have shape (K, d) with K, d >= 1, got {x.shape}")
    if s.shape != x.shape:
        raise DscirError(
            f"ksd: scores must have the shape of the samples {x.shape}, got {s.shape}"
        )
    if not np.all(np.isfinite(x)):
        raise DscirError("ksd: samples must be finite (found nan or inf)")
    if not np.all(np.isfinite(s)):
        raise DscirError("ksd: scores must be finite (found nan or inf)")
    try:
        c = float(c)
        beta = float(beta)
    except (TypeError, ValueError):
        raise DscirError(f"ksd: c and beta must be numbers, got {c!r} and {beta!r}") from None
    if not (math.isfinite(c) and c > 0):
        raise DscirError(f"ksd: the kernel's c must be finite and > 0, got {c}")
    if not (-1.0 < beta < 0.0):
        raise DscirError(f"ksd: the kernel's beta must lie in (-1, 0), got {beta}")
    return x, s, c, beta


def ksd(
    samples: np.ndarray,
    scores: np.ndarray,
    c: float = 1.0,
    beta: float = -0.5,
    *,
    max_bytes: int = _MAX_BYTES,
) -> float:
    """Kernel Stein discrepancy of ``samples`` (K x d) given their ``scores``.

    ``scores[k]`` is grad log pi at ``samples[k]`` (an unbiased noisy estimate
    is allowed). The kernel is the inverse multi-quadric (c^2 + ||x - y||^2)^beta
    with c > 0 and -1 < beta < 0; see the module docstring for the formula and
    the kernel derivatives. Smaller is closer to pi; it is zero only for a
    perfect match and falls like 1/sqrt(K) for exact draws.
    Bad inputs raise :class:`dscir.errors.DscirError`.
    """
    x, s, c, b = _check(samples, scores, c, beta)
    n, d = x.shape
    c2 = c * c
    # rows per block: about eight n-wide float64 work arrays per row
    rows = max(1, min(n, int(max_bytes) // (8 * 8 * n)))
    totals = np.zeros(d)
    for lo in range(0, n, rows):
        xa, sa = x[lo : lo + rows], s[lo : lo + rows]
        u = np.full((xa.shape[0], n), c2)
        for j in range(d):
            u += np.square(xa[:, j, None] - x[None, :, j])
        ub = u**b  # k
        ub1 = ub / u  # u^(b-1)
        ub2 = ub1 / u  # u^(b-2)
        const = (-2.0 * b) * ub1.sum()  # the -2b u^(b-1) term, the same for every j
        for j in range(d):
            delta = xa[:, j, None] - x[None, :, j]
            sx, sy = sa[:, j, None], s[None, :, j]
            term = sx * sy * ub
            term -= (2.0 * b) * delta * (sx - sy) * ub1
            term -= (4.0 * b * (b - 1.0)) * np.square(delta) * ub2
            totals[j] += term.sum() + const
    # each sum is a V-statistic of a positive-definite kernel, hence >= 0;
    # clip rounding below zero
    return float(np.sum(np.sqrt(np.clip(totals, 0.0, None) / (n * n))))
