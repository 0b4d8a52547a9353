"""``dscir ingest`` and ``dscir info``."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ingest", help="build a corpus store from LDA-C or UCI docword files")
    p.add_argument("format", choices=["ldac", "uci"])
    p.add_argument("input", help="LDA-C file or UCI docword file (plain or .gz)")
    p.add_argument("output", help="the Zarr store to create")
    p.add_argument("--vocab", help="vocabulary file, one word a line (required for ldac)")
    p.add_argument("--chunk-docs", type=int, default=1024, help="documents per chunk")
    split = p.add_mutually_exclusive_group()
    split.add_argument("--heldout-every", type=int, help="hold out every N-th document")
    split.add_argument("--heldout", type=int, help="hold out N documents chosen by --seed")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--overwrite", action="store_true", help="replace an existing store")
    p.set_defaults(func=_ingest)

    i = sub.add_parser("info", help="sizes, chunking and held-out split of a corpus store")
    i.add_argument("store")
    i.set_defaults(func=_info)


def _ingest(args: argparse.Namespace) -> int:
    from dscir.corpus import ingest_ldac, ingest_uci, split_heldout
    from dscir.errors import CorpusError

    out = Path(args.output)
    if args.format == "ldac" and not args.vocab:
        raise CorpusError("ldac ingestion needs --vocab")
    existed = out.exists()
    if args.format == "ldac":
        corpus = ingest_ldac(args.input, args.vocab, out, overwrite=args.overwrite,
                             chunk_docs=args.chunk_docs)
    else:
        corpus = ingest_uci(args.input, out, args.vocab, overwrite=args.overwrite,
                            chunk_docs=args.chunk_docs)
    try:
        if args.heldout_every:
            split_heldout(out, every=args.heldout_every)
        elif args.heldout:
            split_heldout(out, n_heldout=args.heldout, seed=args.seed)
    except CorpusError:
        if not existed:
            shutil.rmtree(out, ignore_errors=True)
        raise
    print(corpus.__class__.open(out))
    return 0


def _info(args: argparse.Namespace) -> int:
    from dscir.corpus import Corpus

    c = Corpus.open(args.store)
    print(f"store:       {args.store}")
    print(f"documents:   {c.n_docs:,}")
    print(f"vocabulary:  {c.n_words:,}")
    print(f"tokens:      {c.n_tokens:,}")
    print(f"chunking:    {c.chunk_docs:,} documents per chunk")
    print(f"held out:    {c.heldout_docs().size:,} documents")
    return 0
