"""Scores (gradients of the log posterior) of LDA's topics, for the kernel Stein
discrepancy of a fitted run (``dscir.diagnostics.ksd``). Pure numpy.

Parametrisation. The samplers work on the expanded mean: theta_kw ~ Gamma(beta, 1)
independently, phi_k = theta_k / T_k with T_k = sum_w theta_kw. The KSD is taken
in eta_kw = log theta_kw, on all of R: in theta itself the density behaves like
theta^(beta - 1 + n) at 0, unbounded for beta < 1, and the boundary term of
Stein's identity does not vanish. The log posterior of eta is

    log p(eta | w) = sum_kw [beta eta_kw - exp(eta_kw)] + log p(w | phi(eta)) + const

(the Gamma(beta, 1) prior of theta times the Jacobian theta of theta = exp(eta)
gives beta eta - exp(eta)). For the likelihood, phi_kv = theta_kv / T_k gives
d phi_kv / d theta_kw = (1[v = w] - phi_kv) / T_k, and Fisher's identity gives
d log p(w | phi) / d phi_kv = n_kv / phi_kv with n_kv = E[topic-word count | w, phi],
so d log p(w | phi) / d theta_kw = (n_kw / phi_kw - n_k) / T_k, n_k = sum_v n_kv.
Times d theta_kw / d eta_kw = theta_kw:

    s_kw(eta) = beta + n_kw - theta_kw - phi_kw n_k.

n_kw is estimated as Patterson & Teh's samplers do: the Gibbs expectations of a
minibatch S of documents given phi, times D / |S| (``lda_score``'s ``counts``).

The run keeps phi only. T is independent of phi a posteriori: the prior makes
T_k ~ Gamma(W beta, 1) independent of phi_k, and the likelihood sees phi alone.
So a kept phi sample is completed by an exact posterior draw of T
(``complete_totals``); the KSD then measures how far the phi samples are from
their posterior (an exact T adds no discrepancy, only spread).

Subset. The KSD is taken over eta_kw for every topic k and the words w of a
given subset (``dscir.api.stein`` uses the most frequent words of the store),
with the kernel on those coordinates only: Stein's identity
E[s_j(x) f(x) + d_j f(x)] = 0 holds for every f, including functions of a subset
of the coordinates, as long as s_j is the score of the full posterior.

The Dirichlet posterior itself (the sparse/dense study, ``dirichlet_score``).
Dirichlet(a), a_j = alpha + n_j, is the law of phi = theta / T for independent
theta_j ~ Gamma(a_j, 1), the stationary law SCIR's CIR processes target; then
T = sum_j theta_j ~ Gamma(sum_j a_j, 1) independently of phi (Lukacs). In
eta_j = log theta_j the log density is sum_j [a_j eta_j - exp(eta_j)], so

    s_j(eta) = alpha + n_j - theta_j,

exact (the counts are the data's). A kept phi is completed by an exact draw of
T (``dirichlet_totals``). This is a different expanded mean from
``conjugate_score``'s (Gamma(alpha, 1) prior, likelihood through phi, T ~
Gamma(W alpha, 1)): both give phi ~ Dirichlet(a), but here log T has sd about
1 / sqrt(sum_j a_j) (0.03 in the study) instead of about 1, so the exact T adds
little spread to every coordinate.
"""

from __future__ import annotations

import numpy as np

from dscir.errors import DscirError


def complete_totals(rng: np.random.Generator, n_topics: int, n_words: int,
                    beta: float) -> np.ndarray:
    """An exact posterior draw [K] of the row totals T_k = sum_w theta_kw:
    Gamma(W beta, 1), independent of phi (see the module)."""
    return rng.gamma(n_words * beta, 1.0, size=n_topics)


def lda_score(phi: np.ndarray, totals: np.ndarray, counts: np.ndarray, beta: float,
              words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(eta, s) at the coordinates (k, w), w in ``words``, flattened topic-major [K * M].

    ``phi`` [K, W] a topics sample, ``totals`` [K] its T (theta = T phi),
    ``counts`` [K, W] an (unbiased estimate of the) full-data expected topic-word
    counts given phi; s = beta + n_kw - theta_kw - phi_kw n_k (module docstring).
    """
    phi = np.asarray(phi, np.float64)
    counts = np.asarray(counts, np.float64)
    totals = np.asarray(totals, np.float64)
    if phi.ndim != 2 or counts.shape != phi.shape or totals.shape != (phi.shape[0],):
        raise DscirError(f"lda_score: phi {phi.shape}, counts {counts.shape} and totals "
                         f"{totals.shape} must be [K, W], [K, W] and [K]")
    if np.any(phi <= 0) or np.any(totals <= 0):
        raise DscirError("lda_score: phi and the totals must be positive (log theta)")
    n_k = counts.sum(axis=1, keepdims=True)
    theta = totals[:, None] * phi[:, words]
    score = beta + counts[:, words] - theta - phi[:, words] * n_k
    return np.log(theta).ravel(), score.ravel()


def conjugate_score(theta: np.ndarray, beta: float, counts: np.ndarray) -> np.ndarray:
    """The score in eta = log theta of a Dirichlet-multinomial posterior in the
    expanded mean (LDA with one topic: the expected counts are the data's):
    theta [S, W] samples, ``counts`` [W]; s = beta + n_w - theta_w - phi_w N."""
    theta = np.asarray(theta, np.float64)
    totals = theta.sum(axis=1)
    out = [lda_score(t[None] / T, np.array([T]), np.asarray(counts)[None], beta,
                     np.arange(theta.shape[1]))[1] for t, T in zip(theta, totals)]
    return np.array(out)


def dirichlet_totals(rng: np.random.Generator, size: int, alpha: float,
                     counts: np.ndarray) -> np.ndarray:
    """``size`` exact draws of T = sum_j theta_j for the Dirichlet(alpha + counts)
    posterior: Gamma(sum_j (alpha + n_j), 1), independent of phi (see the module)."""
    counts = np.asarray(counts, np.float64)
    return rng.gamma(counts.size * alpha + counts.sum(), 1.0, size=size)


def dirichlet_score(log_phi: np.ndarray, totals: np.ndarray, alpha: float,
                    counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(eta, s) [S, d] of phi samples (``log_phi`` [S, d]) completed by their
    ``totals`` [S]: eta = log T + log phi, s = alpha + n_j - theta_j (module
    docstring). Works in logs, so components far below 1e-308 stay finite."""
    log_phi = np.asarray(log_phi, np.float64)
    totals = np.asarray(totals, np.float64)
    counts = np.asarray(counts, np.float64)
    if (log_phi.ndim != 2 or totals.shape != (log_phi.shape[0],)
            or counts.shape != (log_phi.shape[1],)):
        raise DscirError(f"dirichlet_score: log_phi {log_phi.shape}, totals {totals.shape} "
                         f"and counts {counts.shape} must be [S, d], [S] and [d]")
    if np.any(totals <= 0):
        raise DscirError("dirichlet_score: the totals must be positive")
    eta = np.log(totals)[:, None] + log_phi
    return eta, alpha + counts - np.exp(eta)
