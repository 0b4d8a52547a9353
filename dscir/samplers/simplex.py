"""Points on the simplex from Gamma variables, on the log scale.

If G_1, ..., G_d are independent Gamma(a_i, 1), then G / sum(G) is
Dirichlet(a) and G_1 / (G_1 + G_2) is Beta(a_1, a_2). SCIR keeps each G as an
exact CIR process, so these maps turn SCIR states into Dirichlet (LDA topics,
the Dirichlet study) and Beta (the DP mixture's stick breaks) samples. Every
function takes and returns logs: with shapes like 1e-4 the gammas are far
below the smallest double, and only their logs carry the information.
Exact draws of the gammas themselves: ``dscir.samplers.cir.sample_stationary``.
"""

from __future__ import annotations

import numpy as np


def normalize_log(log_theta: np.ndarray, axis: int = -1) -> np.ndarray:
    """log phi = log_theta - log sum exp(log_theta) along ``axis``: the log of the
    Dirichlet draw when ``log_theta`` holds independent log-gamma draws."""
    log_theta = np.asarray(log_theta, dtype=np.float64)
    top = np.max(log_theta, axis=axis, keepdims=True)
    return log_theta - (top + np.log(np.sum(np.exp(log_theta - top), axis=axis, keepdims=True)))


def beta_from_log_gammas(log_g1, log_g2) -> tuple[np.ndarray, np.ndarray]:
    """(log V, log(1 - V)) for V = G1 / (G1 + G2), ~ Beta(a1, a2) when
    G1 ~ Gamma(a1) and G2 ~ Gamma(a2) are independent. Both parts stay accurate
    when V is within 1e-16 of 0 or 1, where forming V first would not."""
    log_g1 = np.asarray(log_g1, dtype=np.float64)
    log_g2 = np.asarray(log_g2, dtype=np.float64)
    log_sum = np.logaddexp(log_g1, log_g2)
    return log_g1 - log_sum, log_g2 - log_sum


def stick_breaking_log_weights(log_v, log_1mv) -> tuple[np.ndarray, np.ndarray]:
    """Stick-breaking weights from breaks along the last axis:
    log w_j = log v_j + sum_{l<j} log(1 - v_l), and log_rest = sum_l log(1 - v_l),
    the mass left for sticks not yet represented (the w_j and the rest sum to 1)."""
    log_v = np.asarray(log_v, dtype=np.float64)
    log_1mv = np.asarray(log_1mv, dtype=np.float64)
    before = np.cumsum(log_1mv, axis=-1)
    log_w = log_v.copy()
    log_w[..., 1:] += before[..., :-1]
    log_rest = before[..., -1] if log_v.shape[-1] else np.zeros(log_v.shape[:-1])
    return log_w, log_rest
