"""Chains built on the engine the way the estimators build them, for driver-level tests."""

from __future__ import annotations

from dscir.engine.chain import Chain
from dscir.engine.dask import DaskExecutor
from dscir.models.dpmm import model_type
from dscir.models.lda import LDAModel


def lda_chain(client, store: str, config) -> Chain:
    """An LDA chain of ``config`` on ``store`` with its tasks on ``client``."""
    return Chain(LDAModel, config, store, DaskExecutor(client, store, "lda"))


def dpmm_chain(client, store: str, config, **options) -> Chain:
    """A DP-mixture chain (stochastic on ``client``) of ``config`` on ``store``."""
    return Chain(model_type(config.sampler), config, store, DaskExecutor(client, store, "dpmm"),
                 **options)
