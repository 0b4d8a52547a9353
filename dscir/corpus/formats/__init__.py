"""The input formats of ``dscir ingest``: one module per format family, one registry.

Each module declares its ``Format`` records in a ``FORMATS`` tuple and is
listed below, so a new format is one new module and the CLI, which builds a
sub-parser per record, needs no change. In-memory inputs are plain functions
instead (``dscir.corpus.ingest_bow``, ``write_corpus``).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Callable

from dscir.errors import DscirError


@dataclass(frozen=True)
class Format:
    """One input format. ``add_options(parser)`` adds the flags of this format
    only (the CLI adds INPUT, OUTPUT and the layout, held-out and progress
    flags); ``ingest(args, **options)`` streams ``args.input`` into the store
    ``args.output`` and returns the ``Corpus``, ``options`` being the writer's
    keywords (overwrite, chunk_docs, shard_chunks, drop_empty, heldout, progress)."""

    name: str
    description: str
    add_options: Callable[[argparse.ArgumentParser], None]
    ingest: Callable[..., object]


# The format modules import ``Format`` from here, hence the late import.
from dscir.corpus.formats import ldac, text, uci  # noqa: E402

FORMATS: dict[str, Format] = {f.name: f for m in (ldac, uci, text) for f in m.FORMATS}


def get_format(name: str) -> Format:
    """The registered format ``name``; a ``DscirError`` listing the known ones if none."""
    try:
        return FORMATS[name]
    except KeyError:
        raise DscirError(f"unknown input format {name!r} (known formats: "
                         f"{', '.join(FORMATS)})") from None
