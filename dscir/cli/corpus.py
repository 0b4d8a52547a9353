"""``dscir ingest FORMAT INPUT STORE``, ``dscir info STORE|RUN`` and ``dscir verify STORE|RUN``."""

from __future__ import annotations

import argparse
import warnings

from dscir.cli import convention


class _FormatParsers(argparse._SubParsersAction):
    """The sub-parsers of ``dscir ingest``, one per registered format, built on
    first use (parsing or help) so that the other commands do not import the
    corpus code. An unknown format name is left to ``get_format``, whose error
    the CLI prints as one line (exit status 2) rather than argparse's usage."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.choices = None  # names are checked by get_format

    def _add_formats(self) -> None:
        from dscir.corpus.formats import FORMATS

        if self._name_parser_map:
            return
        for fmt in FORMATS.values():
            p = self.add_parser(fmt.name, help=fmt.description, description=fmt.description)
            _add_common_options(p)
            fmt.add_options(p)
            convention.leaf(p, "ingest")

    def _get_subactions(self):
        self._add_formats()
        return super()._get_subactions()

    def __call__(self, parser, namespace, values, option_string=None):
        self._add_formats()
        if values[0] in self._name_parser_map:
            super().__call__(parser, namespace, values, option_string)
        else:
            setattr(namespace, self.dest, values[0])


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "ingest", help="build a corpus store from LDA-C, UCI, or raw text",
        description="Build a Zarr corpus store, streaming (memory does not grow with the "
        "corpus). The store is written to a temporary directory beside OUTPUT and moved "
        "into place only when complete. `dscir ingest FORMAT --help` lists the options "
        "of a format.")
    p.set_defaults(func=_ingest)
    p.add_subparsers(dest="format", metavar="FORMAT", required=True, action=_FormatParsers)

    i = sub.add_parser("info", help="a corpus store's sizes, chunking and held-out split, "
                       "or a fitted run's model, settings, progress and scores")
    convention.positional(i, "store|run", "a corpus store or a fitted run")
    i.set_defaults(func=_info)

    v = sub.add_parser("verify", help="read every chunk of a corpus store or run and check "
                       "its consistency (exit status 3 on damage)",
                       description="Read every chunk of every array (checksums, compressed "
                       "data, missing chunk files) and, for a corpus store, check that "
                       "indptr starts at 0, is monotone and ends at nnz, that word ids are "
                       "in [0, n_words) and counts > 0, and that the dscir_corpus sizes "
                       "agree with the arrays. Prints OK or the damaged arrays and chunks.")
    convention.positional(v, "store|run", "a corpus store or a fitted run")
    v.set_defaults(func=_verify)


def _add_common_options(p: argparse.ArgumentParser) -> None:
    """INPUT, OUTPUT and the store layout, held-out and progress flags of every format."""
    convention.positional(p, "input", "input file or directory (files may be gzip)")
    p.add_argument("output", metavar=convention.KINDS["store"],
                   help="the corpus store (Zarr) to create")
    p.add_argument("--overwrite", action="store_true", help="replace an existing store")
    p.add_argument("--encoding", type=_encoding, default="utf-8",
                   help="the text encoding of the input and vocabulary files, e.g. latin-1 "
                   "or cp1252 (any encoding that writes a newline as one byte)")
    p.add_argument("--drop-empty", action="store_true",
                   help="drop documents with no tokens (default: keep them; counted either way)")
    lay = p.add_argument_group("layout")
    lay.add_argument("--chunk-docs", type=convention.count(1), default=256, metavar="N",
                     help="documents per chunk")
    lay.add_argument("--shard-chunks", type=convention.count(1), default=16, metavar="N",
                     help="chunks per shard file")
    split = p.add_argument_group("held-out split").add_mutually_exclusive_group()
    split.add_argument("--heldout-every", type=convention.count(2), metavar="N",
                       help="hold out every N-th document (rows N-1, 2N-1, ...)")
    split.add_argument("--heldout", type=convention.count(1), metavar="N",
                       help="hold out N documents chosen by --seed")
    split.add_argument("--heldout-fraction", type=convention.fraction, metavar="F",
                       help="hold out a fraction F of the documents, chosen by --seed")
    p.add_argument("--seed", type=convention.count(0), default=0,
                   help="seed of the held-out choice")


def _encoding(text: str) -> str:
    """An argparse type: a text encoding the readers can use (``check_encoding``)."""
    from dscir.corpus.ingest import check_encoding
    from dscir.errors import CorpusError

    try:
        check_encoding(text)
    except CorpusError as exc:
        raise argparse.ArgumentTypeError(str(exc).split(": ", 1)[-1]) from None
    return text


def _ingest(args: argparse.Namespace) -> int:
    from dscir.corpus.formats import get_format

    fmt = get_format(args.format)
    heldout = None
    if args.heldout_every is not None:
        heldout = {"every": args.heldout_every}
    elif args.heldout is not None:
        heldout = {"n_heldout": args.heldout, "seed": args.seed}
    elif args.heldout_fraction is not None:
        heldout = {"fraction": args.heldout_fraction, "seed": args.seed}
    with warnings.catch_warnings():
        warnings.simplefilter("always")  # each merge or drop is told, as a log line
        corpus = fmt.ingest(args, overwrite=args.overwrite, chunk_docs=args.chunk_docs,
                            shard_chunks=args.shard_chunks, drop_empty=args.drop_empty,
                            heldout=heldout, progress=convention.progress(args))
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
    from dscir.runs.store import is_run

    if is_run(args.store):
        return _run_info(args.store, args.json)
    c = Corpus.open(args.store)
    m = c.meta
    if args.json:
        convention.print_json({
            "kind": "corpus store", "path": args.store, "format_version": m["format_version"],
            "n_docs": c.n_docs, "n_words": c.n_words, "n_tokens": c.n_tokens, "nnz": c.nnz,
            "chunk_docs": c.chunk_docs, "heldout_docs": int(c.heldout_docs().size),
            "ingest": m.get("ingest", {})})
        return 0
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


def _stopping_info(path: str) -> None:
    """The stopping rule of an n_iter="auto" run and where it ended burn-in and the run."""
    import zarr

    from dscir.api.stopping import STOPPING_ATTR

    rule = zarr.open_group(path, mode="r").attrs.get(STOPPING_ATTR)
    if rule is None:
        return
    if "tolerance" not in rule:
        print(f"stopping:    n_iter={rule['stopped']} iterations, as asked ({rule['reason']})")
        return
    if rule.get("reads") == "state":
        burn = "the current state's score read (the fit is that state)"
    else:
        burn = "burn-in ended " + ("never" if rule["burn_end"] is None
                                   else f"at iteration {rule['burn_end']}")
    aside = rule.get("set_aside", 0)
    scored = f" (of {aside} documents set aside)" if aside else ""
    print(f"stopping:    n_iter='auto': held-out score{scored} every {rule['eval_every']} "
          f"iterations ({rule['iters_per_pass']:.4g} a pass), plateau below {rule['tolerance']:.2%} a "
          f"pass over {rule['window']:g} passes, from {rule['min_passes']:g} to "
          f"{rule['max_passes']:g} passes ({rule['max_iter']} iterations); {burn}, "
          f"stopped at iteration {rule['stopped']} ({rule['reason']})")


def _run_info(path: str, as_json: bool = False) -> int:
    from dscir.cli.runs import print_progress
    from dscir.runs import Run
    from dscir.runs.progress import unfinished

    if unfinished(path):
        return print_progress(path)
    run = Run.open(path)
    if as_json:
        import zarr

        from dscir.api.stopping import STOPPING_ATTR

        convention.print_json({
            "kind": "run", "path": path, "model": run.model, "status": "finished",
            "store": run.store, "iteration": run.iteration, "n_samples": run.n_samples,
            "settings": dict(run.config), "evaluations": dict(run.evaluations),
            "stopping": zarr.open_group(path, mode="r").attrs.get(STOPPING_ATTR)})
        return 0
    print(f"run:         {path} ({run.model}, finished)")
    print(f"corpus:      {run.store}")
    print(f"iterations:  {run.iteration:,}")
    print(f"samples:     {run.n_samples:,} kept")
    print("settings:    " + ", ".join(f"{k}={v}" for k, v in run.config.items()))
    _stopping_info(path)
    ev = run.evaluations
    for i, value in zip(ev.get("iteration", []), ev.get(run.metric, [])):
        print(f"{run.metric}:  {value:.6g} at iteration {i}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    from dscir.corpus.store import verify as verify_corpus
    from dscir.integrity import StoreDamaged
    from dscir.runs.store import is_run
    from dscir.runs.store import verify as verify_run

    run = is_run(args.store)
    ok, problems = (verify_run if run else verify_corpus)(args.store)
    what = "run" if run else "corpus store"
    if args.json:
        convention.print_json({"path": args.store, "kind": what, "ok": ok,
                               "problems": problems})
    else:
        for line in [f"{name}: OK" for name in ok] + problems:
            print(line)
    if problems:
        more = ""
        if len(problems) > 1:
            names = sorted({p.split(":", 1)[0] for p in problems})
            more = f" (and {len(problems) - 1} more in {', '.join(names)})"
        raise StoreDamaged(f"{what} {args.store} is damaged: {problems[0]}{more}")
    if args.json:
        return 0
    print(f"{args.store}: OK ({what}, {len(ok)} arrays, every chunk read)")
    return 0
