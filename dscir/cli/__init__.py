"""The ``dscir`` command line.

Each command lives in its own module under ``dscir.cli`` exposing
``register(subparsers)``; it adds a parser whose ``func`` default receives the
parsed arguments and returns an exit code. A ``DscirError`` becomes one line on
stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from dscir import __version__
from dscir.errors import DscirError

_COMMAND_MODULES: tuple[str, ...] = (
    "dscir.cli.quickstart",
    "dscir.cli.corpus",
    "dscir.cli.fit",
    "dscir.cli.runs",
    "dscir.cli.diagnose",
    "dscir.cli.tune",
    "dscir.cli.report",
    "dscir.cli.experiment",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dscir",
        description="Stochastic-gradient MCMC on the simplex (SCIR, SGRLD, gSGRHMC) on Dask.",
    )
    parser.add_argument("--version", action="version", version=f"dscir {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "func"):
        parser.print_help()
        return 0
    try:
        return int(args.func(args) or 0)
    except DscirError as exc:
        print(f"dscir: error: {exc}", file=sys.stderr)
        return 2
    except MemoryError as exc:  # beyond the estimate checked before a fit
        detail = f" ({exc})" if str(exc) else ""
        print(f"dscir: error: out of memory{detail}; use fewer topics/clusters, a smaller "
              "vocabulary or a machine with more memory", file=sys.stderr)
        return 2
    except OSError as exc:  # disk full, permissions, a vanished file: the system's words
        where = f": {exc.filename}" if exc.filename else ""
        print(f"dscir: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("dscir: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        from distributed import KilledWorker

        if not isinstance(exc, KilledWorker):
            raise
        print(f"dscir: error: {_killed_worker(exc)}", file=sys.stderr)
        return 2


def _killed_worker(exc: Exception) -> str:
    """One line for Dask's KilledWorker: a task whose workers died each time it ran
    (distributed.scheduler.allowed-failures times), most often out of memory."""
    task = getattr(exc, "task", None)
    named = f" {task!r}" if task is not None else ""
    return (f"task{named} lost its worker every time it ran (workers killed: out of "
            "memory, or stopped from outside); give the workers more memory or use "
            "fewer topics/clusters or smaller minibatches; a run written with --checkpoint-every "
            "continues from its last checkpoint with the same command and --resume RUN")


if __name__ == "__main__":
    sys.exit(main())
