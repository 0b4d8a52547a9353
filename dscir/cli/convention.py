"""The one convention every ``dscir`` command follows, applied by ``apply``.

Every option has help that shows its default; every command has ``-q/--quiet``
and ``-v/--verbose`` (logging levels), the long ones also ``--progress`` /
``--no-progress`` (bars by default only when stderr is a terminal, so no ``\\r``
bars land in redirected logs); the commands whose result is a table also have
``--json``; positionals are named by kind (``positional``). ``logs`` routes the
``dscir`` logger hierarchy and Python warnings to stderr at the chosen level,
hiding Dask's own messages a user cannot act on unless ``-vv``.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
import warnings
from collections.abc import Iterator

from dscir.errors import EXIT_DATA, EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_USAGE

#: The commands that run long (a cluster, a pass over a corpus): progress options.
LONG = frozenset({"quickstart", "ingest", "fit", "evaluate", "coherence", "transform",
                  "diagnose", "tune", "report", "experiment"})
#: The commands that print a result as ``--json`` on request.
JSON = frozenset({"info", "evaluate", "topics", "coherence", "diagnose", "verify"})
#: One metavar per kind of positional argument.
KINDS = {"store": "STORE", "run": "RUN", "input": "INPUT", "store|run": "STORE|RUN"}

EPILOG = (f"exit status: 0 success; {EXIT_FAILURE} runtime failure (the scheduler "
          f"unreachable or lost, a worker lost, out of memory, a disk error); {EXIT_USAGE} usage error (a bad option, value "
          f"or path); {EXIT_DATA} bad or damaged data (a malformed input file, a damaged "
          f"store); {EXIT_INTERRUPTED} interrupted (Ctrl-C). -v shows more messages, -vv also "
          "Dask's own; -q only warnings and errors.")

#: Loggers of the libraries under dscir whose messages a user cannot act on.
DASK_LOGGERS = ("distributed", "dask", "tornado", "bokeh", "asyncio")


class Parser(argparse.ArgumentParser):
    """A usage error is one line, like every other error, naming the command's help."""

    def error(self, message: str):
        self.exit(EXIT_USAGE, f"dscir: error: {message} (`{self.prog} --help` lists the "
                  "options)\n")


class Formatter(argparse.HelpFormatter):
    """Help that shows each option's default (unless its help already does, or
    the default is None or a flag's False)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if ("default" in text or not action.option_strings or default is None
                or default is False or default is True or default is argparse.SUPPRESS):
            return text
        return f"{text} (default: %(default)s)"


def count(low: int = 1):
    """An argparse type: an integer >= ``low`` (argparse's error names the flag)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer >= {low}, got {text!r}") \
                from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {value}")
        return value

    parse.__name__ = f"integer >= {low}"
    return parse


def fraction(text: str) -> float:
    """An argparse type: a number strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1), got {text!r}")
    return value


def seconds(text: str) -> float:
    """An argparse type: a finite number of seconds >= 0."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds >= 0, got {text!r}")
    return value


def _plain(value):
    """``value`` with numpy scalars and arrays as Python's, NaN and infinities as None."""
    import math

    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "tolist"):
        return _plain(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def print_json(result: dict) -> None:
    """The result of a ``--json`` command: one JSON object on stdout."""
    import json

    print(json.dumps(_plain(result), indent=2))


def positional(p: argparse.ArgumentParser, kind: str, help: str, **kw) -> None:
    """A positional of ``kind`` (store, run, input, store|run) under its one metavar."""
    dest = kind.split("|")[0] if kind != "store|run" else "store"
    p.add_argument(dest, metavar=KINDS[kind], help=help, **kw)


def out_option(p: argparse.ArgumentParser, help: str, **kw) -> None:
    """``-o/--out``: where a command writes its result."""
    p.add_argument("-o", "--out", help=help, **kw)


def leaf(p: argparse.ArgumentParser, command: str) -> None:
    """Give the parser of ``command`` (its first word) the common options."""
    p.formatter_class = Formatter
    g = p.add_argument_group("messages")
    g.add_argument("-v", "--verbose", action="count", default=0,
                   help="more messages: -v the library's debugging, -vv also Dask's own "
                   "messages and warnings (default: progress, results and warnings)")
    quiet = g.add_mutually_exclusive_group() if command in LONG else g
    quiet.add_argument("-q", "--quiet", action="store_true",
                       help="only warnings and errors" + (", no progress bars"
                                                         if command in LONG else ""))
    if command in LONG:
        quiet.add_argument("--progress", dest="progress", action="store_const", const=True,
                           help="show progress bars even when stderr is not a terminal "
                           "(default: only on a terminal)")
        quiet.add_argument("--no-progress", dest="progress", action="store_const",
                           const=False, help="no progress bars (messages unchanged)")
    if command in JSON:
        p.add_argument("--json", action="store_true",
                       help="print the result as one JSON object on stdout")


def apply(parser: argparse.ArgumentParser, command: str | None = None) -> None:
    """``leaf`` on every sub-parser that has no sub-commands (parsers built on
    first use, as ``ingest``'s formats, apply it themselves)."""
    parser.formatter_class = Formatter
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        leaf(parser, command)
    for action in subs:
        for name, p in action._name_parser_map.items():
            apply(p, command or name)


def progress(args: argparse.Namespace) -> bool:
    """Whether to show progress bars: ``--progress``/``--no-progress``, none with
    ``-q``, else only when stderr is a terminal."""
    if getattr(args, "quiet", False):
        return False
    chosen = getattr(args, "progress", None)
    return sys.stderr.isatty() if chosen is None else chosen


class _Handler(logging.Handler):
    """Writes through tqdm, so that a message does not break a progress bar."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            from tqdm import tqdm

            tqdm.write(self.format(record), file=sys.stderr)
        except Exception:
            self.handleError(record)


class _Format(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        text = record.getMessage()
        if record.levelno >= logging.ERROR:
            return f"dscir: error: {text}"
        if record.levelno >= logging.WARNING:
            return f"dscir: warning: {text}"
        if record.levelno < logging.INFO:
            return f"dscir: debug: {record.name}: {text}"
        return text


def from_dask(message, filename: str) -> bool:
    """Whether a warning is Dask's own (its code, or its large-graph notice)."""
    where = filename.replace("\\", "/")
    return (any(f"/{name}/" in where for name in DASK_LOGGERS)
            or str(message).startswith("Sending large graph"))


@contextlib.contextmanager
def logs(verbose: int = 0, quiet: bool = False) -> Iterator[logging.Logger]:
    """Within: the ``dscir`` loggers write to stderr (INFO; WARNING with ``quiet``,
    DEBUG with ``verbose``), Python warnings become ``dscir: warning:`` lines, and
    Dask's messages and warnings are hidden unless ``verbose >= 2``."""
    root = logging.getLogger("dscir")
    saved = root.level, root.propagate, warnings.showwarning
    handler = _Handler()
    handler.setFormatter(_Format())
    root.addHandler(handler)
    root.setLevel(logging.WARNING if quiet else logging.DEBUG if verbose else logging.INFO)
    root.propagate = False
    dask = {} if verbose >= 2 else {
        name: logging.getLogger(name) for name in list(logging.root.manager.loggerDict)
        if name.split(".")[0] in DASK_LOGGERS}
    levels = {name: log.level for name, log in dask.items()}
    for log in dask.values():
        log.setLevel(logging.ERROR)

    def show(message, category, filename, lineno, file=None, line=None):
        if verbose >= 2 or not from_dask(message, filename):
            root.warning("%s", message)

    warnings.showwarning = show
    try:
        yield root
    finally:
        warnings.showwarning = saved[2]
        for name, level in levels.items():
            dask[name].setLevel(level)
        root.removeHandler(handler)
        root.setLevel(saved[0])
        root.propagate = saved[1]
