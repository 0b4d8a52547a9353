"""``dscir fit MODEL``: one subcommand per model, each defined beside its other commands.

Ctrl-C (SIGINT) or SIGTERM during a fit ends it with one line on stderr, saying
where a checkpointed run can continue, and exit status 130 or 143
(``dscir.engine.interrupts``: the embedded cluster's workers leave the signal
to the driver, which closes them).
"""

from __future__ import annotations

import argparse
import functools
import signal
import sys

from dscir.cli import dpmm, lda, mixture
from dscir.engine.interrupts import exit_status

FIT_MODELS = (lda, dpmm, mixture)


def register(sub: argparse._SubParsersAction) -> None:
    fit = sub.add_parser("fit", help="fit a model on a corpus store")
    models = fit.add_subparsers(dest="model", metavar="MODEL", required=True)
    for module in FIT_MODELS:
        module.add_fit_parser(models)
    for parser in models.choices.values():
        parser.set_defaults(func=_interruptible(parser.get_default("func")))


def _interruptible(func):
    """``func`` with an interrupt ended by one line and the shell's status for it."""
    @functools.wraps(func)
    def run(args: argparse.Namespace) -> int:
        try:
            return func(args)
        except (KeyboardInterrupt, SystemExit) as exc:
            status = exit_status(exc)
            if status is None:
                raise
            print(f"dscir: {_interrupted(status, args)}", file=sys.stderr)
            return status
    return run


def _interrupted(status: int, args: argparse.Namespace) -> str:
    """What was interrupted and where the run can continue."""
    from dscir.runs.checkpoint import latest_checkpoint
    from dscir.runs.progress import unfinished

    what = "terminated (SIGTERM)" if status == 128 + signal.SIGTERM else "interrupted"
    run = args.resume or args.out
    if run is None:
        return what
    if not unfinished(run):
        return f"{what}; {run} is unchanged" if args.resume else \
            f"{what}; nothing was written to {run}"
    ckpt = latest_checkpoint(run)
    if ckpt is None:
        return f"{what} before the first checkpoint; {run} cannot be resumed"
    return (f"{what}; {run} keeps its checkpoint at iteration {int(ckpt.name)}: continue "
            f"with the same command and --resume {run}")
