"""``dscir diagnose RUN``: R-hat and ESS of a run's chains, as a table."""

from __future__ import annotations

import argparse
import numbers

from dscir.cli import options


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("diagnose", help="R-hat and effective sample size of a run's chains "
                       "(fit with --chains N): held-out score, matched topics' top words "
                       "(LDA), alpha and clusters (DP mixture)")
    p.add_argument("run")
    p.add_argument("--top", type=int, default=5,
                   help="LDA: top words per matched topic whose probabilities are diagnosed")
    p.add_argument("--no-score", action="store_true", help="skip the held-out score of "
                   "every kept sample (the only part that needs the cluster)")
    p.add_argument("--ksd", action="store_true", help="LDA: also each chain's kernel Stein "
                   "discrepancy over all topics x the most frequent words (on the cluster)")
    p.add_argument("--ksd-words", type=int, default=10,
                   help="with --ksd: how many of the store's most frequent words")
    p.add_argument("--ksd-batch-size", type=int, help="with --ksd: documents per score "
                   "estimate (default: the run's batch size; larger is less noisy)")
    p.add_argument("--plot", metavar="PNG", help="also draw R-hat and ESS per row to PNG")
    options.cluster_options(p)
    p.set_defaults(func=_diagnose)


def _diagnose(args: argparse.Namespace) -> int:
    from dscir.api.diagnose import diagnose
    from dscir.api.params import Interval
    from dscir.diagnostics.convergence import arviz
    from dscir.errors import DscirError
    from dscir.runs.chains import open_chains

    Interval(numbers.Integral, 1).check("--top", args.top)
    Interval(numbers.Integral, 1).check("--ksd-words", args.ksd_words)
    arviz()  # a missing extra is named before any cluster starts
    runs = open_chains(args.run)  # so is a path that is no run
    if args.ksd and runs[0].model != "lda":
        raise DscirError(f"{args.run} is a {runs[0].model} run; --ksd reads LDA runs")
    score = not args.no_score
    with options.cluster(args, score or args.ksd) as client:
        d = diagnose(args.run, client, top=args.top, score=score, ksd=args.ksd,
                     ksd_words=args.ksd_words, ksd_batch_size=args.ksd_batch_size)
    print(d.table())
    if d.n_chains == 1:
        print("one chain: R-hat compares its halves only; fit with --chains 4 to compare "
              "chains")
    if args.plot:
        from dscir.display import plot_diagnosis

        plot_diagnosis(d).savefig(args.plot, dpi=120)
    return 0
