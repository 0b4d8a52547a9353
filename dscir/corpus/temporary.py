"""What an estimator accepts as a corpus, and the temporary store of a matrix.

A corpus is a store path/URL, an open ``Corpus``, or an in-memory scipy.sparse
document-term matrix (e.g. scikit-learn's CountVectorizer output). The tasks
read a store, so a matrix is written to a temporary one (``corpus_store``),
which the workers must be able to see (a LocalCluster's do), and removed when
the fit ends. Documents to transform or score in memory are a matrix or a
``CSRBatch`` (``csr_arrays``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from dscir.corpus.store import CSRBatch, Corpus
from dscir.corpus.writer import write_corpus
from dscir.errors import DscirError


def store_path(corpus) -> str:
    """The path of a corpus given as a path or an open ``Corpus``."""
    if isinstance(corpus, Corpus):
        return str(corpus.path)
    if isinstance(corpus, (str, Path)):
        return str(corpus)
    raise DscirError(
        f"corpus must be a store path or a dscir.corpus.Corpus, got {type(corpus).__name__}")


def is_matrix(corpus) -> bool:
    """Whether ``corpus`` is an in-memory scipy.sparse document-term matrix."""
    import scipy.sparse as sp

    return sp.issparse(corpus)


def csr_arrays(docs, n_words: int):
    """(indptr, indices, data) of a scipy.sparse document-term matrix or a CSRBatch."""
    if isinstance(docs, CSRBatch):
        indptr, indices, data = docs.indptr, docs.indices, docs.data
    else:
        import scipy.sparse as sp

        if not sp.issparse(docs):
            raise DscirError("docs must be a scipy.sparse document-term matrix or a CSRBatch")
        m = sp.csr_matrix(docs)
        if m.shape[1] != n_words:
            raise DscirError(f"docs have {m.shape[1]} vocabulary columns, the model has {n_words}")
        m.sum_duplicates()
        indptr, indices, data = m.indptr, m.indices, m.data
    return (np.asarray(indptr, np.int64), np.asarray(indices, np.int32),
            np.asarray(data, np.int32))


@contextlib.contextmanager
def scoring_store(matrix) -> Iterator[str]:
    """A temporary store of a scipy.sparse document-term matrix in which every
    document is held out (the documents to score), removed when the block ends."""
    import zarr

    from dscir import integrity

    with corpus_store(matrix) as path:
        flag = np.ones(matrix.shape[0], dtype=bool)
        chunks = Corpus.open(path).chunk_docs
        zarr.open_group(path, mode="r+").create_array(
            "heldout", shape=flag.shape, dtype="bool", chunks=(chunks,),
            **integrity.array_options())[...] = flag
        yield path


@contextlib.contextmanager
def corpus_store(corpus, vocabulary=None) -> Iterator:
    """The store a fit reads: ``corpus`` itself (a path or ``Corpus``), or a
    scipy.sparse document-term matrix written to a temporary store (columns
    named by ``vocabulary``, default "0", "1", ...; no held-out documents),
    removed when the block ends."""
    if not is_matrix(corpus):
        if vocabulary is not None:
            raise DscirError("vocabulary= names the columns of a scipy.sparse matrix; a corpus "
                             "store has its own vocabulary")
        yield corpus
        return
    tmp = tempfile.mkdtemp(prefix="dscir-fit-")
    try:
        path = os.path.join(tmp, "corpus.zarr")
        write_corpus(path, corpus, vocabulary=vocabulary)
        yield path
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
