"""A small synthetic mixture of multinomials with known labels, a DP chain config for it,
and the adjusted Rand index."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.special import comb

from dscir.models.mixtures.dp import DPMMConfig

K_TRUE, W = 4, 30


def synthetic_mixture(n_users: int, seed: int, length: int = 8):
    """Users from a known finite mixture of 4 multinomials over 30 areas
    (7 areas each, disjoint), weights (.4, .3, .2, .1)."""
    rng = np.random.default_rng(seed)
    phi = np.full((K_TRUE, W), 1e-3)
    for k in range(K_TRUE):
        phi[k, 7 * k : 7 * k + 7] = 1.0
    phi /= phi.sum(axis=1, keepdims=True)
    z = rng.choice(K_TRUE, size=n_users, p=[0.4, 0.3, 0.2, 0.1])
    x = np.array([rng.multinomial(length, phi[k]) for k in z])
    return sp.csr_matrix(x), z


def adjusted_rand_index(a, b) -> float:
    """Hubert & Arabie's adjusted Rand index of two labellings."""
    _, a = np.unique(a, return_inverse=True)
    _, b = np.unique(b, return_inverse=True)
    table = np.zeros((a.max() + 1, b.max() + 1))
    np.add.at(table, (a, b), 1)
    pairs = comb(table, 2).sum()
    rows, cols = comb(table.sum(1), 2).sum(), comb(table.sum(0), 2).sum()
    expected = rows * cols / comb(a.size, 2)
    return float((pairs - expected) / ((rows + cols) / 2 - expected))


def partitions(n: int):
    """Every partition of 0..n-1 as canonical labels (first appearance order)."""
    if n == 0:
        yield ()
        return
    for p in partitions(n - 1):
        for c in range(max(p, default=-1) + 2):
            yield p + (c,)


def canonical(z) -> tuple:
    """A partition's labels renamed by first appearance (its cell among ``partitions``)."""
    seen: dict = {}
    return tuple(seen.setdefault(int(c), len(seen)) for c in z)


def dpmm_config(**kw) -> DPMMConfig:
    base = dict(sampler="scir", a0=0.5, alpha_shape=1.0, alpha_rate=1.0, batch_size=100,
                step_theta=0.1, step_sticks=0.1, n_init=20, seed=3, burn_in=0, thin=10,
                init="random", split_merge=0)
    base.update(kw)
    return DPMMConfig(**base)


def stored_text_mixture(tmp_path_factory, n_docs: int, n_words: int, k: int, seed: int):
    """A text-like mixture (``dscir.experiments.text_mixture``) written to a store:
    its path and the documents' true labels."""
    from dscir.corpus import write_corpus
    from dscir.experiments.text_mixture import text_mixture

    data = text_mixture(n_docs, n_words, k, seed=seed)
    path = tmp_path_factory.mktemp("text") / "text.zarr"
    write_corpus(path, data.counts, chunk_docs=128)
    return str(path), data.labels
