"""Step-size schedules: callables m -> h_m for the 0-based iteration m.

``constant(h)`` keeps h_m = h; ``polynomial(h, tau, kappa)`` gives
h_m = h (1 + m / tau)^(-kappa), the decay used in the SCIR and SGRLD papers
(kappa = 0 is a constant step; kappa in (0.5, 1] meets the Robbins-Monro
conditions that SGRLD's asymptotic exactness needs, SCIR needs no decay).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from dscir.errors import DscirError


def _positive(name: str, value) -> float:
    if not isinstance(value, numbers.Real) or not (0.0 < float(value) < math.inf):
        raise DscirError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def _iteration(m) -> int:
    if not isinstance(m, numbers.Integral) or m < 0:
        raise DscirError(f"the iteration m must be a non-negative integer, got {m!r}")
    return int(m)


@dataclass(frozen=True)
class Constant:
    """h_m = h."""

    h: float

    def __call__(self, m: int) -> float:
        _iteration(m)
        return self.h

    def __repr__(self) -> str:
        return f"constant(h={self.h:g})"


@dataclass(frozen=True)
class Polynomial:
    """h_m = h (1 + m / tau)^(-kappa)."""

    h: float
    tau: float
    kappa: float

    def __call__(self, m: int) -> float:
        return self.h * (1.0 + _iteration(m) / self.tau) ** (-self.kappa)

    def __repr__(self) -> str:
        return f"polynomial(h={self.h:g}, tau={self.tau:g}, kappa={self.kappa:g})"


def constant(h: float) -> Constant:
    """The constant schedule h_m = h (h > 0)."""
    return Constant(_positive("step size h", h))


def polynomial(h: float, tau: float, kappa: float) -> Polynomial:
    """h_m = h (1 + m / tau)^(-kappa), with h > 0, tau > 0 and 0 <= kappa <= 1."""
    h = _positive("step size h", h)
    tau = _positive("schedule tau", tau)
    if not isinstance(kappa, numbers.Real) or not 0.0 <= float(kappa) <= 1.0:
        raise DscirError(f"schedule kappa must lie in [0, 1], got {kappa!r}")
    return Polynomial(h, tau, float(kappa))
