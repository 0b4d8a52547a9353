"""KS distance of simplex samples to a Dirichlet, via the Rosenblatt transform.

For x ~ Dirichlet(a) in d dimensions the conditional stick ratios
x_j / (x_j + ... + x_d) ~ Beta(a_j, a_{j+1} + ... + a_d), j = 1..d-1, are
independent; their Beta CDFs are then Uniform(0, 1). The distance is the mean,
over the d - 1 coordinates, of the Kolmogorov-Smirnov statistic of the
transformed samples against Uniform(0, 1) (Baker et al. 2018, Sec. 3.2).
Ratios are formed from log phi by log-sum-exp, so components far below 1e-300
(sparse posteriors) are handled exactly.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from dscir.errors import DscirError


def ks_uniform(u: np.ndarray) -> float:
    """Kolmogorov-Smirnov statistic of samples u against Uniform(0, 1)."""
    x = np.sort(np.asarray(u, dtype=np.float64))
    n = x.size
    return float(max(np.max(np.arange(1, n + 1) / n - x), np.max(x - np.arange(n) / n)))


def rosenblatt_ks(log_phi: np.ndarray, alpha: np.ndarray) -> float:
    """Mean KS distance of samples (n x d, as log phi) to Dirichlet(alpha)."""
    log_phi = np.asarray(log_phi, dtype=np.float64)
    alpha = np.asarray(alpha, dtype=np.float64)
    if log_phi.ndim != 2 or log_phi.shape[1] != alpha.size or alpha.size < 2:
        raise DscirError(
            f"need samples of shape (n, {alpha.size}) for a Dirichlet of dimension "
            f"{alpha.size} >= 2, got {log_phi.shape}"
        )
    if not np.all(alpha > 0) or not np.all(np.isfinite(log_phi)):
        raise DscirError("Dirichlet parameters must be positive and samples finite")
    d = alpha.size
    # log of the remainders R_j = x_j + ... + x_d (reverse cumulative log-sum-exp)
    log_rest = np.logaddexp.accumulate(log_phi[:, ::-1], axis=1)[:, ::-1]
    tail = np.cumsum(alpha[::-1])[::-1]  # a_j + ... + a_d
    dists = []
    for j in range(d - 1):
        ratio = np.exp(log_phi[:, j] - log_rest[:, j])
        dists.append(ks_uniform(special.betainc(alpha[j], tail[j + 1], np.clip(ratio, 0, 1))))
    return float(np.mean(dists))
