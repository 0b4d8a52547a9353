"""Streaming ingestion of bag-of-words corpora: LDA-C and UCI docword files
(plain or gzip, detected by content) and gensim-style iterables.

Each reader parses its input in blocks of whole lines (a few MB) with numpy
and hands complete documents to a ``CorpusWriter``, so memory stays bounded
by one block plus one shard of the store whatever the corpus size. Any error
names the file and line, and removes the partial store.
"""

from __future__ import annotations

import gzip
import io
import itertools
from pathlib import Path

import numpy as np

from dscir.corpus.store import Corpus, CorpusWriter, warn_merged
from dscir.errors import CorpusError

BLOCK_BYTES = 1 << 22


def line_blocks(path, *, progress: bool = False, desc: str | None = None,
                block_bytes: int = BLOCK_BYTES):
    """(first line number, text) for consecutive blocks of whole lines of a
    plain or gzip file, decoded as UTF-8; a tqdm bar counts the bytes read."""
    from tqdm.auto import tqdm

    path = Path(path)
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
            except (OSError, EOFError) as exc:
                raise CorpusError(f"{path}: cannot read ({exc})") from None
            buf = rest + chunk
            if not chunk:
                block, rest = buf, b""
            else:
                cut = buf.rfind(b"\n") + 1
                block, rest = buf[:cut], buf[cut:]
            if block:
                yield lineno, _decode(block, path, lineno, offset)
                lineno += block.count(b"\n")
                offset += len(block)
            bar.update(raw.tell() - bar.n)
            if not chunk:
                break
    finally:
        bar.close()
        stream.close()
        raw.close()


def _decode(block: bytes, path, lineno: int, offset: int) -> str:
    try:
        return block.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = lineno + block.count(b"\n", 0, exc.start)
        col = exc.start - (block.rfind(b"\n", 0, exc.start) + 1) + 1
        raise CorpusError(
            f"{path}:{line}: not valid UTF-8 (byte {block[exc.start]:#04x} at column {col}, "
            f"byte offset {offset + exc.start} of the decompressed text)") from None


def read_vocabulary(path) -> np.ndarray:
    """One word a line (surrounding whitespace stripped); blank lines are
    allowed only at the end, since a word's id is its line number - 1."""
    words = []
    for _, text in line_blocks(path):
        words.extend(w.strip() for w in text.splitlines())
    while words and not words[-1]:
        words.pop()
    if "" in words:
        raise CorpusError(f"{path}:{words.index('') + 1}: blank vocabulary entry "
                          "(a word's id is its line number - 1)")
    if not words:
        raise CorpusError(f"{path}: the vocabulary file is empty")
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


def _check_entries(where, doc, word, count, n_words, base: int, header: str) -> None:
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
            raise CorpusError(f"{where(doc[k])}: {what(int(word[k]), int(count[k]))}")


def _ints(text: str) -> np.ndarray:
    return np.loadtxt(io.StringIO(text), dtype=np.int64, ndmin=1) if text.strip() \
        else np.zeros(0, np.int64)


def _parse_ldac(text: str, lineno: int, path):
    """Lines ``N id:count ...`` -> (line numbers, entries per line, ids, counts)."""
    linenos, sizes, heads, bodies = [], [], [], []
    for k, line in enumerate(text.splitlines()):
        parts = line.split(None, 1)
        if not parts:
            continue
        body = parts[1] if len(parts) > 1 else ""
        n_items = len(body.split())
        if body.count(":") != n_items or len(body.replace(":", " ").split()) != 2 * n_items:
            raise CorpusError(f"{path}:{lineno + k}: malformed LDA-C line "
                              f"(expected 'N id:count id:count ...'): {line[:80]!r}")
        linenos.append(lineno + k)
        sizes.append(n_items)
        heads.append(parts[0])
        bodies.append(body)
    try:
        heads = np.array(heads, dtype=np.int64)
        nums = _ints(" ".join(bodies).replace(":", " "))
    except ValueError:
        for n, head, body in zip(linenos, heads, bodies):
            try:
                int(head), [int(x) for x in body.replace(":", " ").split()]
            except ValueError:
                raise CorpusError(f"{path}:{n}: malformed LDA-C line (not an integer): "
                                  f"{head} {body[:80]!r}") from None
        raise
    sizes = np.array(sizes, dtype=np.int64)
    if np.any(heads != sizes):
        k = int(np.argmax(heads != sizes))
        raise CorpusError(f"{path}:{linenos[k]}: header says {heads[k]} entries, "
                          f"line has {sizes[k]}")
    return np.array(linenos, dtype=np.int64), sizes, nums[0::2], nums[1::2]


def ingest_ldac(path, vocab_path, out, *, overwrite=False, chunk_docs=256, shard_chunks=16,
                drop_empty=False, heldout=None, progress=False,
                block_bytes=BLOCK_BYTES) -> Corpus:
    """An LDA-C file (one document a line, ``N id:count ...``, ids 0-based)
    and its vocabulary file. Document ids are the 0-based line indices
    (blank lines skipped)."""
    vocab = read_vocabulary(vocab_path)
    W = vocab.size
    header = f"no vocabulary entry: {Path(vocab_path).name} has {W} words"
    merged = n_seen = 0
    with CorpusWriter(out, overwrite=overwrite, chunk_docs=chunk_docs,
                      shard_chunks=shard_chunks, drop_empty=drop_empty) as w:
        for lineno, text in line_blocks(path, progress=progress, block_bytes=block_bytes):
            linenos, sizes, ids, counts = _parse_ldac(text, lineno, path)
            doc = np.repeat(np.arange(sizes.size), sizes)
            _check_entries(lambda i: f"{path}:{linenos[i]}", doc, ids, counts, W, 0, header)
            lengths, ids, counts, m = merge_entries(doc, ids, counts, sizes.size)
            merged += m
            w.add(lengths, ids, counts, np.arange(n_seen, n_seen + sizes.size).astype(str))
            n_seen += sizes.size
        warn_merged(merged, path)
        return w.finish(vocab, heldout=heldout, report={
            "format": "ldac", "source": str(path), "duplicates_merged": merged})


def _first_lines(blocks, n: int) -> tuple[list[str], str]:
    """The first ``n`` lines from an iterator of line blocks (fewer at the end
    of the input), and the rest of the block that completed them."""
    buf = ""
    for _, text in blocks:
        buf += text
        if buf.count("\n") >= n:
            parts = buf.split("\n", n)
            return parts[:n], parts[n]
    return buf.splitlines()[:n], ""


def _parse_uci_header(path, lines: list[str]):
    if len([x for x in lines if x.strip()]) < 3:
        raise CorpusError(f"{path}: a UCI docword file starts with three header lines "
                          "D, W and NNZ")
    try:
        values = [int(x) for x in lines[:3]]
    except ValueError:
        raise CorpusError(f"{path}:1-3: the UCI header must be three lines "
                          f"D, W, NNZ, each one integer; got {lines[:3]!r}") from None
    if min(values) < 0:
        raise CorpusError(f"{path}: negative size in the UCI header {values}")
    return values


def _uci_rows(text: str, lineno: int, path) -> tuple[np.ndarray, np.ndarray]:
    """``doc word count`` lines -> (rows [n, 3], line number of each row)."""
    try:
        rows = np.loadtxt(io.StringIO(text), dtype=np.int64, ndmin=2) if text.strip() \
            else np.zeros((0, 3), np.int64)
        ok = rows.shape[1] == 3 or rows.shape[0] == 0
    except ValueError:
        ok = False
    if not ok:
        for k, line in enumerate(text.splitlines()):
            parts = line.split()
            if parts and (len(parts) != 3 or not all(p.lstrip("+-").isdigit() for p in parts)):
                raise CorpusError(f"{path}:{lineno + k}: malformed UCI line (expected "
                                  f"'docID wordID count'): {line[:80]!r}")
        raise CorpusError(f"{path}:{lineno}: malformed UCI block")
    if text.count("\n") + (not text.endswith("\n")) == rows.shape[0]:  # no blank lines
        return rows, lineno + np.arange(rows.shape[0], dtype=np.int64)
    where = [lineno + k for k, line in enumerate(text.splitlines()) if line.strip()]
    return rows, np.array(where, dtype=np.int64)


def ingest_uci(path, out, vocab_path=None, *, overwrite=False, chunk_docs=256,
               shard_chunks=16, drop_empty=False, heldout=None, progress=False,
               block_bytes=BLOCK_BYTES) -> Corpus:
    """A UCI docword file (header lines D, W, NNZ, then ``docID wordID count``
    lines, 1-based ids, sorted by docID) and an optional vocabulary file.
    Document ids are the UCI docIDs; without a vocabulary the words are named
    by their UCI wordIDs. Documents with no lines are empty documents."""
    D = W = NNZ = None
    vocab = None
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
            _check_entries(lambda i: f"{path}:{lines[i]}", np.arange(rows.shape[0]),
                           rows[:, 1], rows[:, 2], W, 1, f"the header says W = {W}")
            lengths, ids, counts, m = merge_entries(doc, rows[:, 1] - 1, rows[:, 2], n)
            merged += m
            w.add(lengths, ids, counts, np.arange(next_doc, upto).astype(str))

        blocks = line_blocks(path, progress=progress, block_bytes=block_bytes)
        head, rest = _first_lines(blocks, 3)
        if not head:
            raise CorpusError(f"{path}: the file is empty (no UCI header)")
        D, W, NNZ = _parse_uci_header(path, head)
        if vocab_path is not None:
            vocab = read_vocabulary(vocab_path)
            if vocab.size != W:
                raise CorpusError(
                    f"the vocabulary {vocab_path} has {vocab.size} words but the "
                    f"header of {path} says W = {W}"
                    + (" (missing vocabulary entries)" if vocab.size < W else ""))
        for lineno, text in itertools.chain([(4, rest)], blocks):
            rows, lines = _uci_rows(text, lineno, path)
            if not rows.shape[0]:
                continue
            n_rows += rows.shape[0]
            d = rows[:, 0]
            back = np.flatnonzero(np.diff(d) < 0)
            if back.size or (pend.shape[0] and d[0] < pend[0, 0]):
                k = int(back[0]) + 1 if back.size else 0
                prev = d[k - 1] if k else pend[0, 0]
                raise CorpusError(
                    f"{path}:{lines[k]}: document {d[k]} after document {prev}: UCI docword "
                    "lines must be sorted by docID (sort the body with "
                    "`sort -n -k1,1 -k2,2`)")
            if d[0] < 1 or d[-1] > D:
                k = int(np.argmax((d < 1) | (d > D)))
                raise CorpusError(f"{path}:{lines[k]}: docID {d[k]} out of range 1..{D} "
                                  f"(the header says D = {D})")
            rows = np.concatenate([pend, rows])
            lines = np.concatenate([pend_lines, lines])
            last = int(rows[-1, 0])
            done = rows[:, 0] < last
            if last > next_doc:
                emit(rows[done], lines[done], last)
                next_doc = last
            pend, pend_lines = rows[~done], lines[~done]
        if n_rows != NNZ:
            raise CorpusError(f"{path}: the header says {NNZ} entries (NNZ), "
                              f"the body has {n_rows}")
        if D >= next_doc:
            emit(pend, pend_lines, D + 1)
        warn_merged(merged, path)
        if vocab is None:
            vocab = np.arange(1, W + 1).astype(str)
        return w.finish(vocab, heldout=heldout, report={
            "format": "uci", "source": str(path), "duplicates_merged": merged})


def ingest_bow(docs, out, vocabulary=None, *, n_words=None, doc_ids=None, overwrite=False,
               chunk_docs=256, shard_chunks=16, drop_empty=False, heldout=None,
               progress=False, block_docs=4096) -> Corpus:
    """A gensim-style corpus: an iterable of documents, each a list of
    (word id, count) pairs. ``vocabulary`` is a sequence of words or a mapping
    id -> word (e.g. a gensim ``Dictionary``); without it the vocabulary size
    is ``n_words`` or the largest id + 1 and words are named by their ids."""
    from tqdm.auto import tqdm

    if vocabulary is not None and hasattr(vocabulary, "items"):
        mapping = dict(vocabulary.items())
        size = max(mapping) + 1 if mapping else 0
        missing = [i for i in range(size) if i not in mapping]
        if missing:
            raise CorpusError(f"the vocabulary has no entry for word id {missing[0]} "
                              f"({len(missing)} ids missing below {size})")
        vocabulary = [mapping[i] for i in range(size)]
    if vocabulary is not None:
        vocabulary = np.asarray(list(vocabulary), dtype=str)
        if n_words is not None and n_words != vocabulary.size:
            raise CorpusError(f"n_words={n_words} but the vocabulary has {vocabulary.size} words")
        n_words = vocabulary.size
    ids_iter = iter(doc_ids) if doc_ids is not None else None
    merged = n_seen = 0
    with CorpusWriter(out, overwrite=overwrite, chunk_docs=chunk_docs,
                      shard_chunks=shard_chunks, drop_empty=drop_empty) as w:

        def flush(block):
            nonlocal merged, n_seen
            sizes = np.array([len(d) for d in block], dtype=np.int64)
            flat = [pair for d in block for pair in d]
            try:
                pairs = np.array(flat, dtype=np.float64).reshape(-1, 2)
            except (TypeError, ValueError):
                bad = next(k for k, d in enumerate(block)
                           if not all(len(p) == 2 for p in d))
                raise CorpusError(f"document {n_seen + bad}: expected a list of "
                                  "(word id, count) pairs") from None
            doc = np.repeat(np.arange(len(block)), sizes)
            bad = (pairs != np.round(pairs)).any(axis=1)
            if bad.any():
                k = int(np.argmax(bad))
                raise CorpusError(f"document {n_seen + doc[k]}: word ids and counts must be "
                                  f"integers, got {tuple(pairs[k])}")
            word, count = pairs[:, 0].astype(np.int64), pairs[:, 1].astype(np.int64)
            names = np.arange(n_seen, n_seen + len(block))
            _check_entries(lambda i: f"document {n_seen + i}", doc, word, count,
                           n_words if n_words is not None else np.iinfo(np.int64).max, 0,
                           f"the vocabulary has {n_words} words")
            lengths, word, count, m = merge_entries(doc, word, count, len(block))
            merged += m
            if ids_iter is not None:
                try:
                    names = [str(next(ids_iter)) for _ in block]
                except StopIteration:
                    raise CorpusError("fewer document ids than documents") from None
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
