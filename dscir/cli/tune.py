"""``dscir tune STORE --out DIR``: an LDA step size chosen by the kernel Stein discrepancy."""

from __future__ import annotations

import argparse

from dscir.api import LDA_DEFAULTS
from dscir.cli import convention, options


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
    p.add_argument("--sampler", default="scir", choices=sorted(LDA_DEFAULTS),
                   help="the SG-MCMC sampler whose step size is tuned")
    p.add_argument("--topics", type=convention.count(2), default=100,
                   help="number of topics K")
    p.add_argument("--iterations", type=convention.count(1), default=100,
                   help="iterations per chain")
    p.add_argument("--burn-in", type=convention.count(0), help="iterations before samples "
                   "are kept (default: half)")
    p.add_argument("--thin", type=convention.count(1), default=2,
                   help="keep a sample every this many iterations")
    p.add_argument("--batch-size", type=convention.count(1), default=50,
                   help="documents per minibatch")
    p.add_argument("--sweeps", type=convention.count(2), default=50,
                   help="Gibbs sweeps per minibatch document")
    p.add_argument("--eval-sweeps", type=convention.count(2), default=50,
                   help="Gibbs sweeps per held-out document when scoring")
    p.add_argument("--seed", type=convention.count(0), default=0,
                   help="seed of every chain (the grid's chains share it)")
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
    from dscir.api.params import Interval
    from dscir.api.stein import parse_batch_size
    from dscir.api.tune import check_grid, tune
    from dscir.corpus import Corpus

    model = LDA(n_topics=args.topics, sampler=args.sampler, batch_size=args.batch_size,
                sweeps=args.sweeps, n_iter=args.iterations, burn_in=args.burn_in,
                thin=args.thin, eval_sweeps=args.eval_sweeps, seed=args.seed,
                progress=convention.progress(args))
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
