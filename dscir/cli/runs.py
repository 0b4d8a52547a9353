"""``dscir topics RUN`` and ``dscir evaluate RUN [STORE]``, for a run of any model."""

from __future__ import annotations

import argparse

from dscir.cli import options
from dscir.cli.lda import print_topics


def register(sub: argparse._SubParsersAction) -> None:
    ev = sub.add_parser("evaluate", help="held-out score of a fitted run on a store "
                        "(LDA: perplexity; mixtures: log predictive per user)")
    ev.add_argument("run")
    ev.add_argument("store", nargs="?", help="corpus store (default: the run's own)")
    ev.add_argument("--sweeps", type=int, help="LDA: Gibbs sweeps for document completion")
    options.cluster_options(ev)
    ev.set_defaults(func=_evaluate)

    tp = sub.add_parser("topics", help="top words of each topic (or cluster) of a fitted run")
    tp.add_argument("run")
    tp.add_argument("--top", type=int, default=10)
    tp.set_defaults(func=_topics)


def _evaluate(args: argparse.Namespace) -> int:
    from dscir.api import load
    from dscir.corpus import Corpus

    options.cluster_kwargs(args)  # bad TLS options: an error before anything is read
    model = load(args.run)
    store = args.store or model.store_
    Corpus.open(store)  # a missing store is an error before a cluster starts
    with options.cluster(args) as client:
        print(model.heldout_report(store, client=client, sweeps=args.sweeps))
    return 0


def _topics(args: argparse.Namespace) -> int:
    from dscir.api import load

    print_topics(load(args.run), args.top)
    return 0
