"""The lazy SCIR step's row totals measured on the Dirichlet study's posteriors.

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

from dscir import streams
from dscir.models import dirichlet as model
from dscir.rng import derive
from dscir.samplers import cir, cir_lazy

METHODS = ("dense", "mean", "draw")


def read_phi(method: str, counts: np.ndarray, n: int, h: float, seed: int, burn_in: int,
             kept: int, component: int) -> np.ndarray:
    """phi of ``component`` as read by the step at each of ``kept`` iterations."""
    labels = model.observations(counts)
    rng = np.random.Generator(np.random.PCG64(derive(seed, streams.DIRICHLET_DATA)))
    theta0 = np.random.Generator(np.random.PCG64(derive(seed, streams.DIRICHLET_INIT))) \
        .gamma(1.0, 1.0, size=counts.size)
    out = np.empty(kept)
    if method == "dense":
        state = cir.init(theta0)
    else:
        state = cir_lazy.init(theta0[None, :])
    for m in range(burn_in + kept):
        est = model.minibatch_counts(labels, n, counts.size, rng)
        key = derive(seed, streams.DIRICHLET_SAMPLER, m)
        if method == "dense":
            if m >= burn_in:
                out[m - burn_in] = np.exp(state.log_theta[component]) / state.theta.sum()
            state = cir.step(state, model.ALPHA, est, h, key)
            continue
        words = np.union1d(np.flatnonzero(est), [component])
        state = cir_lazy.touch(state, words, model.ALPHA, key)
        norm = cir_lazy.normaliser(cir_lazy.moments(state, model.ALPHA), method,
                                   derive(seed, streams.DIRICHLET_SAMPLER, m, 1))
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
    exact = law.rvs(kept, random_state=np.random.default_rng(derive(seed, streams.DIRICHLET_EXACT)))
    out["exact"] = float(stats.kstest(exact, law.cdf).statistic)
    return out
