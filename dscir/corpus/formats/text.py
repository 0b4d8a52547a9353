"""Raw text input, the formats text, jsonl, csv, tsv and trec: a tokenizer,
one document source per format (a directory of files, JSON lines, a CSV/TSV
column (``delimited``), ``<DOC>``/``<TEXT>`` blocks), each read in the
``encoding`` given (UTF-8 by default), and the two-pass ingestion they share.

Pass 1 tokenizes every document and counts document frequencies; the
vocabulary is then the words kept by ``min_df``/``max_df``, cut to the
``max_vocab`` most frequent (ties broken alphabetically) and sorted
alphabetically. Pass 2 tokenizes again and writes the counts. Memory holds the
document-frequency table and one block of documents, never the corpus.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from dscir.corpus.formats.base import Format
from dscir.corpus.formats.delimited import TSV_QUOTING, csv_source, tsv_source
from dscir.corpus.ingest import (check_encoding, decode_text, line_blocks, merge_entries,
                                 split_lines)
from dscir.corpus.store import Corpus
from dscir.corpus.writer import CorpusWriter
from dscir.errors import CorpusError, DataError, spell

ENGLISH_STOP_WORDS = frozenset("""
a about above after again against all am an and any are aren as at be because been
before being below between both but by can cannot could couldn did didn do does doesn
doing don down during each few for from further had hadn has hasn have haven having he
her here hers herself him himself his how i if in into is isn it its itself just ll me
might more most mustn my myself no nor not now of off on once only or other ought our
ours ourselves out over own re same shan she should shouldn so some such than that the
their theirs them themselves then there these they this those through to too under until
up upon us very was wasn we were weren what when where which while who whom why will
with won would wouldn you your yours yourself yourselves also however may must said say
says shall since though thus whether within without yet ve
""".split())

_WORD = re.compile(r"[^\W\d_]+")


class Tokenizer:
    """Lowercase, keep runs of letters (any script; digits, underscores and
    punctuation split words), drop stop words and words shorter than
    ``min_length``."""

    def __init__(self, stop_words=ENGLISH_STOP_WORDS, min_length: int = 2):
        self.stop_words = frozenset(stop_words or ())
        self.min_length = int(min_length)

    def __call__(self, text: str) -> list[str]:
        stop, n = self.stop_words, self.min_length
        return [t for t in _WORD.findall(text.lower()) if len(t) >= n and t not in stop]


# A source is a function of (progress, desc) returning an iterator of (doc id, text).
Source = Callable[[bool, str], Iterator[tuple[str, str]]]


def directory_source(root, pattern: str = "*", encoding: str = "utf-8") -> Source:
    """Every file under ``root`` matching ``pattern`` (recursively, sorted by
    path); the document id is the path relative to ``root``."""
    from dscir.progress import tqdm

    encoding = check_encoding(encoding)
    root = Path(root)
    if not root.is_dir():
        raise CorpusError(f"no such directory: {root}")
    files = sorted(p for p in root.rglob(pattern) if p.is_file())
    if not files:
        raise CorpusError(f"no files matching {pattern!r} under {root}")

    def docs(progress, desc):
        bar = tqdm(total=sum(p.stat().st_size for p in files), unit="B", unit_scale=True,
                   disable=not progress, desc=desc, leave=False)
        with bar:
            for p in files:
                raw = p.read_bytes()
                yield p.relative_to(root).as_posix(), decode_text(raw, p, 1, 0, encoding)
                bar.update(len(raw))
    return docs


def jsonl_source(path, text_field: str = "text", id_field: str | None = None,
                 encoding: str = "utf-8") -> Source:
    """One JSON object a line; the text is ``text_field``, the id ``id_field``
    (default: the line number)."""

    def docs(progress, desc):
        for lineno, block in line_blocks(path, progress=progress, desc=desc,
                                         encoding=encoding):
            for k, line in enumerate(split_lines(block)):
                if not line.strip():
                    continue
                where = f"{path}:{lineno + k}"
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise DataError(f"{where}: malformed JSON ({exc.msg})") from None
                except (ValueError, RecursionError) as exc:  # huge integers, deep nesting
                    raise DataError(f"{where}: unreadable JSON ({exc})") from None
                if not isinstance(obj, dict) or not isinstance(obj.get(text_field), str):
                    raise DataError(f"{where}: no string field {text_field!r}")
                doc_id = str(obj.get(id_field, lineno + k)) if id_field else str(lineno + k)
                for value in (doc_id, obj[text_field]):
                    try:
                        value.encode("utf-8")
                    except UnicodeEncodeError as exc:
                        raise DataError(f"{where}: not valid Unicode (a lone surrogate "
                                        f"{value[exc.start]!r}, from a \\u escape)") from None
                yield doc_id, obj[text_field]
    return docs


def trec_source(path, encoding: str = "utf-8") -> Source:
    """``<DOC>`` blocks (the TREC/AP layout): the id is ``<DOCNO>``, the text
    everything inside ``<TEXT>`` ... ``</TEXT>`` (several TEXT parts are joined)."""
    docno_re = re.compile(r"<DOCNO>\s*(.*?)\s*</DOCNO>")

    def docs(progress, desc):
        in_doc = in_text = False
        docno, parts, start = None, [], 0
        for lineno, block in line_blocks(path, progress=progress, desc=desc,
                                         encoding=encoding):
            for k, line in enumerate(split_lines(block)):
                s = line.strip()
                where = f"{path}:{lineno + k}"
                if s == "<DOC>":
                    if in_doc:
                        raise DataError(f"{where}: <DOC> inside the <DOC> opened at line {start}")
                    in_doc, docno, parts, start = True, None, [], lineno + k
                elif s == "</DOC>":
                    if not in_doc or in_text:
                        raise DataError(f"{where}: unexpected </DOC>")
                    in_doc = False
                    yield (docno if docno is not None else str(start)), "\n".join(parts)
                elif not in_doc:
                    if s:
                        raise DataError(f"{where}: text outside a <DOC> block: {s[:60]!r}")
                elif s.startswith("<DOCNO>"):
                    m = docno_re.match(s)
                    if m is None:
                        raise DataError(f"{where}: malformed <DOCNO> line")
                    docno = m.group(1)
                elif s.startswith("<TEXT>"):
                    in_text = True
                    parts.append(s[len("<TEXT>"):])
                elif s.endswith("</TEXT>"):
                    in_text = False
                    parts.append(s[: -len("</TEXT>")])
                elif in_text:
                    parts.append(line)
        if in_doc:
            raise DataError(f"{path}: the <DOC> opened at line {start} is never closed")
    return docs


def build_vocabulary(df: Counter, n_docs: int, *, min_df=1, max_df=1.0,
                     max_vocab: int | None = None) -> list[str]:
    """Words kept by document frequency: an int is a number of documents, a
    float in (0, 1] a fraction of them."""
    lo = min_df if isinstance(min_df, int) else int(np.ceil(min_df * n_docs))
    hi = max_df if isinstance(max_df, int) else int(np.floor(max_df * n_docs))
    words = [w for w, c in df.items() if lo <= c <= hi]
    if max_vocab is not None and len(words) > max_vocab:
        words = sorted(words, key=lambda w: (-df[w], w))[:max_vocab]
    return sorted(words)


def ingest_text(source: Source, out, *, tokenizer: Tokenizer | None = None, min_df=1,
                max_df=1.0, max_vocab: int | None = None, overwrite=False, chunk_docs=256,
                shard_chunks=16, drop_empty=False, heldout=None, progress=False,
                block_docs=2048, description: str = "text") -> Corpus:
    """Two passes over ``source``: document frequencies, then counts."""
    for name, v in (("min_df", min_df), ("max_df", max_df)):
        if isinstance(v, float) and not 0 < v <= 1 or isinstance(v, int) and v < 0:
            raise CorpusError(f"{spell(name, '--' + name.replace('_', '-'))} must be a count "
                              f">= 0 or a fraction in (0, 1], got {v}")
    if max_vocab is not None and max_vocab < 1:
        raise CorpusError(f"{spell('max_vocab', '--max-vocab')} must be >= 1, got {max_vocab}")
    tok = tokenizer or Tokenizer()
    with CorpusWriter(out, overwrite=overwrite, chunk_docs=chunk_docs,
                      shard_chunks=shard_chunks, drop_empty=drop_empty) as w:
        df: Counter = Counter()
        n_docs = 0
        for _, text in source(progress, "pass 1/2 (vocabulary)"):
            df.update(set(tok(text)))
            n_docs += 1
        if n_docs == 0:
            raise DataError(f"the corpus is empty: no documents in the {description}")
        vocab = build_vocabulary(df, n_docs, min_df=min_df, max_df=max_df, max_vocab=max_vocab)
        if not vocab:
            raise CorpusError(f"no word of the {description} passes min_df={min_df}, "
                              f"max_df={max_df} ({len(df)} distinct words before the cut)")
        index = {word: i for i, word in enumerate(vocab)}
        ids, block, seen = [], [], 0

        def flush():
            sizes = np.array([len(b) for b in block], dtype=np.int64)
            words = np.fromiter((i for b in block for i in b), dtype=np.int64,
                                count=int(sizes.sum()))
            doc = np.repeat(np.arange(len(block)), sizes)
            lengths, words, counts, _ = merge_entries(doc, words, np.ones_like(words),
                                                      len(block))
            w.add(lengths, words, counts, ids)

        for doc_id, text in source(progress, "pass 2/2 (counts)"):
            block.append([index[t] for t in tok(text) if t in index])
            ids.append(doc_id)
            seen += 1
            if len(block) >= block_docs:
                flush()
                ids, block = [], []
        if block:
            flush()
        if seen != n_docs:
            raise DataError(f"the {description} changed between the two passes "
                            f"({n_docs} then {seen} documents)")
        return w.finish(vocab, heldout=heldout, report={
            "format": description, "min_df": min_df, "max_df": max_df,
            "max_vocab": max_vocab, "distinct_words_before_cut": len(df)})


def _df(value: str):
    """A document frequency: an integer count, or a fraction if it has a point."""
    try:
        return float(value) if "." in value or "e" in value.lower() else int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None


def _text_format(name: str, description: str, add_source_options, source) -> Format:
    """A format of this family: the tokenizer and vocabulary flags plus the
    source's own (``add_source_options(group)``), and ``source(args)`` as the
    document source of ``ingest_text``."""

    def add_options(parser) -> None:
        t = parser.add_argument_group("raw text")
        t.add_argument("--min-df", type=_df, default=1,
                       help="keep words in at least this many documents (or fraction)")
        t.add_argument("--max-df", type=_df, default=1.0,
                       help="keep words in at most this many documents (or fraction)")
        t.add_argument("--max-vocab", type=int, help="keep the most frequent words only")
        t.add_argument("--min-length", type=int, default=2, help="shortest word kept")
        t.add_argument("--no-stopwords", action="store_true",
                       help="keep English stop words (default: drop the built-in list)")
        add_source_options(t)
        # accepted only to say why it does not apply
        parser.add_argument("--vocab", help="not for this format (an error: raw text builds "
                            "its own vocabulary)")

    def ingest(args, **options) -> Corpus:
        if args.vocab:
            raise CorpusError("--vocab is for ldac and uci; text builds its own vocabulary")
        tokenizer = Tokenizer(() if args.no_stopwords else ENGLISH_STOP_WORDS, args.min_length)
        return ingest_text(source(args), args.output, tokenizer=tokenizer,
                           min_df=args.min_df, max_df=args.max_df, max_vocab=args.max_vocab,
                           description=name, **options)

    return Format(name, description, add_options, ingest)


def _pattern_option(group) -> None:
    group.add_argument("--pattern", default="*", help="file name pattern")


def _field_options(group) -> None:
    group.add_argument("--text-field", default="text", help="the text field")
    group.add_argument("--id-field", help="the document id field (default: line number)")


def _column_options(group) -> None:
    group.add_argument("--column", default="text", help="the text column")
    group.add_argument("--id-column", help="the document id column (default: row number)")


def _tsv_options(group) -> None:
    _column_options(group)
    group.add_argument("--quoting", choices=TSV_QUOTING, default="none",
                       help="none: IANA TSV, a field may begin with a quote and holds no "
                       "tab or newline; csv: fields in double quotes as in CSV")


FORMATS = (
    _text_format("text", "a directory of text files, one document each (--pattern)",
                 _pattern_option, lambda a: directory_source(a.input, a.pattern, a.encoding)),
    _text_format("jsonl", "JSON lines with a text field (--text-field, --id-field)",
                 _field_options, lambda a: jsonl_source(a.input, a.text_field, a.id_field,
                                                        a.encoding)),
    _text_format("csv", "CSV with a header row and a text column (--column, --id-column)",
                 _column_options, lambda a: csv_source(a.input, a.column, a.id_column, ",",
                                                       a.encoding)),
    _text_format("tsv", "tab-separated values with a header row and a text column "
                 "(--column, --id-column; no quoting unless --quoting csv)",
                 _tsv_options, lambda a: tsv_source(a.input, a.column, a.id_column,
                                                    a.quoting, a.encoding)),
    _text_format("trec", "<DOC>/<DOCNO>/<TEXT> blocks (the TREC/AP layout, e.g. ap.txt.gz)",
                 lambda group: None, lambda a: trec_source(a.input, a.encoding)),
)
