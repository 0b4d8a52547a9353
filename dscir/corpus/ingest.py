"""Ingestion from LDA-C and UCI docword files (plain or gzip)."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

from dscir.corpus.store import _write
from dscir.errors import CorpusError


def _open_text(path: Path):
    path = Path(path)
    if not path.exists():
        raise CorpusError(f"no such file: {path}")
    opener = gzip.open if path.suffix == ".gz" else open
    return opener(path, "rt", encoding="utf-8")


def read_vocabulary(path) -> np.ndarray:
    with _open_text(Path(path)) as f:
        return np.array([line.rstrip("\n").strip() for line in f if line.strip()], dtype=str)


def ingest_ldac(path, vocab_path, out, *, overwrite=False, chunk_docs=1024, progress=False):
    vocab = read_vocabulary(vocab_path)
    W = vocab.size
    indptr, indices, data = [0], [], []
    with _open_text(Path(path)) as f:
        for lineno, line in enumerate(f, 1):
            parts = line.split()
            if not parts:
                continue
            try:
                n = int(parts[0])
                pairs = [p.split(":") for p in parts[1:]]
                ids = np.array([int(a) for a, _ in pairs], dtype=np.int64)
                cts = np.array([int(b) for _, b in pairs], dtype=np.int64)
            except ValueError as exc:
                raise CorpusError(f"{path}:{lineno}: malformed LDA-C line ({exc})") from None
            if n != ids.size:
                raise CorpusError(f"{path}:{lineno}: header says {n} entries, line has {ids.size}")
            if ids.size and (ids.min() < 0 or ids.max() >= W):
                raise CorpusError(f"{path}:{lineno}: word id out of range 0..{W - 1}")
            if ids.size and cts.min() <= 0:
                raise CorpusError(f"{path}:{lineno}: counts must be positive")
            order = np.argsort(ids, kind="stable")
            ids, cts = ids[order], cts[order]
            u, inv = np.unique(ids, return_inverse=True)
            c = np.bincount(inv, weights=cts).astype(np.int64)
            indices.append(u); data.append(c); indptr.append(indptr[-1] + u.size)
    n_docs = len(indptr) - 1
    return _write(Path(out), np.array(indptr, np.int64),
                  np.concatenate(indices).astype(np.int32) if indices else np.zeros(0, np.int32),
                  np.concatenate(data).astype(np.int32) if data else np.zeros(0, np.int32),
                  vocab, np.array([str(i) for i in range(n_docs)]), W, overwrite, chunk_docs)


def ingest_uci(path, out, vocab_path=None, *, overwrite=False, chunk_docs=1024, progress=False):
    with _open_text(Path(path)) as f:
        D, W, nnz = (int(f.readline()) for _ in range(3))
        rows = np.loadtxt(f, dtype=np.int64, ndmin=2)
    if rows.shape[0] != nnz:
        raise CorpusError(f"{path}: header says {nnz} entries, body has {rows.shape[0]}")
    d, w, c = rows[:, 0] - 1, rows[:, 1] - 1, rows[:, 2]
    import scipy.sparse as sp
    m = sp.csr_matrix((c, (d, w)), shape=(D, W))
    m.sum_duplicates()
    vocab = read_vocabulary(vocab_path) if vocab_path else np.array([str(i) for i in range(W)])
    return _write(Path(out), m.indptr.astype(np.int64), m.indices.astype(np.int32),
                  m.data.astype(np.int32), vocab, np.array([str(i) for i in range(D)]), W,
                  overwrite, chunk_docs)
