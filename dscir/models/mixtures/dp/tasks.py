"""The DP mixture's worker tasks: allocations, held-out scores and responsibilities
(for the KSD, ``dscir.api.stein``) of a batch of users, and split-merge moves of
the training users' partition."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from dscir.corpus import CSRBatch
from dscir.models.mixtures.dp.allocation import (allocate, component_counts, log_predictive,
                                       responsibility_sums)
from dscir.models.mixtures.dp.split_merge import split_merge


class AllocationResult(NamedTuple):
    """A batch's new allocations and their integer statistics (either mixture's)."""

    rows: np.ndarray  # int64 [n] the task's users (documents)
    z: np.ndarray  # int32 [n] their new allocations
    components: np.ndarray  # int64 [C] components they occupy
    n_rows: np.ndarray  # int64 [C] rows in each
    words: np.ndarray  # int64 [U] words (areas) the rows use
    counts: np.ndarray  # int64 [C, U] summed counts


def allocation_result(batch: CSRBatch, local: np.ndarray, words: np.ndarray,
                      z: np.ndarray) -> AllocationResult:
    """The statistics of allocations ``z`` of ``batch`` (``local``: its entries'
    columns among ``words``)."""
    cc = component_counts(batch.indptr, local, batch.data, z, words.size)
    return AllocationResult(np.asarray(batch.docs, np.int64), z, cc.components, cc.users,
                            words, cc.counts)


def allocate_users(batch: CSRBatch, words: np.ndarray, log_phi_cols: np.ndarray,
                   log_u: np.ndarray, log_w: np.ndarray, key: int) -> AllocationResult:
    """Allocate a batch of users given their slices and log phi of their areas,
    and return integer statistics per component."""
    local = np.searchsorted(words, batch.indices)
    z = allocate(batch.indptr, local, batch.data, batch.docs, log_u, log_w, log_phi_cols, key)
    return allocation_result(batch, local, words, z)


def user_log_predictive(batch: CSRBatch, words: np.ndarray, log_phi_cols: np.ndarray,
                        log_w: np.ndarray, log_rest: float, a0: float,
                        n_words: int) -> np.ndarray:
    """Per-user log predictive of a batch of users under one sample, given log phi
    of their areas (K x U) among ``n_words``."""
    local = np.searchsorted(words, batch.indices)
    return log_predictive(batch.indptr, local, batch.data, log_w, log_phi_cols, log_rest, a0,
                          n_words)


def user_responsibilities(batch: CSRBatch, words: np.ndarray, log_phi_cols: np.ndarray,
                          log_w: np.ndarray, log_rest: float, a0: float,
                          n_words: int) -> np.ndarray:
    """sum over a batch of users of their responsibilities [K + 1] under one sample
    (``responsibility_sums``; the last column: the components not represented)."""
    local = np.searchsorted(words, batch.indices)
    return responsibility_sums(batch.indptr, local, batch.data, log_w, log_phi_cols, log_rest,
                               a0, n_words)


class SplitMergeResult(NamedTuple):
    """The training users' new allocations after split-merge moves, and the word
    counts of the clusters whose users changed (the components to redraw)."""

    z: np.ndarray  # int64 [n] every training user's allocation
    changed: np.ndarray  # int64 [C] the labels that gained or lost users (sorted)
    counts: np.ndarray  # int64 [C, W] their word counts under the new allocations
    splits: int
    merges: int


def split_merge_users(batch: CSRBatch, words: np.ndarray, z: np.ndarray, n_words: int,
                      a0: float, alpha: float, n_proposals: int, key: int) -> SplitMergeResult:
    """``n_proposals`` split-merge moves (``dscir.models.mixtures.dp.split_merge``) on
    the partition ``z`` of the batch's users (every training user, in one task)."""
    new, splits, merges = split_merge(batch.indptr, batch.indices, batch.data, z, n_words,
                                      a0=a0, alpha=alpha, n_proposals=n_proposals, key=key)
    moved = new != np.asarray(z)
    changed = np.unique(np.concatenate([np.asarray(z)[moved], new[moved]])).astype(np.int64)
    cc = component_counts(batch.indptr, batch.indices, batch.data, new, n_words)
    counts = np.zeros((changed.size, n_words), np.int64)  # an emptied cluster keeps zeros
    held = np.isin(changed, cc.components)
    counts[held] = cc.counts[np.searchsorted(cc.components, changed[held])]
    return SplitMergeResult(new, changed, counts, splits, merges)
