"""What an executor hands a model: documents split into parts, read where they run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


def split(docs: np.ndarray, n_parts: int) -> list[np.ndarray]:
    """``docs`` (sorted, so store-chunk contiguous) in at most ``n_parts`` non-empty parts."""
    if docs.size == 0:
        return []
    return [p for p in np.array_split(docs, min(n_parts, docs.size)) if p.size]


@dataclass
class Parts:
    """Documents in parts; ``batches``/``words`` are futures (Dask) or values (local)."""

    docs: np.ndarray
    parts: list[np.ndarray]
    batches: list[Any]
    words: list[Any]


@dataclass
class Timing:
    """Where an iteration's time went, summed over its task rounds.

    ``compute``: the slowest task of each round (its own work, queued or not);
    ``blocked``: the driver's time waiting for results; the rest of the wall
    time is the driver's own work.
    """

    compute: float = 0.0
    blocked: float = 0.0
    rounds: list[float] = field(default_factory=list)
