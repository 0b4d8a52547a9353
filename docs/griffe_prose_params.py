"""Griffe extensions for the API reference.

``ProseParameters``: numpydoc parameter lines written as ``name : what it
means`` (prose where numpydoc puts the type, as dscir's docstrings do) are read
as ``name`` with that text as the description, so the reference shows the
prose as the description and the type from the signature. A line whose text
after the colon looks like a type (``int``, ``float | None``, ``list[str]``)
is left alone.

``DeclaredSignatures``: an estimator built by ``dscir.api.params.declare`` gets
its ``__init__`` signature and its docstring's Parameters section when the
class is created, which reading the source cannot see; the class imported
gives both, so its reference opens with the constructor and its parameters."""

from __future__ import annotations

import inspect
import re

import griffe

_TYPE = r"[A-Za-z_][\w.]*(\[[^\]]*\])?"
TYPE_LIKE = re.compile(rf"^{_TYPE}( \| {_TYPE})*(, optional)?$")
PARAM = re.compile(r"^(\s*)([A-Za-z_*][\w*]*(, [A-Za-z_*][\w*]*)*) : (.+)$")
SECTIONS = ("Parameters", "Other Parameters", "Attributes", "Returns", "Yields", "Raises")


def prose_to_description(text: str) -> str:
    lines, out, section = text.splitlines(), [], None
    for i, line in enumerate(lines):
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if set(nxt.strip()) == {"-"} and line.strip():
            section = line.strip()
        match = PARAM.match(line)
        if section in SECTIONS and match and not TYPE_LIKE.match(match.group(4).strip()):
            indent, name, _, prose = match.groups()
            out += [f"{indent}{name}", f"{indent}    {prose}"]
        else:
            out.append(line)
    return "\n".join(out)


class ProseParameters(griffe.Extension):
    def on_instance(self, *, obj, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = prose_to_description(obj.docstring.value)


def declared(cls: griffe.Class) -> bool:
    return any(str(d.value).rpartition(".")[2] == "declare" for d in cls.decorators)


class DeclaredSignatures(griffe.Extension):
    def on_class(self, *, cls, **kwargs) -> None:
        if not declared(cls):
            return
        runtime = griffe.dynamic_import(cls.path)
        kinds = {inspect.Parameter.POSITIONAL_OR_KEYWORD: griffe.ParameterKind.positional_or_keyword,
                 inspect.Parameter.KEYWORD_ONLY: griffe.ParameterKind.keyword_only}
        parameters = [griffe.Parameter(
            p.name, kind=kinds[p.kind],
            default=None if p.default is inspect.Parameter.empty else repr(p.default))
            for p in inspect.signature(runtime.__init__).parameters.values()]
        init = griffe.Function("__init__", parameters=griffe.Parameters(*parameters),
                               parent=cls)
        cls.set_member("__init__", init)
        cls.docstring = griffe.Docstring(prose_to_description(inspect.cleandoc(runtime.__doc__)),
                                         parent=cls)
