"""The input formats of ``dscir ingest``: one module per format family, one registry.

Each module declares its ``Format`` records in a ``FORMATS`` tuple and is
listed below, so a new format is one new module and the CLI, which builds a
sub-parser per record, needs no change. In-memory inputs are plain functions
instead (``dscir.corpus.ingest_bow``, ``write_corpus``).
"""

from __future__ import annotations

from dscir.corpus.formats import ldac, text, uci
from dscir.corpus.formats.base import Format
from dscir.errors import DscirError

FORMATS: dict[str, Format] = {f.name: f for m in (ldac, uci, text) for f in m.FORMATS}


def get_format(name: str) -> Format:
    """The registered format ``name``; a ``DscirError`` listing the known ones if none."""
    try:
        return FORMATS[name]
    except KeyError:
        raise DscirError(f"unknown input format {name!r} (known formats: "
                         f"{', '.join(FORMATS)})") from None
