"""``dscir report RUN STORE --out report.html``: one self-contained page of an LDA run."""

from __future__ import annotations

import argparse
import numbers
import sys

from dscir.cli import options


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="an LDA run's topics, their coherence, the chains' "
                       "convergence and the pyLDAvis view (if installed) as one HTML page")
    p.add_argument("run")
    p.add_argument("store", help="corpus store over the run's vocabulary (coherence and "
                   "pyLDAvis read every document of it)")
    p.add_argument("--out", required=True, metavar="HTML", help="the page to write")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    p.add_argument("--top", type=int, default=10, help="top words per topic (default 10)")
    p.add_argument("--score", action="store_true", help="with several chains, also "
                   "diagnose the held-out score of every kept sample (slower)")
    p.add_argument("--no-pyldavis", action="store_true", help="leave the pyLDAvis view out")
    p.add_argument("--sweeps", type=int, help="Gibbs sweeps per document for pyLDAvis's "
                   "document-topic proportions (default: the run's eval_sweeps)")
    options.cluster_options(p)
    p.set_defaults(func=_report)


def _report(args: argparse.Namespace) -> int:
    from dscir.api.params import Interval
    from dscir.report import write_report
    from dscir.report.build import check_report

    Interval(numbers.Integral, 1).check("--top", args.top)
    Interval(numbers.Integral, 2, none=True).check("--sweeps", args.sweeps)
    options.cluster_kwargs(args)
    check_report(args.run, args.store, args.out, args.overwrite, args.top)
    with options.cluster(args) as client:
        out = write_report(args.run, args.store, args.out, client, top=args.top,
                           score=args.score, pyldavis=not args.no_pyldavis,
                           sweeps=args.sweeps, overwrite=args.overwrite)
    print(f"report written to {out}", file=sys.stderr)
    return 0
