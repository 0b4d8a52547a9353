"""``dscir ingest FORMAT INPUT OUTPUT`` and ``dscir info STORE``."""

from __future__ import annotations

import argparse
import sys
import warnings

FORMATS = {
    "ldac": "LDA-C file ('N id:count ...' a line) + --vocab",
    "uci": "UCI docword file (D, W, NNZ header; 'doc word count' lines) [+ --vocab]",
    "text": "a directory of text files, one document each (--pattern)",
    "jsonl": "JSON lines with a text field (--text-field, --id-field)",
    "csv": "CSV with a header row and a text column (--column, --id-column)",
    "tsv": "TSV with a header row and a text column (--column, --id-column)",
    "trec": "<DOC>/<DOCNO>/<TEXT> blocks (the TREC/AP layout, e.g. ap.txt.gz)",
}
TEXT_FORMATS = ("text", "jsonl", "csv", "tsv", "trec")


def _df(value: str):
    """A document frequency: an integer count, or a fraction if it has a point."""
    try:
        return float(value) if "." in value or "e" in value.lower() else int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "ingest", help="build a corpus store from LDA-C, UCI, or raw text",
        description="Build a Zarr corpus store, streaming (memory does not grow with the "
        "corpus). The store is written to a temporary directory beside OUTPUT and moved "
        "into place only when complete. Formats: "
        + "; ".join(f"{k}: {v}" for k, v in FORMATS.items()))
    p.add_argument("format", choices=list(FORMATS))
    p.add_argument("input", help="input file or directory (files may be gzip)")
    p.add_argument("output", help="the Zarr store to create")
    p.add_argument("--vocab", help="vocabulary file, one word a line (ldac: required)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing store")
    p.add_argument("--drop-empty", action="store_true",
                   help="drop documents with no tokens (default: keep them; counted either way)")
    lay = p.add_argument_group("layout")
    lay.add_argument("--chunk-docs", type=int, default=256, help="documents per chunk (256)")
    lay.add_argument("--shard-chunks", type=int, default=16, help="chunks per shard file (16)")
    split = p.add_argument_group("held-out split").add_mutually_exclusive_group()
    split.add_argument("--heldout-every", type=int, metavar="N",
                       help="hold out every N-th document (rows N-1, 2N-1, ...)")
    split.add_argument("--heldout", type=int, metavar="N",
                       help="hold out N documents chosen by --seed")
    split.add_argument("--heldout-fraction", type=float, metavar="F",
                       help="hold out a fraction F of the documents, chosen by --seed")
    p.add_argument("--seed", type=int, default=0, help="seed of the held-out choice (0)")
    t = p.add_argument_group("raw text (text, jsonl, csv, tsv, trec)")
    t.add_argument("--min-df", type=_df, default=1,
                   help="keep words in at least this many documents (or fraction) (1)")
    t.add_argument("--max-df", type=_df, default=1.0,
                   help="keep words in at most this many documents (or fraction) (1.0)")
    t.add_argument("--max-vocab", type=int, help="keep the most frequent words only")
    t.add_argument("--min-length", type=int, default=2, help="shortest word kept (2)")
    t.add_argument("--no-stopwords", action="store_true",
                   help="keep English stop words (default: drop the built-in list)")
    t.add_argument("--pattern", default="*", help="text: file name pattern ('*')")
    t.add_argument("--text-field", default="text", help="jsonl: the text field ('text')")
    t.add_argument("--id-field", help="jsonl: the document id field (default: line number)")
    t.add_argument("--column", default="text", help="csv/tsv: the text column ('text')")
    t.add_argument("--id-column", help="csv/tsv: the document id column (default: row number)")
    prog = p.add_mutually_exclusive_group()
    prog.add_argument("--progress", dest="progress", action="store_true", default=None,
                      help="show a progress bar (default: when stderr is a terminal)")
    prog.add_argument("--quiet", dest="progress", action="store_false", help="no progress bar")
    p.set_defaults(func=_ingest)

    i = sub.add_parser("info", help="sizes, chunking and held-out split of a corpus store")
    i.add_argument("store")
    i.set_defaults(func=_info)


def _ingest(args: argparse.Namespace) -> int:
    from dscir.corpus import ingest_ldac, ingest_uci
    from dscir.corpus import text as tx
    from dscir.errors import CorpusError

    if args.format == "ldac" and not args.vocab:
        raise CorpusError("ldac ingestion needs --vocab")
    if args.vocab and args.format in TEXT_FORMATS:
        raise CorpusError("--vocab is for ldac and uci; text builds its own vocabulary")
    heldout = None
    if args.heldout_every is not None:
        heldout = {"every": args.heldout_every}
    elif args.heldout is not None:
        heldout = {"n_heldout": args.heldout, "seed": args.seed}
    elif args.heldout_fraction is not None:
        heldout = {"fraction": args.heldout_fraction, "seed": args.seed}
    progress = sys.stderr.isatty() if args.progress is None else args.progress
    common = dict(overwrite=args.overwrite, chunk_docs=args.chunk_docs,
                  shard_chunks=args.shard_chunks, drop_empty=args.drop_empty,
                  heldout=heldout, progress=progress)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if args.format == "ldac":
            corpus = ingest_ldac(args.input, args.vocab, args.output, **common)
        elif args.format == "uci":
            corpus = ingest_uci(args.input, args.output, args.vocab, **common)
        else:
            source = {
                "text": lambda: tx.directory_source(args.input, args.pattern),
                "jsonl": lambda: tx.jsonl_source(args.input, args.text_field, args.id_field),
                "csv": lambda: tx.csv_source(args.input, args.column, args.id_column, ","),
                "tsv": lambda: tx.csv_source(args.input, args.column, args.id_column, "\t"),
                "trec": lambda: tx.trec_source(args.input),
            }[args.format]()
            tokenizer = tx.Tokenizer(() if args.no_stopwords else tx.ENGLISH_STOP_WORDS,
                                     args.min_length)
            corpus = tx.ingest_text(source, args.output, tokenizer=tokenizer,
                                    min_df=args.min_df, max_df=args.max_df,
                                    max_vocab=args.max_vocab, description=args.format,
                                    **common)
    for w in caught:
        print(f"dscir: warning: {w.message}", file=sys.stderr)
    print(corpus)
    _report(corpus)
    return 0


def _report(corpus) -> None:
    ingest = corpus.meta.get("ingest", {})
    if "empty_docs" in ingest:
        print(f"empty docs:  {ingest['empty_docs']:,} ({ingest['empty_policy']})")
    if ingest.get("duplicates_merged"):
        print(f"duplicates:  {ingest['duplicates_merged']:,} (document, word) entries merged")
    print(f"held out:    {corpus.heldout_docs().size:,} documents")


def _info(args: argparse.Namespace) -> int:
    from dscir.corpus import Corpus

    c = Corpus.open(args.store)
    m = c.meta
    print(f"store:       {args.store} (format {m['format_version']})")
    print(f"documents:   {c.n_docs:,}")
    print(f"vocabulary:  {c.n_words:,}")
    print(f"tokens:      {c.n_tokens:,}")
    print(f"entries:     {c.nnz:,} (document, word) pairs")
    if "shard_docs" in m:
        print(f"chunking:    {c.chunk_docs:,} documents per chunk, {m['shard_docs']:,} per "
              f"shard; entries {m['chunk_entries']:,} per chunk, {m['shard_entries']:,} "
              "per shard")
    else:
        print(f"chunking:    {c.chunk_docs:,} documents per chunk")
    source = m.get("ingest", {})
    if "format" in source:
        print(f"source:      {source['format']}" + (f" {source['source']}"
                                                     if "source" in source else ""))
    _report(c)
    return 0
