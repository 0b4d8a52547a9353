"""Declarative parameter constraints (scikit-learn's ``_parameter_constraints``).

An estimator lists one constraint per parameter; ``validate`` checks them all
at ``fit`` and raises one ``DscirError`` naming the parameter and the value.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

from dscir.errors import DscirError


@dataclass(frozen=True)
class Interval:
    """An integer or real number in [low, high] (``open_low``: excluding low), finite."""

    kind: type  # numbers.Integral or numbers.Real
    low: float | None = None
    high: float | None = None
    open_low: bool = False
    none: bool = False  # None is allowed

    def check(self, name: str, value: Any) -> None:
        if value is None and self.none:
            return
        what = "an integer" if self.kind is numbers.Integral else "a number"
        if isinstance(value, bool) or not isinstance(value, self.kind):
            raise DscirError(f"{name} must be {what}, got {value!r}")
        if not math.isfinite(value):
            raise DscirError(f"{name} must be finite, got {value!r}")
        if self.low is not None and (value < self.low or (self.open_low and value == self.low)):
            bound = f"> {self.low}" if self.open_low else f">= {self.low}"
            raise DscirError(f"{name} must be {bound}, got {value!r}")
        if self.high is not None and value > self.high:
            raise DscirError(f"{name} must be <= {self.high}, got {value!r}")


@dataclass(frozen=True)
class Options:
    """One of a fixed set of values."""

    values: tuple

    def check(self, name: str, value: Any) -> None:
        if value not in self.values:
            raise DscirError(f"{name} must be one of {', '.join(map(str, self.values))}, "
                             f"got {value!r}")


@dataclass(frozen=True)
class Pair:
    """A pair whose elements satisfy ``first`` and ``second`` (``none``: None allowed);
    ``names`` format each element's name from the parameter's, e.g. ``"{} shape"``."""

    names: tuple[str, str]
    first: Interval
    second: Interval
    none: bool = False

    def check(self, name: str, value: Any) -> None:
        if value is None and self.none:
            return
        try:
            a, b = value
        except (TypeError, ValueError):
            elements = ", ".join(n.format("").strip(" []()0123456789") for n in self.names)
            raise DscirError(f"{name} must be a ({elements}) pair, got {value!r}") from None
        self.first.check(self.names[0].format(name), a)
        self.second.check(self.names[1].format(name), b)


@dataclass(frozen=True)
class Mapping:
    """A mapping of option names to positive numbers or names (a sampler's options;
    the sampler checks the names)."""

    def check(self, name: str, value: Any) -> None:
        if not isinstance(value, dict):
            raise DscirError(f"{name} must be a dict of option names to numbers, got {value!r}")
        for k, v in value.items():
            if not isinstance(v, str):
                Interval(numbers.Real, 0, open_low=True).check(f"{name}[{k!r}]", v)


def validate(constraints: dict[str, Any], params: dict[str, Any]) -> None:
    """Check every parameter against its constraint (the table's order)."""
    for name, constraint in constraints.items():
        constraint.check(name, params[name])
