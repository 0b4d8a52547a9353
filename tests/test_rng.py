import numpy as np
import pytest
from scipy import stats

from dscir.rng import derive, new_state, uniform


def test_derive_is_deterministic_and_order_sensitive():
    assert derive(1, 2, 3) == derive(1, 2, 3)
    assert derive(1, 2, 3) != derive(1, 3, 2)
    assert derive(0) != derive(0, 0)


def test_derive_rejects_negative():
    with pytest.raises(ValueError, match="non-negative"):
        derive(1, -1)


def test_uniform_is_uniform_and_open():
    s = new_state(np.uint64(derive(7)))
    u = np.array([uniform(s) for _ in range(20000)])
    assert u.min() > 0.0 and u.max() < 1.0
    assert stats.kstest(u, "uniform").pvalue > 1e-3


def test_neighbouring_streams_are_independent():
    a = new_state(np.uint64(derive(7, 0)))
    b = new_state(np.uint64(derive(7, 1)))
    ua = np.array([uniform(a) for _ in range(5000)])
    ub = np.array([uniform(b) for _ in range(5000)])
    assert abs(np.corrcoef(ua, ub)[0, 1]) < 0.05


def test_normal_is_standard_normal():
    from dscir.rng import normal

    s = new_state(np.uint64(derive(11)))
    z = np.array([normal(s) for _ in range(20000)])
    assert stats.kstest(z, "norm").pvalue > 1e-3
