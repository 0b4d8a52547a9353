"""Command-line options built from an estimator's parameter declarations.

Each ``dscir.api.params.Param`` with a flag becomes one option: its type and
choices from the constraint, ``auto`` / ``none`` where the declaration allows
them, its help text and default from the declaration. ``estimator_kwargs``
reads them back, and ``check_flags`` raises the error of a bad value naming
the flag that was typed.
"""

from __future__ import annotations

import argparse
import numbers
from typing import Any

from dscir.api.params import AUTO, Interval, Options, Pair, Param, validate


def _parse(p: Param):
    """The text-to-value function of a numeric option ('auto', 'none' where allowed)."""
    kind = int if p.constraint.kind is numbers.Integral else float

    def parse(text: str) -> Any:
        if p.auto and text.lower() == AUTO:
            return AUTO
        if p.constraint.none and text.lower() in ("none", "constant"):
            return None
        return kind(text)

    parse.__name__ = kind.__name__  # argparse names the type in its error
    return parse


def _element(text: str) -> float | str:
    """One number of a pair (argparse also passes a string default through it)."""
    return AUTO if text == AUTO else float(text)


_element.__name__ = "float"


def _add(parser: argparse.ArgumentParser, p: Param) -> None:
    c, flag = p.constraint, p.option
    help_text = p.help
    if isinstance(c, Options) and set(c.values) == {False, True}:
        action = "store_false" if p.default else "store_true"
        parser.add_argument(flag, dest=p.name, action=action, help=help_text)
        return
    if isinstance(c, Interval):
        parser.add_argument(flag, dest=p.name, type=_parse(p), default=p.default,
                            required=p.required, metavar=p.name.upper(),
                            help=help_text if p.required else f"{help_text} (default: "
                            f"{p.default})")
        return
    if isinstance(c, Pair):
        names = tuple(n.format("").strip(" []()0123456789").upper() for n in c.names)
        parser.add_argument(flag, dest=p.name, type=_element, nargs=2, default=p.default,
                            metavar=names, help=f"{help_text} (default: {p.default})")
        return
    choices = (*c.values, AUTO) if p.auto else c.values
    parser.add_argument(flag, dest=p.name, choices=choices, default=p.default,
                        help=f"{help_text} (default: {p.default})")


def add_params(parser: argparse.ArgumentParser, params: tuple[Param, ...],
               names: tuple[str, ...] | None = None) -> None:
    """One option per declared parameter with a flag (only ``names`` if given)."""
    for p in params:
        if p.option is not None and (names is None or p.name in names):
            _add(parser, p)


def estimator_kwargs(args: argparse.Namespace, params: tuple[Param, ...]) -> dict[str, Any]:
    """The estimator's keywords of the options ``add_params`` added (and were parsed)."""
    return {p.name: tuple(v) if isinstance(v, list) else v
            for p in params if p.option is not None and hasattr(args, p.name)
            for v in [getattr(args, p.name)]}


def check_flags(model) -> None:
    """Raise the error of a bad parameter value naming its command-line flag."""
    validate(model._params, model.get_params(), cli=True)
