"""Command-line options built from an estimator's parameter declarations.

Each ``dscir.params.Param`` with a flag becomes one option: its type and
choices from the constraint, ``auto`` / ``none`` where the declaration allows
them, its help text and default from the declaration (a command may change a
default: ``dscir tune``'s shorter chains). ``estimator_kwargs`` reads them back,
declarations of a dict parameter's entries (``config`` naming that parameter,
e.g. LDA's ``SAMPLER_OPTIONS``) into that dict, and ``check_flags`` raises the
error of a bad value naming the flag that was typed.
"""

from __future__ import annotations

import argparse
import dataclasses
import numbers
from typing import Any

from dscir.api.params import validate

from dscir.params import AUTO, Interval, Options, Pair, Param


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
    help_text = p.help.replace("%", "%%")  # argparse formats help with %
    # no default shown where the flag is required, or unset (None, not a value of its
    # own: the help says what then)
    if not p.required and (p.default is not None or getattr(c, "none", False)):
        help_text = f"{help_text} (default: {p.default})"
    if isinstance(c, Options) and set(c.values) == {False, True}:
        action = "store_false" if p.default else "store_true"
        parser.add_argument(flag, dest=p.name, action=action, help=p.help.replace("%", "%%"))
        return
    if isinstance(c, Interval):
        parser.add_argument(flag, dest=p.name, type=_parse(p), default=p.default,
                            required=p.required, metavar=p.name.upper(), help=help_text)
        return
    if isinstance(c, Pair):
        names = tuple(n.format("").strip(" []()0123456789").upper() for n in c.names)
        parser.add_argument(flag, dest=p.name, type=_element, nargs=2, default=p.default,
                            metavar=names, help=help_text)
        return
    choices = (*c.values, AUTO) if p.auto else c.values
    parser.add_argument(flag, dest=p.name, choices=choices, default=p.default, help=help_text)


def add_params(parser: argparse.ArgumentParser, params: tuple[Param, ...],
               names: tuple[str, ...] | None = None, defaults: dict[str, Any] | None = None
               ) -> None:
    """One option per declared parameter with a flag (only ``names`` if given), its
    default the declaration's or the one ``defaults`` gives this command."""
    defaults = defaults or {}
    for p in params:
        if p.option is not None and (names is None or p.name in names):
            _add(parser, dataclasses.replace(p, default=defaults.get(p.name, p.default)))


def estimator_kwargs(args: argparse.Namespace, params: tuple[Param, ...],
                     entries: tuple[Param, ...] = ()) -> dict[str, Any]:
    """The estimator's keywords of the options ``add_params`` added (and were parsed);
    the ``entries`` typed (checked, named by their flags) gathered into the dict
    parameter each one's ``config`` names (None where none was typed)."""
    kwargs = {p.name: tuple(v) if isinstance(v, list) else v
              for p in params if p.option is not None and hasattr(args, p.name)
              for v in [getattr(args, p.name)]}
    for p in entries:
        kwargs.setdefault(p.config, None)
        value = getattr(args, p.name, None)
        if value is not None:
            p.check(p.option, value)
            kwargs[p.config] = {**(kwargs[p.config] or {}), p.name: value}
    return kwargs


def check_flags(model) -> None:
    """Raise the error of a bad parameter value naming its command-line flag."""
    validate(model._params, model.get_params(), cli=True)
