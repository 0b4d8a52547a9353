"""A result's count matrices travel as their nonzeros (``dscir.engine.worker``):
rebuilt exactly, and chosen only where they take fewer bytes."""

from __future__ import annotations

import pickle
from typing import NamedTuple

import numpy as np

from dscir.engine.worker import Nonzeros, compact, dense, expand, nonzeros


class Result(NamedTuple):
    words: np.ndarray
    counts: np.ndarray
    other: np.ndarray | None
    n: int


def test_nonzeros_rebuild_the_array_exactly_with_its_dtype():
    """One value at an edge of a narrow type (negatives among them) among small
    ones, in int64 and int32 arrays: the rebuilt array is equal and of the same
    dtype (guards against values narrowed into a type too small for them, and
    an array rebuilt in its values' narrow type)."""
    rng = np.random.default_rng(0)
    edges = [1, -1, 127, -128, 128, -129, 2**15, -(2**15) - 1, 2**31, -(2**31) - 1, 2**40]
    for dtype in (np.int64, np.int32):
        for edge in [v for v in edges if np.iinfo(dtype).min <= v <= np.iinfo(dtype).max]:
            a = np.zeros((30, 40), dtype)
            a.ravel()[rng.choice(a.size, 20, replace=False)] = rng.integers(1, 3, 20)
            a[rng.integers(30), rng.integers(40)] = edge
            n = nonzeros(a)
            assert isinstance(n, Nonzeros)
            back = dense(pickle.loads(pickle.dumps(n)))
            assert back.dtype == a.dtype and np.array_equal(back, a), (dtype, edge)


def test_nonzeros_only_where_they_take_fewer_bytes():
    """K = 20 topic-word counts of which 10% are nonzero (a minibatch part's are
    sparser still) go as nonzeros, in under a quarter of the dense bytes
    pickled; a dense matrix of wide values stays as it is."""
    rng = np.random.default_rng(1)
    counts = np.where(rng.random((20, 3000)) < 0.1, rng.integers(1, 500, (20, 3000)), 0)
    r = Result(np.arange(3000), counts, None, 5)
    sent = compact(r)
    assert isinstance(sent.counts, Nonzeros) and sent.other is None
    assert sent.words is r.words and sent.n == 5  # only integer matrices change
    assert len(pickle.dumps(sent)) < (counts.nbytes + r.words.nbytes) / 4
    back = expand(pickle.loads(pickle.dumps(sent)))
    assert np.array_equal(back.counts, counts) and back.counts.dtype == counts.dtype
    full = rng.integers(2**40, 2**41, (20, 30))
    assert nonzeros(full) is full


def test_other_results_pass_unchanged():
    assert compact((1, 2)) == (1, 2) and expand("x") == "x"
