"""Documents in memory as the estimators take them, checked as scikit-learn checks input.

A document-term matrix is a scipy.sparse matrix or array, or a dense array-like
(a numpy array, a list of rows, a pandas DataFrame, whose column names then name
the words), of non-negative whole-number counts: the models sample a topic or a
cluster per token, so a count is a number of tokens. Every refusal is a
``DscirError`` (a ``ValueError``) worded as scikit-learn words it, so that code
written against scikit-learn's estimators reads the same messages.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dscir.corpus.store import CSRBatch, Corpus
from dscir.errors import DscirError


class NotCountsError(DscirError, TypeError):
    """Entries that are not numbers at all (a ``TypeError`` too, as numpy's own)."""


def is_store(corpus) -> bool:
    """Whether ``corpus`` names a corpus store (a path or an open ``Corpus``)."""
    return isinstance(corpus, (str, Path, Corpus))


def column_names(X) -> list[str] | None:
    """The column names of a pandas DataFrame (the words), else None."""
    columns = getattr(X, "columns", None)
    if columns is None or not hasattr(X, "iloc"):
        return None
    return [str(c) for c in columns]


def numbered(words) -> bool:
    """Whether ``words`` are the column numbers "0", "1", ... (a matrix without names)."""
    words = np.asarray(words)
    return words.size > 0 and str(words[0]) == "0" and str(words[-1]) == str(words.size - 1) \
        and all(str(w) == str(i) for i, w in enumerate(words))


def count_matrix(X, who: str, n_features: int | None = None):
    """``X`` as a CSR matrix of int64 counts, or one clear error naming what is wrong;
    ``n_features``: the columns a fitted model expects."""
    import scipy.sparse as sp

    if hasattr(X, "iloc") and hasattr(X, "sparse"):
        try:  # a DataFrame of sparse columns stays sparse
            X = X.sparse.to_coo()
        except (AttributeError, TypeError, ValueError):
            pass
    if isinstance(X, CSRBatch):
        X = sp.csr_matrix((X.data, X.indices, X.indptr),
                          shape=(X.indptr.size - 1, n_features or int(X.indices.max(initial=-1)) + 1))
    if sp.issparse(X):
        m = sp.csr_matrix(X)
        values, shape = m.data, m.shape
    else:
        a = _dense(X)
        values, shape = a, a.shape
    if len(shape) != 2:
        raise DscirError(f"Expected 2D array, got {len(shape)}D array instead: {who} takes a "
                         f"document-term matrix. Reshape your data with X.reshape(1, -1) "
                         f"if it is a single document")
    _check_values(values, shape, who)
    if n_features is not None and shape[1] != n_features:
        raise DscirError(f"X has {shape[1]} features, but {who} is expecting {n_features} "
                         f"features as input.")
    m = sp.csr_matrix(values) if not sp.issparse(X) else m
    m = sp.csr_matrix(m, dtype=np.int64)
    m.sum_duplicates()
    return m


def _dense(X) -> np.ndarray:
    try:
        a = np.asarray(X)
    except (TypeError, ValueError) as exc:
        raise DscirError(f"X is not a document-term matrix ({exc})") from None
    if np.iscomplexobj(a):
        raise DscirError("Complex data not supported: X must hold word counts")
    if a.dtype.kind not in "biuf":
        try:
            a = a.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise NotCountsError(f"X must hold numbers (word counts), got {a.dtype} entries "
                                 f"that are not: {exc}") from None
    return a


def _check_values(values: np.ndarray, shape: tuple, who: str) -> None:
    if shape[0] < 1:
        raise DscirError(f"Found array with 0 sample(s) (shape={shape}) while a minimum of "
                         f"1 is required by {who}.")
    if shape[1] < 1:
        raise DscirError(f"0 feature(s) (shape={shape}) while a minimum of 1 is required.")
    if np.iscomplexobj(values):
        raise DscirError("Complex data not supported: X must hold word counts")
    if values.size == 0:
        return
    if not np.all(np.isfinite(values)):
        raise DscirError(f"Input X contains NaN or infinity; {who} takes word counts")
    if values.min() < 0:
        raise DscirError(f"Negative values in data passed to {who}: X must hold word counts")
    if np.any(values != np.round(values)):
        bad = values[values != np.round(values)].flat[0]
        raise DscirError(f"{who} takes word counts: X must hold whole numbers, found "
                         f"{bad!r}")
    if values.max() > np.iinfo(np.int32).max:
        raise DscirError(f"{who} takes word counts below 2**31, found {values.max()!r}")


def check_y(y) -> None:
    """``y`` is ignored (the models are unsupervised), but a Dask client passed
    where ``fit(corpus, client)`` once took it is an error, not a silent local fit."""
    if type(y).__name__ == "Client" and hasattr(y, "scheduler_info"):
        raise DscirError("the second argument of fit/partial_fit/score is y, which these "
                         "unsupervised models ignore; pass the Dask client as client=...")


def sklearn_tags(kind: str | None):
    """scikit-learn's tags of a dscir estimator of ``kind`` ("transformer", "clusterer").

    The input is a matrix of non-negative whole-number counts, sparse or dense.
    ``categorical`` is the one tag under which scikit-learn's checks give an
    estimator whole non-negative numbers (they round their data); no
    scikit-learn estimator reads it otherwise. No target is needed.
    """
    from sklearn.utils import InputTags, Tags, TargetTags, TransformerTags

    return Tags(estimator_type="clusterer" if kind == "clusterer" else None,
                target_tags=TargetTags(required=False),
                transformer_tags=TransformerTags() if kind == "transformer" else None,
                input_tags=InputTags(sparse=True, positive_only=True, categorical=True))
