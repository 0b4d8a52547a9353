"""What the streaming readers share, and ingestion of gensim-style iterables.

The file readers (``dscir.corpus.formats``) parse their input in blocks of
whole lines (a few MB, plain or gzip detected by content) and hand complete
documents to a ``CorpusWriter``, so memory stays bounded by one block plus one
shard of the store whatever the corpus size. Any error names the file and
line, and the writer removes the partial store.
"""

from __future__ import annotations

import codecs
import gzip
import re
import zlib
from pathlib import Path

import numpy as np

from dscir.corpus.store import Corpus
from dscir.corpus.writer import CorpusWriter, warn_merged
from dscir.errors import CorpusError, DataError, spell

BLOCK_BYTES = 1 << 22
_INTEGER = re.compile(r"[+-]?[0-9]+\Z")
INT64 = np.iinfo(np.int64)


def quote(line: str, limit: int = 80) -> str:
    """One offending line for an error message: at most ``limit`` characters of it."""
    if len(line) <= limit:
        return repr(line)
    return f"{line[:limit]!r}... ({len(line):,} characters)"


def bad_integer(tokens) -> str | None:
    """The first of ``tokens`` that is not an ASCII integer fitting in int64, if any."""
    for t in tokens:
        if not _INTEGER.match(t) or not INT64.min <= int(t) <= INT64.max:
            return t
    return None


def check_encoding(encoding: str) -> str:
    """``encoding``'s codec name; an error unless Python knows it and it writes a
    newline as the one byte 0x0a (the readers cut lines at that byte: UTF-8,
    Latin-1, cp1252, Shift-JIS do; UTF-16 and UTF-32 do not)."""
    flag = spell("encoding", "--encoding")
    try:
        name = codecs.lookup(encoding).name
        one, two = "\n".encode(name), "\n\n".encode(name)
    except (LookupError, TypeError, UnicodeError):
        raise CorpusError(f"{flag}: unknown text encoding {encoding!r} (e.g. utf-8, "
                          "latin-1, cp1252)") from None
    if not one.endswith(b"\n") or len(two) - len(one) != 1:
        raise CorpusError(f"{flag}: {encoding} is not supported (lines are cut at the byte "
                          "0x0a); convert the file to UTF-8, e.g. with iconv")
    return name


def line_blocks(path, *, progress: bool = False, desc: str | None = None,
                block_bytes: int = BLOCK_BYTES, encoding: str = "utf-8"):
    """(first line number, text) for consecutive blocks of whole lines of a
    plain or gzip file, decoded from ``encoding``; a tqdm bar counts the bytes read."""
    from dscir.progress import tqdm

    path = Path(path)
    encoding = check_encoding(encoding)
    if not path.is_file():
        raise CorpusError(f"no such file: {path}")
    raw = open(path, "rb")
    gz = raw.read(2) == b"\x1f\x8b"
    raw.seek(0)
    stream = gzip.GzipFile(fileobj=raw) if gz else raw
    bar = tqdm(total=path.stat().st_size, unit="B", unit_scale=True, disable=not progress,
               desc=desc or path.name, leave=False)
    lineno, offset, rest = 1, 0, b""
    try:
        while True:
            try:
                chunk = stream.read(block_bytes)
            except (OSError, EOFError, zlib.error) as exc:
                # the lines before ``lineno`` were read whole
                what = "corrupt or truncated gzip data" if gz else "cannot read"
                raise DataError(f"{path}:{lineno}: {what} "
                                f"({type(exc).__name__}: {exc})") from None
            buf = rest + chunk
            if not chunk:
                block, rest = buf, b""
            else:
                cut = buf.rfind(b"\n") + 1
                block, rest = buf[:cut], buf[cut:]
            if block:
                yield lineno, decode_text(block, path, lineno, offset, encoding)
                lineno += block.count(b"\n")
                offset += len(block)
            bar.update(raw.tell() - bar.n)
            if not chunk:
                break
    finally:
        bar.close()
        stream.close()
        raw.close()


def split_lines(text: str, keepends: bool = False) -> list[str]:
    """The lines of ``text`` cut at "\\n" only, as ``line_blocks`` counts them
    (``str.splitlines`` also cuts at \\x0b, \\x0c, \\x1c-\\x1e, \\x85, U+2028 and
    U+2029, which may sit inside a line, a CSV field or a JSON string)."""
    lines = text.split("\n")
    last = lines.pop()
    if keepends:
        lines = [line + "\n" for line in lines]
    if last:
        lines.append(last)
    return lines


def decode_text(block: bytes, path, lineno: int, offset: int, encoding: str = "utf-8") -> str:
    """``block`` (starting at line ``lineno``, byte ``offset`` of ``path``) as
    text; bytes invalid in ``encoding`` are an error naming their line, column and
    byte offset, and the option that names another encoding."""
    try:
        return block.decode(encoding)
    except UnicodeDecodeError as exc:
        line = lineno + block.count(b"\n", 0, exc.start)
        col = exc.start - (block.rfind(b"\n", 0, exc.start) + 1) + 1
        name = "UTF-8" if codecs.lookup(encoding).name == "utf-8" else encoding
        other = spell("encoding='latin-1'", "--encoding latin-1")
        raise DataError(
            f"{path}:{line}: not valid {name} (byte {block[exc.start]:#04x} at column {col}, "
            f"byte offset {offset + exc.start} of the decompressed text); name the file's "
            f"encoding if it has another, e.g. {other}") from None


def read_vocabulary(path, encoding: str = "utf-8") -> np.ndarray:
    """One word a line (surrounding whitespace stripped); blank lines are
    allowed only at the end, since a word's id is its line number - 1."""
    words = []
    for _, text in line_blocks(path, encoding=encoding):
        words.extend(w.strip() for w in split_lines(text))
    while words and not words[-1]:
        words.pop()
    if "" in words:
        raise DataError(f"{path}:{words.index('') + 1}: blank vocabulary entry "
                        "(a word's id is its line number - 1)")
    if not words:
        raise DataError(f"{path}: the vocabulary file is empty")
    return np.array(words, dtype=str)


def merge_entries(doc, word, count, n_docs: int):
    """Sort (document, word, count) triples into CSR order, summing duplicate
    (document, word) entries. Returns (lengths, indices, data, n_merged)."""
    doc, word, count = (np.asarray(x, dtype=np.int64) for x in (doc, word, count))
    key = doc * (int(word.max()) + 1 if word.size else 1) + word
    if key.size > 1 and not np.all(key[1:] > key[:-1]):
        order = np.argsort(key, kind="stable")
        doc, word, count, key = doc[order], word[order], count[order], key[order]
    first = np.ones(key.size, dtype=bool)
    first[1:] = key[1:] != key[:-1]
    n_merged = int(key.size - first.sum())
    if n_merged:
        starts = np.flatnonzero(first)
        count = np.add.reduceat(count, starts)
        doc, word = doc[starts], word[starts]
    return np.bincount(doc, minlength=n_docs), word, count, n_merged


def check_entries(where, doc, word, count, n_words, base: int, header: str) -> None:
    """Word ids in base..n_words-1+base and positive counts, else name the
    place: ``where(i)`` says where the i-th document of the block is."""
    for bad, what in (
        (word < base, lambda w, c: f"word id {w} is below {base}"),
        (word >= n_words + base,
         lambda w, c: f"word id {w} out of range {base}..{n_words - 1 + base} ({header})"),
        (count <= 0, lambda w, c: f"counts must be positive, got {c}"),
    ):
        if bad.any():
            k = int(np.argmax(bad))
            raise DataError(f"{where(doc[k])}: {what(int(word[k]), int(count[k]))}")


def ingest_bow(docs, out, vocabulary=None, *, n_words=None, doc_ids=None, overwrite=False,
               chunk_docs=256, shard_chunks=16, drop_empty=False, heldout=None,
               progress=False, block_docs=4096) -> Corpus:
    """A gensim-style corpus: an iterable of documents, each a list of
    (word id, count) pairs. ``vocabulary`` is a sequence of words or a mapping
    id -> word (e.g. a gensim ``Dictionary``); without it the vocabulary size
    is ``n_words`` or the largest id + 1 and words are named by their ids."""
    from dscir.progress import tqdm

    if vocabulary is not None:
        vocabulary = _word_list(vocabulary)
        if n_words is not None and n_words != vocabulary.size:
            raise DataError(f"n_words={n_words} but the vocabulary has {vocabulary.size} words")
        n_words = vocabulary.size
    ids_iter = iter(doc_ids) if doc_ids is not None else None
    merged = n_seen = 0
    with CorpusWriter(out, overwrite=overwrite, chunk_docs=chunk_docs,
                      shard_chunks=shard_chunks, drop_empty=drop_empty) as w:

        def flush(block):
            nonlocal merged, n_seen
            doc, word, count = _bow_entries(block, n_seen, n_words)
            names = np.arange(n_seen, n_seen + len(block))
            lengths, word, count, m = merge_entries(doc, word, count, len(block))
            merged += m
            if ids_iter is not None:
                try:
                    names = [str(next(ids_iter)) for _ in block]
                except StopIteration:
                    raise DataError("fewer document ids than documents") from None
            w.add(lengths, word, count, np.asarray(names).astype(str))
            n_seen += len(block)

        block = []
        for d in tqdm(docs, disable=not progress, unit="doc", leave=False):
            block.append(list(d))
            if len(block) >= block_docs:
                flush(block)
                block = []
        if block:
            flush(block)
        warn_merged(merged, "bag-of-words corpus")
        if vocabulary is None:
            W = n_words if n_words is not None else w.max_word + 1
            vocabulary = np.arange(max(W, 0)).astype(str)
        return w.finish(vocabulary, heldout=heldout, report={
            "format": "bow", "duplicates_merged": merged})


def _bow_entries(block, first: int, n_words: int | None):
    """A block of gensim-style documents (lists of (word id, count) pairs; ``first``
    is the first one's number) as checked (document, word, count) entry arrays."""
    sizes = np.array([len(d) for d in block], dtype=np.int64)
    flat = [pair for d in block for pair in d]
    try:
        pairs = np.array(flat, dtype=np.float64).reshape(-1, 2)
    except (TypeError, ValueError):
        bad = next(k for k, d in enumerate(block) if not all(len(p) == 2 for p in d))
        raise DataError(f"document {first + bad}: expected a list of "
                        "(word id, count) pairs") from None
    doc = np.repeat(np.arange(len(block)), sizes)
    bad = (pairs != np.round(pairs)).any(axis=1)
    if bad.any():
        k = int(np.argmax(bad))
        raise DataError(f"document {first + doc[k]}: word ids and counts must be "
                        f"integers, got {tuple(pairs[k])}")
    word, count = pairs[:, 0].astype(np.int64), pairs[:, 1].astype(np.int64)
    check_entries(lambda i: f"document {first + i}", doc, word, count,
                  n_words if n_words is not None else np.iinfo(np.int64).max, 0,
                  f"the vocabulary has {n_words} words")
    return doc, word, count


def _word_list(vocabulary) -> np.ndarray:
    """A sequence of words, or a mapping id -> word with every id below the
    largest, as the array of words by id."""
    if hasattr(vocabulary, "items"):
        mapping = dict(vocabulary.items())
        size = max(mapping) + 1 if mapping else 0
        missing = [i for i in range(size) if i not in mapping]
        if missing:
            raise DataError(f"the vocabulary has no entry for word id {missing[0]} "
                            f"({len(missing)} ids missing below {size})")
        vocabulary = [mapping[i] for i in range(size)]
    return np.asarray(list(vocabulary), dtype=str)
