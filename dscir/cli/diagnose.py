"""``dscir diagnose RUN``: R-hat and ESS of a run's chains, as a table."""

from __future__ import annotations

import argparse

from dscir.cli import convention, options


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("diagnose", help="R-hat and effective sample size of a run's chains "
                       "(fit with --chains N): held-out score, matched topics' top words "
                       "(LDA), alpha and clusters (DP mixture)")
    convention.positional(p, "run", "a fitted run (with --chains N: its chains)")
    p.add_argument("--top", type=convention.count(1), default=5,
                   help="LDA: top words per matched topic whose probabilities are diagnosed")
    p.add_argument("--no-score", action="store_true", help="skip the held-out score of "
                   "every kept sample (the only part that needs the cluster)")
    p.add_argument("--ksd", action="store_true", help="also each chain's kernel Stein "
                   "discrepancy (on the cluster): LDA over all topics x the most frequent "
                   "words, DP mixture over the leading stick breaks")
    p.add_argument("--ksd-words", type=convention.count(1), default=10,
                   help="LDA, with --ksd: how many of the store's most frequent words")
    p.add_argument("--ksd-sticks", type=convention.count(1), default=10,
                   help="DP mixture, with --ksd: how many leading sticks (in label order)")
    p.add_argument("--ksd-batch-size", metavar="N", help="with --ksd: documents (users) per score "
                   "estimate, or 'all' for the full data (default: the run's batch size, a "
                   "Gibbs DP run's all; larger is less noisy)")
    p.add_argument("--plot", metavar="PNG", help="also draw R-hat and ESS per row to PNG")
    options.cluster_options(p)
    p.set_defaults(func=_diagnose)


def _diagnose(args: argparse.Namespace) -> int:
    from dscir.api.diagnose import diagnose
    from dscir.api.stein import check_options, parse_batch_size
    from dscir.diagnostics.convergence import arviz
    from dscir.runs.chains import open_chains

    batch_size = parse_batch_size(args.ksd_batch_size)
    arviz()  # a missing extra is named before any cluster starts
    runs = open_chains(args.run)  # so is a path that is no run
    if args.ksd:
        check_options(runs, batch_size, args.ksd_words, args.ksd_sticks)
    score = not args.no_score
    with options.cluster(args, score or args.ksd) as client:
        d = diagnose(args.run, client, top=args.top, score=score, ksd=args.ksd,
                     ksd_words=args.ksd_words, ksd_batch_size=batch_size,
                     ksd_sticks=args.ksd_sticks)
    if args.json:
        convention.print_json(_as_json(args.run, d))
    else:
        print(d.table())
    if d.n_chains == 1 and not args.json:
        print("one chain: R-hat compares its halves only; fit with --chains 4 to compare "
              "chains")
    if args.plot:
        from dscir.display import plot_diagnosis

        plot_diagnosis(d).savefig(args.plot, dpi=120)
    return 0


def _as_json(path: str, d) -> dict:
    """``dscir diagnose --json``'s result: the table's rows and each chain's KSD."""
    result = {"run": path, "model": d.model, "n_chains": d.n_chains, "n_draws": d.n_draws,
              "rows": [r._asdict() for r in d.rows]}
    if d.ksd is not None:
        result["ksd"] = {"description": d.ksd.describe(), "per_chain": list(d.ksd.values)}
    return result
