"""Declarative parameters: each estimator parameter is declared once, as a ``Param``.

A ``Param`` holds the parameter's name, constraint, default, help text, command-line
flag and whether it is a field of the chain's configuration. From an estimator's
tuple of them ``dscir.api.declare`` builds its ``__init__`` signature (read back by
``get_params``), its constraint table and its docstring's Parameters section, and
``dscir.cli.options.add_params`` builds its command-line options. ``validate``
checks every constraint at ``fit`` and raises one ``DscirError`` naming the
parameter as the user wrote it: the Python name, or the flag on the command line.

``AUTO`` is the one sentinel for "chosen for you" (by the estimator's policy, or
the rule the parameter's help names); None is a value of its own where allowed
(e.g. ``tau=None``: a constant step size).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

from dscir.errors import DscirError, on_command_line


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


def validate(params: Any, values: dict[str, Any], cli: bool = False) -> None:
    """Check every parameter against its declaration (or a ``{name: constraint}``
    table), in order; ``cli`` (or a call from the command line): name each by its
    command-line flag."""
    cli = cli or on_command_line()
    if isinstance(params, dict):
        for name, constraint in params.items():
            constraint.check(name, values[name])
        declared = [c for c in params.values() if isinstance(c, Param)]
    else:
        declared = list(params)
        for p in declared:
            p.check(p.option if cli and p.option else p.name, values[p.name])
    spell = {p.name: p.option if cli and p.option else p.name for p in declared}
    for p in declared:
        if p.needs is not None and values[p.name] != p.default and not values[p.needs]:
            needed = spell.get(p.needs, p.needs)
            raise DscirError(f"{spell[p.name]}={values[p.name]!r} needs "
                             f"{needed if needed.startswith('--') else needed + '=True'}")


def config_values(params: tuple[Param, ...], values: dict[str, Any]) -> dict[str, Any]:
    """The configuration's fields from the parameters' resolved ``values``: a
    ``config=True`` parameter is the field of its name, a ``config=(a, b)`` pair the
    fields a and b; each coerced as the configuration holds it (``Param.coerce``)."""
    out: dict[str, Any] = {}
    for p in params:
        if p.config is True:
            out[p.name] = p.coerce(values[p.name])
        elif isinstance(p.config, tuple):
            out.update(zip(p.config, p.coerce(values[p.name])))
    return out


def declare(cls):
    """Class decorator: build ``cls.__init__`` (its signature is what ``get_params``
    reads), ``_parameter_constraints`` and the docstring's Parameters section from
    ``cls._params``, the estimator's declarations."""
    import inspect

    params = cls._params
    kind = inspect.Parameter
    signature = inspect.Signature(
        [kind("self", kind.POSITIONAL_OR_KEYWORD)]
        + [kind(p.name, kind.POSITIONAL_OR_KEYWORD if p.positional else kind.KEYWORD_ONLY,
                default=p.default) for p in params])

    def __init__(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        for name, value in list(bound.arguments.items())[1:]:
            setattr(self, name, value)

    __init__.__signature__ = signature
    __init__.__qualname__ = f"{cls.__name__}.__init__"
    __init__.__module__ = cls.__module__
    cls.__init__ = __init__
    cls._parameter_constraints = {p.name: p for p in params}
    rows = "\n".join(f"    {p.name} : {p.help} Default: {p.default!r}." for p in params)
    cls.__doc__ = (cls.__doc__ or "").rstrip() + "\n\n    Parameters\n    ----------\n" + rows + "\n"
    return cls



def markdown_table(params: tuple[Param, ...]) -> str:
    """The declarations as a Markdown table (the API reference's parameter tables)."""
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    rows = [f"| `{p.name}` | `{p.default!r}` | "
            + (f"`{p.option}`" if p.option else "") + f" | {cell(p.help)} |" for p in params]
    return "\n".join(["| parameter | default | command line | meaning |",
                      "|---|---|---|---|", *rows])
