"""The plateau rule of ``n_iter="auto"`` (dscir.engine.stopping), in a user's units:
relative change of the held-out score per pass over the training documents."""

from __future__ import annotations

import pytest

from dscir.engine.stopping import Plateau, Stopping
from dscir.errors import DscirError


def series(start: float, per_pass: list[float]) -> list[float]:
    """A perplexity that falls by each of ``per_pass`` (relative) in turn, one score a pass."""
    out = [start]
    for r in per_pass:
        out.append(out[-1] * (1 - r))
    return out


def test_a_flattened_series_stops_and_an_improving_one_does_not():
    """Guards against a rule that stops a chain still improving by more than the
    tolerance per pass, or never stops one that has flattened."""
    rule = Plateau(tolerance=0.001, window=5)
    improving = series(3000.0, [0.05] * 10 + [0.004] * 30)  # 0.4 % a pass, still
    assert not any(rule.reached(improving[:i], True) for i in range(1, len(improving) + 1))
    flat = series(3000.0, [0.05] * 10 + [0.0002] * 10)  # 0.02 % a pass from pass 10
    stops = [i for i in range(1, len(flat) + 1) if rule.reached(flat[:i], True)]
    assert stops and stops[0] == 16  # the first window wholly after the flattening
    assert rule.rate(flat, True, 1.0) == pytest.approx(0.0002, rel=0.01)


def test_the_window_is_exactly_window_passes():
    """Guards against a window one score too long (the first series would go on) or
    too short (the second would stop while its window still holds the drop)."""
    rule = Plateau(tolerance=0.001, window=3)
    drop = [2000.0, 1500.0, 1200.0, 1000.0]
    assert rule.evaluations(1.0) == 3
    assert rule.reached(drop + [1000.0] * 3, True)
    assert not rule.reached(drop + [1000.0] * 2, True)


def test_the_tolerance_is_per_pass_whatever_the_scoring_cadence():
    """Guards against a tolerance read per score or per iteration: ten scores a pass
    falling 0.05 % each fall 0.5 % a pass (not converged at 0.1 %), and one score every
    ten passes falling 0.5 % falls 0.05 % a pass (converged)."""
    rule = Plateau(tolerance=0.001, window=1)
    ten_a_pass = series(1000.0, [0.0005] * 40)
    assert rule.evaluations(0.1) == 10
    assert rule.rate(ten_a_pass, True, 0.1) == pytest.approx(0.005, rel=0.01)
    assert not rule.reached(ten_a_pass, True, 0.1)
    rule = Plateau(tolerance=0.001, window=10)
    every_ten = series(1000.0, [0.005] * 4)
    assert rule.rate(every_ten, True, 10.0) == pytest.approx(0.0005, rel=0.01)
    assert rule.reached(every_ten, True, 10.0)


def test_direction_matters():
    """A rising perplexity is no progress; a rising log predictive is."""
    rule = Plateau(tolerance=0.001, window=1)
    assert rule.reached([100.0, 120.0], lower_is_better=True)
    assert not rule.reached([100.0, 120.0], lower_is_better=False)
    assert rule.rate([100.0, 120.0], False, 1.0) == pytest.approx(0.2)


def test_too_few_scores_never_stop():
    rule = Plateau(tolerance=1.0, window=3)
    assert rule.rate([5.0, 5.0, 5.0], True, 1.0) is None
    assert not rule.reached([5.0, 5.0, 5.0], lower_is_better=True)
    assert rule.reached([5.0, 5.0, 5.0, 5.0], lower_is_better=True)


def test_the_chain_runs_min_passes_before_it_stops():
    """Guards against the minimum ignored: the kept mean's scores are flat at once,
    and the chain still runs its 10 passes (100 iterations) before stopping."""
    stop = Stopping(Plateau(tolerance=0.001, window=1, min_passes=10, max_passes=100), 10,
                    lower_is_better=True, iters_per_pass=10)
    assert (stop.min_iter, stop.max_iter) == (100, 1000)
    m = 0
    while not stop.done(m):
        m += 10
        stop.observe(m, 500.0)
    assert stop.burn_end == 20 and stop.stopped == 100
    assert stop.reason == "plateau" and stop.summary()["passes"] == 10


def test_max_passes_ends_a_chain_that_keeps_improving():
    """Burn-in ends at half the maximum at the latest (so samples are kept), and the
    chain at the maximum: reason 'max_passes'."""
    stop = Stopping(Plateau(tolerance=0.0, window=1, min_passes=0, max_passes=2.4), 5,
                    lower_is_better=True, iters_per_pass=5)
    assert stop.max_iter == 12
    for m, score in ((5, 10.0), (10, 9.0), (12, 8.0)):
        assert stop.due(m)
        stop.observe(m, score)
    assert (stop.burn_end, stop.stopped, stop.reason) == (10, 12, "max_passes")
    assert stop.summary()["reason"] == "max_passes"


def test_the_progress_shows_the_change_per_pass_and_the_tolerance():
    stop = Stopping(Plateau(tolerance=0.001, window=1), 10, True, iters_per_pass=10)
    assert "Δ/pass –" in stop.progress()
    stop.observe(10, 1000.0)
    stop.observe(20, 996.0)
    assert stop.progress() == "burn-in, Δ/pass 0.40% (stop < 0.10%)"


@pytest.mark.parametrize("bad", [dict(tolerance=-0.1), dict(window=0), dict(max_passes=0),
                                 dict(min_passes=-1), dict(min_passes=20, max_passes=10)])
def test_impossible_settings_are_named(bad):
    with pytest.raises(DscirError, match=next(iter(bad)).replace("_", " ").split()[0]
                       .replace("min", "min_passes")):
        Plateau(**bad).check()


def test_a_chain_reads_its_scores_per_pass():
    """Guards against a chain that takes an iteration (or a score) for a pass: ten
    scores a pass, each 0.05 % better, are 0.5 % a pass and do not end burn-in; flat
    ones do, once the window of ten scores (one pass) holds flat ones only."""
    stop = Stopping(Plateau(tolerance=0.001, window=1, min_passes=0, max_passes=10), 10,
                    lower_is_better=True, iters_per_pass=100)
    assert stop.passes_per_score == 0.1 and stop.max_iter == 1000
    for m, s in zip(range(10, 310, 10), series(1000.0, [0.0005] * 29)):
        stop.observe(m, s)
    assert stop.burn_end is None
    for m in range(310, 420, 10):  # the drop at 310 leaves the window at 410
        stop.observe(m, 900.0)
    assert stop.burn_end == 410
