"""The plateau rule of ``n_iter="auto"`` (dscir.engine.stopping)."""

from __future__ import annotations

import pytest

from dscir.engine.stopping import Plateau
from dscir.errors import DscirError


def test_a_falling_perplexity_goes_on_and_a_flat_one_stops():
    rule = Plateau(tolerance=0.01, window=2)
    falling = [3000.0, 2800.0, 2600.0, 2500.0]
    assert not rule.reached(falling, lower_is_better=True)
    flat = falling + [2490.0, 2480.0]  # 0.8 % below 2,500 at best: within 1 %
    assert rule.reached(flat, lower_is_better=True)


def test_the_whole_window_must_fail_to_improve():
    """One good score among the last ``window`` keeps the chain going (a rule that
    looked at the last score alone would stop at a noisy dip)."""
    rule = Plateau(tolerance=0.01, window=3)
    scores = [-8.0, -7.5, -7.4, -7.0, -7.39, -7.395]
    assert rule.improvement(scores, lower_is_better=False) == pytest.approx(0.4 / 7.4)
    assert not rule.reached(scores, lower_is_better=False)
    assert rule.reached(scores + [-7.0, -6.99, -6.995], lower_is_better=False)


def test_direction_matters():
    """A rising perplexity is no progress; a rising log likelihood is (a rule with
    the direction swapped would stop a chain that still improves)."""
    rule = Plateau(tolerance=0.001, window=1)
    assert rule.reached([100.0, 120.0], lower_is_better=True)
    assert not rule.reached([100.0, 120.0], lower_is_better=False)
    assert rule.improvement([100.0, 120.0], lower_is_better=False) == pytest.approx(0.2)


def test_too_few_scores_never_stop():
    rule = Plateau(tolerance=1.0, window=3)
    assert rule.improvement([5.0, 5.0, 5.0], lower_is_better=True) is None
    assert not rule.reached([5.0, 5.0, 5.0], lower_is_better=True)
    assert rule.reached([5.0, 5.0, 5.0, 5.0], lower_is_better=True)


@pytest.mark.parametrize("bad", [dict(tolerance=-0.1), dict(window=0), dict(window=1.5),
                                 dict(max_iter=0)])
def test_impossible_settings_are_named(bad):
    with pytest.raises(DscirError, match=next(iter(bad)).replace("_", " ").split()[0]):
        Plateau(**bad).check()
