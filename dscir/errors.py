"""The one exception users see for bad input: its message names the problem."""


class DscirError(Exception):
    """Bad input or configuration; the CLI prints the message and exits non-zero."""


class CorpusError(DscirError):
    """A corpus file or store is malformed, missing or inconsistent."""
