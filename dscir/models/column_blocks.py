"""How a parameter array is cut into blocks of columns: set by its shape and a
setting only, never by the cluster, so a chain built on the blocks is the same
wherever they are held (in this process, ``models/lda/topics_lazy.py``, or by
the workers, ``dscir.engine.blocks``)."""

from __future__ import annotations

import numpy as np


def block_bounds(n_rows: int, n_cols: int, block_entries: int) -> np.ndarray:
    """Boundaries ``b`` (block j holds columns ``b[j]:b[j+1]``): blocks of
    ``max(1, block_entries // n_rows)`` columns, the last one shorter."""
    width = max(1, int(block_entries) // int(n_rows))
    return np.append(np.arange(0, n_cols, width), n_cols).astype(np.int64)


def columns_by_block(cols: np.ndarray, bounds: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """The blocks (by ``bounds``) holding any of the column indices ``cols``
    (sorted), each with its share of them, in block order."""
    cuts = np.searchsorted(cols, bounds)
    return [(b, cols[cuts[b]:cuts[b + 1]]) for b in range(bounds.size - 1)
            if cuts[b + 1] > cuts[b]]


def join_columns(*pieces: np.ndarray) -> np.ndarray:
    """The columns of consecutive blocks side by side (in block order)."""
    return pieces[0] if len(pieces) == 1 else np.concatenate(pieces, axis=1)
