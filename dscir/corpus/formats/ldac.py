"""LDA-C input: one document a line, ``N id:count id:count ...`` (0-based word
ids), plus a vocabulary file, one word a line."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from dscir.corpus.formats.base import Format
from dscir.corpus.ingest import (BLOCK_BYTES, bad_integer, check_entries, line_blocks,
                                merge_entries, read_vocabulary, split_lines)
from dscir.corpus.store import Corpus
from dscir.corpus.writer import CorpusWriter, warn_merged
from dscir.errors import CorpusError, DataError


def _ints(text: str) -> np.ndarray:
    if not text.isascii():  # not numbers; and numpy 2.4's loadtxt can crash on some
        raise ValueError("non-ASCII text")  # astral characters (e.g. U+F6EC9)
    return np.loadtxt(io.StringIO(text), dtype=np.int64, ndmin=1) if text.strip() \
        else np.zeros(0, np.int64)


def _parse_ldac(text: str, lineno: int, path):
    """Lines ``N id:count ...`` -> (line numbers, entries per line, ids, counts)."""
    linenos, sizes, heads, bodies = [], [], [], []
    for k, line in enumerate(split_lines(text)):
        parts = line.split(None, 1)
        if not parts:
            continue
        body = parts[1] if len(parts) > 1 else ""
        n_items = len(body.split())
        if body.count(":") != n_items or len(body.replace(":", " ").split()) != 2 * n_items:
            raise DataError(f"{path}:{lineno + k}: malformed LDA-C line "
                            f"(expected 'N id:count id:count ...'): {line[:80]!r}")
        linenos.append(lineno + k)
        sizes.append(n_items)
        heads.append(parts[0])
        bodies.append(body)
    try:
        counts = np.array(heads, dtype=np.int64)
        nums = _ints(" ".join(bodies).replace(":", " "))
    except (ValueError, OverflowError):
        for n, head, body in zip(linenos, heads, bodies):
            bad = bad_integer([head, *body.replace(":", " ").split()])
            if bad is not None:
                raise DataError(f"{path}:{n}: malformed LDA-C line (not an integer): "
                                f"{head} {body[:80]!r} ({bad[:40]!r} is not a 64-bit "
                                "integer)") from None
            if not (head + body).isascii():
                ch = next(c for c in head + body if not c.isascii())
                raise DataError(f"{path}:{n}: malformed LDA-C line (character {ch!r}): "
                                f"{head} {body[:80]!r}") from None
        raise DataError(f"{path}:{lineno}: malformed LDA-C block") from None
    heads, sizes = counts, np.array(sizes, dtype=np.int64)
    if np.any(heads != sizes):
        k = int(np.argmax(heads != sizes))
        raise DataError(f"{path}:{linenos[k]}: header says {heads[k]} entries, "
                        f"line has {sizes[k]}")
    return np.array(linenos, dtype=np.int64), sizes, nums[0::2], nums[1::2]


def ingest_ldac(path, vocab_path, out, *, overwrite=False, chunk_docs=256, shard_chunks=16,
                drop_empty=False, heldout=None, progress=False,
                block_bytes=BLOCK_BYTES, encoding="utf-8") -> Corpus:
    """An LDA-C file (one document a line, ``N id:count ...``, ids 0-based)
    and its vocabulary file (in ``encoding``). Document ids are the 0-based line
    indices (blank lines skipped)."""
    vocab = read_vocabulary(vocab_path, encoding)
    W = vocab.size
    header = f"no vocabulary entry: {Path(vocab_path).name} has {W} words"
    merged = n_seen = 0
    with CorpusWriter(out, overwrite=overwrite, chunk_docs=chunk_docs,
                      shard_chunks=shard_chunks, drop_empty=drop_empty) as w:
        for lineno, text in line_blocks(path, progress=progress, block_bytes=block_bytes):
            linenos, sizes, ids, counts = _parse_ldac(text, lineno, path)
            doc = np.repeat(np.arange(sizes.size), sizes)
            check_entries(lambda i: f"{path}:{linenos[i]}", doc, ids, counts, W, 0, header)
            lengths, ids, counts, m = merge_entries(doc, ids, counts, sizes.size)
            merged += m
            w.add(lengths, ids, counts, np.arange(n_seen, n_seen + sizes.size).astype(str))
            n_seen += sizes.size
        warn_merged(merged, path)
        return w.finish(vocab, heldout=heldout, report={
            "format": "ldac", "source": str(path), "duplicates_merged": merged})


def _add_options(parser) -> None:
    parser.add_argument("--vocab", help="vocabulary file, one word a line (required)")


def _ingest(args, **options) -> Corpus:
    # --vocab is checked here, not by argparse, so that its absence is one
    # DscirError line like every other input problem
    if not args.vocab:
        raise CorpusError("ldac ingestion needs --vocab")
    return ingest_ldac(args.input, args.vocab, args.output, encoding=args.encoding, **options)


FORMATS = (Format("ldac", "LDA-C file ('N id:count ...' a line) + --vocab",
                  _add_options, _ingest),)
