"""The one exception users see for bad input: its message names the problem."""


class DscirError(ValueError):
    """Bad input or configuration; the CLI prints the message and exits non-zero.

    A ``ValueError``, as scikit-learn and its users expect of an invalid
    parameter or input."""


class CorpusError(DscirError):
    """A corpus file or store is malformed, missing or inconsistent."""
