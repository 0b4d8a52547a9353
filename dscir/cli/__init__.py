"""The ``dscir`` command line.

Each command lives in its own module under ``dscir.cli`` exposing
``register(subparsers)``; it adds a parser whose ``func`` default receives the
parsed arguments and returns an exit code. ``dscir.cli.convention`` gives every
command the same options, help and logging; an error becomes one line on stderr
and the exit status of its kind (``EPILOG``): a ``DscirError`` its own
(``exit_code``: 2 usage, 3 bad or damaged data), a runtime failure 1, Ctrl-C 130;
a command whose reader closes stdout early (``| head``) exits 0 quietly.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from dscir import __version__
from dscir.cli import convention
from dscir.errors import EXIT_FAILURE, EXIT_INTERRUPTED, DscirError, command_line

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
    parser = convention.Parser(
        prog="dscir",
        description="Stochastic-gradient MCMC on the simplex (SCIR, SGRLD, gSGRHMC) on Dask.",
        epilog=convention.EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"dscir {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    convention.apply(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # a usage error (2, already printed), --help or --version
        return int(exc.code or 0)
    if not hasattr(args, "func"):
        parser.print_help()
        return 0
    with convention.logs(getattr(args, "verbose", 0), getattr(args, "quiet", False)), \
            command_line():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    """The command's exit status; an error as one line on stderr."""
    try:
        status = int(args.func(args) or 0)
        sys.stdout.flush()  # here, so that a reader gone is caught below
        return status
    except BrokenPipeError as exc:
        if not _stdout_closed():
            return _error(f"{exc.strerror or exc}")
        return _discard_stdout()
    except DscirError as exc:
        return _error(str(exc), exc.exit_code)
    except MemoryError as exc:  # beyond the estimate checked before a fit
        detail = f" ({exc})" if str(exc) else ""
        return _error(f"out of memory{detail}; use fewer topics/clusters, a smaller "
                      "vocabulary or a machine with more memory")
    except OSError as exc:  # disk full, permissions, a vanished file: the system's words
        where = f": {exc.filename}" if exc.filename else ""
        return _error(f"{exc.strerror or exc}{where}")
    except KeyboardInterrupt:
        print("dscir: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        from distributed import KilledWorker

        if not isinstance(exc, KilledWorker):
            raise
        return _error(_killed_worker(exc))


def _stdout_closed() -> bool:
    """Whether stdout is a pipe whose reader has gone (``| head`` read enough)."""
    import select

    try:
        poll = select.poll()
        poll.register(sys.stdout.fileno(), select.POLLOUT)
        return any(event & select.POLLERR for _, event in poll.poll(0))
    except (AttributeError, OSError, ValueError):
        return False


def _discard_stdout() -> int:
    """Exit quietly as standard tools do when their reader has gone: what is left
    to write goes to /dev/null (not to a closed pipe at exit)."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 0


def _error(message: str, status: int = EXIT_FAILURE) -> int:
    print(f"dscir: error: {message}", file=sys.stderr)
    return status


def _killed_worker(exc: Exception) -> str:
    """One line for Dask's KilledWorker: a task whose workers died each time it ran
    (distributed.scheduler.allowed-failures times), most often out of memory."""
    task = getattr(exc, "task", None)
    named = f" {task!r}" if task is not None else ""
    return (f"task{named} lost its worker every time it ran (workers killed: out of "
            "memory, or stopped from outside); give the workers more memory or use "
            "fewer topics/clusters or smaller minibatches; a run written with --out "
            "continues from its last checkpoint with the same command and --resume RUN")


if __name__ == "__main__":
    sys.exit(main())
