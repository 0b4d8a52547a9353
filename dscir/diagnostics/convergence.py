"""R-hat and effective sample size of several chains (ArviZ, an optional extra).

Both take draws shaped [chain, draw, ...] and return one value per trailing
index: the rank-normalised split R-hat (Vehtari et al. 2021; near 1 when the
chains agree, > 1.01 a warning and > 1.1 clearly not converged) and the bulk
effective sample size. They assume an exact MCMC kernel: a stochastic-gradient
chain is biased for any fixed step, so R-hat near 1 says the chains agree, not
that they agree with the posterior (``dscir.diagnostics.ksd`` measures that).
"""

from __future__ import annotations

import warnings

import numpy as np

from dscir.errors import DscirError


def arviz():
    """The ``arviz`` module, or one clear error naming the extra that installs it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            import arviz as az
    except ImportError:
        raise DscirError("convergence diagnostics need ArviZ: pip install "
                         "'dscir[diagnostics]' (or pip install arviz)") from None
    return az


def _check(draws: np.ndarray) -> np.ndarray:
    draws = np.asarray(draws, np.float64)
    if draws.ndim < 2 or draws.shape[1] < 4:
        raise DscirError(f"R-hat and ESS need draws shaped [chain, draw, ...] with at least "
                         f"4 draws per chain, got shape {draws.shape}")
    return draws


def _per_index(fn, draws: np.ndarray, **kwargs) -> np.ndarray:
    draws = _check(draws)
    flat = draws.reshape(draws.shape[:2] + (-1,))
    ds = arviz().convert_to_dataset({"x": flat})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # constant draws: NaN, not a warning
        out = fn(ds, **kwargs)["x"].values
    return np.asarray(out, np.float64).reshape(draws.shape[2:])


def rhat(draws: np.ndarray) -> np.ndarray:
    """Rank-normalised split R-hat of ``draws`` [chain, draw, ...] per trailing index."""
    return _per_index(arviz().rhat, draws)


def ess(draws: np.ndarray) -> np.ndarray:
    """Bulk effective sample size of ``draws`` [chain, draw, ...] per trailing index."""
    return _per_index(arviz().ess, draws, method="bulk")


def top_word_ids(mean_phi: np.ndarray, n: int) -> np.ndarray:
    """The ``n`` most probable word ids of each topic of ``mean_phi`` [K, W] (ties: the
    lower id first)."""
    return np.argsort(-mean_phi, axis=1, kind="stable")[:, :n]


def topic_draws(phi: np.ndarray, top: np.ndarray) -> np.ndarray:
    """The draws [chain, draw, K, n] of each topic's top words' probabilities, from the
    aligned phi samples [chain, draw, K, W] and the top word ids [K, n]."""
    k = np.arange(top.shape[0])[:, None]
    return phi[:, :, k, top]
