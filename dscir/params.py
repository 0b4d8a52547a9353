"""Declarative parameters: each parameter of an estimator is declared once, as a ``Param``.

A ``Param`` holds the parameter's name, constraint, default, help text, command-line
flag and whether it is a field of the chain's configuration. A model declares the
parameters that make up its configuration beside it, and ``configuration`` makes
the configuration's dataclass from them; the estimator adds the parameters that
drive a run (``dscir.api.params`` builds its signature, constraint table and
docstring, ``dscir.cli.params`` its command-line options).

``AUTO`` is the one sentinel for "chosen for you" (by the estimator's policy, or
the rule the parameter's help names); None is a value of its own where allowed
(e.g. ``tau=None``: a constant step size).
"""

from __future__ import annotations

import dataclasses
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
    the sampler checks the names); ``none``: None allowed."""

    none: bool = False

    def check(self, name: str, value: Any) -> None:
        if value is None and self.none:
            return
        if not isinstance(value, dict):
            raise DscirError(f"{name} must be a dict of option names to numbers, got {value!r}")
        for k, v in value.items():
            if not isinstance(v, str):
                Interval(numbers.Real, 0, open_low=True).check(f"{name}[{k!r}]", v)


AUTO = "auto"


def _number(interval: Interval, value: Any) -> int | float:
    return int(value) if interval.kind is numbers.Integral else float(value)


@dataclass(frozen=True)
class Param:
    """One estimator parameter, declared once.

    ``constraint``: its check (``Interval``, ``Options``, ...); ``auto``: ``AUTO`` is
    also allowed; ``default``: the value ``__init__`` takes; ``help``: one line of
    prose for the docstring and the command line; ``flag``: its command-line flag
    ("" gives ``--name-with-dashes``, None: not on the command line); ``config``:
    whether it is a field of the model's configuration, passed on as resolved (a
    string: an entry of that field, a dict; a pair of names: a pair's two fields,
    ``config_values``);
    ``positional``: may be given by position in ``__init__``; ``required``: the
    command line asks for it (the Python default is then for the API alone);
    ``needs``: a boolean parameter that must be True when this one is not at its
    default (e.g. ``burn_sweeps`` needs ``warm_start``).
    """

    name: str
    constraint: Any
    default: Any
    help: str
    flag: str | None = ""
    auto: bool = False
    config: bool | str | tuple[str, str] = True
    positional: bool = False
    required: bool = False
    needs: str | None = None

    def coerce(self, value: Any) -> Any:
        """The value as the configuration holds it (a plain int or float for a number)."""
        if isinstance(self.constraint, Pair) and value is not None and value != AUTO:
            first, second = value
            return _number(self.constraint.first, first), _number(self.constraint.second, second)
        if isinstance(self.constraint, Interval) and value is not None and value != AUTO:
            return _number(self.constraint, value)
        return value

    @property
    def option(self) -> str | None:
        """The command-line flag (None: not on the command line)."""
        if self.flag is None:
            return None
        return self.flag or "--" + self.name.replace("_", "-")

    def check(self, name: str, value: Any) -> None:
        """Raise the ``DscirError`` of a bad value, naming the parameter ``name``."""
        if self.auto and isinstance(value, str) and value == AUTO:
            return
        try:
            self.constraint.check(name, value)
        except DscirError as exc:
            if not self.auto:
                raise
            raise DscirError(f"{exc} (or {AUTO!r})") from None


def configuration(params: tuple[Param, ...]):
    """Class decorator: a frozen dataclass whose fields are first the configuration's
    parameters of ``params`` (``config=True``: the field of its name; a pair of names:
    a pair's two fields), those that take ``AUTO`` (``Param.auto``) required, since the
    policy resolves them before a configuration exists, the others defaulting to
    their declared default; then the class's own annotated fields (settings that
    are not parameters, each with a default)."""
    def wrap(cls):
        required: dict[str, str] = {}
        optional: dict[str, Any] = {}
        for p in params:
            names = (p.name,) if p.config is True else p.config
            if not isinstance(names, tuple):
                continue
            if p.auto:
                required.update(dict.fromkeys(names, "Any"))
                continue
            value = p.coerce(p.default)
            optional.update(zip(names, (value,) if p.config is True else value))
        for name, value in optional.items():
            setattr(cls, name, value)
        own = cls.__dict__.get("__annotations__", {})
        cls.__annotations__ = {**required, **dict.fromkeys(optional, "Any"), **own}
        return dataclasses.dataclass(frozen=True)(cls)
    return wrap


__all__ = ["AUTO", "Interval", "Mapping", "Options", "Pair", "Param", "configuration"]
