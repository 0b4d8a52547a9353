"""Fuzzing the readers (Hypothesis): every ingest format and the store reader,
fed random and mutated inputs (bytes inserted, deleted, flipped, truncated,
random Unicode, gzip-compressed, gzip magic followed by junk), either stop with
a ``DscirError`` or write a well-formed store; never another exception, never a
``.NAME.partial-*`` directory left beside the target. Valid generated corpora
round-trip exactly."""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from dscir.corpus import Corpus, ingest_ldac, ingest_uci, write_corpus  # noqa: E402
from dscir.corpus.formats import FORMATS, get_format  # noqa: E402
from dscir.errors import DscirError  # noqa: E402

# DSCIR_FUZZ_EXAMPLES=500 hunts longer with fresh random examples; by default the
# examples are fixed (derandomized) so that the suite is reproducible.
_HUNT = int(os.environ.get("DSCIR_FUZZ_EXAMPLES", 0))
FUZZ = settings(max_examples=_HUNT or 50, deadline=None, derandomize=not _HUNT,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])

# -- valid small inputs, one per format -------------------------------------------------

VOCAB = b"apple\nbanana\ncherry\n"
LDAC = b"2 0:1 1:2\n1 2:3\n\n3 0:1 1:1 2:4\n"
UCI = b"3\n3\n5\n1 1 1\n1 2 2\n2 3 3\n3 1 1\n3 3 4\n"
JSONL = (b'{"id": "a", "text": "Apples and bananas"}\n'
         b'{"id": "b", "text": "cherries, apples; caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac"}\n')
CSV = b'id,text\n1,apples and bananas\n2,"cherries, quoted\nover two lines"\n'
TSV = b"id\ttext\n1\tapples and bananas\n2\tcherries apples\n"
TREC = (b"<DOC>\n<DOCNO> AP-1 </DOCNO>\n<TEXT>\napples and bananas\n</TEXT>\n</DOC>\n"
        b"<DOC>\n<DOCNO> AP-2 </DOCNO>\n<TEXT>\ncherries apples\n</TEXT>\n</DOC>\n")
TEXT_FILES = {"a.txt": b"apples and bananas", "sub/b.txt": b"cherries apples\n"}


# -- mutations --------------------------------------------------------------------------

@st.composite
def mutated(draw, seed: bytes) -> bytes:
    """``seed`` after a few random edits, maybe gzip-compressed (and edited after)."""
    data = bytearray(seed)
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["insert", "delete", "flip", "truncate", "unicode",
                                     "digits", "gzip", "gzip-junk", "dup"]))
        pos = draw(st.integers(0, len(data)))
        if kind == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del data[pos:pos + draw(st.integers(1, 8))]
        elif kind == "flip" and data:
            i = min(pos, len(data) - 1)
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif kind == "truncate":
            del data[pos:]
        elif kind == "unicode":
            data[pos:pos] = draw(st.text(max_size=8)).encode("utf-8", "surrogatepass")
        elif kind == "digits":
            data[pos:pos] = draw(st.sampled_from(
                [b"0", b"-1", b"99999999999999999999999", b"2147483648", b"1e3", b"1.5",
                 b"\xd9\xa3", b":", b"\r", b"\x0c", b"\x1c", b"\x00", b"\xe2\x80\xa8", b"\"",
                 b"<DOC>", b"</DOC>", b"<TEXT>", b"</TEXT>", b"{", b"[" * 3000]))
        elif kind == "gzip":
            data = bytearray(gzip.compress(bytes(data), mtime=0))
        elif kind == "gzip-junk":
            data = bytearray(b"\x1f\x8b" + draw(st.binary(max_size=40)))
        elif kind == "dup":
            data[pos:pos] = data[: draw(st.integers(0, len(data)))]
    return bytes(data)


def inputs(seed: bytes):
    """Mutations of ``seed``, random bytes and random text."""
    return st.one_of(mutated(seed), st.binary(max_size=200),
                     st.text(max_size=200).map(lambda t: t.encode("utf-8")))


# -- the property ---------------------------------------------------------------------

def _options(**kw) -> argparse.Namespace:
    base = dict(vocab=None, min_df=1, max_df=1.0, max_vocab=None, min_length=2,
                no_stopwords=False, pattern="*", text_field="text", id_field=None,
                column="text", id_column=None, quoting="none", encoding="utf-8")
    base.update(kw)
    return argparse.Namespace(**base)


def _well_formed(store: Corpus) -> None:
    """A store that opened: its arrays agree with its metadata."""
    n_docs, n_words = store.n_docs, store.n_words
    assert n_docs >= 1 and n_words >= 1
    assert store.vocabulary.shape == (n_words,)
    assert store.doc_ids.shape == (n_docs,)
    batch = store.read(np.arange(n_docs))
    assert batch.indptr[0] == 0 and np.all(np.diff(batch.indptr) >= 0)
    assert batch.indptr[-1] == batch.indices.size == batch.data.size == store.nnz
    assert np.all(batch.data > 0) and int(batch.data.sum()) == store.n_tokens
    if batch.indices.size:
        assert batch.indices.min() >= 0 and batch.indices.max() < n_words
    for d in range(n_docs):
        row = batch.indices[batch.indptr[d]:batch.indptr[d + 1]]
        assert np.all(np.diff(row) > 0)


def check_ingest(run, out: Path) -> Corpus | None:
    """``run()`` writes the store ``out`` or raises a DscirError; nothing else,
    and no partial directory left beside ``out``."""
    store = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            store = run()
    except DscirError:
        assert not out.exists()
    leftovers = sorted(p.name for p in out.parent.iterdir()
                       if p.name.startswith(f".{out.name}.partial-")
                       or p.name.startswith(f".{out.name}.old-"))
    assert not leftovers, leftovers
    if store is not None:
        _well_formed(Corpus.open(out))
    return store


def _ingest(name: str, data: bytes, **kw):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        src = tmp / "input"
        src.write_bytes(data)
        out = tmp / "out.zarr"
        args = _options(input=str(src), output=str(out), **kw)
        return check_ingest(lambda: get_format(name).ingest(args, progress=False), out)


# -- every format ---------------------------------------------------------------------

def test_every_format_is_fuzzed():
    assert set(FORMATS) == {"ldac", "uci", "text", "jsonl", "csv", "tsv", "trec"}


@FUZZ
@given(data=inputs(LDAC), vocab=st.one_of(st.just(VOCAB), mutated(VOCAB)),
       block=st.sampled_from([None, 5, 17]))
def test_fuzz_ldac(data, vocab, block):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "docs").write_bytes(data)
        (tmp / "vocab").write_bytes(vocab)
        out = tmp / "out.zarr"
        kw = {} if block is None else {"block_bytes": block}
        check_ingest(lambda: ingest_ldac(tmp / "docs", tmp / "vocab", out, **kw), out)


@FUZZ
@given(data=inputs(UCI), vocab=st.one_of(st.none(), st.just(VOCAB), mutated(VOCAB)),
       block=st.sampled_from([None, 5, 17]))
def test_fuzz_uci(data, vocab, block):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "docword").write_bytes(data)
        if vocab is not None:
            (tmp / "vocab").write_bytes(vocab)
        out = tmp / "out.zarr"
        kw = {} if block is None else {"block_bytes": block}
        check_ingest(lambda: ingest_uci(tmp / "docword", out,
                                        tmp / "vocab" if vocab is not None else None, **kw),
                     out)


@FUZZ
@given(data=inputs(JSONL), id_field=st.sampled_from([None, "id", "text"]))
def test_fuzz_jsonl(data, id_field):
    _ingest("jsonl", data, id_field=id_field)


@FUZZ
@given(obj=st.dictionaries(st.sampled_from(["id", "text", "x"]),
                           st.one_of(st.text(), st.integers(), st.none(), st.floats(),
                                     st.sampled_from(["\ud800", "a\udfffb", "x\x00"]),
                                     st.lists(st.integers(), max_size=3))),
       id_field=st.sampled_from([None, "id"]))
def test_fuzz_jsonl_values(obj, id_field):
    line = (json.dumps(obj) + "\n").encode()
    _ingest("jsonl", JSONL + line, id_field=id_field)


@FUZZ
@given(data=inputs(CSV), id_column=st.sampled_from([None, "id"]))
def test_fuzz_csv(data, id_column):
    _ingest("csv", data, id_column=id_column)


@FUZZ
@given(data=inputs(TSV), id_column=st.sampled_from([None, "id"]),
       quoting=st.sampled_from(["none", "csv"]))
def test_fuzz_tsv(data, id_column, quoting):
    _ingest("tsv", data, id_column=id_column, quoting=quoting)


@FUZZ
@given(data=inputs(TREC))
def test_fuzz_trec(data):
    _ingest("trec", data)


@FUZZ
@given(files=st.fixed_dictionaries({name: mutated(body) for name, body in TEXT_FILES.items()}))
def test_fuzz_text_directory(files):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        root = tmp / "docs"
        for name, body in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes(body)
        out = tmp / "out.zarr"
        args = _options(input=str(root), output=str(out), pattern="*.txt")
        check_ingest(lambda: get_format("text").ingest(args, progress=False), out)


# -- what the fuzzing found, kept as plain regression cases ------------------------------

FOUND = {
    "gzip-corrupt-stream": ("ldac", gzip.compress(LDAC, mtime=0)[:12] + b"\xff" * 20),
    "gzip-magic-junk": ("uci", b"\x1f\x8b" + b"junk" * 10),
    "ldac-huge-header": ("ldac", b"99999999999999999999 0:1\n"),
    "ldac-huge-id": ("ldac", b"1 99999999999999999999:1\n"),
    "ldac-unicode-digit": ("ldac", "1 \u0663:1\n".encode()),
    "uci-huge-D": ("uci", b"99999999999999999999\n3\n1\n1 1 1\n"),
    "uci-D-beyond-int32": ("uci", b"1000000000000\n3\n1\n1 1 1\n"),
    "uci-form-feed": ("uci", b"1\n3\n2\n1 1 1\x0c1 2 1\n"),
    "jsonl-deep-nesting": ("jsonl", b"[" * 100000 + b"\n"),
    "jsonl-huge-integer": ("jsonl", b'{"text": "a b", "x": ' + b"9" * 5000 + b"}\n"),
    "jsonl-lone-surrogate-id": ("jsonl", b'{"id": "\\ud800", "text": "apples"}\n'),
    "csv-header": ("csv", b'"text\n'),
    # numpy 2.4's loadtxt segfaults (intermittently) on some astral characters
    "ldac-astral": ("ldac", "1 0:1\n1 \U000f6ec9:1\n".encode()),
    "uci-astral": ("uci", "1\n3\n1\n1 1 \U000f6ec9\n".encode()),
    "uci-nbsp": ("uci", "1\n3\n1\n1\xa01 1\n".encode()),
}


@pytest.mark.parametrize("case", FOUND)
def test_found_inputs_are_corpus_errors(case, tmp_path):
    fmt, data = FOUND[case]
    (tmp_path / "in").write_bytes(data)
    (tmp_path / "vocab").write_bytes(VOCAB)
    out = tmp_path / "out.zarr"
    args = _options(input=str(tmp_path / "in"), output=str(out), id_field="id",
                    vocab=str(tmp_path / "vocab") if fmt in ("ldac", "uci") else None)
    with pytest.raises(DscirError, match=r"/in(:\d+(-\d+)?)?: "):
        get_format(fmt).ingest(args, progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "vocab"]


def test_lines_are_cut_at_newlines_only(tmp_path):
    """U+2028, NEL, form feed... inside a JSON string, a CSV field or a vocabulary
    word are text, not line breaks (str.splitlines would cut there)."""
    (tmp_path / "j").write_bytes('{"text": "apples\u2028bananas", "id": "x"}\n'.encode())
    (tmp_path / "c").write_bytes("text\napples\x0cbananas\ncherries\x85apples\n".encode())
    for fmt, name, n_docs in (("jsonl", "j", 1), ("csv", "c", 2)):
        args = _options(input=str(tmp_path / name), output=str(tmp_path / f"{name}.zarr"))
        store = get_format(fmt).ingest(args, progress=False)
        assert store.n_docs == n_docs and "apples" in store.vocabulary.tolist()
    (tmp_path / "v").write_bytes("a\x85b\nc\n".encode())
    (tmp_path / "d").write_bytes(b"1 1:2\n")
    store = ingest_ldac(tmp_path / "d", tmp_path / "v", tmp_path / "d.zarr")
    assert store.vocabulary.tolist() == ["a\x85b", "c"]


# -- valid generated corpora round-trip -----------------------------------------------

corpora = st.lists(st.dictionaries(st.integers(0, 5), st.integers(1, 9), max_size=6),
                   min_size=1, max_size=8)


def _rows(store: Corpus) -> list[dict[int, int]]:
    b = store.read(np.arange(store.n_docs))
    return [dict(zip(b.indices[b.indptr[d]:b.indptr[d + 1]].tolist(),
                     b.data[b.indptr[d]:b.indptr[d + 1]].tolist()))
            for d in range(store.n_docs)]


@settings(FUZZ, max_examples=_HUNT or 20)
@given(docs=corpora, compress=st.booleans(), block=st.sampled_from([None, 7]))
def test_generated_ldac_and_uci_round_trip(docs, compress, block):
    vocab = "".join(f"w{i}\n" for i in range(6)).encode()
    ldac = "".join(f"{len(d)} " + " ".join(f"{w}:{c}" for w, c in d.items()) + "\n"
                   for d in docs).encode()
    entries = [(i + 1, w + 1, c) for i, d in enumerate(docs) for w, c in sorted(d.items())]
    uci = (f"{len(docs)}\n6\n{len(entries)}\n"
           + "".join(f"{a} {b} {c}\n" for a, b, c in entries)).encode()
    pack = (lambda b: gzip.compress(b, mtime=0)) if compress else (lambda b: b)
    kw = {} if block is None else {"block_bytes": block}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "vocab").write_bytes(vocab)
        (tmp / "docs").write_bytes(pack(ldac))
        (tmp / "docword").write_bytes(pack(uci))
        a = ingest_ldac(tmp / "docs", tmp / "vocab", tmp / "a.zarr", **kw)
        b = ingest_uci(tmp / "docword", tmp / "b.zarr", tmp / "vocab", **kw)
        assert _rows(a) == _rows(b) == docs
        assert b.doc_ids.tolist() == [str(i + 1) for i in range(len(docs))]


# -- the store reader -----------------------------------------------------------------

def _store_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def pristine_store(tmp_path_factory):
    import scipy.sparse as sp

    m = sp.random(12, 7, density=0.4, format="csr", random_state=0)
    m.data = np.ceil(m.data * 5)
    path = tmp_path_factory.mktemp("store") / "c.zarr"
    write_corpus(path, m, [f"w{i}" for i in range(7)], chunk_docs=4, shard_chunks=2,
                 heldout={"every": 3})
    return path


# A damaged file anywhere in a store (metadata, chunk, shard index) is a DscirError
# naming it when the store is opened or read, never zarr's or a codec's own error
# (JSONDecodeError, KeyError, RuntimeError from zstd...) nor silently altered counts.
@settings(FUZZ, max_examples=_HUNT or 25, phases=[hypothesis.Phase.generate])
@given(data=st.data())
def test_fuzz_store_reader(data, pristine_store):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "c.zarr"
        shutil.copytree(pristine_store, path)
        target = data.draw(st.sampled_from(_store_files(path)), label="file")
        target.write_bytes(data.draw(mutated(target.read_bytes()), label="bytes"))
        try:
            store = Corpus.open(path)
            _well_formed(store)
            store.heldout_docs()
        except DscirError:
            pass
