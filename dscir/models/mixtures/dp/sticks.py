"""The stick-breaking weights, alpha, and the global step of the DP mixture.

Sticks are K x 2 Gamma variables (v_j = G1_j / (G1_j + G2_j)), components K x W
Gamma variables; a sampler step moves both towards their full conditionals
given (scaled) allocation statistics, and an exact draw is the SCIR
transition over an infinite time (``global_step``).
"""

from __future__ import annotations

import math

import numpy as np

from dscir.errors import DscirError
from dscir.rng import derive
from dscir.samplers.cir import sample_stationary
from dscir.samplers.simplex import beta_from_log_gammas, stick_breaking_log_weights
from dscir.rng.domains import DP_INIT

MAX_COMPONENTS = 1_000_000  # beyond this a slice step raises instead of exhausting memory


def stick_counts(m: np.ndarray) -> np.ndarray:
    """K x 2 statistics of the sticks: (m_j, sum_{l>j} m_l) for occupancies ``m``."""
    m = np.asarray(m, dtype=np.float64)
    after = np.cumsum(m[::-1])[::-1] - m
    return np.stack([m, np.maximum(after, 0.0)], axis=1)


def stick_prior(n_sticks: int, alpha: float) -> np.ndarray:
    """K x 2 prior shapes (1, alpha) of the stick gammas (Beta(1, alpha) breaks)."""
    return np.tile(np.array([1.0, float(alpha)]), (n_sticks, 1))


def log_weights(log_sticks: np.ndarray) -> tuple[np.ndarray, float]:
    """(log w [K], log_rest) from the K x 2 log stick gammas; log_rest =
    sum_j log(1 - v_j) is the log mass of the components not represented."""
    log_sticks = np.asarray(log_sticks, dtype=np.float64)
    log_v, log_1mv = beta_from_log_gammas(log_sticks[:, 0], log_sticks[:, 1])
    log_w, log_rest = stick_breaking_log_weights(log_v, log_1mv)
    return log_w, float(log_rest)


def new_sticks(log_rest: float, log_min_u: float, alpha: float, key: int,
               max_components: int = MAX_COMPONENTS) -> np.ndarray:
    """Log stick gammas (J x 2) of the fewest prior breaks v ~ Beta(1, alpha) that
    bring the unrepresented mass below the smallest slice:
    log_rest + sum_new log(1 - v) < ``log_min_u`` (J = 0 if it already is).

    Drawn in blocks sized from E[-log(1 - v)] = 1 / alpha; block b uses the
    stream (key, b), row r of it (key, b, r)."""
    if not np.isfinite(log_min_u):
        raise DscirError(f"the smallest slice variable has log {log_min_u}; it must be finite")
    blocks, rest, b, total = [], float(log_rest), 0, 0
    while rest >= log_min_u:
        size = int(min(max(16.0, 1.25 * alpha * (rest - log_min_u) + 16.0), 1e6))
        if total + size > max_components:
            raise DscirError(
                f"the slice sampler needs more than {max_components} components (alpha = "
                f"{alpha:.3g}, smallest log slice {log_min_u:.4g}); the chain has degenerated")
        g = sample_stationary(stick_prior(size, alpha), derive(key, b))
        _, log_1mv = beta_from_log_gammas(g[:, 0], g[:, 1])
        cum = rest + np.cumsum(log_1mv)
        done = np.flatnonzero(cum < log_min_u)
        if done.size:
            blocks.append(g[: done[0] + 1])
            break
        blocks.append(g)
        rest, b, total = float(cum[-1]), b + 1, total + size
    return np.concatenate(blocks) if blocks else np.zeros((0, 2))


def prior_components(n: int, n_words: int, a0: float, key: int) -> np.ndarray:
    """Log gammas (n x W) of n components drawn from the prior Gamma(a0, 1)."""
    return sample_stationary(np.full((n, n_words), float(a0)), key)


def global_step(sampler, sticks, theta, alpha: float, occupancy, counts, *, a0: float,
                alpha_prior: tuple[float, float], step_sizes: tuple[float, float], keys):
    """The update of the global parameters from (scaled) allocation statistics.

    ``sampler`` is a ``dscir.samplers.Sampler`` (SCIR or SGRLD) moving the K x 2
    stick gammas towards Beta(1 + m_j, alpha + sum_{l>j} m_l) with step
    ``step_sizes[1]`` and the K x W component gammas towards Gamma(a0 + c_j)
    with ``step_sizes[0]``, given ``occupancy`` m (K) and area ``counts`` c
    (K x W), both already scaled to the full data; then alpha | v. ``keys``
    name the streams of the three draws. With SCIR, full-data statistics and
    infinite steps the update is the exact Gibbs one (fresh Beta and Dirichlet
    draws from the full conditionals). Returns (sticks, theta, alpha).
    """
    theta = sampler.step(theta, a0, counts, step_sizes[0], keys[1])
    sticks, alpha = sticks_step(sampler, sticks, alpha, occupancy, alpha_prior=alpha_prior,
                                step_size=step_sizes[1], keys=(keys[0], keys[2]))
    return sticks, theta, alpha


def sticks_step(sampler, sticks, alpha: float, occupancy, *, alpha_prior: tuple[float, float],
                step_size: float, keys) -> tuple:
    """``global_step`` without the components: the sticks towards Beta(1 + m_j,
    alpha + sum_{l>j} m_l), then alpha | v; ``keys``: (sticks, alpha) streams.
    Returns (sticks, alpha)."""
    k = len(occupancy)
    sticks = sampler.step(sticks, stick_prior(k, alpha), stick_counts(occupancy), step_size,
                          keys[0])
    _, log_rest = log_weights(sticks.log_theta)
    return sticks, sample_alpha(log_rest, k, alpha_prior[0], alpha_prior[1], keys[1])


def sample_alpha(log_rest: float, n_sticks: int, shape: float, rate: float, key: int) -> float:
    """alpha | v_1..v_K ~ Gamma(shape + K, rate - sum_j log(1 - v_j))."""
    log_g = sample_stationary(np.array([shape + n_sticks]), key)[0]
    return float(np.exp(log_g) / (rate - log_rest))


def start_gamma(n_init: int, alpha_prior) -> float:
    """The weights' Dirichlet concentration of ``init="collapsed"``'s finite start:
    alpha / K at alpha's prior mean, the K-term approximation of the DP prior
    (Ishwaran & Zarepour 2002), so the start empties the clusters the DP would."""
    return float(alpha_prior[0] / alpha_prior[1]) / n_init


def occupied_by_size(log_weights: np.ndarray, log_theta: np.ndarray, gamma: float) -> np.ndarray:
    """The rows of a finite start's ``log_theta`` whose clusters hold documents
    (log weight log(gamma + m_hat) above log gamma), the largest first: the DP's
    labels are ordered by size, and an empty cluster's prior row would only
    lengthen the first iterations."""
    order = np.argsort(-log_weights, kind="stable")
    return log_theta[order[log_weights[order] > math.log(gamma)]]


def initial_state(n_users: int, n_words: int, n_init: int, alpha_prior, seed: int):
    """(z, log sticks, log theta, alpha) to start a chain: alpha at its prior
    mean, n_init sticks from Beta(1, alpha), theta ~ Gamma(1, 1) (components
    spread out, as the LDA driver starts), users uniform over the n_init."""
    alpha = float(alpha_prior[0] / alpha_prior[1])
    rng = np.random.Generator(np.random.PCG64(derive(seed, DP_INIT)))
    z = rng.integers(0, n_init, size=n_users).astype(np.int32)
    log_sticks = sample_stationary(stick_prior(n_init, alpha), derive(seed, DP_INIT, 1))
    log_theta = np.log(rng.gamma(1.0, 1.0, size=(n_init, n_words)))
    return z, log_sticks, log_theta, alpha

