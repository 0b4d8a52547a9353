"""The lazy SCIR step's row totals measured: on the Dirichlet study's posteriors
(``read_phi``, ``ks_distances``) and in a synthetic LDA-like run
(``normaliser_spread``).

A Dirichlet(alpha + counts) posterior over d categories (``dscir.models.dirichlet``)
is sampled by SCIR on d expanded-mean entries, one "row" (K = 1) of d "word"
columns; a minibatch touches only the categories it contains. Lazy and dense
chains have the same theta chain in law, so what differs is the normaliser a
stochastic-gradient step would use: at every kept iteration the phi of one
category is read as the step reads a minibatch's columns (touched at the clock,
divided by the row total R) and compared with its exact Beta marginal.
Dense: R is the sum of all entries. Lazy: R is ``cir_lazy.normaliser``'s
(``totals="mean"`` or ``"draw"``).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from dscir.rng import domains
from dscir.models import dirichlet as model
from dscir.rng import derive
from dscir.samplers import cir, cir_lazy

METHODS = ("dense", "mean", "draw")


def read_phi(method: str, counts: np.ndarray, n: int, h: float, seed: int, burn_in: int,
             kept: int, component: int) -> np.ndarray:
    """phi of ``component`` as read by the step at each of ``kept`` iterations."""
    labels = model.observations(counts)
    rng = np.random.Generator(np.random.PCG64(derive(seed, domains.DIRICHLET_DATA)))
    theta0 = np.random.Generator(np.random.PCG64(derive(seed, domains.DIRICHLET_INIT))) \
        .gamma(1.0, 1.0, size=counts.size)
    out = np.empty(kept)
    if method == "dense":
        state = cir.init(theta0)
    else:
        state = cir_lazy.init(theta0[None, :])
    for m in range(burn_in + kept):
        est = model.minibatch_counts(labels, n, counts.size, rng)
        key = derive(seed, domains.DIRICHLET_SAMPLER, m)
        if method == "dense":
            if m >= burn_in:
                out[m - burn_in] = np.exp(state.log_theta[component]) / state.theta.sum()
            state = cir.step(state, model.ALPHA, est, h, key)
            continue
        words = np.union1d(np.flatnonzero(est), [component])
        state = cir_lazy.touch(state, words, model.ALPHA, key)
        norm = cir_lazy.normaliser(cir_lazy.moments(state, model.ALPHA), method,
                                   derive(seed, domains.DIRICHLET_SAMPLER, m, 1))
        if m >= burn_in:
            out[m - burn_in] = np.exp(cir_lazy.columns(state, [component], norm)[0, 0])
        state = cir_lazy.step(state, words, est[words][None, :], model.ALPHA, h, key)
    return out


def ks_distances(counts: np.ndarray, n: int, h: float, seed: int, burn_in: int, kept: int,
                 component: int) -> dict[str, float]:
    """KS distance of each method's read phi from the exact Beta marginal, and of
    as many exact draws (the floor)."""
    a = model.ALPHA + counts
    law = stats.beta(a[component], a.sum() - a[component])
    out = {m: float(stats.kstest(read_phi(m, counts, n, h, seed, burn_in, kept, component),
                                 law.cdf).statistic) for m in METHODS}
    exact = law.rvs(kept, random_state=np.random.default_rng(derive(seed, domains.DIRICHLET_EXACT)))
    out["exact"] = float(stats.kstest(exact, law.cdf).statistic)
    return out


def normaliser_spread(k: int, w: int, u: int, h: float, steps: int, seed: int,
                      prior: float = 0.5, scale: float = 100.0) -> np.ndarray:
    """[2, steps, k]: sd[R_k | x] / E[R_k | x], and sd[R_k | x] / sqrt(E[R_k | x])
    (the same sd as a share of R's own sd at stationarity, Gamma(E R)), at each
    step and row of a synthetic
    LDA-like run: Zipf word frequencies, each minibatch the ``u`` distinct words
    drawn by frequency, counts scale x Poisson of a fixed random topic mix. It is
    the size of the ``"mean"`` normaliser's error (exact, from ``moments``)."""
    rng = np.random.default_rng(seed)
    freq = 1.0 / np.arange(1, w + 1)
    freq /= freq.sum()
    mix = rng.dirichlet(np.full(k, 0.3), size=w).T  # topic shares of each word, k x w
    state = cir_lazy.init(rng.gamma(1.0, 1.0, (k, w)))
    out = np.empty((2, steps, k))
    for m in range(steps):
        words = np.sort(rng.choice(w, u, replace=False, p=freq))
        key = derive(seed, domains.SAMPLER, m)
        state = cir_lazy.touch(state, words, prior, key)
        mean, var, _ = cir_lazy.moments(state, prior)
        out[0, m] = np.sqrt(var) / mean
        out[1, m] = np.sqrt(var / mean)
        counts = rng.poisson(mix[:, words] * 3.0).astype(float)
        state = cir_lazy.step(state, words, counts, prior, h, key, scale=scale)
    return out
