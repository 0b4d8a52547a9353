"""The corpus store: every ingestion path on the shared corpora, checked against
independent parses; reads, splits, layout; bad input rejected, nothing left behind."""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import zarr

from dscir.cli import main
from dscir.corpus import (Corpus, CSRBatch, ingest_bow, ingest_ldac,
                          ingest_uci, split_heldout, write_corpus)
from dscir.corpus.text import ENGLISH_STOP_WORDS, ingest_text, trec_source
from dscir.models.lda import completion_split
from dscir.errors import CorpusError
from support.data import DATA


needs_data = pytest.mark.skipif(not DATA.is_dir(), reason="shared data not present")


# -- independent parsers (plain Python, no numpy) ------------------------------------

def _lines(path: Path) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return f.read().splitlines()


def parse_ldac(path: Path) -> list[dict[int, int]]:
    docs = []
    for line in _lines(path):
        parts = line.split()
        if parts:
            doc = {}
            for p in parts[1:]:
                w, c = p.split(":")
                doc[int(w)] = doc.get(int(w), 0) + int(c)
            docs.append(doc)
    return docs


def parse_uci(path: Path) -> list[dict[int, int]]:
    lines = _lines(path)
    docs = [{} for _ in range(int(lines[0]))]
    for line in lines[3:]:
        d, w, c = map(int, line.split())
        docs[d - 1][w - 1] = docs[d - 1].get(w - 1, 0) + c
    return docs


def as_dicts(corpus: Corpus, docs=None) -> list[dict[int, int]]:
    docs = np.arange(corpus.n_docs) if docs is None else np.asarray(docs)
    b = corpus.read(docs)
    return [dict(zip(b.indices[b.indptr[k]:b.indptr[k + 1]].tolist(),
                     b.data[b.indptr[k]:b.indptr[k + 1]].tolist())) for k in range(docs.size)]


def leftovers(directory: Path, name: str = "out.zarr") -> list[str]:
    return [p.name for p in directory.iterdir() if name in p.name]


# -- the shared corpora through the CLI ----------------------------------------------

SHARED = {
    "reuters": (["ldac", "reuters/reuters.ldac", "--vocab", "reuters/reuters.tokens"],
                (395, 4258, 84010), parse_ldac),
    "wiki": (["ldac", "wiki/wiki.ldac.gz", "--vocab", "wiki/vocab.txt"],
             (7961, 6130, 2844630), parse_ldac),
    "kos": (["uci", "kos/docword.kos.txt.gz"], (3430, 6906, 467714), parse_uci),
    "msweb": (["uci", "msweb/docword.msweb.txt.gz", "--vocab", "msweb/vocab.msweb.txt"],
              (32710, 285, 98653), parse_uci),
}


@needs_data
@pytest.mark.parametrize("name", list(SHARED))
def test_shared_corpus_ingests_by_cli_with_true_sizes_and_exact_counts(tmp_path, capsys, name):
    args, sizes, parse = SHARED[name]
    fmt, src, *rest = args
    rest = [str(DATA / a) if "/" in a else a for a in rest]
    store = tmp_path / f"{name}.zarr"
    assert main(["ingest", fmt, str(DATA / src), str(store), *rest, "--quiet"]) == 0
    capsys.readouterr()
    assert main(["info", str(store)]) == 0
    out = capsys.readouterr().out
    for label, value in zip(("documents", "vocabulary", "tokens"), sizes):
        assert re.search(rf"^{label}:\s+{value:,}$", out, re.M), out
    assert "per shard" in out and "held out:    0 documents" in out

    corpus = Corpus.open(store)
    assert (corpus.n_docs, corpus.n_words, corpus.n_tokens) == sizes
    assert as_dicts(corpus) == parse(DATA / src)
    assert corpus.doc_lengths.sum() == sizes[2]
    vocab = [a for a in rest if "/" in a]
    if vocab:
        assert corpus.vocabulary.tolist() == [w.strip() for w in _lines(Path(vocab[0]))]
    else:  # UCI without a vocabulary: words named by their 1-based UCI ids
        assert corpus.vocabulary[[0, -1]].tolist() == ["1", str(sizes[1])]


@needs_data
def test_reads_in_any_order_and_blocks_match(tmp_path):
    src = DATA / "reuters"
    corpus = ingest_ldac(src / "reuters.ldac", src / "reuters.tokens", tmp_path / "r.zarr",
                         chunk_docs=16, shard_chunks=4)
    expected = parse_ldac(src / "reuters.ldac")
    docs = np.array([394, 0, 77, 128, 63, 64, 77])  # unsorted, repeated, across chunks
    assert as_dicts(corpus, docs) == [expected[d] for d in docs]
    assert as_dicts(corpus, []) == []
    starts = []
    for start, batch in corpus.iter_blocks():
        starts.append(start)
        assert batch.docs.tolist() == list(range(start, min(start + 16, 395)))
    assert starts == list(range(0, 395, 16))
    with pytest.raises(CorpusError, match="out of range"):
        corpus.read([395])
    # the shard cache: used when the counts fit, and the same answers without it
    for cache_bytes, used in ((0, False), (8 * corpus.nnz - 1, False), (8 * corpus.nnz, True)):
        other = Corpus.open(tmp_path / "r.zarr", cache_bytes=cache_bytes)
        assert other._use_cache == used
        assert as_dicts(other, docs) == as_dicts(corpus, docs)
        assert as_dicts(other) == expected
        assert len(other._cache) == (-(-corpus.nnz // corpus.meta["shard_entries"]) if used else 0)
    # chunked and sharded by documents
    g = zarr.open_group(str(tmp_path / "r.zarr"), mode="r")
    assert g["indptr"].chunks == (16,) and g["indptr"].shards == (64,)
    m = corpus.meta
    assert g["indices"].chunks == (m["chunk_entries"],)
    assert g["indices"].shards == (m["chunk_entries"] * 4,)
    assert m["chunk_entries"] >= corpus.nnz / 395 * 16
    assert g.attrs["encoding-type"] == "csr_matrix" and g.attrs["shape"] == [395, 4258]


@needs_data
@pytest.mark.parametrize("fmt", ["ldac", "uci"])
def test_tiny_blocks_give_the_same_store(tmp_path, fmt):
    """Documents spanning parse blocks and shard boundaries are carried over intact."""
    if fmt == "ldac":
        src = DATA / "reuters"
        expected = parse_ldac(src / "reuters.ldac")

        def ingest(out, **kw):
            return ingest_ldac(src / "reuters.ldac", src / "reuters.tokens", out, **kw)
    else:
        src = DATA / "msweb" / "docword.msweb.txt.gz"
        expected = parse_uci(src)

        def ingest(out, **kw):
            return ingest_uci(src, out, **kw)

    small = ingest(tmp_path / "small.zarr", block_bytes=1500, chunk_docs=40, shard_chunks=3)
    assert as_dicts(small) == expected
    assert small.meta["shard_docs"] == 120


@pytest.mark.parametrize("block_bytes", [1, 2, 5, 9, 64])
def test_blocks_shorter_than_a_line(tmp_path, block_bytes):
    (tmp_path / "u.txt").write_text("3\n3\n3\n1 1 1\n3 2 2\n3 3 1")  # no final newline
    (tmp_path / "l.txt").write_text("1 0:1\n\n2 1:2 2:1")
    (tmp_path / "v.txt").write_text("a\nb\nc")
    u = ingest_uci(tmp_path / "u.txt", tmp_path / "u.zarr", block_bytes=block_bytes)
    assert as_dicts(u) == [{0: 1}, {}, {1: 2, 2: 1}]
    lc = ingest_ldac(tmp_path / "l.txt", tmp_path / "v.txt", tmp_path / "l.zarr",
                     block_bytes=block_bytes)
    assert as_dicts(lc) == [{0: 1}, {1: 2, 2: 1}] and lc.vocabulary.tolist() == ["a", "b", "c"]


@needs_data
def test_ap_raw_text_matches_an_independent_tokenization(tmp_path, capsys):
    path = DATA / "ap" / "ap.txt.gz"
    texts, ids = [], []
    for block in gzip.open(path, "rt").read().split("</DOC>")[:-1]:
        ids.append(block.split("<DOCNO>")[1].split("</DOCNO>")[0].strip())
        texts.append(block.split("<TEXT>")[1].split("</TEXT>")[0])
    tokens = [[t for t in re.split(r"[^a-z]+", x.lower())
               if len(t) >= 2 and t not in ENGLISH_STOP_WORDS] for x in texts]
    df = Counter(t for toks in tokens for t in set(toks))
    vocab = sorted(t for t, n in df.items() if 5 <= n <= len(texts) // 2)
    index = {t: i for i, t in enumerate(vocab)}

    out = tmp_path / "ap.zarr"
    assert main(["ingest", "trec", str(path), str(out), "--min-df", "5", "--max-df", "0.5",
                 "--heldout-every", "10", "--quiet"]) == 0
    assert "held out:    224 documents" in capsys.readouterr().out
    corpus = Corpus.open(out)
    assert corpus.n_docs == 2246 and corpus.doc_ids.tolist() == ids
    assert corpus.vocabulary.tolist() == vocab
    expected = [dict(Counter(index[t] for t in toks if t in index)) for toks in tokens]
    assert as_dicts(corpus) == expected
    assert corpus.n_tokens == sum(sum(e.values()) for e in expected)

    capped = ingest_text(trec_source(path), tmp_path / "cap.zarr", min_df=5, max_df=0.5,
                         max_vocab=1000)
    top = sorted(vocab, key=lambda t: (-df[t], t))[:1000]
    assert capped.vocabulary.tolist() == sorted(top)


def test_text_sources_directory_jsonl_csv_tsv(tmp_path):
    docs = {"a": "The cat sat; the CAT ran!", "b": "dogs and cats: 3 dogs", "c": "the of and"}
    d = tmp_path / "dir"
    (d / "sub").mkdir(parents=True)
    (d / "a.txt").write_text(docs["a"])
    (d / "sub" / "b.txt").write_text(docs["b"])
    (d / "c.txt").write_text(docs["c"])
    (tmp_path / "d.jsonl").write_text(
        "".join(json.dumps({"id": k, "body": v}) + "\n" for k, v in docs.items()))
    for name, sep in (("d.csv", ","), ("d.tsv", "\t")):
        rows = [f"key{sep}text"] + [f'{k}{sep}"{v}"' for k, v in docs.items()]
        (tmp_path / name).write_text("\n".join(rows) + "\n")
    runs = {
        "text": [str(d)],
        "jsonl": [str(tmp_path / "d.jsonl"), "--text-field", "body", "--id-field", "id"],
        "csv": [str(tmp_path / "d.csv"), "--id-column", "key"],
        "tsv": [str(tmp_path / "d.tsv"), "--id-column", "key"],
    }
    expected_vocab = ["cat", "cats", "dogs", "ran", "sat"]
    for fmt, args in runs.items():
        out = tmp_path / f"{fmt}.zarr"
        assert main(["ingest", fmt, args[0], str(out), *args[1:], "--quiet"]) == 0
        c = Corpus.open(out)
        assert c.vocabulary.tolist() == expected_vocab, fmt
        ids = ["a.txt", "c.txt", "sub/b.txt"] if fmt == "text" else ["a", "b", "c"]
        assert c.doc_ids.tolist() == ids, fmt
        got = dict(zip(ids, as_dicts(c)))
        assert got[ids[0]] == {0: 2, 3: 1, 4: 1}
        assert got["sub/b.txt" if fmt == "text" else "b"] == {1: 1, 2: 2}
        assert got["c.txt" if fmt == "text" else "c"] == {}  # only stop words: kept, empty
        assert c.meta["ingest"]["empty_docs"] == 1
    dropped = tmp_path / "dropped.zarr"
    assert main(["ingest", "text", str(d), str(dropped), "--drop-empty", "--quiet"]) == 0
    assert Corpus.open(dropped).doc_ids.tolist() == ["a.txt", "sub/b.txt"]
    kept = tmp_path / "stop.zarr"
    assert main(["ingest", "text", str(d), str(kept), "--no-stopwords", "--quiet"]) == 0
    assert "the" in Corpus.open(kept).vocabulary.tolist()


def test_scipy_matrix_round_trip_merges_duplicates(tmp_path):
    rng = np.random.default_rng(0)
    rows, cols = rng.integers(0, 300, 4000), rng.integers(0, 50, 4000)
    m = sp.coo_matrix((rng.integers(1, 5, 4000), (rows, cols)), shape=(300, 50))
    dense = m.toarray()
    with pytest.warns(UserWarning, match="the matrix: merged"):
        c = write_corpus(tmp_path / "m.zarr", m, vocabulary=[f"w{i}" for i in range(50)],
                         chunk_docs=8, shard_chunks=2)
    b = c.read(np.arange(300))
    assert np.array_equal(sp.csr_matrix((b.data, b.indices, b.indptr), shape=(300, 50)).toarray(),
                          dense)
    assert c.n_tokens == dense.sum() and c.vocabulary[7] == "w7"
    assert c.meta["ingest"]["duplicates_merged"] == 4000 - np.count_nonzero(dense)
    assert c.meta["ingest"]["empty_docs"] == int((dense.sum(axis=1) == 0).sum())
    with pytest.raises(CorpusError, match="integers"):
        write_corpus(tmp_path / "f.zarr", sp.csr_matrix(np.array([[0.5, 1.0]])))
    with pytest.raises(CorpusError, match="positive"):
        write_corpus(tmp_path / "n.zarr", sp.csr_matrix(np.array([[-1, 1]])))
    with pytest.raises(CorpusError, match="vocabulary has 1 entries"):
        write_corpus(tmp_path / "v.zarr", sp.csr_matrix(np.array([[1, 1]])), vocabulary=["a"])
    assert leftovers(tmp_path, "f.zarr") == leftovers(tmp_path, "n.zarr") == []


@needs_data
def test_gensim_style_iterable(tmp_path):
    src = DATA / "reuters"
    expected = parse_ldac(src / "reuters.ldac")
    words = [w.strip() for w in _lines(src / "reuters.tokens")]
    stream = (sorted(d.items(), reverse=True) for d in expected)  # unsorted ids are fine
    c = ingest_bow(stream, tmp_path / "g.zarr", dict(enumerate(words)))
    assert as_dicts(c) == expected and c.vocabulary.tolist() == words
    with pytest.warns(UserWarning, match="merged 1 duplicate"):
        d = ingest_bow(iter([[(0, 1), (2, 3), (0, 2)], [], [(1, 1)]]), tmp_path / "d.zarr",
                       doc_ids=["x", "y", "z"])
    assert as_dicts(d) == [{0: 3, 2: 3}, {}, {1: 1}]
    assert d.doc_ids.tolist() == ["x", "y", "z"] and d.n_words == 3
    with pytest.raises(CorpusError, match="no entry for word id 1"):
        ingest_bow([[(0, 1)]], tmp_path / "e.zarr", {0: "a", 2: "c"})
    with pytest.raises(CorpusError, match="document 1: word id 5 out of range"):
        ingest_bow([[(0, 1)], [(5, 1)]], tmp_path / "e.zarr", ["a", "b"])
    with pytest.raises(CorpusError, match="document 0: counts must be positive"):
        ingest_bow([[(0, 0)]], tmp_path / "e.zarr")
    with pytest.raises(CorpusError, match="integers"):
        ingest_bow([[(0, 0.5)]], tmp_path / "e.zarr")
    assert leftovers(tmp_path, "e.zarr") == []


def test_heldout_split_is_deterministic_and_stored(tmp_path):
    m = sp.random(50, 20, density=0.3, format="csr", random_state=0)
    m.data = np.ceil(m.data * 5)
    write_corpus(tmp_path / "a", m)
    write_corpus(tmp_path / "b", m)
    a = split_heldout(tmp_path / "a", n_heldout=10, seed=3)
    b = split_heldout(tmp_path / "b", n_heldout=10, seed=3)
    assert np.array_equal(a, b) and a.size == 10
    assert not np.array_equal(split_heldout(tmp_path / "b", n_heldout=10, seed=4), a)
    c = Corpus.open(tmp_path / "a")
    assert np.array_equal(c.heldout_docs(), a)
    assert np.union1d(c.train_docs(), c.heldout_docs()).size == 50
    assert np.array_equal(split_heldout(tmp_path / "b", every=10), [9, 19, 29, 39, 49])
    w = write_corpus(tmp_path / "w", m, heldout={"n_heldout": 10, "seed": 3})
    assert np.array_equal(w.heldout_docs(), a)  # at ingestion = afterwards
    with pytest.raises(CorpusError, match="held-out size"):
        write_corpus(tmp_path / "x", m, heldout={"n_heldout": 50})
    assert not (tmp_path / "x").exists()


def test_completion_split_takes_every_tenth_token():
    m = sp.csr_matrix(np.array([[3, 0, 9, 13], [0, 0, 5, 0]]))
    batch = CSRBatch(m.indptr.astype(np.int64), m.indices.astype(np.int32),
                     m.data.astype(np.int32), np.arange(2))
    obs, test = completion_split(batch, every=10)
    # doc 0: tokens in word order 0,0,0,2*9,3*13 -> positions 9, 19 are words 2 and 3
    assert test.indices[test.indptr[0]:test.indptr[1]].tolist() == [2, 3]
    assert test.data[test.indptr[0]:test.indptr[1]].tolist() == [1, 1]
    assert obs.data[: obs.indptr[1]].sum() == 25 - 2
    assert test.indptr[2] - test.indptr[1] == 0  # 5 tokens: none tested


# -- bad input: one message naming the problem, nothing left behind ---------------------

@pytest.mark.parametrize("text, message", [
    ("2 0:1 1:x\n", r"r.ldac:1: malformed LDA-C line \(not an integer\)"),
    ("1 0:1\n2 0:1 1\n", r"r.ldac:2: malformed LDA-C line \(expected"),
    ("1 0:1\n2 0:1 1:2:3\n", "r.ldac:2: malformed"),
    ("\n3 0:1 1:2\n", "r.ldac:2: header says 3 entries, line has 2"),
    ("1 0:1\n1 7:1\n", r"r.ldac:2: word id 7 out of range 0..2 \(no vocabulary entry: v.txt has 3 words"),
    ("1 0:1\n1 -1:1\n", "r.ldac:2: word id -1 is below 0"),
    ("1 0:0\n", "r.ldac:1: counts must be positive, got 0"),
    ("1 0:-2\n", "r.ldac:1: counts must be positive, got -2"),
    ("", "empty"),
    ("\n\n", "empty"),
])
def test_bad_ldac_is_rejected_and_leaves_nothing(tmp_path, text, message):
    (tmp_path / "r.ldac").write_text(text)
    (tmp_path / "v.txt").write_text("a\nb\nc\n")
    with pytest.raises(CorpusError, match=message):
        ingest_ldac(tmp_path / "r.ldac", tmp_path / "v.txt", tmp_path / "out.zarr")
    assert leftovers(tmp_path, "partial") == []


@pytest.mark.parametrize("text, vocab, message", [
    ("2\n3\n5\n1 1 2\n2 3 1\n", None, "header says 5 entries"),
    ("2\n3\n2\n1 1 2\n2 4 1\n", None, r"d.txt:5: word id 4 out of range 1..3 \(the header"),
    ("2\n3\n2\n1 1 2\n3 3 1\n", None, r"d.txt:5: docID 3 out of range 1..2"),
    ("2\n3\n2\n2 1 2\n1 3 1\n", None, "d.txt:5: document 1 after document 2: UCI docword "
                                     "lines must be sorted"),
    ("2\n3\n2\n1 1 0\n2 3 1\n", None, "d.txt:4: counts must be positive, got 0"),
    ("2\n3\n2\n1 1 2\n2 3\n", None, r"d.txt:5: malformed UCI line"),
    ("2\n3\n2\n1 1 2\n2 x 1\n", None, r"d.txt:5: malformed UCI line"),
    ("2\nthree\n2\n", None, "the UCI header must be three lines"),
    ("2\n3\n", None, "starts with three header lines"),
    ("", None, r"the file is empty \(no UCI header\)"),
    ("0\n3\n0\n", None, "empty"),
    ("2\n3\n2\n1 1 2\n2 3 1\n", "a\nb\n", "has 2 words but the header .* says W = 3 "
                                         r"\(missing vocabulary entries\)"),
    ("2\n3\n2\n1 1 2\n2 3 1\n", "a\n\nc\n", "v.txt:2: blank vocabulary entry"),
])
def test_bad_uci_is_rejected_and_leaves_nothing(tmp_path, text, vocab, message):
    (tmp_path / "d.txt").write_text(text)
    if vocab is not None:
        (tmp_path / "v.txt").write_text(vocab)
    with pytest.raises(CorpusError, match=message):
        ingest_uci(tmp_path / "d.txt", tmp_path / "out.zarr",
                   tmp_path / "v.txt" if vocab else None)
    assert leftovers(tmp_path, "partial") == []


def test_duplicates_are_merged_with_a_warning_and_empty_docs_counted(tmp_path, capsys):
    (tmp_path / "d.txt").write_text("4\n3\n4\n1 2 1\n1 2 3\n3 1 1\n3 3 2\n")
    with pytest.warns(UserWarning, match="merged 1 duplicate"):
        c = ingest_uci(tmp_path / "d.txt", tmp_path / "u.zarr")
    assert as_dicts(c) == [{1: 4}, {}, {0: 1, 2: 2}, {}]
    assert c.doc_ids.tolist() == ["1", "2", "3", "4"]
    assert c.meta["ingest"] == {"empty_docs": 2, "empty_policy": "kept", "format": "uci",
                                "source": str(tmp_path / "d.txt"), "duplicates_merged": 1}
    with pytest.warns(UserWarning):
        d = ingest_uci(tmp_path / "d.txt", tmp_path / "v.zarr", drop_empty=True)
    assert d.doc_ids.tolist() == ["1", "3"] and d.meta["ingest"]["empty_docs"] == 2
    (tmp_path / "r.ldac").write_text("2 1:1 1:2\n0\n")
    (tmp_path / "v.txt").write_text("a\nb\n")
    with pytest.warns(UserWarning, match="r.ldac: merged 1 duplicate"):
        e = ingest_ldac(tmp_path / "r.ldac", tmp_path / "v.txt", tmp_path / "l.zarr")
    assert as_dicts(e) == [{1: 3}, {}]
    out = tmp_path / "cli.zarr"
    assert main(["ingest", "ldac", str(tmp_path / "r.ldac"), str(out), "--vocab",
                 str(tmp_path / "v.txt"), "--drop-empty", "--quiet"]) == 0
    assert Corpus.open(out).n_docs == 1
    captured = capsys.readouterr()
    assert "dscir: warning: " in captured.err and "merged 1 duplicate" in captured.err
    assert "empty docs:  1 (dropped)" in captured.out and "duplicates:  1" in captured.out


@pytest.mark.parametrize("fmt, name, content, message", [
    ("jsonl", "d.jsonl", b'{"text": "ok"}\n{"text": "caf\xe9 bar"}\n',
     r"d.jsonl:2: not valid UTF-8 \(byte 0xe9 at column 14"),
    ("jsonl", "d.jsonl", b'{"text": "ok"}\n{"text": \n', r"d.jsonl:2: malformed JSON"),
    ("jsonl", "d.jsonl", b'{"body": "ok"}\n', r"d.jsonl:1: no string field 'text'"),
    ("jsonl", "d.jsonl", b"\n", "empty: no documents"),
    ("jsonl", "d.jsonl", b'{"text": "the and 42"}\n', "no word of the jsonl passes"),
    ("csv", "d.csv", b"id,body\n1,hello\n", "d.csv:1: no column 'text'"),
    ("csv", "d.csv", b"text,x\nhello,1\nworld\n", "d.csv:3: 1 fields, the header has 2"),
    ("csv", "d.csv", b'text,x\nhello,1\n"open quote,2\nworld,3\n',
     r"d.csv:3: malformed CSV in the row starting here \(unexpected end of data\)"),
    ("trec", "d.txt", b"<DOC>\n<TEXT>\nhello\n</TEXT>\n", "never closed"),
    ("trec", "d.txt", b"hello\n", r"d.txt:1: text outside a <DOC> block"),
    ("text", "docs", b"caf\xc3\xa9 ok\n\xff\n", r"docs/a.txt:2: not valid UTF-8 \(byte 0xff"),
])
def test_bad_text_is_rejected_and_leaves_nothing(tmp_path, capsys, fmt, name, content,
                                                 message):
    path = tmp_path / name
    if fmt == "text":
        path.mkdir()
        (path / "a.txt").write_bytes(content)
    else:
        path.write_bytes(content)
    usage = message.startswith("no word")  # the options' fault, not the file's
    assert main(["ingest", fmt, str(path), str(tmp_path / "out.zarr"), "--quiet"]) == \
        (2 if usage else 3)
    err = capsys.readouterr().err
    assert re.search(message, err), err
    assert leftovers(tmp_path, "partial") == []


@needs_data
def test_existing_store_is_not_overwritten_and_cli_errors(tmp_path, capsys):
    src = DATA / "reuters"
    store = tmp_path / "s"
    args = ["ingest", "ldac", str(src / "reuters.ldac"), str(store),
            "--vocab", str(src / "reuters.tokens"), "--heldout-every", "10", "--quiet"]
    assert main(args) == 0
    assert main(["info", str(store)]) == 0
    out = capsys.readouterr().out
    assert "395" in out and "84,010" in out and "held out:    39" in out
    marker = store / "zarr.json"
    before = marker.read_bytes()
    assert main(args) == 2
    assert "exists" in capsys.readouterr().err and marker.read_bytes() == before
    assert main([*args[:-3], "--heldout", "5", "--seed", "1", "--overwrite", "--quiet"]) == 0
    assert Corpus.open(store).heldout_docs().size == 5
    assert main(["info", str(tmp_path / "missing")]) == 2
    assert "no corpus store" in capsys.readouterr().err
    assert main(["ingest", "ldac", str(tmp_path / "nofile"), str(tmp_path / "t"),
                 "--vocab", str(src / "reuters.tokens")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["ingest", "ldac", str(src / "reuters.ldac"), str(tmp_path / "t"),
                 "--vocab", str(src / "reuters.tokens"), "--heldout-every", "400"]) == 2
    assert "holds out nothing" in capsys.readouterr().err
    assert leftovers(tmp_path, "t") == []
    assert main(["ingest", "ldac", str(src / "reuters.ldac"), str(tmp_path / "t")]) == 2
    assert "needs --vocab" in capsys.readouterr().err


def test_every_registered_format_has_a_parser_and_an_unknown_one_is_one_line(capsys):
    from dscir.corpus.formats import FORMATS

    assert main(["ingest", "--help"]) == 0
    out = capsys.readouterr().out
    for name, fmt in FORMATS.items():
        assert re.search(rf"^ +{name} +{re.escape(fmt.description[:20])}", out, re.M), name
        assert main(["ingest", name, "--help"]) == 0
        assert f"usage: dscir ingest {name} " in capsys.readouterr().out
    assert main(["ingest", "nosuch", "in.txt", "out.zarr", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("dscir: error: unknown input format 'nosuch'")
    assert all(name in err for name in FORMATS)


def test_writer_streams_whole_shards_and_an_interrupt_leaves_nothing(tmp_path):
    from dscir.corpus import CorpusWriter

    with CorpusWriter(tmp_path / "out.zarr", chunk_docs=4, shard_chunks=2) as w:
        for d in range(21):  # one document a call: 2 entries each
            w.add([2], [d % 5, 5 + d % 3], [1, d + 1], [f"d{d}"])
            assert w._n_buf_docs < 8  # documents leave memory shard by shard
        assert w._arrays["indptr"].shape[0] == 16 and w._arrays["doc_ids"].shape[0] == 16
        assert not (tmp_path / "out.zarr").exists()
        c = w.finish([f"w{i}" for i in range(8)])
    assert c.n_docs == 21 and c.nnz == 42 and c.n_tokens == 21 + 21 * 22 // 2
    assert as_dicts(c, [20]) == [{0: 1, 7: 21}] and c.doc_ids[20] == "d20"

    rng = np.random.default_rng(1)  # blocks of any size, shard edges anywhere
    m = sp.random(500, 30, density=0.1, format="csr", random_state=1)
    m.data = np.ceil(m.data * 4)
    with CorpusWriter(tmp_path / "blocks.zarr", chunk_docs=3, shard_chunks=5) as w:
        lo, sizes = 0, [14, 15]  # 14 + 15 + 1 row offsets = two whole shards
        while lo < 500:
            hi = min(lo + (sizes.pop(0) if sizes else int(rng.integers(1, 40))), 500)
            a, b = m.indptr[lo], m.indptr[hi]
            w.add(np.diff(m.indptr[lo:hi + 1]), m.indices[a:b], m.data[a:b],
                  np.arange(lo, hi).astype(str))
            lo = hi
        c = w.finish([f"w{i}" for i in range(30)])
    b = c.read(np.arange(500))
    assert abs(sp.csr_matrix((b.data, b.indices, b.indptr), shape=m.shape) - m).sum() == 0
    assert c.doc_ids.tolist() == [str(i) for i in range(500)]

    def docs():
        yield from ([(0, 1)] for _ in range(5000))
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ingest_bow(docs(), tmp_path / "int.zarr", block_docs=1000, chunk_docs=16)
    assert leftovers(tmp_path, "int.zarr") == []


def test_anndata_reads_the_counts(tmp_path):
    """The store's root is an AnnData ``csr_matrix`` element (anndata is not a
    dependency of dscir; it is in the ``test`` extra, so CI runs this test)."""
    anndata_io = pytest.importorskip("anndata.io")
    m = sp.random(300, 40, density=0.2, format="csr", random_state=0)
    m.data = np.ceil(m.data * 5)
    write_corpus(tmp_path / "s.zarr", m, chunk_docs=16, shard_chunks=2)
    group = zarr.open_group(str(tmp_path / "s.zarr"), mode="r")
    assert abs(anndata_io.read_elem(group) - m).sum() == 0
    assert abs(anndata_io.sparse_dataset(group)[10:20] - m[10:20]).sum() == 0


def test_tsv_is_iana_tsv_unless_quoting_csv(tmp_path, capsys):
    """A TSV field may begin with a quote (dialogue) by default; --quoting csv
    reads a TSV written with CSV quoting (a tab inside quotes), which the default
    rejects with a hint naming --quoting csv."""
    plain = tmp_path / "novel.tsv"
    plain.write_text('text\tid\n"Hello," she whispered.\t1\n"Quiet" readers\t2\r\n'
                     'no quotes here\t3\n', encoding="utf-8")
    out = tmp_path / "novel.zarr"
    assert main(["ingest", "tsv", str(plain), str(out), "--id-column", "id", "-q"]) == 0
    c = Corpus.open(out)
    assert c.doc_ids.tolist() == ["1", "2", "3"]
    words = c.vocabulary.tolist()
    assert words == ["hello", "quiet", "quotes", "readers", "whispered"]
    assert as_dicts(c)[1] == {words.index("quiet"): 1, words.index("readers"): 1}
    assert main(["ingest", "tsv", str(plain), str(tmp_path / "q.zarr"), "--quoting",
                 "csv", "-q"]) == 3
    assert "malformed CSV" in capsys.readouterr().err

    quoted = tmp_path / "quoted.tsv"
    quoted.write_text('text\tid\n"a tab\tinside quotes"\tx\n', encoding="utf-8")
    assert main(["ingest", "tsv", str(quoted), str(tmp_path / "c.zarr"), "--quoting",
                 "csv", "--id-column", "id", "-q"]) == 0
    assert Corpus.open(tmp_path / "c.zarr").vocabulary.tolist() == ["inside", "quotes", "tab"]
    assert main(["ingest", "tsv", str(quoted), str(tmp_path / "n.zarr"), "-q"]) == 3
    err = capsys.readouterr().err
    assert "quoted.tsv:2: 3 fields, the header has 2; a TSV field holds no tab: for CSV " \
        "quoting pass --quoting csv" in err
    assert leftovers(tmp_path, "partial") == []


LATIN1 = "Café naïve déjà\n"


@pytest.mark.parametrize("fmt", ["csv", "tsv", "jsonl", "text", "trec", "ldac"])
def test_encoding_reads_latin1_and_a_decode_error_names_the_option(tmp_path, capsys, fmt):
    body = {"csv": f"text\n{LATIN1}", "tsv": f"text\n{LATIN1}",
            "jsonl": json.dumps({"text": LATIN1}, ensure_ascii=False) + "\n",
            "trec": f"<DOC>\n<DOCNO> 1 </DOCNO>\n<TEXT>\n{LATIN1}</TEXT>\n</DOC>\n",
            "ldac": "3 0:1 1:1 2:1\n", "text": LATIN1}[fmt]
    src = tmp_path / "in"
    extra = []
    if fmt == "text":
        src.mkdir()
        (src / "a.txt").write_bytes(body.encode("latin-1"))
    else:
        src.write_bytes(body.encode("latin-1"))
    if fmt == "ldac":
        (tmp_path / "v.txt").write_bytes("café\nnaïve\ndéjà\n".encode("latin-1"))
        extra = ["--vocab", str(tmp_path / "v.txt")]
    assert main(["ingest", fmt, str(src), str(tmp_path / "u.zarr"), *extra, "-q"]) == 3
    err = capsys.readouterr().err
    assert re.search(r":[0-9]+: not valid UTF-8 \(byte 0xe9 at column [0-9]+, .*e.g. "
                     r"--encoding latin-1", err), err
    assert err.count("\n") == 1 and leftovers(tmp_path, "partial") == []
    out = tmp_path / "l.zarr"
    assert main(["ingest", fmt, str(src), str(out), *extra, "--encoding", "latin-1",
                 "-q"]) == 0
    assert sorted(Corpus.open(out).vocabulary.tolist()) == ["café", "déjà", "naïve"]


def test_an_encoding_the_readers_cannot_use_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "d.csv").write_text("text\nhello\n")
    for name, message in (("utf-16", "utf-16 is not supported (lines are cut at the byte "
                                     "0x0a); convert the file to UTF-8"),
                          ("utf-16-be", "utf-16-be is not supported"),
                          ("klingon", "unknown text encoding 'klingon'")):
        assert main(["ingest", "csv", str(tmp_path / "d.csv"), str(tmp_path / "o.zarr"),
                     "--encoding", name]) == 2
        err = capsys.readouterr().err
        assert "argument --encoding: " + message in err, err
    with pytest.raises(CorpusError, match="encoding: unknown text encoding"):
        ingest_text(trec_source(tmp_path / "d.csv", encoding="klingon"), tmp_path / "p.zarr")
