"""Held-out perplexity above the vocabulary size is warned of, once, with the
share of held-out tokens whose word no training document holds."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from dscir.corpus import write_corpus
from dscir.engine.inprocess import InProcessExecutor
from dscir.models.lda import evaluation
from dscir.models.lda.evaluation import perplexity

W = 40


@pytest.fixture
def store(tmp_path, monkeypatch) -> str:
    """Training documents (even rows) hold words 0..9 only; each held-out one (odd
    rows) 1 token of word 0 and 3 of a word from 10..39: 75 % unseen."""
    monkeypatch.setattr(evaluation, "_WARNED", set())
    x = np.zeros((20, W), dtype=np.int64)
    for d in range(0, 20, 2):
        x[d, d % 10] = x[d, (d + 3) % 10] = 4
    for d in range(1, 20, 2):
        x[d, 0], x[d, 10 + d] = 1, 3
    path = tmp_path / "c.zarr"
    write_corpus(path, sp.csr_matrix(x), heldout={"every": 2})
    return str(path)


def _score(store, phi, **kw) -> float:
    ex = InProcessExecutor(store, "lda")
    return perplexity(ex, np.arange(1, 20, 2), phi, 0.1, 2, 0, 2, **kw)


def test_an_absurd_perplexity_names_the_share_of_unseen_words(store):
    phi = np.full((2, W), 5e-3)
    phi[:, :10] = (1 - 30 * 5e-3) / 10  # as fitted: unseen words keep only the prior's share
    with pytest.warns(UserWarning, match=r"held-out perplexity [0-9.e+]+ is above the 40 "
                      r"words of the vocabulary \(worse than guessing every word uniformly\); "
                      r"75% of the held-out tokens are words never seen in the training "
                      r"documents"):
        value = _score(store, phi)
    assert W < value < 10 * W  # absurd already, if not by orders of magnitude
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per store
        assert _score(store, phi) == value
        evaluation._WARNED.clear()
        assert _score(store, np.full((2, W), 1 / W)) == pytest.approx(W)  # uniform: not absurd
    with pytest.warns(UserWarning, match=r"uniformly\): hold out"):  # training store unknown
        _score(store, phi, trained_on="")
