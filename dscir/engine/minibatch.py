"""Minibatches of documents: without replacement within an epoch, reproducibly.

Epoch ``e`` visits the training documents in the order of a permutation drawn
from the stream ``(seed, MINIBATCH, e)``; a minibatch is the next
``batch_size`` documents of that order; when fewer than ``batch_size`` remain,
the epoch ends there and the next begins (so a minibatch never holds a document
twice). The position ``(epoch, offset)`` is the whole state,
so a run can be checkpointed and resumed exactly.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from dscir.errors import DscirError
from dscir.rng.domains import MINIBATCH
from dscir.rng import derive


class EpochPosition(NamedTuple):
    epoch: int = 0
    offset: int = 0


def epoch_order(docs: np.ndarray, seed: int, epoch: int) -> np.ndarray:
    """The visiting order of ``docs`` in one epoch."""
    rng = np.random.Generator(np.random.PCG64(derive(seed, MINIBATCH, epoch)))
    return docs[rng.permutation(docs.size)]


def next_minibatch(
    docs: np.ndarray, batch_size: int, seed: int, position: EpochPosition
) -> tuple[np.ndarray, EpochPosition]:
    """The next minibatch (sorted document ids) and the position after it."""
    if docs.size == 0:
        raise DscirError("the corpus has no training documents")
    if batch_size > docs.size:
        raise DscirError(
            f"batch_size={batch_size} is larger than the {docs.size} training documents"
        )
    epoch, offset = position
    if offset + batch_size > docs.size:
        epoch, offset = epoch + 1, 0
    take = epoch_order(docs, seed, epoch)[offset : offset + batch_size]
    return np.sort(take), EpochPosition(epoch, offset + batch_size)
