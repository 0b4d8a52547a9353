import math

import pytest

from dscir.errors import DscirError
from dscir.samplers.schedules import constant, polynomial


def test_constant():
    s = constant(0.5)
    assert [s(m) for m in (0, 1, 10_000)] == [0.5, 0.5, 0.5]
    assert repr(s) == "constant(h=0.5)"


def test_polynomial_values():
    s = polynomial(0.5, 10, 0.33)
    assert s(0) == 0.5
    assert s(10) == pytest.approx(0.5 * 2**-0.33)
    assert s(990) == pytest.approx(0.5 * 100**-0.33)
    assert polynomial(0.01, 1000, 0.0)(12345) == 0.01  # kappa = 0: constant
    assert polynomial(1.0, 1, 1.0)(3) == pytest.approx(0.25)
    assert repr(s) == "polynomial(h=0.5, tau=10, kappa=0.33)"


@pytest.mark.parametrize(
    "make,match",
    [
        (lambda: constant(0.0), "step size h must be a positive finite number"),
        (lambda: constant(-1), "step size h"),
        (lambda: constant(math.inf), "step size h"),
        (lambda: constant("0.1"), "step size h"),
        (lambda: polynomial(0.0, 10, 0.5), "step size h"),
        (lambda: polynomial(0.1, 0, 0.5), "schedule tau must be a positive finite number"),
        (lambda: polynomial(0.1, -5, 0.5), "schedule tau"),
        (lambda: polynomial(0.1, 10, -0.1), r"kappa must lie in \[0, 1\]"),
        (lambda: polynomial(0.1, 10, 1.5), "kappa"),
        (lambda: polynomial(0.1, 10, math.nan), "kappa"),
    ],
)
def test_validation(make, match):
    with pytest.raises(DscirError, match=match):
        make()


@pytest.mark.parametrize("m", [-1, 1.5])
def test_iteration_must_be_a_non_negative_integer(m):
    for s in (constant(0.1), polynomial(0.1, 10, 0.5)):
        with pytest.raises(DscirError, match="non-negative integer"):
            s(m)
