"""Lazy against dense SCIR inside a small in-memory LDA chain (no engine, no Dask).

A synthetic corpus is drawn from known topics (Dirichlet(eta) over W words) and
document proportions (Dirichlet(alpha)); each iteration takes a minibatch of
documents, runs the Gibbs kernel (``dscir.models.lda.gibbs``) under phi's
columns of the minibatch's words, and steps SCIR with the scaled counts:
densely (``cir.step`` over K x W) or lazily (``cir_lazy``: only the minibatch's
columns, the row totals by the ``"mean"`` or ``"draw"`` normaliser). Here the
normaliser feeds back through the Gibbs step, which the Dirichlet study cannot
show. The mean phi of the kept samples is scored by document completion on
held-out documents, and by its matched L1 distance from the true topics.
"""

from __future__ import annotations

import time

import numpy as np
from scipy.optimize import linear_sum_assignment

from dscir.rng import domains
from dscir.models.lda.gibbs import completion_log_likelihood, gibbs_expectations
from dscir.rng import derive
from dscir.samplers import cir, cir_lazy
from dscir.samplers.simplex import normalize_log

ALPHA, BETA, SWEEPS = 0.1, 0.5, 4


def corpus(k: int, w: int, d: int, length: int, eta: float, seed: int) -> dict:
    """Training documents (CSR) and held-out ones split into observed and test halves."""
    rng = np.random.default_rng(seed)
    phi = rng.dirichlet(np.full(w, eta), size=k)
    out = {"phi": phi}
    for name, n in (("train", d), ("heldout", d // 5)):
        theta = rng.dirichlet(np.full(k, ALPHA), size=n)
        counts = np.array([rng.multinomial(max(2, rng.poisson(length)), theta[i] @ phi)
                           for i in range(n)])
        out[name] = counts
    return out


def _csr(counts: np.ndarray):
    rows, cols = np.nonzero(counts)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=counts.shape[0]))])
    return indptr.astype(np.int64), cols.astype(np.int64), counts[rows, cols].astype(np.int64)


def _gibbs(batch: np.ndarray, log_cols_of, seed: int, m: int):
    """Counts (K x U) of the minibatch's words U and the kernel's n_kept."""
    indptr, indices, data = _csr(batch)
    words = np.unique(indices)
    lc = log_cols_of(words)
    cols = np.exp(lc - lc.max(axis=0))
    local = np.searchsorted(words, indices)
    tw, _, n_kept = gibbs_expectations(indptr, indices, data, np.arange(batch.shape[0]), cols,
                                       local, ALPHA, SWEEPS, seed, m)
    return words, tw.astype(np.float64), n_kept


def run(method: str, data: dict, k: int, iters: int, batch: int, burn_in: int, thin: int,
        seed: int) -> dict:
    """Mean phi of the kept samples of one chain (``method`` dense, mean or draw)
    and the sampler's seconds (the step and the columns, not the Gibbs kernel)."""
    train = data["train"]
    d, w = train.shape
    rng = np.random.default_rng(derive(seed, domains.MINIBATCH))
    theta0 = np.random.default_rng(derive(seed, domains.INIT)).gamma(1.0, 1.0, (k, w))
    lazy = method != "dense"
    state = cir_lazy.init(theta0) if lazy else cir.init(theta0)
    phi_sum, n_kept_samples, seconds = np.zeros((k, w)), 0, 0.0
    for m in range(iters):
        h = 0.5 * (1 + m / 10) ** -0.33
        key = derive(seed, domains.SAMPLER, m)
        docs = rng.choice(d, batch, replace=False)
        t0 = time.perf_counter()
        if lazy:
            words = np.flatnonzero(train[docs].sum(0))
            state = cir_lazy.touch(state, words, BETA, key)
            norm = cir_lazy.normaliser(cir_lazy.moments(state, BETA), method, key)

            def log_cols_of(u):
                return cir_lazy.columns(state, u, norm)
        else:
            lphi = normalize_log(state.log_theta, axis=1)

            def log_cols_of(u):
                return lphi[:, u]
        seconds += time.perf_counter() - t0
        words, counts, n_kept = _gibbs(train[docs], log_cols_of, derive(seed, domains.GIBBS), m)
        t0 = time.perf_counter()
        scale = d / batch / n_kept
        keep = m >= burn_in and (m - burn_in) % thin == 0
        if lazy:
            state = cir_lazy.step(state, words, counts, BETA, h, key, scale)
            if keep:
                state = cir_lazy.keep(state, cir_lazy.normaliser(cir_lazy.moments(state, BETA),
                                                                  "mean"))
        else:
            full = np.zeros((k, w))
            full[:, words] = counts * scale
            state = cir.step(state, BETA, full, h, key)
            if keep:
                phi_sum += np.exp(normalize_log(state.log_theta, axis=1))
                n_kept_samples += 1
        seconds += time.perf_counter() - t0
    mean = cir_lazy.mean_phi(state, BETA) if lazy else phi_sum / n_kept_samples
    return {"phi": mean, "seconds": seconds}


def perplexity(phi: np.ndarray, heldout: np.ndarray, seed: int) -> float:
    """Document-completion perplexity: each held-out document's tokens split in
    two halves (alternating by word occurrence), the second scored given the first."""
    obs = heldout // 2
    test = heldout - obs
    oi, ox, od = _csr(obs)
    ti, tx, td = _csr(test)
    words = np.unique(np.concatenate([ox, tx]))
    with np.errstate(divide="ignore"):
        lphi = np.log(phi[:, words])
    ll, n = completion_log_likelihood(oi, ox, od, ti, tx, td, np.arange(heldout.shape[0]),
                                      lphi, np.searchsorted(words, ox),
                                      np.searchsorted(words, tx), ALPHA, 20, seed)
    return float(np.exp(-ll.sum() / n.sum()))


def topic_l1(phi: np.ndarray, truth: np.ndarray) -> float:
    """Mean L1 distance between each true topic and its matched estimated topic."""
    cost = np.abs(truth[:, None, :] - phi[None, :, :]).sum(-1)
    rows, cols = linear_sum_assignment(cost)
    return float(cost[rows, cols].mean())
