"""``diagnose`` from the stored kept samples (``dscir.api.kept_samples``): the same
rows, labellings and held-out scores as the dense computation over every
sample stacked in this process, and a driver that never holds K x W."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from support.chains import topic_corpus
from dscir.api import LDA, DPMixture, kept_samples
from dscir.api.session import executor_for
from dscir.corpus import Corpus, split_heldout, write_corpus
from dscir.diagnostics import convergence as cv
from dscir.diagnostics.matching import align_chains
from dscir.runs.chains import open_chains
from dscir.runs.store import append_chunks

pytest.importorskip("arviz")

K, W, TOP = 3, 30, 4


def dense_lda_diagnosis(path, executor):
    """The diagnosis from every chain's samples and mean topics read whole."""
    from dscir.models.lda import LDAConfig, perplexity

    runs = open_chains(path)
    perms = align_chains([r.phi_mean for r in runs])
    phi = np.stack([r.samples()["phi"][:, p] for r, p in zip(runs, perms)])
    ids = cv.top_word_ids(phi.mean(axis=(0, 1)), TOP)
    draws = cv.topic_draws(phi, ids)
    heldout = np.asarray(Corpus.open(runs[0].store).heldout_docs(), np.int64)
    scores = []
    for r in runs:
        cfg = LDAConfig(**r.config)
        scores.append([-np.log(perplexity(executor, heldout, s, cfg.alpha, cfg.eval_sweeps,
                                          cfg.seed, cfg.completion_every))
                       for s in r.samples()["phi"].astype(np.float64)])
    return perms, ids, cv.rhat(draws), cv.ess(draws), np.array(scores)


def test_lda_diagnosis_is_the_dense_one(tmp_path, one_worker, monkeypatch):
    """Read 2 columns at a time (many blocks, the top words spread over them), the
    rows, labellings and scores are the dense computation's bit for bit (a
    block's mean taken in another order, a top word cut from the wrong block or
    topic, a sample's columns from another sample would each show)."""
    store = topic_corpus(tmp_path / "docs.zarr")
    model = LDA(n_topics=K, batch_size=40, sweeps=6, n_iter=10, burn_in=4, thin=1,
                eval_sweeps=6, seed=3, progress=False)
    model.fit(store, client=one_worker, out=tmp_path / "run", n_chains=2)
    with executor_for("lda", store, one_worker, resident=True) as executor:
        perms, ids, rhat, ess, scores = dense_lda_diagnosis(tmp_path / "run", executor)
    monkeypatch.setattr(kept_samples, "BLOCK_ENTRIES", 2 * 2 * 6 * K)
    d = model.diagnose(one_worker, top=TOP)
    for got, want in zip(d.perms, perms):
        np.testing.assert_array_equal(got, want)
    assert not np.array_equal(perms[1], np.arange(K)), "the chains' labels differ"
    np.testing.assert_array_equal(d.scores, scores)
    vocab = open_chains(tmp_path / "run")[0].vocabulary
    assert d.rows[1:] == [(f"topic {k}", float(np.max(rhat[k])), float(np.min(ess[k])),
                           " ".join(str(vocab[w]) for w in ids[k])) for k in range(K)]
    local = model.diagnose(top=TOP, local=True)
    np.testing.assert_array_equal(local.scores, scores)
    monkeypatch.setattr(kept_samples, "BLOCK_ENTRIES", 2 * K)  # one column a block
    for got, want in zip(model.diagnose(one_worker, top=TOP).perms, perms):
        np.testing.assert_array_equal(got, want)  # the affinities of every block summed


def test_dp_scores_are_the_dense_ones(tmp_path, one_worker):
    """Each kept sample's log phi columns read on the workers by its rows of the
    stacked ``samples/log_phi``: the scores of the samples read whole."""
    from support.mixtures import synthetic_mixture
    from dscir.models.mixtures.dp.model import samples_from_arrays, user_scores

    x, _ = synthetic_mixture(120, seed=0)
    store = str(tmp_path / "users.zarr")
    write_corpus(store, x, vocabulary=[f"i{j}" for j in range(x.shape[1])])
    split_heldout(store, fraction=0.2, seed=0)
    model = DPMixture("gibbs", n_iter=10, burn_in=4, thin=1, seed=1, progress=False)
    model.fit(store, out=tmp_path / "run", n_chains=2)
    heldout = np.asarray(Corpus.open(store).heldout_docs(), np.int64)
    with executor_for("dpmm", store, one_worker) as executor:
        want = np.array([[np.mean(user_scores(executor, heldout, s, r.config["a0"],
                                              x.shape[1]))
                          for s in samples_from_arrays(r.samples())]
                         for r in open_chains(tmp_path / "run")])
    assert np.unique(want).size == want.size, "every sample scores differently"
    np.testing.assert_array_equal(model.diagnose(one_worker).scores, want)


def test_long_rows_are_stored_in_column_chunks():
    assert append_chunks((3, 30), 4) == (2**20 // 360, 3, 30)
    assert append_chunks((200, 200_000), 4) == (1, 200, 2**20 // 800)
    assert append_chunks((200_000,), 8) == (1, 2**17)


@pytest.mark.slow  # runs with its mutants (DIAG_BUDGET)
def test_diagnose_never_holds_k_by_w(zipf_store, two_workers, tmp_path):
    """K = 100 x W = 2 x 10^5 kept samples (4 of 80 MB float32, each chain's mean
    160 MB float64): diagnose with held-out scores peaks (tracemalloc, NumPy's
    buffers included) below a quarter of K x W x 8 bytes; reading one sample, the
    mean topics or a row of samples whole breaks it."""
    store, _ = zipf_store
    k = 100
    model = LDA(n_topics=k, batch_size=20, sweeps=2, n_iter=5, burn_in=1, thin=1,
                eval_every=100, seed=0, placement="driver", progress=False)
    model.fit(store, client=two_workers, out=tmp_path / "run")
    budget = k * Corpus.open(store).n_words * 8 // 4
    tracemalloc.start()
    try:
        d = model.diagnose(two_workers, top=5)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert d.scores.shape == (1, 4) and np.all(np.isfinite(d.scores))
    assert len(d.rows) == 1 + k
    assert peak < budget, f"diagnose peaked at {peak} bytes, over the budget of {budget}"
