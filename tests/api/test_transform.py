"""LDA.transform of a whole store on the cluster (restartable, worker-independent),
``dscir transform``, and fit(X) of an in-memory scipy.sparse matrix."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import zarr

from dscir.api import LDA, load
from dscir.api import transform as store_transform
from dscir.cli import main
from dscir.corpus import Corpus, write_corpus
from dscir.errors import DscirError

K = 3
W = 30


def counts(n_docs: int, seed: int, n_words: int = W) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    rows = rng.poisson(0.6, size=(n_docs, n_words))
    rows[5] = 0  # an empty document
    return sp.csr_matrix(rows)


@pytest.fixture(scope="module")
def fitted(tmp_path_factory, two_workers):
    """A short LDA run and a store of 150 documents in chunks of 32."""
    root = tmp_path_factory.mktemp("transform")
    store = root / "docs.zarr"
    write_corpus(store, counts(150, 1), vocabulary=[f"w{i}" for i in range(W)], chunk_docs=32)
    model = LDA(n_topics=K, batch_size=20, sweeps=10, n_iter=6, thin=1, eval_sweeps=10,
                seed=2, progress=False)
    model.fit(store, client=two_workers, out=root / "run")
    return str(store), str(root / "run"), model


def test_store_transform_equals_in_process_on_one_and_two_workers(fitted, one_worker,
                                                                  two_workers, tmp_path):
    store, run, model = fitted
    expected = model.transform(Corpus.open(store).read(np.arange(150))).astype(np.float32)
    for name, client in (("one", one_worker), ("two", two_workers)):
        topics = model.transform(store, client, out=tmp_path / name)
        got = topics.compute()
        assert topics.shape == (150, K) and topics.chunks[0][0] == 32
        assert np.array_equal(got, expected), name
    again = model.transform(store, one_worker, out=tmp_path / "one")  # all done: no task
    assert np.array_equal(again.compute(), expected)
    info = zarr.open_group(str(tmp_path / "one")).attrs[store_transform.ATTR]
    assert info["n_topics"] == K and info["sweeps"] == 10 and info["seed"] == 2
    assert info["run"].endswith("run") and info["store"].endswith("docs.zarr")
    loaded = load(run).transform(store, one_worker, out=tmp_path / "loaded").compute()
    assert loaded.shape == (150, K)


def test_restart_computes_only_the_missing_blocks(fitted, two_workers, tmp_path, monkeypatch):
    store, _, model = fitted
    whole = model.transform(store, two_workers, out=tmp_path / "whole").compute()
    written = []
    real = store_transform._write_block

    def interrupted(g, block, lo, result):
        if len(written) == 2:
            raise KeyboardInterrupt  # killed after two blocks
        written.append(block)
        return real(g, block, lo, result)

    monkeypatch.setattr(store_transform, "_write_block", interrupted)
    with pytest.raises(KeyboardInterrupt):
        model.transform(store, two_workers, out=tmp_path / "t")
    first = list(written)
    assert len(first) == 2

    def counted(g, block, lo, result):
        written.append(block)
        return real(g, block, lo, result)

    monkeypatch.setattr(store_transform, "_write_block", counted)
    written.clear()
    again = model.transform(store, two_workers, out=tmp_path / "t").compute()
    assert sorted(written) == sorted(set(range(5)) - set(first))
    assert np.array_equal(again, whole)

    zarr.open_group(str(tmp_path / "t"), mode="r+")["done"][3] = False  # a lost block
    written.clear()
    assert np.array_equal(model.transform(store, two_workers, out=tmp_path / "t").compute(),
                          whole)
    assert written == [3]


def test_spread_is_the_sd_across_the_kept_samples(fitted, two_workers, tmp_path, capsys):
    from dscir.rng import domains
    from dscir.models.lda.gibbs import document_topics
    from dscir.rng import derive
    from dscir.runs import Run

    store, run, _ = fitted
    model = load(run)
    model.transform(store, two_workers, out=tmp_path / "s", spread=True, sweeps=4)
    g = zarr.open_group(str(tmp_path / "s"))
    batch = Corpus.open(store).read(np.arange(150))
    phi = Run.open(run).samples()["phi"].astype(np.float64)
    assert phi.shape[0] == 3
    key = derive(model.config_.seed, domains.TRANSFORM)
    each = [document_topics(batch.indptr, batch.indices, batch.data, np.log(p),
                            model.config_.alpha, 4, key) for p in phi]
    assert np.array_equal(g["topics_sd"][...], np.std(each, axis=0).astype(np.float32))
    assert np.array_equal(g["topics"][...], model.transform(batch, sweeps=4).astype(np.float32))
    assert g.attrs[store_transform.ATTR]["n_samples"] == 3
    with pytest.raises(DscirError, match="other settings .*spread"):
        model.transform(store, two_workers, out=tmp_path / "s", sweeps=4)
    with pytest.raises(DscirError, match="samples"):
        del model.run_path_
        model.transform(store, two_workers, out=tmp_path / "t", spread=True)
    assert main(["transform", run, store, "--out", str(tmp_path / "c"), "--sweeps", "4",
                 "--spread", "--workers", "1"]) == 0
    assert "topics_sd" in capsys.readouterr().out


def test_output_of_other_settings_is_refused(fitted, one_worker, tmp_path):
    store, _, model = fitted
    model.transform(store, one_worker, out=tmp_path / "t", sweeps=4)
    with pytest.raises(DscirError, match="other settings .*sweeps"):
        model.transform(store, one_worker, out=tmp_path / "t", sweeps=6)
    with pytest.raises(DscirError, match="needs out="):
        model.transform(store, one_worker)


def test_cli_transform(fitted, tmp_path, capsys):
    store, run, model = fitted
    out = tmp_path / "doc_topics"
    assert main(["transform", run, store, "--out", str(out), "--sweeps", "4",
                 "--workers", "1"]) == 0
    topics = zarr.open_group(str(out))["topics"]
    assert topics.shape == (150, K) and topics.dtype == np.float32
    assert np.allclose(topics[...].sum(axis=1), 1.0, atol=1e-5)
    assert "150" in capsys.readouterr().out


def test_cli_transform_bad_input(fitted, tmp_path, capsys):
    store, run, _ = fitted
    other = tmp_path / "other.zarr"
    write_corpus(other, counts(20, 3, n_words=W + 1))
    for argv, message in (([run, str(other)], "words, the topics have"),
                          ([str(tmp_path / "missing"), store], "missing")):
        capsys.readouterr()
        assert main(["transform", *argv, "--out", str(tmp_path / "o")]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("dscir: error:") and message in err[0], err
    assert not (tmp_path / "o").exists()


def test_fit_a_scipy_sparse_matrix(two_workers, tmp_path):
    x = counts(120, 4)
    vocab = [f"v{i}" for i in range(W)]
    params = dict(n_topics=K, batch_size=20, sweeps=10, n_iter=4, thin=1, seed=5,
                  progress=False)
    model = LDA(**params).fit(x, client=two_workers, vocabulary=vocab)
    assert list(model.vocabulary_) == vocab
    assert model.store_ is None  # the temporary store is gone after the fit
    write_corpus(tmp_path / "x.zarr", x, vocabulary=vocab)
    again = LDA(**params).fit(tmp_path / "x.zarr", client=two_workers)
    assert np.array_equal(model.topic_word_, again.topic_word_)  # the same chain
    with pytest.raises(DscirError, match="vocabulary"):
        LDA(**params).fit(tmp_path / "x.zarr", client=two_workers, vocabulary=vocab)
    with pytest.raises(DscirError, match="vocabulary has 2 entries"):
        LDA(**params).fit(x, client=two_workers, vocabulary=["a", "b"])


def test_exact_mixtures_fit_a_scipy_sparse_matrix():
    from dscir.api import DPMixture, Mixture

    x = counts(80, 6)
    dp = DPMixture(sampler="gibbs", n_iter=5, progress=False).fit(x)
    assert dp.n_iter_ == 5
    mix = Mixture(n_clusters=3, sampler="gibbs", n_iter=5, progress=False).fit(x)
    assert mix.n_iter_ == 5
