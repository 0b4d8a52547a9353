"""gSGRHMC: generalised stochastic-gradient Riemannian HMC (Ma, Chen & Fox 2015).

Derived from the complete recipe with z = (theta, r), H = U(theta) + r.r/2,
U = -log p(theta) in the expanded mean, G(theta) = diag(theta)^-1 and

    D = diag(0, G^-1) = diag(0, theta),   Q = [[0, -G^-1/2], [G^-1/2, 0]].

The recipe's drift is -(D + Q) grad H + Gamma with Gamma_i = sum_j d(D_ij + Q_ij)/dz_j:
Q_{theta,r} depends on theta only, so Gamma_theta = 0, and
Gamma_r = d(sqrt theta)/d theta = 1 / (2 sqrt theta). Hence

    d theta = sqrt(theta) r dt
    d r     = [ sqrt(theta) grad log p - theta r + 1/(2 sqrt theta) ] dt + sqrt(2 theta) dW
            = [ (a - 1/2)/sqrt(theta) - sqrt(theta)(1 + c_k./theta_k.) - theta r ] dt
              + sqrt(2 theta) dW,

a = prior + c. Dropping the Gamma_r term gives the "naive" state-adaptive
SGHMC, which is biased (tests/samplers/test_recipe.py shows it on a 1-D example).

Two integrators (docs/integrators.md). ``"euler"``, the paper's Eq. (17):
r' = r + eps (force - theta r) + sqrt(2 eps theta) xi, then
theta' = theta + eps sqrt(theta) r'; its friction factor 1 - eps theta makes
it unstable once eps theta > 2. ``"splitting"`` (default), BAOAB with the
step boundary moved by half a kick (a step's last half kick and the next
step's first are one kick, at the same theta), so one force per step is taken
at the step's start (where a block of columns is given its rows' totals):

    B  r <- r + eps F(theta),  F = (a - 1/2)/sqrt(theta) - sqrt(theta)(1 + c_k./theta_k.)
    A  theta <- theta + (eps/2) sqrt(theta) r
    O  r <- e^{-eps theta} r + sqrt(1 - e^{-2 eps theta}) xi      (exact OU, theta fixed)
    A  theta <- theta + (eps/2) sqrt(theta) r

F keeps the Gamma_r term; O solves dr = -theta r dt + sqrt(2 theta) dW
exactly, so it is stable for any eps theta. Each position move reflects at 0
(theta and r flip). Row r draws from ``mix_in(key, r)``, one normal per entry
in both integrators.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from dscir.rng import ziggurat_normal
from dscir.samplers._expanded import (MomentumState, init_momentum, momentum_step, positive,
                                      reflect, row_start)
from dscir.samplers._log_flow import log_flow, log_rate


State = MomentumState


def init(theta0: np.ndarray, r0: np.ndarray | None = None) -> State:
    return init_momentum(theta0, r0, "gSGRHMC")


def step(state: State, prior, counts: np.ndarray, step_size: float, key: int,
         totals=None, integrator: str = "splitting") -> State:
    return momentum_step((_sgrhmc, _splitting), "gSGRHMC", state, prior, counts, step_size,
                         key, totals, integrator)


@nb.njit(parallel=True, cache=True)
def _sgrhmc(theta, r, prior, counts, eps, key, totals):
    t_out = np.empty_like(theta)
    r_out = np.empty_like(r)
    for i in nb.prange(theta.shape[0]):
        s, total_c, total_t = row_start(key, totals, i)
        ratio = total_c / total_t
        for w in range(theta.shape[1]):
            a = prior[i, w] + counts[i, w]
            t = theta[i, w]
            st = np.sqrt(t)
            drift = (a - 0.5) / st - st * (1.0 + ratio) - t * r[i, w]
            m = r[i, w] + eps * drift + np.sqrt(2.0 * eps * t) * ziggurat_normal(s)
            v = t + eps * st * m
            v, r_out[i, w] = reflect(v, m)
            t_out[i, w] = positive(v)
    return t_out, r_out


@nb.njit(parallel=True, cache=True)
def _splitting(theta, r, prior, counts, eps, key, totals):
    t_out = np.empty_like(theta)
    r_out = np.empty_like(r)
    lead = 0.5 * eps  # the position move before the O step; eps - lead after it
    for i in nb.prange(theta.shape[0]):
        s, total_c, total_t = row_start(key, totals, i)
        ratio = total_c / total_t
        c_last = rate_lead = rate_rest = np.nan  # the flows' log rates at c_last
        for w in range(theta.shape[1]):
            half = prior[i, w] + counts[i, w] - 0.5  # a - 1/2: the Gamma term's share
            st = np.sqrt(theta[i, w])
            u = 2.0 * st
            if half < 0.0 and -2.0 * half != c_last:
                c_last = -2.0 * half
                rate_lead, rate_rest = log_rate(c_last, lead), log_rate(c_last, eps - lead)
            if half < 0.0:  # singular force: in the exact flow in u = 2 sqrt(theta)
                u, m = log_flow(u, r[i, w] - eps * st * (1.0 + ratio), -2.0 * half, lead,
                                rate_lead)
                v = positive(0.25 * u * u)
            else:
                m = r[i, w] + eps * (half / st - st * (1.0 + ratio))
                v, m = reflect(theta[i, w] + lead * st * m, m)
                v = positive(v)
            m = np.exp(-eps * v) * m + np.sqrt(-np.expm1(-2.0 * eps * v)) * ziggurat_normal(s)
            if half < 0.0:
                u, r_out[i, w] = log_flow(u, m, -2.0 * half, eps - lead, rate_rest)
                t_out[i, w] = positive(0.25 * u * u)
            else:
                v, r_out[i, w] = reflect(v + (eps - lead) * np.sqrt(v) * m, m)
                t_out[i, w] = positive(v)
    return t_out, r_out
