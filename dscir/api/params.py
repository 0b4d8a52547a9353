"""An estimator built from its parameters' declarations (``dscir.params.Param``).

From an estimator's tuple of them ``declare`` builds its ``__init__`` signature
(read back by ``get_params``), its constraint table and its docstring's Parameters
section (``dscir.cli.params.add_params`` builds its command-line options).
``validate`` checks every constraint at ``fit`` and raises one ``DscirError``
naming the parameter as the user wrote it: the Python name, or the flag on the
command line. ``config_values`` gives the configuration's fields from the
resolved values.
"""

from __future__ import annotations

from typing import Any

from dscir.errors import DscirError, on_command_line
from dscir.params import Param


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
