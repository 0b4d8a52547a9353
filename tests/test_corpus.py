"""The corpus store: ingestion of the shared corpora, reads, splits, bad input."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from dscir.cli import main
from dscir.corpus import Corpus, completion_split, ingest_ldac, ingest_uci, split_heldout, write_corpus
from dscir.errors import CorpusError

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
pytestmark = pytest.mark.skipif(not DATA.exists(), reason="shared data not present")


def parse_ldac(path: Path) -> list[dict[int, int]]:
    docs = []
    for line in path.read_text().splitlines():
        parts = line.split()
        if parts:
            docs.append({int(a): int(b) for a, b in (p.split(":") for p in parts[1:])})
    return docs


def test_reuters_round_trip(tmp_path):
    src = DATA / "reuters"
    corpus = ingest_ldac(src / "reuters.ldac", src / "reuters.tokens", tmp_path / "r.zarr",
                         chunk_docs=64)
    assert (corpus.n_docs, corpus.n_words, corpus.n_tokens) == (395, 4258, 84010)
    assert list(corpus.vocabulary[:3]) == (src / "reuters.tokens").read_text().split()[:3]
    expected = parse_ldac(src / "reuters.ldac")
    docs = np.array([394, 0, 77, 128, 63, 64])  # unsorted, across chunk boundaries
    batch = corpus.read(docs)
    for row, d in enumerate(docs):
        a, b = batch.indptr[row], batch.indptr[row + 1]
        assert dict(zip(batch.indices[a:b].tolist(), batch.data[a:b].tolist())) == expected[d]
    lengths = corpus.doc_lengths
    assert lengths.sum() == 84010 and lengths[5] == sum(expected[5].values())


def test_kos_uci_round_trip(tmp_path):
    path = DATA / "kos" / "docword.kos.txt.gz"
    corpus = ingest_uci(path, tmp_path / "kos.zarr")
    assert (corpus.n_docs, corpus.n_words, corpus.n_tokens) == (3430, 6906, 467714)
    with gzip.open(path, "rt") as f:
        for _ in range(3):
            f.readline()
        rows = np.loadtxt(f, dtype=np.int64, max_rows=2000)
    first = rows[rows[:, 0] == 1]
    batch = corpus.read([0])
    assert np.array_equal(batch.indices, first[:, 1] - 1)
    assert np.array_equal(batch.data, first[:, 2])


def test_heldout_split_is_deterministic_and_stored(tmp_path):
    m = sp.random(50, 20, density=0.3, format="csr", random_state=0)
    m.data = np.ceil(m.data * 5)
    write_corpus(tmp_path / "a", m)
    write_corpus(tmp_path / "b", m)
    a = split_heldout(tmp_path / "a", n_heldout=10, seed=3)
    b = split_heldout(tmp_path / "b", n_heldout=10, seed=3)
    assert np.array_equal(a, b) and a.size == 10
    c = Corpus.open(tmp_path / "a")
    assert np.array_equal(c.heldout_docs(), a)
    assert np.union1d(c.train_docs(), c.heldout_docs()).size == 50
    assert np.array_equal(split_heldout(tmp_path / "b", every=10), [9, 19, 29, 39, 49])


def test_completion_split_takes_every_tenth_token():
    m = sp.csr_matrix(np.array([[3, 0, 9, 13], [0, 0, 5, 0]]))
    from dscir.corpus import CSRBatch

    batch = CSRBatch(m.indptr.astype(np.int64), m.indices.astype(np.int32),
                     m.data.astype(np.int32), np.arange(2))
    obs, test = completion_split(batch, every=10)
    # doc 0: tokens in word order 0,0,0,2*9,3*13 -> positions 9, 19 are words 2 and 3
    assert test.indices[test.indptr[0]:test.indptr[1]].tolist() == [2, 3]
    assert test.data[test.indptr[0]:test.indptr[1]].tolist() == [1, 1]
    assert obs.data[: obs.indptr[1]].sum() == 25 - 2
    assert test.indptr[2] - test.indptr[1] == 0  # 5 tokens: none tested


@pytest.mark.parametrize("text, message", [
    ("2 0:1 1:x\n", "r.ldac:1: malformed"),
    ("3 0:1 1:2\n", "header says 3 entries"),
    ("1 0:1\n1 7:1\n", "r.ldac:2: word id out of range"),
    ("1 0:0\n", "counts must be positive"),
    ("", "empty"),
])
def test_bad_ldac_is_rejected_and_leaves_nothing(tmp_path, text, message):
    (tmp_path / "r.ldac").write_text(text)
    (tmp_path / "v.txt").write_text("a\nb\nc\n")
    with pytest.raises(CorpusError, match=message):
        ingest_ldac(tmp_path / "r.ldac", tmp_path / "v.txt", tmp_path / "out.zarr")
    assert not any(p.name.startswith(("out.zarr", ".out.zarr")) for p in tmp_path.iterdir())


def test_uci_header_disagreeing_with_body(tmp_path):
    (tmp_path / "d.txt").write_text("2\n3\n5\n1 1 2\n2 3 1\n")
    with pytest.raises(CorpusError, match="header says 5 entries"):
        ingest_uci(tmp_path / "d.txt", tmp_path / "out.zarr")


def test_existing_store_is_not_overwritten_and_cli_errors(tmp_path, capsys):
    src = DATA / "reuters"
    args = ["ingest", "ldac", str(src / "reuters.ldac"), str(tmp_path / "s"),
            "--vocab", str(src / "reuters.tokens"), "--heldout-every", "10"]
    assert main(args) == 0
    assert main(["info", str(tmp_path / "s")]) == 0
    out = capsys.readouterr().out
    assert "395" in out and "84,010" in out and "held out:    39" in out
    assert main(args) == 2
    assert "exists" in capsys.readouterr().err
    assert main(["info", str(tmp_path / "missing")]) == 2
    assert "no corpus store" in capsys.readouterr().err
    assert main(["ingest", "ldac", str(tmp_path / "nofile"), str(tmp_path / "t"),
                 "--vocab", str(src / "reuters.tokens")]) == 2
    assert not (tmp_path / "t").exists()
