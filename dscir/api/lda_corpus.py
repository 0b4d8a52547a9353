"""What LDA's configuration reads of its corpus store: the policy's view of its
size, and the settings resolved on it (so a run records what ran)."""

from __future__ import annotations

import dataclasses

from dscir.corpus import Corpus
from dscir.models.lda import LDAConfig
from dscir.models.lda.placement import resolve_placement
from dscir.models.lda.policy import CorpusSize, choose_scir_step


def corpus_size(store: str) -> CorpusSize:
    """The default policy's view of a store: training documents, words and the
    training tokens (the store's tokens times the training documents' share)."""
    c = Corpus.open(store)
    train = int(c.train_docs().size)
    return CorpusSize(train, int(c.n_words), round(int(c.meta["n_tokens"]) * train / c.n_docs))


def on_corpus(config: LDAConfig, store: str, size: CorpusSize) -> LDAConfig:
    """``config`` with its "auto" settings resolved on the store (the SCIR step,
    then the placement, which depends on it)."""
    config = dataclasses.replace(config, scir_step=choose_scir_step(
        config.scir_step, config.sampler, config.control_variates, config.n_topics,
        config.batch_size, size))
    return dataclasses.replace(config, placement=resolve_placement(config, size.n_words))
