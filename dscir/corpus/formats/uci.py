"""UCI bag-of-words input: a ``docword`` file (header lines D, W, NNZ, then
``docID wordID count`` lines, 1-based ids, sorted by docID) and an optional
vocabulary file, one word a line."""

from __future__ import annotations

import io
import itertools

import numpy as np

from dscir.corpus.formats.base import Format
from dscir.corpus.ingest import (BLOCK_BYTES, bad_integer, check_entries, line_blocks,
                                merge_entries, quote, read_vocabulary, split_lines)
from dscir.corpus.store import INT32_MAX, Corpus
from dscir.corpus.writer import CorpusWriter, warn_merged
from dscir.errors import DataError


def _first_lines(blocks, n: int) -> tuple[list[str], str]:
    """The first ``n`` lines from an iterator of line blocks (fewer at the end
    of the input), and the rest of the block that completed them."""
    buf = ""
    for _, text in blocks:
        buf += text
        if buf.count("\n") >= n:
            parts = buf.split("\n", n)
            return parts[:n], parts[n]
    return split_lines(buf)[:n], ""


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def _parse_uci_header(path, lines: list[str]):
    if len([x for x in lines if x.strip()]) < 3:
        raise DataError(f"{path}: a UCI docword file starts with three header lines "
                        "D, W and NNZ")
    try:
        values = [int(x) for x in lines[:3]]
    except ValueError:
        k = next(k for k, x in enumerate(lines[:3]) if not _is_int(x))
        raise DataError(f"{path}:{k + 1}: the UCI header must be three lines D, W, NNZ, each "
                        f"one integer; line {k + 1} is {quote(lines[k])}") from None
    if min(values) < 0:
        raise DataError(f"{path}: negative size in the UCI header {values}")
    if max(values[:2]) > INT32_MAX:
        raise DataError(f"{path}:1-2: D and W must be at most {INT32_MAX} "
                        f"(the header says D = {values[0]}, W = {values[1]})")
    return values


def _uci_rows(text: str, lineno: int, path) -> tuple[np.ndarray, np.ndarray]:
    """``doc word count`` lines -> (rows [n, 3], line number of each row)."""
    try:
        if not text.isascii():  # not numbers; and numpy 2.4's loadtxt can crash on some
            raise ValueError("non-ASCII text")  # astral characters (e.g. U+F6EC9)
        rows = np.loadtxt(io.StringIO(text), dtype=np.int64, ndmin=2) if text.strip() \
            else np.zeros((0, 3), np.int64)
        ok = rows.shape[1] == 3 or rows.shape[0] == 0
    except (ValueError, OverflowError):
        ok = False
    if not ok:
        for k, line in enumerate(text.split("\n")):
            parts = line.split()
            if parts and (len(parts) != 3 or bad_integer(parts) is not None
                          or not line.isascii()):
                raise DataError(f"{path}:{lineno + k}: malformed UCI line (expected "
                                f"'docID wordID count'): {line[:80]!r}")
        raise DataError(f"{path}:{lineno}: malformed UCI block")
    if text.count("\n") + (not text.endswith("\n")) == rows.shape[0]:  # no blank lines
        return rows, lineno + np.arange(rows.shape[0], dtype=np.int64)
    where = [lineno + k for k, line in enumerate(split_lines(text)) if line.strip()]
    return rows, np.array(where, dtype=np.int64)


def _vocabulary(vocab_path, W: int, path, encoding: str) -> np.ndarray:
    """The vocabulary file's words, which must number W; without a file the
    words are named by their 1-based UCI ids."""
    if vocab_path is None:
        return np.arange(1, W + 1).astype(str)
    vocab = read_vocabulary(vocab_path, encoding)
    if vocab.size != W:
        raise DataError(
            f"the vocabulary {vocab_path} has {vocab.size} words but the "
            f"header of {path} says W = {W}"
            + (" (missing vocabulary entries)" if vocab.size < W else ""))
    return vocab


def _check_doc_ids(path, d, lines, pending, D: int) -> None:
    """The docIDs ``d`` of a block are sorted, not below the ``pending``
    document carried over from the previous block (if any), and in 1..D."""
    back = np.flatnonzero(np.diff(d) < 0)
    if back.size or (pending.size and d[0] < pending[0]):
        k = int(back[0]) + 1 if back.size else 0
        prev = d[k - 1] if k else pending[0]
        raise DataError(
            f"{path}:{lines[k]}: document {d[k]} after document {prev}: UCI docword "
            "lines must be sorted by docID (sort the body with "
            "`sort -n -k1,1 -k2,2`)")
    if d[0] < 1 or d[-1] > D:
        k = int(np.argmax((d < 1) | (d > D)))
        raise DataError(f"{path}:{lines[k]}: docID {d[k]} out of range 1..{D} "
                        f"(the header says D = {D})")


def ingest_uci(path, out, vocab_path=None, *, overwrite=False, chunk_docs=256,
               shard_chunks=16, drop_empty=False, heldout=None, progress=False,
               block_bytes=BLOCK_BYTES, encoding="utf-8") -> Corpus:
    """A UCI docword file (header lines D, W, NNZ, then ``docID wordID count``
    lines, 1-based ids, sorted by docID) and an optional vocabulary file (in
    ``encoding``).
    Document ids are the UCI docIDs; without a vocabulary the words are named
    by their UCI wordIDs. Documents with no lines are empty documents."""
    n_rows = merged = 0
    next_doc = 1  # the first document not yet handed to the writer
    pend = np.zeros((0, 3), np.int64)
    pend_lines = np.zeros(0, np.int64)
    with CorpusWriter(out, overwrite=overwrite, chunk_docs=chunk_docs,
                      shard_chunks=shard_chunks, drop_empty=drop_empty) as w:

        def emit(rows, lines, upto):
            """Hand documents next_doc..upto-1 (rows all below ``upto``) to the writer."""
            nonlocal merged
            n = upto - next_doc
            doc = rows[:, 0] - next_doc
            check_entries(lambda i: f"{path}:{lines[i]}", np.arange(rows.shape[0]),
                          rows[:, 1], rows[:, 2], W, 1, f"the header says W = {W}")
            lengths, ids, counts, m = merge_entries(doc, rows[:, 1] - 1, rows[:, 2], n)
            merged += m
            w.add(lengths, ids, counts, np.arange(next_doc, upto).astype(str))

        blocks = line_blocks(path, progress=progress, block_bytes=block_bytes)
        head, rest = _first_lines(blocks, 3)
        if not head:
            raise DataError(f"{path}: the file is empty (no UCI header)")
        D, W, NNZ = _parse_uci_header(path, head)
        vocab = _vocabulary(vocab_path, W, path, encoding)
        for lineno, text in itertools.chain([(4, rest)], blocks):
            rows, lines = _uci_rows(text, lineno, path)
            if not rows.shape[0]:
                continue
            n_rows += rows.shape[0]
            _check_doc_ids(path, rows[:, 0], lines, pend[:1, 0], D)
            rows = np.concatenate([pend, rows])
            lines = np.concatenate([pend_lines, lines])
            last = int(rows[-1, 0])
            done = rows[:, 0] < last
            if last > next_doc:
                emit(rows[done], lines[done], last)
                next_doc = last
            pend, pend_lines = rows[~done], lines[~done]
        if n_rows != NNZ:
            raise DataError(f"{path}: the header says {NNZ} entries (NNZ), "
                            f"the body has {n_rows}")
        if D >= next_doc:
            emit(pend, pend_lines, D + 1)
        warn_merged(merged, path)
        return w.finish(vocab, heldout=heldout, report={
            "format": "uci", "source": str(path), "duplicates_merged": merged})


def _add_options(parser) -> None:
    parser.add_argument("--vocab", help="vocabulary file, one word a line "
                        "(default: words named by their UCI ids)")


def _ingest(args, **options) -> Corpus:
    return ingest_uci(args.input, args.output, args.vocab, encoding=args.encoding, **options)


FORMATS = (Format("uci", "UCI docword file (D, W, NNZ header; 'doc word count' lines) "
                  "[+ --vocab]", _add_options, _ingest),)
