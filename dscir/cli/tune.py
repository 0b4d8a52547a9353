"""``dscir tune STORE --out DIR``: an LDA step size chosen by the kernel Stein discrepancy."""

from __future__ import annotations

import argparse

from dscir.api.lda_params import PARAMS
from dscir.cli import convention, options
from dscir.cli.params import add_params, check_flags, estimator_kwargs

# LDA's parameters on tune's command line, and the defaults of its short chains.
TUNED = ("sampler", "n_topics", "n_iter", "burn_in", "thin", "batch_size", "sweeps",
         "eval_sweeps", "seed")
TUNE_DEFAULTS = {"n_iter": 100, "thin": 2, "batch_size": 50, "sweeps": 50, "eval_sweeps": 50}


def _grid(text: str) -> list[float]:
    """Comma-separated step sizes; checked by ``check_grid`` for one clear error."""
    return [part.strip() for part in text.split(",") if part.strip()]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tune", help="choose an LDA step size: short chains over a grid, scored by the "
        "kernel Stein discrepancy (held-out perplexity beside it)",
        description="Runs one short LDA chain per step size (side by side on one "
        "cluster), prints KSD and held-out perplexity per step size and picks the "
        "smallest KSD. Default grid: the sampler's reference step x 0.01, 0.1, 1, 10.")
    convention.positional(p, "store", "corpus store (see `dscir ingest`)")
    convention.out_option(p, "directory for the chains' runs", required=True)
    p.add_argument("--json", metavar="PATH",
                   help="write the table here (default: OUT/tune.json)")
    p.add_argument("--grid", type=_grid, help="comma-separated step sizes, e.g. 0.01,0.1,1 "
                   "(default: the sampler's reference step x 0.01, 0.1, 1, 10)")
    add_params(p, PARAMS, names=TUNED, defaults=TUNE_DEFAULTS)
    p.add_argument("--ksd-words", type=convention.count(1), default=10,
                   help="the KSD is over all topics x this many most frequent words")
    p.add_argument("--ksd-batch-size", help="documents per score estimate, or 'all' for "
                   "the full data (default: --batch-size; larger is less noisy)")
    options.cluster_options(p)
    p.set_defaults(func=_tune)


def _tune(args: argparse.Namespace) -> int:
    import numbers
    from pathlib import Path

    from dscir.api import LDA
    from dscir.params import Interval
    from dscir.api.stein import parse_batch_size
    from dscir.api.tune import check_grid, tune
    from dscir.corpus import Corpus

    model = LDA(**estimator_kwargs(args, PARAMS), progress=convention.progress(args))
    check_flags(model)
    Corpus.open(args.store)
    # bad parameters: one error before any cluster starts (the policy reads the store)
    reference = model.chain_config(args.store).step_size
    if args.grid is not None:
        check_grid(args.grid, reference)
    Interval(numbers.Integral, 1).check("--ksd-words", args.ksd_words)
    batch_size = parse_batch_size(args.ksd_batch_size)
    if batch_size not in (None, "all"):
        Interval(numbers.Integral, 1).check("--ksd-batch-size", batch_size)
    with options.cluster(args) as client:
        result = tune(model, args.store, client, out=args.out, grid=args.grid,
                      ksd_words=args.ksd_words, ksd_batch_size=batch_size,
                      progress=model.progress)
    print(result.table())
    path = args.json or str(Path(args.out) / "tune.json")
    result.to_json(path)
    print(f"wrote {path}")
    return 0
