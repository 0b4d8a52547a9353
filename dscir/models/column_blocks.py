"""How a parameter array is cut into blocks of columns, and what every model's blocks share.

The cut is set by the array's shape and a setting only, never by the cluster,
so a chain built on the blocks is the same wherever they are held (in this
process or by the workers: ``dscir.engine.blocks.blocks_for``). The row
normalisers of LDA's and the mixtures' blocks are formed the same way: each
block's row log-sum-exp (``row_lse``, ``ROWS`` rows at a time), combined in
block order (``combine``)."""

from __future__ import annotations

from collections.abc import Sequence

import numba as nb
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


def shifted_columns(a: np.ndarray, cols: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """``a[:, cols] - shift[:, None]`` (float64, K x len(cols)) in one pass, without
    NumPy's fancy-index temporary: the same numbers, a few times faster."""
    a = np.asarray(a, np.float64)
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    return _shifted_columns(a, np.asarray(cols, np.int64), np.asarray(shift, np.float64))


@nb.njit(cache=True, nogil=True)
def _shifted_columns(a, cols, shift):
    out = np.empty((a.shape[0], cols.size))
    for k in range(a.shape[0]):
        row, s = a[k], shift[k]
        for j in range(cols.size):
            out[k, j] = row[cols[j]] - s
    return out


#: Rows of a K x width block a block function forms a temporary of at once.
ROWS = 64


def row_chunks(n_rows: int) -> list[slice]:
    """Slices of ``ROWS`` rows covering ``n_rows``."""
    return [slice(r, r + ROWS) for r in range(0, n_rows, ROWS)]


def row_lse(log_theta: np.ndarray) -> np.ndarray:
    """log sum exp along each row (the block's share of the row normaliser),
    ``ROWS`` rows at a time (each row's sum is its own: the same bits)."""
    out = np.empty(log_theta.shape[0])
    for rows in row_chunks(log_theta.shape[0]):
        part = log_theta[rows]
        top = part.max(axis=1)
        shifted = np.subtract(part, top[:, None])
        out[rows] = top + np.log(np.exp(shifted, out=shifted).sum(axis=1))
    return out


def combine(lses: Sequence[np.ndarray]) -> np.ndarray:
    """The row normalisers from the blocks' ``lse``, added in block order."""
    out = np.asarray(lses[0], dtype=np.float64)
    for x in lses[1:]:
        out = np.logaddexp(out, x)
    return out
