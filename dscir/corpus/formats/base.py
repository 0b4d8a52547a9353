"""The record every input format of ``dscir ingest`` registers."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Callable


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
