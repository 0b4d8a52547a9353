"""Dirichlet-process mixture of multinomials: the slice-sampler pieces.

The model (users x areas counts in dscir's msweb example)::

    x_i | z_i, phi ~ Multinomial(n_i, phi_{z_i}),   phi_j ~ Dirichlet(a0),
    w_j = v_j prod_{l<j} (1 - v_l),  v_j ~ Beta(1, alpha),  alpha ~ Gamma(shape, rate).

Representation (shared by the exact and the stochastic samplers): the
components are Gamma variables theta_jw ~ Gamma(a0, 1), phi_j = theta_j /
theta_j. ; each stick break is two Gamma variables, v_j = G1_j / (G1_j + G2_j)
with G1 ~ Gamma(1 + m_j), G2 ~ Gamma(alpha + M_j) under the full conditional
(m_j users in component j, M_j = sum_{l>j} m_l). So one K x 2 array of stick
gammas and one K x W array of component gammas carry the whole state besides
alpha and the allocations, and the SCIR (or SGRLD) step of
``dscir.samplers`` moves both; an exact draw is the SCIR transition over an
infinite time. Everything is on the log scale: with a0 = 0.001 component
entries are far below the smallest double, and deep sticks carry weights like
1e-3000.

Slice sampler (Walker 2007; Kalli, Griffin & Walker 2011): u_i ~ U(0,
w_{z_i}); the represented components are extended with prior draws until
sum_j w_j > 1 - min_i u_i (``new_sticks``); then z_i is drawn over the finite
set {j : w_j > u_i} with probability proportional to Mult(x_i | phi_j)
(``allocate``). Labels are never renumbered: a component that empties keeps
its index (its stick then follows Beta(1, alpha + M_j)); only components past
the last label in use are dropped, being exact prior draws that are redrawn
when needed.

alpha | v: with K represented sticks and the rest marginalised, the full
conditional under a Gamma(shape, rate) prior is Gamma(shape + K, rate -
sum_{j<=K} log(1 - v_j)) (Escobar & West's conjugate update, written for the
stick-breaking representation; ``sample_alpha``).

Random streams: per-user draws (slices, allocations) come from the stream
(key, user id), so they do not depend on how users are split into batches.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba as nb
import numpy as np

from dscir.errors import DscirError
from dscir.rng import derive, mix_in, new_state, uniform
from dscir.samplers import cir
from dscir.samplers.cir import sample_stationary
from dscir.samplers.simplex import (
    beta_from_log_gammas,
    normalize_log,
    stick_breaking_log_weights,
)

MAX_COMPONENTS = 1_000_000  # beyond this a slice step raises instead of exhausting memory


# -- sticks --------------------------------------------------------------------


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

    ``sampler`` is a ``dscir.samplers`` module (SCIR or SGRLD) moving the K x 2
    stick gammas towards Beta(1 + m_j, alpha + sum_{l>j} m_l) with step
    ``step_sizes[1]`` and the K x W component gammas towards Gamma(a0 + c_j)
    with ``step_sizes[0]``, given ``occupancy`` m (K) and area ``counts`` c
    (K x W), both already scaled to the full data; then alpha | v. ``keys``
    name the streams of the three draws. With SCIR, full-data statistics and
    infinite steps the update is the exact Gibbs one (fresh Beta and Dirichlet
    draws from the full conditionals). Returns (sticks, theta, alpha).
    """
    k = len(occupancy)
    sticks = sampler.step(sticks, stick_prior(k, alpha), stick_counts(occupancy),
                          step_sizes[1], keys[0])
    theta = sampler.step(theta, a0, counts, step_sizes[0], keys[1])
    _, log_rest = log_weights(sticks.log_theta)
    return sticks, theta, sample_alpha(log_rest, k, alpha_prior[0], alpha_prior[1], keys[2])


def sample_alpha(log_rest: float, n_sticks: int, shape: float, rate: float, key: int) -> float:
    """alpha | v_1..v_K ~ Gamma(shape + K, rate - sum_j log(1 - v_j))."""
    log_g = sample_stationary(np.array([shape + n_sticks]), key)[0]
    return float(np.exp(log_g) / (rate - log_rest))


# -- slices and allocations (per user) ------------------------------------------


@nb.njit(cache=True, nogil=True)
def _slice_log_u(log_wz, users, key, out):
    for i in range(users.size):
        s = new_state(mix_in(key, users[i]))
        out[i] = log_wz[i] + np.log(uniform(s))


def slice_log_u(log_w: np.ndarray, z: np.ndarray, users: np.ndarray, key: int) -> np.ndarray:
    """log u_i for u_i ~ U(0, w_{z_i}); user ``users[i]`` draws from (key, user)."""
    z = np.asarray(z, dtype=np.int64)
    if z.size and (z.min() < 0 or z.max() >= log_w.size):
        raise DscirError(f"allocations must lie in 0..{log_w.size - 1}")
    out = np.empty(z.size)
    _slice_log_u(np.ascontiguousarray(log_w[z]), np.asarray(users, np.int64), np.uint64(key), out)
    return out


@nb.njit(cache=True, nogil=True)
def _allocate(indptr, local, data, users, log_u, log_w, log_phi, key, out):
    n_comp = log_w.size
    score = np.empty(n_comp)
    for i in range(users.size):
        s = new_state(mix_in(key, users[i]))
        top = -np.inf
        for j in range(n_comp):
            if log_w[j] >= log_u[i]:
                acc = 0.0
                for p in range(indptr[i], indptr[i + 1]):
                    acc += data[p] * log_phi[j, local[p]]
                score[j] = acc
                if acc > top:
                    top = acc
            else:
                score[j] = -np.inf
        if top == -np.inf:
            out[i] = -1
            continue
        total = 0.0
        for j in range(n_comp):
            if score[j] > -np.inf:
                score[j] = np.exp(score[j] - top)
                total += score[j]
            else:
                score[j] = 0.0
        r = uniform(s) * total
        pick = -1
        for j in range(n_comp):
            if score[j] > 0.0:
                pick = j
                r -= score[j]
                if r <= 0.0:
                    break
        out[i] = pick


def allocate(indptr, local, data, users, log_u, log_w, log_phi_cols, key: int) -> np.ndarray:
    """z_i over {j : w_j >= u_i} with p(z_i = j) ∝ prod_w phi_jw^{x_iw}, in log space.

    CSR users (``indptr``, counts ``data``) whose entry e is column ``local[e]``
    of ``log_phi_cols`` (K x U, the columns of the areas they use); user
    ``users[i]`` draws from the stream (key, user). Each u_i must lie below some
    w_j (it does when drawn by ``slice_log_u``)."""
    out = np.empty(len(users), dtype=np.int32)
    _allocate(np.asarray(indptr, np.int64), np.asarray(local, np.int64),
              np.asarray(data, np.float64), np.asarray(users, np.int64),
              np.asarray(log_u, np.float64), np.ascontiguousarray(log_w, dtype=np.float64),
              np.ascontiguousarray(log_phi_cols, dtype=np.float64), np.uint64(key), out)
    if out.size and out.min() < 0:
        raise DscirError("a slice variable lies above every stick weight")
    return out


class ComponentCounts(NamedTuple):
    """Integer sufficient statistics of allocated users over their components."""

    components: np.ndarray  # int64 [C] sorted component ids that have users
    users: np.ndarray  # int64 [C] users in each
    counts: np.ndarray  # int64 [C, U] summed counts over the U local columns


def component_counts(indptr, local, data, z, n_cols: int) -> ComponentCounts:
    """Users and summed counts per occupied component (exact integer sums)."""
    z = np.asarray(z, dtype=np.int64)
    comps, inv, users = np.unique(z, return_inverse=True, return_counts=True)
    rows = np.repeat(inv, np.diff(np.asarray(indptr, np.int64)))
    flat = np.bincount(rows * n_cols + np.asarray(local, np.int64),
                       weights=np.asarray(data, np.float64), minlength=comps.size * n_cols)
    return ComponentCounts(comps.astype(np.int64), users.astype(np.int64),
                           np.rint(flat).astype(np.int64).reshape(comps.size, n_cols))


# -- held-out score ---------------------------------------------------------------


@nb.njit(cache=True, nogil=True)
def _log_predictive(indptr, local, data, log_w, log_phi, log_rest, a0, n_words, out):
    n_comp = log_w.size
    lg_a0 = math.lgamma(a0)
    lg_wa0 = math.lgamma(n_words * a0)
    terms = np.empty(n_comp + 1)
    for i in range(indptr.size - 1):
        n = 0.0
        coef = 0.0
        prior = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            n += data[p]
            coef -= math.lgamma(data[p] + 1.0)
            prior += math.lgamma(data[p] + a0) - lg_a0
        coef += math.lgamma(n + 1.0)
        # the unrepresented components, integrated over the prior: Dirichlet-multinomial
        top = log_rest + prior + lg_wa0 - math.lgamma(n + n_words * a0)
        terms[n_comp] = top
        for j in range(n_comp):
            acc = log_w[j]
            for p in range(indptr[i], indptr[i + 1]):
                acc += data[p] * log_phi[j, local[p]]
            terms[j] = acc
            if acc > top:
                top = acc
        total = 0.0
        for j in range(n_comp + 1):
            total += np.exp(terms[j] - top)
        out[i] = coef + top + np.log(total)


def log_predictive(indptr, local, data, log_w, log_phi_cols, log_rest: float, a0: float,
                   n_words: int) -> np.ndarray:
    """Per-user log p(x_i) = log [sum_j w_j Mult(x_i | phi_j) + w_rest DirMult(x_i | a0)]
    under one posterior sample (natural log, multinomial coefficient included);
    the last term integrates the components not represented over their prior."""
    out = np.empty(len(indptr) - 1)
    _log_predictive(np.asarray(indptr, np.int64), np.asarray(local, np.int64),
                    np.asarray(data, np.float64), np.ascontiguousarray(log_w, dtype=np.float64),
                    np.ascontiguousarray(log_phi_cols, dtype=np.float64), float(log_rest),
                    float(a0), int(n_words), out)
    return out


class PredictiveAverage:
    """Held-out log predictive averaged over posterior samples, in log space:
    per user, log (1/S) sum_s p_s(x_i) (a running logsumexp), then the mean over users."""

    def __init__(self):
        self.log_sum: np.ndarray | None = None
        self.n_samples = 0

    def add(self, log_p: np.ndarray) -> None:
        log_p = np.asarray(log_p, dtype=np.float64)
        self.log_sum = log_p.copy() if self.log_sum is None else np.logaddexp(self.log_sum, log_p)
        self.n_samples += 1

    def per_user(self) -> np.ndarray:
        if self.n_samples == 0:
            raise DscirError("no posterior sample has been scored yet")
        return self.log_sum - np.log(self.n_samples)

    def mean(self) -> float:
        return float(np.mean(self.per_user()))


# -- the exact baseline -----------------------------------------------------------


class Sample(NamedTuple):
    """One posterior sample of the mixture: what prediction and scoring need."""

    log_w: np.ndarray  # [K]
    log_phi: np.ndarray  # [K, W]
    log_rest: float
    alpha: float


class GibbsSlice:
    """The exact Gibbs slice sampler (Walker 2007; Kalli, Griffin & Walker 2011).

    Single machine, full data: every sweep draws u_i | v, z for all users,
    extends the sticks, allocates all users, then v | z, alpha and theta | z
    exactly, alpha | v (``global_step`` with SCIR, the full-data statistics
    and infinite steps: fresh Gamma draws), and drops the components past the
    last label in use.
    Users are the CSR rows; ``user_ids`` (default 0..N-1) name their streams.
    Sweep t draws from streams derive(seed, t, step) so ``run(a); run(b)`` equals
    ``run(a + b)``.
    """

    _SLICE, _EXTEND, _ALLOC, _STICKS, _COMPONENTS, _ALPHA = range(6)

    def __init__(self, indptr, indices, data, n_words: int, *, a0: float,
                 alpha_prior: tuple[float, float], n_init: int, seed: int, user_ids=None):
        self.indptr = np.asarray(indptr, np.int64)
        self.indices = np.asarray(indices, np.int64)
        self.data = np.asarray(data, np.int64)
        self.n_words = int(n_words)
        if self.indices.size and (self.indices.min() < 0 or self.indices.max() >= n_words):
            raise DscirError(f"area ids must lie in 0..{n_words - 1}")
        self.n_users = self.indptr.size - 1
        self.user_ids = (np.arange(self.n_users, dtype=np.int64) if user_ids is None
                         else np.asarray(user_ids, np.int64))
        self.a0 = float(a0)
        self.alpha_prior = (float(alpha_prior[0]), float(alpha_prior[1]))
        self.seed = int(seed)
        init = initial_state(self.n_users, n_words, n_init, self.alpha_prior, seed)
        self.z, self.log_sticks, self.log_theta, self.alpha = init
        self.iteration = 0
        self.n_proposed = self.log_sticks.shape[0]

    @property
    def n_components(self) -> int:
        return int(self.log_sticks.shape[0])

    @property
    def n_clusters(self) -> int:
        return int(np.unique(self.z).size)

    def sample(self) -> Sample:
        log_w, log_rest = log_weights(self.log_sticks)
        return Sample(log_w, normalize_log(self.log_theta, axis=1), log_rest, self.alpha)

    def step(self) -> None:
        t = self.iteration + 1
        key = lambda part: derive(self.seed, t, part)  # noqa: E731
        log_w, log_rest = log_weights(self.log_sticks)
        log_u = slice_log_u(log_w, self.z, self.user_ids, key(self._SLICE))
        extra = new_sticks(log_rest, float(log_u.min()), self.alpha, key(self._EXTEND))
        if extra.shape[0]:
            self.log_sticks = np.concatenate([self.log_sticks, extra])
            self.log_theta = np.concatenate([self.log_theta, prior_components(
                extra.shape[0], self.n_words, self.a0, derive(key(self._EXTEND), 2**32))])
            log_w, log_rest = log_weights(self.log_sticks)
        self.n_proposed = self.n_components
        self.z = allocate(self.indptr, self.indices, self.data, self.user_ids, log_u, log_w,
                          normalize_log(self.log_theta, axis=1), key(self._ALLOC))
        k = self.n_components
        cc = component_counts(self.indptr, self.indices, self.data, self.z, self.n_words)
        m = np.zeros(k)
        m[cc.components] = cc.users
        counts = np.zeros((k, self.n_words))
        counts[cc.components] = cc.counts
        sticks, theta, self.alpha = global_step(
            cir, cir.State(self.log_sticks), cir.State(self.log_theta), self.alpha, m, counts,
            a0=self.a0, alpha_prior=self.alpha_prior, step_sizes=(math.inf, math.inf),
            keys=(key(self._STICKS), key(self._COMPONENTS), key(self._ALPHA)))
        self.log_sticks, self.log_theta = sticks.log_theta, theta.log_theta
        keep = int(self.z.max()) + 1
        self.log_sticks, self.log_theta = self.log_sticks[:keep], self.log_theta[:keep]
        self.iteration = t


def initial_state(n_users: int, n_words: int, n_init: int, alpha_prior, seed: int):
    """(z, log sticks, log theta, alpha) to start a chain: alpha at its prior
    mean, n_init sticks from Beta(1, alpha), theta ~ Gamma(1, 1) (components
    spread out, as the LDA driver starts), users uniform over the n_init."""
    alpha = float(alpha_prior[0] / alpha_prior[1])
    rng = np.random.Generator(np.random.PCG64(derive(seed, 2**31)))
    z = rng.integers(0, n_init, size=n_users).astype(np.int32)
    log_sticks = sample_stationary(stick_prior(n_init, alpha), derive(seed, 2**31, 1))
    log_theta = np.log(rng.gamma(1.0, 1.0, size=(n_init, n_words)))
    return z, log_sticks, log_theta, alpha
