"""The one exception users see for bad input: its message names the problem."""


class DscirError(ValueError):
    """Bad input or configuration; the CLI prints the message and exits non-zero.

    A ``ValueError``, as scikit-learn and its users expect of an invalid
    parameter or input."""


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
