"""``dscir report RUN STORE --out report.html``: one self-contained page of an LDA run."""

from __future__ import annotations

import argparse
import logging

from dscir.cli import convention, options


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="an LDA run's topics, their coherence, the chains' "
                       "convergence and the pyLDAvis view (if installed) as one HTML page")
    convention.positional(p, "run", "a fitted LDA run")
    convention.positional(p, "store", "corpus store over the run's vocabulary (coherence "
                          "and pyLDAvis read every document of it; default: the run's own)",
                          nargs="?")
    convention.out_option(p, "the page to write", required=True, metavar="HTML")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    p.add_argument("--top", type=convention.count(2), default=10,
                   help="top words per topic")
    p.add_argument("--score", action="store_true", help="with several chains, also "
                   "diagnose the held-out score of every kept sample (slower)")
    p.add_argument("--no-pyldavis", action="store_true", help="leave the pyLDAvis view out")
    p.add_argument("--sweeps", type=convention.count(2), help="Gibbs sweeps per document for pyLDAvis's "
                   "document-topic proportions (default: the run's eval_sweeps)")
    options.cluster_options(p)
    p.set_defaults(func=_report)


def _report(args: argparse.Namespace) -> int:
    from dscir.report import write_report
    from dscir.report.build import check_report

    options.cluster_kwargs(args)
    store = args.store or _own_store(args.run)
    check_report(args.run, store, args.out, args.overwrite, args.top)
    with options.cluster(args) as client:
        out = write_report(args.run, store, args.out, client, top=args.top,
                           score=args.score, pyldavis=not args.no_pyldavis,
                           sweeps=args.sweeps, overwrite=args.overwrite)
    logging.getLogger("dscir.cli").info("report written to %s", out)
    return 0


def _own_store(run: str) -> str:
    """The corpus store a run was fitted on (``report``'s default store)."""
    from dscir.runs.chains import open_chains

    return open_chains(run)[0].store
