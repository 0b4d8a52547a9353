"""Kernel Stein discrepancy (dscir.diagnostics.ksd): against a brute-force double
loop with finite-difference kernel derivatives, its behaviour on a standard
normal target, and its input checks."""

from __future__ import annotations

import numpy as np
import pytest

from dscir.diagnostics.ksd import ksd
from dscir.errors import DscirError


def _k(x: np.ndarray, y: np.ndarray, c: float, beta: float) -> float:
    return float((c * c + np.sum((x - y) ** 2)) ** beta)


def brute_force_ksd(x: np.ndarray, s: np.ndarray, c: float, beta: float) -> float:
    """The defining double sum, one pair at a time, with d_{x_j} k, d_{y_j} k and
    d_{x_j} d_{y_j} k by central finite differences of k (no hand derivatives)."""
    n, d = x.shape
    h1, h2 = 1e-5, 1e-4
    total = 0.0
    for j in range(d):
        e = np.zeros(d)
        e[j] = 1.0
        acc = 0.0
        for a in range(n):
            for b in range(n):
                xa, xb = x[a], x[b]
                k = _k(xa, xb, c, beta)
                dxk = (_k(xa + h1 * e, xb, c, beta) - _k(xa - h1 * e, xb, c, beta)) / (2 * h1)
                dyk = (_k(xa, xb + h1 * e, c, beta) - _k(xa, xb - h1 * e, c, beta)) / (2 * h1)
                dxyk = (
                    _k(xa + h2 * e, xb + h2 * e, c, beta)
                    - _k(xa + h2 * e, xb - h2 * e, c, beta)
                    - _k(xa - h2 * e, xb + h2 * e, c, beta)
                    + _k(xa - h2 * e, xb - h2 * e, c, beta)
                ) / (4 * h2 * h2)
                acc += (s[a, j] * s[b, j] * k + s[a, j] * dyk + s[b, j] * dxk + dxyk)
        total += np.sqrt(acc / n**2)
    return float(total)


@pytest.mark.parametrize("c,beta", [(1.0, -0.5), (0.7, -0.3), (2.0, -0.9)])
def test_matches_a_brute_force_double_loop(c, beta):
    """Any slip in the hand-derived kernel derivatives (a sign, a dropped term, a
    factor 2) or in the assembly of k0_j shows here: the reference uses only k."""
    rng = np.random.default_rng(30)
    x = rng.normal(size=(30, 3))
    s = rng.normal(size=(30, 3)) - x  # arbitrary scores: the identity holds for any
    want = brute_force_ksd(x, s, c, beta)
    assert ksd(x, s, c=c, beta=beta) == pytest.approx(want, rel=1e-6)


def test_blocks_of_rows_give_the_same_value():
    """The row blocking (memory bound) must not change the sum: one row at a time,
    uneven last block, and everything at once."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(257, 4))
    whole = ksd(x, -x)
    assert ksd(x, -x, max_bytes=1) == pytest.approx(whole, rel=1e-12)
    assert ksd(x, -x, max_bytes=8 * 8 * 257 * 10) == pytest.approx(whole, rel=1e-12)


def test_standard_normal_target():
    """Target N(0, I_2), score -theta. Measured with this seed: exact draws
    K = 100 -> 0.262, K = 1,600 -> 0.079; the same draws shifted by 0.5 -> 0.748,
    shrunk to sd 0.5 -> 0.783 (seeds 0-4 gave 0.22-0.27, 0.04-0.08, 0.73-0.80,
    0.76-0.80).

    What each check guards against (each injected by hand, see tests/mutants.py):
    - a dropped cross term s_j(x) d_{y_j} k + s_j(y) d_{x_j} k, or a sign error in
      d_{x_j} k (the cross terms then add instead of cancel), or a sign error in
      d_{x_j} d_{y_j} k: the V-statistic no longer has mean zero under pi, so the
      KSD of exact draws stays near 0.8-1.1 at K = 1,600 (fails `exact < 0.15`);
    - a sign error or drop of the -2b u^(b-1) part of d_{x_j} d_{y_j} k: every
      sum goes negative and is clipped to 0 (fails `small < big` and the
      shifted / narrow lower bounds);
    - the KSD not falling with K (e.g. a 1/K instead of 1/K^2 normalisation)
      fails `exact_1600 < exact_100 / 2` (expected ratio 1/4, measured 0.30).
    """
    rng = np.random.default_rng(17)
    x = rng.standard_normal((1600, 2))
    exact_100 = ksd(x[:100], -x[:100])
    exact_1600 = ksd(x, -x)
    shifted = x + 0.5
    narrow = 0.5 * x
    ksd_shifted = ksd(shifted, -shifted)
    ksd_narrow = ksd(narrow, -narrow)
    assert exact_1600 < 0.15
    assert exact_1600 < exact_100 / 2
    assert ksd_shifted > 0.5 and ksd_shifted > 5 * exact_1600
    assert ksd_narrow > 0.5 and ksd_narrow > 5 * exact_1600


def test_noisy_scores_still_separate_good_from_bad_samples():
    """Unbiased noisy scores (N(0, 0.1^2) added) move the value only a little."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((800, 2))
    noise = 0.1 * rng.standard_normal(x.shape)
    assert ksd(x, -x + noise) == pytest.approx(ksd(x, -x), abs=0.03)
    y = x + 0.5
    assert ksd(y, -y + noise) > 5 * ksd(x, -x + noise)


@pytest.mark.parametrize(
    "samples,scores,kwargs,match",
    [
        (np.zeros(5), np.zeros(5), {}, "shape"),
        (np.zeros((0, 2)), np.zeros((0, 2)), {}, "shape"),
        (np.zeros((5, 2)), np.zeros((5, 3)), {}, "scores must have the shape"),
        (np.array([[0.0, np.nan]]), np.zeros((1, 2)), {}, "samples must be finite"),
        (np.zeros((1, 2)), np.array([[np.inf, 0.0]]), {}, "scores must be finite"),
        (np.zeros((3, 2)), np.zeros((3, 2)), {"c": 0.0}, "c must be"),
        (np.zeros((3, 2)), np.zeros((3, 2)), {"c": -1.0}, "c must be"),
        (np.zeros((3, 2)), np.zeros((3, 2)), {"c": float("nan")}, "c must be"),
        (np.zeros((3, 2)), np.zeros((3, 2)), {"beta": 0.0}, "beta"),
        (np.zeros((3, 2)), np.zeros((3, 2)), {"beta": -1.0}, "beta"),
        (np.zeros((3, 2)), np.zeros((3, 2)), {"beta": 0.5}, "beta"),
        (np.zeros((3, 2)), np.zeros((3, 2)), {"beta": "x"}, "numbers"),
        ([["a", "b"]], [[0.0, 0.0]], {}, "numeric"),
    ],
)
def test_bad_inputs_raise_dscir_error(samples, scores, kwargs, match):
    with pytest.raises(DscirError, match=match):
        ksd(samples, scores, **kwargs)
