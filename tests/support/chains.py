"""Chains built on the engine the way the estimators build them, and a small topic corpus,
for driver-level tests."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from dscir.corpus import split_heldout, write_corpus
from dscir.engine.chain import Chain
from dscir.engine.dask import DaskExecutor
from dscir.models import lda
from dscir.models.mixtures import dp as dpmm


def lda_chain(client, store: str, config) -> Chain:
    """An LDA chain of ``config`` on ``store`` with its tasks on ``client``."""
    return Chain(lda.LDAModel, config, store,
                 DaskExecutor(client, store, "lda", model_resident=True))


def dpmm_chain(client, store: str, config, **options) -> Chain:
    """A DP-mixture chain (stochastic on ``client``) of ``config`` on ``store``."""
    return Chain(dpmm.model_type(config.sampler), config, store,
                 DaskExecutor(client, store, "dpmm"), **options)


def topic_corpus(path, n_docs: int = 160, K: int = 3, W: int = 30) -> str:
    """Documents of 30 tokens from K sparse topics over W words; 10% held out."""
    rng = np.random.default_rng(0)
    topics = rng.dirichlet(np.full(W, 0.1), K)
    docs = [rng.multinomial(30, rng.dirichlet(np.full(K, 0.3)) @ topics) for _ in range(n_docs)]
    write_corpus(path, sp.csr_matrix(np.array(docs)), vocabulary=[f"w{i}" for i in range(W)])
    split_heldout(path, fraction=0.1, seed=0)
    return str(path)
