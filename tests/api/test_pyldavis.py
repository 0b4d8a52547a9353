"""The pyLDAvis view's words above its size limit (``dscir.api.pyldavis``).

Guards against: the restricted view dropping a topic's most probable word for
a frequent one, or taking its words in another order than rank by rank then
frequency (``view_words``); rows not renormalised over the kept words
(pyLDAvis rejects them) or the columns of other words (``topic_term``); too
many topics for the view failing late or with an unclear error.
"""

from __future__ import annotations

import numpy as np
import pytest

from dscir.api import pyldavis
from dscir.errors import DscirError

PHI = np.array([[0.5, 0.1, 0.1, 0.1, 0.1, 0.1, 0.0, 0.0],
                [0.0, 0.1, 0.2, 0.1, 0.1, 0.1, 0.0, 0.4],
                [0.0, 0.0, 0.1, 0.3, 0.3, 0.1, 0.2, 0.0]])
FREQ = np.array([1, 9, 2, 2, 8, 7, 1, 0])


def test_view_words_rank_by_rank_then_by_frequency(monkeypatch):
    monkeypatch.setattr(pyldavis, "RELEVANT", 2)
    # first ranks 0, 7, 3 (ties: the lower id); second ranks 1, 2, 4; then by
    # frequency 1, 4, 5, 2, 3, 0, 6, 7
    monkeypatch.setattr(pyldavis, "MAX_ENTRIES", 3 * 5)
    np.testing.assert_array_equal(pyldavis.view_words(PHI, FREQ), [0, 1, 2, 3, 7])
    monkeypatch.setattr(pyldavis, "MAX_ENTRIES", 3 * 7)
    np.testing.assert_array_equal(pyldavis.view_words(PHI, FREQ), [0, 1, 2, 3, 4, 5, 7])
    monkeypatch.setattr(pyldavis, "MAX_ENTRIES", 3 * 8)
    np.testing.assert_array_equal(pyldavis.view_words(PHI, FREQ), np.arange(8))


def test_topic_term_rows_are_the_columns_renormalised():
    words = np.array([0, 3, 7])
    got = pyldavis.topic_term(PHI, words)
    np.testing.assert_allclose(got.sum(axis=1), 1.0)
    np.testing.assert_array_equal(got, PHI[:, words] / PHI[:, words].sum(axis=1, keepdims=True))


def test_too_many_topics_for_the_view_is_one_clear_error(monkeypatch):
    monkeypatch.setattr(pyldavis, "MAX_ENTRIES", 3 * 5)
    monkeypatch.setattr(pyldavis, "RELEVANT", 6)
    with pytest.raises(DscirError, match="at most 2 topics, not 3"):
        pyldavis.check_view(3, 8)
    pyldavis.check_view(3, 5)  # every word fits: no limit
