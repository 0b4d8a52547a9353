"""A run's kept samples read where they are stored, for ``diagnose``: the driver
never holds a K x W sample, let alone all of them.

LDA's ``samples/phi`` [S, K, W] of every chain is read a block of columns at a
time (at most ``BLOCK_ENTRIES`` entries [chain, sample, K, columns], the
chains' topics matched onto chain 0's): the chains' matching sums the
Bhattacharyya affinities of their stored mean topics block by block, each
block's pooled mean gives its top words (merged as the fitted topics' are,
ties to the lower id), and a second pass cuts the top words' draws. Each block's
mean is NumPy's mean of the same [chain, sample, K] entries, so the rows are
those of the whole stacked array. Held-out scoring of a kept sample (LDA's phi,
the DP mixture's log phi rows) gives each part's task the columns of its words
read by a task on the workers (in this process without a cluster). Rows longer
than 1 MiB are stored in column chunks (``RunWriter.append``), so no read of a
block decodes a whole sample.
"""

from __future__ import annotations

import numpy as np
import zarr

from dscir import integrity
from dscir.errors import DscirError

#: Entries [chain, sample, K, columns] of kept samples read here at once (4 MB of float32).
BLOCK_ENTRIES = 2**20


def sample_array(run, name: str) -> zarr.Array | None:
    """The run's stored ``samples/<name>`` (nothing read), or None."""
    g = integrity.open_group(run.path, "run")
    if "samples" not in g or name not in integrity.member(g, "samples", "run"):
        return None
    return integrity.member(g["samples"], name, "run")


def kept_arrays(runs, name: str) -> list[zarr.Array]:
    """Every chain's stored ``samples/<name>``, each with as many samples."""
    arrays = [sample_array(r, name) for r in runs]
    if any(a is None for a in arrays):
        raise DscirError(f"{runs[0].path} kept no samples ({name}); fit with n_iter > burn_in")
    n = {a.shape[0] for a in arrays}
    if len(n) > 1:
        raise DscirError(f"the chains kept different numbers of samples ({sorted(n)})")
    return arrays


def stack(runs, name: str) -> np.ndarray:
    """A small kept quantity [chain, draw, ...] of every chain (e.g. DP's alpha)."""
    return np.stack([integrity.read(a) for a in kept_arrays(runs, name)])


def spans(n: int, width: int) -> list[tuple[int, int]]:
    return [(lo, min(lo + width, n)) for lo in range(0, n, width)]


def mean_topics(run) -> zarr.Array:
    return integrity.member(integrity.open_group(run.path, "run"), "phi_mean", "run")


def bands(array: zarr.Array, lo: int, hi: int):
    """``(rows, array[rows, ..., lo:hi])`` by bands of the first axis as stored, so
    that zarr decodes one band's chunks at a time (a run written before samples
    were chunked by columns decodes a whole sample per band: bounded by one
    sample, and slow, as each block of columns decodes every sample again)."""
    step = array.chunks[0]
    for a in range(0, array.shape[0], step):
        rows = slice(a, min(a + step, array.shape[0]))
        yield rows, integrity.read(array, (rows,) + (slice(None),) * (array.ndim - 2)
                                   + (slice(lo, hi),))


def columns(array: zarr.Array, lo: int, hi: int) -> np.ndarray:
    """float64 ``array[:, lo:hi]`` (``bands``)."""
    out = np.empty((array.shape[0], hi - lo))
    for rows, band in bands(array, lo, hi):
        out[rows] = band
    return out


def align(runs) -> list[np.ndarray]:
    """Each chain's labelling onto chain 0 (``matching.align_chains`` of the chains'
    stored mean topics), their affinities summed over blocks of columns."""
    from dscir.diagnostics.matching import assignment, from_affinity

    means = [mean_topics(r) for r in runs]
    k, w = means[0].shape
    perms = []
    for other in means:
        bc = np.zeros((k, other.shape[0]))
        for lo, hi in spans(w, max(1, BLOCK_ENTRIES // (2 * k))):
            p, q = (np.sqrt(columns(m, lo, hi)) for m in (means[0], other))
            bc += p @ q.T
            del p, q
        perms.append(assignment(from_affinity(bc)))
    return perms


def aligned_block(arrays, perms, lo: int, hi: int) -> np.ndarray:
    """The kept phi [chain, sample, K, hi - lo] of columns lo:hi, topics aligned."""
    out = np.empty((len(arrays),) + arrays[0].shape[:-1] + (hi - lo,), arrays[0].dtype)
    for c, (a, p) in enumerate(zip(arrays, perms)):
        for rows, band in bands(a, lo, hi):
            out[c, rows] = band[:, p]
    return out


def topic_draws(runs, perms, top: int) -> tuple[np.ndarray, np.ndarray]:
    """(draws [chain, sample, K, n], ids [K, n]): the aligned kept phi of each topic's
    ``top`` most probable words by the pooled mean (``convergence.top_word_ids``
    and ``topic_draws`` of the stacked samples), two passes over column blocks."""
    from dscir.models.lda.top_words import merge_top, top_entries

    arrays = kept_arrays(runs, "phi")
    n_chains, (n_samples, k, w) = len(arrays), arrays[0].shape
    blocks = spans(w, max(1, BLOCK_ENTRIES // (n_chains * n_samples * k)))
    ids = merge_top([top_entries(aligned_block(arrays, perms, lo, hi).mean(axis=(0, 1)),
                                 top, lo) for lo, hi in blocks], top)
    draws = np.empty((n_chains, n_samples) + ids.shape, arrays[0].dtype)
    for lo, hi in blocks:
        rows, cols = np.nonzero((ids >= lo) & (ids < hi))
        if rows.size:
            block = aligned_block(arrays, perms, lo, hi)
            draws[:, :, rows, cols] = block[:, :, rows, ids[rows, cols] - lo]
    return draws, ids


def read_columns(path: str, rows, words: np.ndarray, log: bool) -> np.ndarray:
    """The task: columns ``words`` of rows ``rows`` (an index or slice of the first
    axis) of the stored array at ``path``; float64 and their log with ``log``."""
    array = zarr.open_array(path, mode="r")
    cols = integrity.read(array, (rows, slice(None), np.asarray(words))
                          if array.ndim == 3 else (rows, np.asarray(words)))
    if not log:
        return np.ascontiguousarray(cols)
    with np.errstate(divide="ignore"):
        return np.log(np.asarray(cols, np.float64))


def column_reader(executor, path: str, rows, log: bool = False):
    """``columns(words)``: each part's columns of ``rows`` of the stored array at
    ``path`` (``read_columns``), by tasks on the workers (read here by the
    in-process executor)."""
    if not hasattr(executor, "submit"):
        return lambda words: [read_columns(path, rows, w, log) for w in words]
    return lambda words: [executor.submit("sample-columns", read_columns, path, rows, w, log,
                                          j=j) for j, w in enumerate(words)]


def array_path(run, name: str) -> str:
    return f"{run.path}/samples/{name}"
