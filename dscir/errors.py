"""The exceptions users see for bad input: each message names the problem.

Each class carries the command line's exit status (``exit_code``): a bad option
value or argument is a usage error (2, as argparse's own), malformed or damaged
data is 3. ``spell`` names a parameter as the user wrote it: its flag when the
error reaches the command line (inside ``command_line()``), its Python name
(``overwrite=True``) otherwise.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

#: Exit statuses of the ``dscir`` command (documented in its help and docs/guide/cli.md).
EXIT_FAILURE, EXIT_USAGE, EXIT_DATA, EXIT_INTERRUPTED = 1, 2, 3, 130

_ON_COMMAND_LINE = contextvars.ContextVar("dscir_command_line", default=False)


class DscirError(ValueError):
    """Bad input or configuration; the CLI prints the message and exits 2.

    A ``ValueError``, as scikit-learn and its users expect of an invalid
    parameter or input."""

    exit_code = EXIT_USAGE


class CorpusError(DscirError):
    """A corpus file or store is malformed, missing or inconsistent."""


def not_fitted(message: str) -> DscirError:
    """The error of a method called before ``fit``: a ``DscirError`` that is also
    scikit-learn's ``NotFittedError`` where scikit-learn is installed (dscir does
    not need it), so code written for scikit-learn's estimators catches it."""
    try:
        from sklearn.exceptions import NotFittedError
    except ImportError:
        return DscirError(message)
    global _NotFitted
    if _NotFitted is None:
        _NotFitted = type("NotFittedError", (DscirError, NotFittedError), {
            "__module__": __name__, "__doc__": "A DscirError that is scikit-learn's "
            "NotFittedError: the estimator is not fitted yet."})
    return _NotFitted(message)


_NotFitted = None


class DataError(CorpusError):
    """Malformed input data or a damaged store (exit status 3 on the command line)."""

    exit_code = EXIT_DATA


class ClusterError(DscirError):
    """The cluster could not be reached or was lost during a run: a runtime failure
    (exit status 1), not the user's input."""

    exit_code = EXIT_FAILURE


def on_command_line() -> bool:
    """Whether errors raised now reach the user through the command line."""
    return _ON_COMMAND_LINE.get()


@contextlib.contextmanager
def command_line() -> Iterator[None]:
    """Within: ``spell`` names parameters by their command-line flags."""
    token = _ON_COMMAND_LINE.set(True)
    try:
        yield
    finally:
        _ON_COMMAND_LINE.reset(token)


def spell(python: str, flag: str) -> str:
    """``flag`` (e.g. ``--overwrite``) on the command line, else ``python``
    (e.g. ``overwrite=True``): a message names what its reader typed."""
    return flag if on_command_line() else python
