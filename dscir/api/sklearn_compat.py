"""What makes dscir's estimators scikit-learn estimators, beside ``base.Estimator``.

Documents in memory (``dscir.api.inputs``) become temporary stores, a
DataFrame's columns the words (and ``feature_names_in_``); a fitted
model pickles without its live chain (its executor holds a client or open
stores); scikit-learn reads the estimator's tags; a run records the
parameters as given, so ``load(run)`` has them back and ``clone(load(run))``
fits the same chain again.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np

from dscir.api.inputs import column_names, count_matrix, is_store, numbered
from dscir.corpus.temporary import corpus_store, scoring_store, store_path
from dscir.errors import DscirError


class ScikitLearn:
    """scikit-learn's side of ``Estimator`` (see the module)."""

    _sklearn_kind: ClassVar[str | None] = None  # "transformer", "clusterer"

    @contextlib.contextmanager
    def _documents(self, X, vocabulary=None) -> Iterator[str]:
        """The store path of ``X``: a store as given, or a checked in-memory matrix
        written to a temporary store (``dscir.corpus.temporary.corpus_store``)."""
        names = None if is_store(X) else column_names(X)
        if names is None:
            self.__dict__.pop("feature_names_in_", None)
        else:  # scikit-learn's record of a DataFrame's columns
            self.feature_names_in_ = np.asarray(names, dtype=object)
        if is_store(X):
            with corpus_store(X, vocabulary) as store:
                yield store_path(store)
            return
        matrix = count_matrix(X, type(self).__name__)
        with corpus_store(matrix, vocabulary if vocabulary is not None
                          else column_names(X)) as store:
            yield store

    def _words(self, vocabulary=None) -> np.ndarray:
        """The words of the columns: ``vocabulary`` if given, else the fit's. A fit on a
        matrix without column names knows column numbers only ("0", "1", ...): said
        once per estimator, with the ways to give the words (a scikit-learn step
        cannot read the previous step's ``get_feature_names_out``)."""
        if vocabulary is not None:
            words = np.asarray(vocabulary).astype(str)
            if words.shape != self.vocabulary_.shape:
                raise DscirError(f"vocabulary has {words.size} entries, the model "
                                 f"{self.vocabulary_.size} columns")
            return words
        words = self.vocabulary_
        if not getattr(self, "_numbers_said", False) and numbered(words):
            self._numbers_said = True
            name = type(self).__name__
            warnings.warn(
                f"this {name} knows its words by column number only (it was fitted on a "
                f"matrix without column names); give them with "
                f"top_words(vocabulary=pipe[:-1].get_feature_names_out()) after a pipeline, "
                f"fit(X, vocabulary=vectorizer.get_feature_names_out()), or fit on a pandas "
                f"DataFrame whose columns are the words (a step's set_output(transform='pandas'))",
                UserWarning, stacklevel=3)
        return words

    def _own_store(self) -> str:
        """The fit's store, or one clear error after a fit on an in-memory matrix."""
        if self.store_ is None:
            raise DscirError(f"this {type(self).__name__} was fitted on an in-memory matrix, "
                             "whose temporary store was removed with the fit (and held no "
                             "held-out documents): pass the documents, e.g. score(X)")
        return self.store_

    @contextlib.contextmanager
    def _scored(self, X, client, cluster: dict) -> Iterator[tuple[str, bool]]:
        """The store whose held-out documents to score and whether to score it in
        this process: ``X`` None (the fit's store), a store, or an in-memory matrix
        (every row held out, in a temporary store, in this process)."""
        if X is None or is_store(X):
            store = self._own_store() if X is None else store_path(X)
            yield store, False
            return
        matrix = count_matrix(X, type(self).__name__, self.n_features_in_)
        with scoring_store(matrix) as store:
            yield store, True

    def __getstate__(self) -> dict[str, Any]:
        """The fitted state without the live chain (its executor holds a client
        or open stores); ``_keep_chain`` says what of it a fitted model keeps."""
        state = dict(self.__dict__)
        chain = state.pop("_chain", None)
        if chain is not None:
            state.update(self._keep_chain(chain))
        return state

    def _keep_chain(self, chain) -> dict[str, Any]:
        """What of the live chain a pickled model keeps (nothing: the learned
        attributes hold the fit)."""
        return {}

    def __sklearn_tags__(self):
        from dscir.api.inputs import sklearn_tags

        return sklearn_tags(self._sklearn_kind)

    def _recorded_params(self) -> dict[str, Any]:
        """The parameters as a run records them (JSON: a pair is a list)."""
        def plain(v):
            if isinstance(v, np.generic):
                return v.item()
            if isinstance(v, dict):
                return {k: plain(x) for k, x in v.items()}
            return [plain(x) for x in v] if isinstance(v, tuple) else v

        return {k: plain(v) for k, v in self.get_params().items()}

    def _load_params(self, run) -> bool:
        """Set the parameters the run recorded (a list is a pair); False for a run
        written before runs recorded them."""
        if run.params is None:
            return False
        self.set_params(**{k: tuple(v) if isinstance(v, list) else v
                           for k, v in run.params.items() if k in self._param_names()})
        return True
