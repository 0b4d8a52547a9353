"""A small synthetic LDA corpus with known topics and a small chain config for it."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment

from dscir.models.lda import LDAConfig

K_TRUE = 4
W = 40


def synthetic_lda(n_docs: int, doc_len: int, seed: int) -> tuple[sp.csr_matrix, np.ndarray]:
    """Documents drawn from LDA with K_TRUE well-separated topics (10 words each)."""
    rng = np.random.default_rng(seed)
    phi = np.full((K_TRUE, W), 1e-3)
    for k in range(K_TRUE):
        phi[k, 10 * k : 10 * (k + 1)] = rng.dirichlet(np.full(10, 5.0))
    phi /= phi.sum(axis=1, keepdims=True)
    theta = rng.dirichlet(np.full(K_TRUE, 0.2), size=n_docs)
    rows = [rng.multinomial(doc_len, theta[d] @ phi) for d in range(n_docs)]
    return sp.csr_matrix(np.array(rows)), phi


def topic_error(phi_hat: np.ndarray, phi: np.ndarray) -> float:
    """Mean L1 distance between matched topics (Hungarian matching)."""
    cost = np.abs(phi_hat[:, None, :] - phi[None, :, :]).sum(axis=2)
    r, c = linear_sum_assignment(cost)
    return float(cost[r, c].mean())


def small_config(**kw) -> LDAConfig:
    base = dict(n_topics=K_TRUE, sampler="scir", alpha=0.1, beta=0.5, batch_size=30,
                step_size=0.5, tau=10.0, kappa=0.33, sweeps=20, seed=3, burn_in=5, thin=2,
                eval_sweeps=20)
    base.update(kw)
    return LDAConfig(**base)
