"""Each topic's largest entries from column blocks of phi: pure array code.

Fitted topics too large for the driver are read a block of columns at a time
(``dscir.api.fitted``): ``top_entries`` keeps each row's ``n`` largest entries
of one block, ``merge_top`` the ``n`` largest of those candidates. Ordering is
by value, largest first, ties to the lower word id, as a stable sort of the
whole row (``coherence.top_word_ids``), so the result does not depend on the
blocks.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def top_entries(phi: np.ndarray, n: int, lo: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(values, word ids) [K, min(n, width)]: each row's ``n`` largest entries of the
    column block ``phi`` (its columns are words ``lo:lo + width``), in order."""
    phi = np.asarray(phi)
    k, width = phi.shape
    m = min(int(n), width)
    if m < width:
        kth = np.partition(phi, width - m, axis=1)[:, width - m]
        rows, cols = np.nonzero(phi >= kth[:, None])  # row-major: the candidates, ties too
    else:
        rows, cols = np.divmod(np.arange(k * width), width)
    values = phi[rows, cols]
    order = np.lexsort((cols, -values, rows))
    rows, cols, values = rows[order], cols[order], values[order]
    rank = np.arange(rows.size) - np.searchsorted(rows, rows)
    keep = rank < m
    return values[keep].reshape(k, m), (cols[keep] + lo).astype(np.int64).reshape(k, m)


def merge_top(pieces: Sequence[tuple[np.ndarray, np.ndarray]], n: int) -> np.ndarray:
    """int64 [K, n]: the word ids of each row's ``n`` largest entries among the
    blocks' ``top_entries``."""
    return merge_top_entries(pieces, n)[1]


def merge_top_entries(pieces: Sequence[tuple[np.ndarray, np.ndarray]],
                      n: int) -> tuple[np.ndarray, np.ndarray]:
    """(values, word ids) [K, n] of each row's ``n`` largest entries among the
    blocks' ``top_entries``."""
    values = np.concatenate([v for v, _ in pieces], axis=1)
    ids = np.concatenate([i for _, i in pieces], axis=1)
    order = np.lexsort((ids, -values), axis=1)[:, :n]
    return np.take_along_axis(values, order, axis=1), np.take_along_axis(ids, order, axis=1)
