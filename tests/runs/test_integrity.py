"""Damaged stores and bad run options end as one ``dscir: error:`` line, exit 2 (issue 15).

Stores are built with ``write_corpus`` and damaged on disk: a flipped byte in
a chunk file under the array's ``c/`` directory, a deleted chunk, a truncated
``zarr.json``. No Dask cluster is started: the fit cases pass
``--address tcp://127.0.0.1:9`` (nothing listens there), so an error raised
after a cluster was asked for would be the connection error instead.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import zarr

from dscir import integrity
from dscir.cli import main
from dscir.corpus import Corpus, write_corpus
from dscir.errors import DscirError
from dscir.integrity import StoreDamaged
from dscir.runs import Run

NO_CLUSTER = ["--address", "tcp://127.0.0.1:9"]


def _matrix(n_docs=300, n_words=40, seed=0):
    rng = np.random.default_rng(seed)
    m = sp.random(n_docs, n_words, density=0.2, random_state=seed, format="csr")
    m.data = rng.integers(1, 6, m.data.size).astype(np.int64)
    return m


@pytest.fixture
def store(tmp_path) -> Path:
    path = tmp_path / "corpus.zarr"
    write_corpus(path, _matrix(), chunk_docs=32, shard_chunks=4, heldout={"every": 5})
    return path


@pytest.fixture
def old_store(tmp_path, monkeypatch) -> Path:
    """A format-2 store as written before checksums (no crc32c, empty chunks skipped)."""
    monkeypatch.setattr(integrity, "array_options", lambda: {})
    path = tmp_path / "old.zarr"
    write_corpus(path, _matrix(), chunk_docs=32, shard_chunks=4)
    monkeypatch.undo()
    return path


def _flip(path: Path, at: int = 40) -> None:
    b = bytearray(path.read_bytes())
    b[at % len(b)] ^= 0xFF
    path.write_bytes(bytes(b))


def _run(argv, capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _one_error(code: int, err: str, *needles: str, status: int = 2) -> str:
    """The one error line; ``status``: 2 usage, 3 bad or damaged data, 1 runtime."""
    assert code == status, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("dscir: error: "), err
    assert "Traceback" not in err
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


# -- checksums ----------------------------------------------------------------


def test_new_stores_checksum_every_chunk_and_write_every_chunk(store):
    g = zarr.open_group(str(store), mode="r")
    for name in ("indptr", "indices", "data", "doc_ids", "vocabulary", "heldout"):
        assert integrity.has_checksums(g[name]), name
        assert integrity.missing_chunks(g[name]) == [], name
    assert json.loads((store / "zarr.json").read_text())["attributes"]["dscir_corpus"][
        "format_version"] == 2


def test_verify_a_sound_store_and_an_old_one(store, old_store, capsys):
    code, out, err = _run(["verify", store], capsys)
    assert code == 0 and err == ""
    assert "indices: OK" in out and out.strip().endswith("every chunk read)")
    code, out, err = _run(["verify", old_store], capsys)
    assert code == 0 and err == "", err
    assert Corpus.open(old_store).read([0, 5, 9]).indices.size


@pytest.mark.parametrize("array", ["indices", "data"])
def test_a_flipped_byte_is_found_by_read_info_verify_and_fit(store, capsys, array):
    _flip(store / array / "c" / "0")
    with pytest.raises(DscirError, match=f"array '{array}' of .* is damaged: chunk 0 cannot "
                                         "be read \\(Stored and computed checksum"):
        Corpus.open(store, cache_bytes=0).read(np.arange(10))
    with pytest.raises(DscirError, match=f"array '{array}'"):
        Corpus.open(store).read([3, 200])  # through the shard cache
    with pytest.raises(DscirError, match=f"array '{array}' of .* is damaged: chunk 0 "):
        Corpus.open(store, cache_bytes=0).read([3, 1, 200])  # a coordinate selection
    code, out, err = _run(["info", store], capsys)  # info reads no entries
    assert code == 0
    code, out, err = _run(["verify", store], capsys)
    _one_error(code, err, f"corpus store {store} is damaged: {array}: chunk 0 cannot be read",
               "checksum", status=3)
    assert f"{array}: chunk 0 cannot be read" in out and "indptr: OK" in out
    # an in-process fit (exact Gibbs) reads the counts: one line, no traceback
    code, out, err = _run(["fit", "mixture", store, "--clusters", "2", "--sampler", "gibbs",
                           "--iterations", "2", "--no-progress"], capsys)
    _one_error(code, err, f"array '{array}'", "is damaged: chunk 0", status=3)


def test_random_bytes_in_an_old_store_give_no_wrong_word_ids(old_store, capsys):
    """Without checksums a chunk may still decode: the reader's range check and
    verify's cross-checks catch entries outside the vocabulary or counts <= 0."""
    g = zarr.open_group(str(old_store), mode="r+")
    idx = g["indices"][...]
    idx[5] = 10_000
    g["indices"][...] = idx
    with pytest.raises(DscirError, match="'indices' holds word id 10000 outside 0..39"):
        Corpus.open(old_store, cache_bytes=0).read(np.arange(5))
    code, out, err = _run(["verify", old_store], capsys)
    _one_error(code, err, "indices: word id 10000 at entry 5 is outside 0..39", status=3)
    # and corrupt compressed bytes are one line too (was a raw zstd RuntimeError)
    shard = old_store / "data" / "c" / "0"
    b = bytearray(shard.read_bytes())
    b[20:60] = bytes(range(40))
    shard.write_bytes(bytes(b))
    with pytest.raises(DscirError, match="array 'data' of .* is damaged"):
        Corpus.open(old_store, cache_bytes=0).read(np.arange(5))
    code, out, err = _run(["verify", old_store], capsys)
    _one_error(code, err, "data: chunk 0 cannot be read", status=3)


# -- missing chunks, inconsistent attributes --------------------------------------


def test_a_deleted_indptr_chunk(store, capsys):
    (store / "indptr" / "c" / "1").unlink()  # a middle shard: indptr reads zeros there
    code, out, err = _run(["info", store], capsys)
    _one_error(code, err, "is inconsistent: 'indptr' decreases after document 127", status=3)
    code, out, err = _run(["verify", store], capsys)
    _one_error(code, err, "indptr: missing chunk files c/1", status=3)
    code, out, err = _run(["fit", "lda", store, "--topics", "3", *NO_CLUSTER], capsys)
    _one_error(code, err, "'indptr' decreases", status=3)


def test_every_indptr_chunk_deleted(store, capsys):
    for f in (store / "indptr" / "c").iterdir():
        f.unlink()
    code, out, err = _run(["info", store], capsys)
    _one_error(code, err, "'indptr' ends at 0, the attribute says nnz=", status=3)
    assert out == ""


def test_attributes_that_disagree_with_the_arrays(store, capsys):
    g = zarr.open_group(str(store), mode="r+")
    meta = dict(g.attrs["dscir_corpus"])
    g.attrs["dscir_corpus"] = dict(meta, n_docs=meta["n_docs"] + 1)
    code, out, err = _run(["info", store], capsys)
    _one_error(code, err, "'indptr' has 301 entries, 302 expected for n_docs=301", status=3)
    g.attrs["dscir_corpus"] = dict(meta, n_tokens=meta["n_tokens"] + 7)
    code, out, err = _run(["info", store], capsys)  # cheap: the counts are not read
    assert code == 0
    code, out, err = _run(["verify", store], capsys)
    _one_error(code, err, "consistency: the counts sum to", f"n_tokens={meta['n_tokens'] + 7}",
               status=3)


@pytest.mark.parametrize("where", ["", "indices/"])
def test_truncated_zarr_json(store, capsys, where):
    f = store / where / "zarr.json"
    f.write_bytes(f.read_bytes()[:60])
    for cmd in ("info", "verify"):
        code, out, err = _run([cmd, store], capsys)
        _one_error(code, err, f"{f} is damaged", status=3)
    code, out, err = _run(["fit", "lda", store, "--topics", "3", *NO_CLUSTER], capsys)
    _one_error(code, err, f"{f} is damaged", status=3)


def test_foreign_zarr_json(store, capsys):
    (store / "zarr.json").write_text('{"zarr_format": 3, "node_type": "group"}')
    code, out, err = _run(["info", store], capsys)
    _one_error(code, err, "not a dscir corpus store (its zarr.json has no dscir_corpus")
    (store / "zarr.json").write_text('["not", "metadata"]')
    code, out, err = _run(["info", store], capsys)
    _one_error(code, err, f"{store / 'zarr.json'}", status=3)


# -- run stores -----------------------------------------------------------------


def test_run_stores_are_checksummed_and_verified(tmp_path, capsys):
    from dscir.runs.store import RunWriter

    w = RunWriter(tmp_path / "run.zarr", model="lda")
    w.append({"samples/phi": np.ones((2, 3, 4), np.float32)})
    path = w.commit(model="lda", metric="perplexity", config={}, store="x", iteration=1,
                    n_samples=2, arrays={"vocabulary": np.array(list("abcd")),
                                         "phi_mean": np.full((3, 4), 0.25)})
    g = zarr.open_group(str(path), mode="r")
    assert integrity.has_checksums(g["phi_mean"]) and integrity.has_checksums(g["samples/phi"])
    code, out, err = _run(["verify", path], capsys)
    assert code == 0 and "phi_mean: OK" in out
    _flip(path / "phi_mean" / "c" / "0" / "0", at=10)
    with pytest.raises(StoreDamaged, match=r"array 'phi_mean' of .* is damaged: chunk 0.0 "
                       r"cannot be read"):
        Run.open(path).phi_mean  # read when asked for (info reads no array)
    code, out, err = _run(["verify", path], capsys)
    _one_error(code, err, f"run {path} is damaged: phi_mean: chunk 0.0 cannot be read",
               status=3)


# -- ingest ---------------------------------------------------------------------


def test_gzip_magic_then_junk(tmp_path, capsys):
    (tmp_path / "vocab.txt").write_text("a\nb\n")
    bad = tmp_path / "docs.gz"
    header = gzip.compress(b"1 0:1\n")[:10]  # a valid header, then no deflate stream
    bad.write_bytes(header + bytes(range(255, 0, -1)) * 4)
    code, out, err = _run(["ingest", "ldac", bad, tmp_path / "o.zarr", "--vocab",
                           tmp_path / "vocab.txt"], capsys)
    _one_error(code, err, f"{bad}:1: corrupt or truncated gzip data", status=3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs.gz", "vocab.txt"]


# -- fit: checked before any cluster ------------------------------------------------


def test_too_many_topics_for_memory(store, capsys, monkeypatch):
    code, out, err = _run(["fit", "lda", store, "--topics", "100000000000", *NO_CLUSTER],
                          capsys)
    # K x W = 4e12 puts the topics on the workers, where they stay (the fitted topics
    # too): the driver holds K row normalisers; on the driver it holds the state, the
    # running mean and the counts.
    line = _one_error(code, err, "100,000,000,000 x 1 parameters need about 800.0 GB",
                      "DSCIR_MEMORY_CHECK=0")
    assert "available" in line and "row normalisers" in line
    code, out, err = _run(["fit", "lda", store, "--topics", "100000000000", "--placement",
                           "driver", *NO_CLUSTER], capsys)
    _one_error(code, err, "need about 96000.0 GB", "state, running mean, counts")
    code, out, err = _run(["fit", "mixture", store, "--clusters", "100000000000",
                           "--batch-size", "10", *NO_CLUSTER],
                          capsys)
    _one_error(code, err, "parameters need about")
    # the override skips the check (the fit then goes on to the cluster)
    from dscir.api import LDA

    monkeypatch.setenv("DSCIR_MEMORY_CHECK", "0")
    LDA(n_topics=10**11, n_iter=1).check_run(str(store))


def test_out_in_an_unwritable_directory_or_under_a_file(store, tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("x")
    cases = [
        (afile / "run.zarr", f"cannot write the run to {afile / 'run.zarr'}: {afile} is a "
                             "file, not a directory"),
        (afile / "deeper" / "run.zarr", f"{afile} is a file, not a directory"),
        ("/proc/dscir-test/run.zarr", "cannot write the run to /proc/dscir-test/run.zarr: "
                                      "directory /proc is not writable"),
        (afile, f"{afile} exists; pass --overwrite to replace it"),
    ]
    for out, message in cases:
        code, _, err = _run(["fit", "lda", store, "--topics", "3", "--iterations", "2",
                             "--out", out, *NO_CLUSTER], capsys)
        _one_error(code, err, message)
    code, _, err = _run(["fit", "lda", store, "--topics", "3", "--iterations", "2", "--out",
                         afile, "--overwrite", *NO_CLUSTER], capsys)
    _one_error(code, err, f"cannot write the run to {afile}: it exists and is not a directory")
    assert afile.read_text() == "x"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "corpus.zarr"]


def test_zero_iterations_with_out(store, tmp_path, capsys):
    code, _, err = _run(["fit", "lda", store, "--topics", "3", "--iterations", "0",
                         "--out", tmp_path / "run.zarr", *NO_CLUSTER], capsys)
    _one_error(code, err, "--iterations 0 with --out would write a finished "
                          "run of the random initial state")
    assert not (tmp_path / "run.zarr").exists()


def test_available_memory_is_known_and_a_memory_error_is_one_line(capsys, monkeypatch):
    from dscir.api.memory import available_memory
    from dscir.cli import corpus as cli_corpus

    have = available_memory()
    assert have is not None and 0 < have < 1 << 50

    def boom(args):
        raise MemoryError("Unable to allocate 74.5 GiB")

    monkeypatch.setattr(cli_corpus, "_info", boom)
    code, _, err = _run(["info", "anything"], capsys)
    _one_error(code, err, "out of memory (Unable to allocate 74.5 GiB)", status=1)


def test_disk_full_while_writing_is_one_line_and_leaves_nothing(tmp_path, capsys, monkeypatch):
    """An OSError from the system (here ENOSPC while a shard is appended) ends as one
    line naming the file, and the partial store is removed (guards against the CLI
    catching only DscirError and printing a traceback, or the writer leaving
    .OUT.partial-* behind)."""
    import errno

    from dscir.corpus import writer

    (tmp_path / "vocab.txt").write_text("a\nb\n")
    (tmp_path / "docs.ldac").write_text("1 0:1\n2 0:1 1:2\n" * 50)
    real = writer.CorpusWriter._flush

    def full(self, final):
        raise OSError(errno.ENOSPC, "No space left on device", str(self._tmp))

    monkeypatch.setattr(writer.CorpusWriter, "_flush", full)
    code, _, err = _run(["ingest", "ldac", tmp_path / "docs.ldac", tmp_path / "o.zarr",
                         "--vocab", tmp_path / "vocab.txt"], capsys)
    _one_error(code, err, "No space left on device", status=1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs.ldac", "vocab.txt"]
    monkeypatch.setattr(writer.CorpusWriter, "_flush", real)


def test_an_unfinished_store_is_removed_after_zarrs_writes_in_flight(tmp_path):
    """Ctrl-C raised while the main thread waits on zarr leaves the write running in
    zarr's IO thread. Guards against removing the store at once: the write lands
    after the removal and recreates an array without its chunks (a damaged
    ``.partial`` entry in the run)."""
    import asyncio

    from zarr.core import sync

    tmp = tmp_path / ".000000000004.partial-0"
    zarr.open_group(str(tmp), mode="w")

    async def late_write():
        await asyncio.sleep(0.3)
        await zarr.api.asynchronous.create_array(store=str(tmp / "state" / "log_theta"),
                                                 shape=(2, 3), dtype="float64")

    in_flight = asyncio.run_coroutine_threadsafe(late_write(), sync._get_loop())
    integrity.remove_unfinished(tmp)
    in_flight.result(timeout=30)
    assert not tmp.exists()
