"""``n_iter="auto"``: burn-in and the run end where the held-out score plateaus
(dscir.engine.stopping.Stopping, wired through run_chain and the LDA estimator)."""

from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.sparse as sp
from support.lda import K_TRUE
from support.mixtures import W as MIXTURE_W, synthetic_mixture
from support.runs import Interrupt, assert_same_run

from dscir.api import LDA
from dscir.cli import main
from dscir.engine.chain import Chain
from dscir.corpus import Corpus, write_corpus
from dscir.engine.stopping import SET_ASIDE, Plateau, Stopping, set_aside
from dscir.errors import DscirError
from dscir.runs import Run, read_checkpoint


def test_burn_in_ends_at_the_first_plateau_then_the_kept_mean_stops_the_chain():
    """Guards against one plateau ending both phases (a chain that stops where it
    should start keeping samples) and against scores of the two phases mixed."""
    stop = Stopping(Plateau(tolerance=0.01, window=2, min_passes=0, max_passes=200), 5,
                    lower_is_better=True, iters_per_pass=5)
    assert stop.burn_in == 1000  # nothing is kept while burning in
    for m, score in zip((5, 10, 15, 20), (900.0, 700.0, 699.0, 698.0)):
        assert stop.due(m) and not stop.due(m + 1)
        stop.observe(m, score)
    assert (stop.burn_end, stop.stopped, stop.burn_in) == (20, None, 20)
    stop.observe(25, 697.9)  # flat against the burn-in scores, but a new series starts
    assert stop.stopped is None and not stop.done(25)
    for m, score in zip((30, 35), (640.0, 639.0)):
        stop.observe(m, score)
    assert stop.stopped is None
    stop.observe(40, 638.5)
    assert stop.stopped == 40 and stop.done(40)
    assert stop.summary()["reason"] == "plateau"


def test_a_fit_that_is_its_final_state_stops_at_the_current_states_plateau():
    """A mixture's fit is its final state: one plateau, of the current state's
    score, after min_passes, and nothing kept. Guards against the kept-mean phase
    run for it (a chain three times longer for a score the fit does not deliver)
    and against min_passes skipped on that plateau."""
    stop = Stopping(Plateau(tolerance=0.01, window=2, min_passes=5, max_passes=200), 5,
                    lower_is_better=True, iters_per_pass=5, kept_mean=False)
    for m, score in zip((5, 10, 15, 20), (900.0, 700.0, 699.0, 698.0)):
        stop.observe(m, score)
        assert stop.burn_in == 1000 and stop.stopped is None  # plateau at 20, before 5 passes
    stop.observe(25, 697.9)
    assert (stop.stopped, stop.burn_end, stop.burn_in) == (25, None, 1000) and stop.done(25)
    assert stop.kept_scores == [] and stop.summary()["reads"] == "state"
    assert stop.progress().startswith("state, ")


def test_the_state_continues_the_same_decision():
    """Guards against a resumed chain that forgets the scores it has seen (it would
    burn in again)."""
    rule = Plateau(tolerance=0.01, window=2, min_passes=0, max_passes=100)
    a = Stopping(rule, 1, lower_is_better=False)
    for m, s in enumerate((-9.0, -8.0, -7.99, -7.98, -7.0), 1):
        a.observe(m, s)
    b = Stopping(rule, 1, lower_is_better=False)
    b.restore(a.state())
    for s in (-6.99, -6.98):
        a.observe(a_m := len(a.burn_scores) + len(a.kept_scores) + 1, s)
        b.observe(a_m, s)
    assert a.summary() == b.summary() and a.stopped is not None


def auto_lda(**kw) -> LDA:
    # 270 training documents, 30 a minibatch: 9 iterations a pass; a score every 2
    # iterations, a window of 3 scores (0.6 passes), at most 99 iterations.
    base = dict(n_topics=K_TRUE, batch_size=30, sweeps=10, n_iter="auto", max_passes=11,
                min_passes=0, window=0.6, tolerance=0.003, thin=2, eval_every=2,
                eval_sweeps=10, seed=7, progress=False)
    return LDA(**{**base, **kw})


PASSES_PER_SCORE = 2 / 9


def plateau_at(rule: Plateau, scores: list[float]) -> int | None:
    """The index of the first score where ``rule`` is reached (None: never)."""
    return next((i for i in range(len(scores))
                 if rule.reached(scores[:i + 1], True, PASSES_PER_SCORE)), None)


def test_auto_fit_keeps_samples_after_the_burn_in_plateau(synthetic_store, two_workers,
                                                           tmp_path, capsys):
    store, _ = synthetic_store
    model = auto_lda().fit(store, client=two_workers, out=tmp_path / "run")
    got = model.stopping_
    ev = [(e.iteration, e.perplexity) for e in model.evaluations_]
    assert [m for m, _ in ev] == list(range(2, model.n_iter_ + 1, 2))
    assert got["iters_per_pass"] == 9 and got["max_iter"] == 99
    rule = Plateau(got["tolerance"], got["window"], got["min_passes"], got["max_passes"])
    i = plateau_at(rule, [s for _, s in ev])
    assert i is not None and got["burn_end"] == ev[i][0]  # the decision, redone
    kept = [s for m, s in ev if m > got["burn_end"]]
    j = plateau_at(rule, kept)
    assert got["stopped"] == model.n_iter_ == (ev[i + 1 + j][0] if j is not None else 99)
    assert model.stop_reason_ == got["reason"] == ("plateau" if j is not None
                                                    else "max_passes")
    samples = Run.open(tmp_path / "run").samples()["iteration"]
    assert samples.size and samples.min() > got["burn_end"]
    assert np.all((samples - got["burn_end"]) % 2 == 0)
    assert main(["info", str(tmp_path / "run")]) == 0
    assert f"burn-in ended at iteration {got['burn_end']}, stopped at iteration " \
        f"{got['stopped']} ({got['reason']})" in capsys.readouterr().out
    loaded = LDA.load(tmp_path / "run")
    assert (loaded.stop_reason_, loaded.n_iter_, loaded.stopping_) == \
        (model.stop_reason_, model.n_iter_, got)


@pytest.mark.parametrize("after_burn_in", [-5, 3], ids=["burning-in", "keeping"])
def test_an_auto_run_resumes_the_same_decision(synthetic_store, two_workers, tmp_path,
                                               monkeypatch, after_burn_in):
    """Stated: a resumed n_iter='auto' chain continues the uninterrupted chain's
    decision (the scores seen and the burn-in end are checkpointed), so it ends
    burn-in and stops at the same iterations, bit for bit."""
    store, _ = synthetic_store
    whole = auto_lda().fit(store, client=two_workers, out=tmp_path / "whole")
    cut = whole.stopping_["burn_end"] + after_burn_in
    step = Chain.step

    def step_until(self, prefetch=True):
        if self.iteration == cut:
            raise Interrupt
        return step(self, prefetch)

    monkeypatch.setattr(Chain, "step", step_until)
    with pytest.raises(Interrupt):
        auto_lda().fit(store, client=two_workers, out=tmp_path / "cut", checkpoint_every=2)
    monkeypatch.setattr(Chain, "step", step)
    assert read_checkpoint(tmp_path / "cut").iteration == cut - cut % 2
    resumed = auto_lda().fit(store, client=two_workers, resume=tmp_path / "cut")
    assert resumed.stopping_ == whole.stopping_
    assert (resumed.stop_reason_, resumed.n_iter_) == (whole.stop_reason_, whole.n_iter_)
    assert LDA.load(tmp_path / "cut").stop_reason_ == whole.stop_reason_
    assert_same_run(Run.open(tmp_path / "whole"), Run.open(tmp_path / "cut"))


def test_auto_without_held_out_documents_runs_max_passes_half_burn_in():
    """Nothing to score (an in-memory matrix): the chain runs max_passes passes, the
    first half burn-in, and says so (reason 'max_passes')."""
    matrix = sp.csr_matrix(np.ones((40, 6), dtype=np.int64))
    model = auto_lda(batch_size=20, max_passes=3, thin=1).fit(
        matrix, vocabulary=[f"w{i}" for i in range(6)])
    assert (model.n_iter_, model.stop_reason_, model.n_samples_) == (6, "max_passes", 3)
    assert model.stopping_["scored"] is False and model.evaluations_ == []


def test_the_documents_set_aside_are_a_tenth_at_most_and_none_below_the_minimum():
    """Guards against a rule that sets aside nothing (the chain would run
    max_passes on every store without held-out documents) or too much of a small
    corpus."""
    for n, want in ((20_000, SET_ASIDE), (1_000, 100), (200, 20), (199, 0)):
        train = np.arange(0, 2 * n, 2)
        got = set_aside(train)
        assert got.size == want and np.all(np.diff(got) > 0) and np.isin(got, train).all()
    assert np.array_equal(set_aside(np.arange(1_000)), set_aside(np.arange(1_000)))


def test_auto_on_a_store_without_held_out_documents_scores_documents_it_set_aside(tmp_path,
                                                                                  capsys, caplog):
    """A store ingested without a held-out split: the chain sets a tenth of its
    documents aside, trains on the rest, stops on their score, and labels them
    by ``predict`` (here and after ``load``); the fit says so once, though the
    command line checks the run before fitting. Guards against the documents set
    aside trained on (then their score is not held out) and left unlabelled,
    and against the note repeated by ``check_run``."""
    import logging

    from dscir.api import Mixture

    x, _ = synthetic_mixture(300, seed=3)
    store = tmp_path / "no_heldout.zarr"
    write_corpus(store, x, vocabulary=[f"area{i}" for i in range(MIXTURE_W)], chunk_docs=64)
    est = Mixture(4, "gibbs", window=2, min_passes=2, max_passes=30, thin=1, seed=0,
                  progress=False)
    with caplog.at_level(logging.INFO, logger="dscir.api.stopping"):
        est.check_run(str(store), out=tmp_path / "run")  # what the command line runs first
        model = est.fit(str(store), out=tmp_path / "run")
    notes = [r for r in caplog.records if "sets 30 of its documents aside" in r.getMessage()]
    assert len(notes) == 1
    aside = set_aside(np.arange(300))
    assert model.stopping_["set_aside"] == aside.size == 30 and model.stopping_["scored"]
    assert model.evaluations_ and model.n_documents_seen_ == 270
    assert model.labels_.min() >= 0
    assert np.array_equal(model.labels_[aside],
                          model.predict(Corpus.open(str(store)).read(aside)))
    assert model.stop_reason_ == "plateau" and model.n_iter_ < 30
    assert model.stop_summary().endswith("(scored on 30 documents set aside)")
    assert np.array_equal(Mixture.load(tmp_path / "run").labels_, model.labels_)
    capsys.readouterr()
    assert main(["info", str(tmp_path / "run")]) == 0
    assert "held-out score (of 30 documents set aside) every" in capsys.readouterr().out


def test_auto_rejects_a_burn_in():
    with pytest.raises(DscirError, match="burn_in is decided by the stopping rule"):
        auto_lda(burn_in=3, policy="reference").chain_config()


def test_the_tolerance_decides_where_the_chain_stops(synthetic_store, two_workers):
    """Guards against a declared tolerance that never reaches the rule (the chain
    would stop where the default tolerance does)."""
    store, _ = synthetic_store
    model = auto_lda(tolerance=0.03, max_passes=7).fit(store, client=two_workers)
    got = model.stopping_
    assert got["tolerance"] == 0.03
    scores = [e.perplexity for e in model.evaluations_]
    i = plateau_at(Plateau(0.03, got["window"], 0, 7), scores)
    assert i is not None and got["burn_end"] == model.evaluations_[i].iteration
    assert plateau_at(Plateau(0.003, got["window"], 0, 7), scores) != i


def test_a_bad_tolerance_is_named_as_typed(capsys):
    with pytest.raises(DscirError, match="^tolerance must be >= 0, got -0.1"):
        auto_lda(tolerance=-0.1, policy="reference").chain_config()
    assert main(["fit", "lda", "/nonexistent/store", "--iterations", "auto",
                 "--tolerance", "-0.1"]) == 2
    assert "--tolerance must be >= 0, got -0.1" in capsys.readouterr().err


def test_a_mixture_stops_where_its_held_out_log_predictive_plateaus(dpmm_store):
    """The mixtures take the same rule, read on the per-token perplexity of their
    held-out log predictive (the exact Gibbs sampler: a pass each iteration), of
    the current state alone (their fit is that state): nothing is kept. Guards
    against the direction swapped (a rising log predictive read as no progress
    would stop at once), the change read per document (a tolerance several
    times looser than LDA's) and the kept samples' mean read after a first
    plateau (the summary would differ)."""
    from dscir.api import Mixture

    model = Mixture(4, "gibbs", eval_every=2, window=4, min_passes=6, max_passes=60,
                    tolerance=0.002, thin=1, seed=0, progress=False).fit(dpmm_store[0])
    got = model.stopping_
    assert got["iters_per_pass"] == 1.0 and model.stop_reason_ == got["reason"]
    corpus = Corpus.open(dpmm_store[0])
    heldout = corpus.heldout_docs()
    per_token = heldout.size / corpus.doc_lengths[heldout].sum()
    again = Stopping(Plateau(0.002, 4, 6, 60), 2, lower_is_better=True, kept_mean=False)
    for e in model.evaluations_:
        again.observe(e[0], np.exp(-e[1] * per_token))
    assert again.summary() == got and got["stopped"] == model.n_iter_
    assert got["reads"] == "state" and model.n_samples_ == 0


def test_a_fixed_run_records_that_it_ran_what_was_asked(synthetic_store, two_workers,
                                                        tmp_path, capsys):
    """An explicit n_iter runs exactly that many iterations, and the run, load and
    dscir info say why it stopped: 'n_iter'."""
    store, _ = synthetic_store
    model = auto_lda(n_iter=4, eval_every=0).fit(store, client=two_workers,
                                                 out=tmp_path / "run")
    assert (model.n_iter_, model.stop_reason_) == (4, "n_iter")
    assert not hasattr(model, "stopping_")
    assert model.stop_summary() == "stopped after 4 iterations: the n_iter asked for"
    assert LDA.load(tmp_path / "run").stop_reason_ == "n_iter"
    assert main(["info", str(tmp_path / "run")]) == 0
    assert "stopping:    n_iter=4 iterations, as asked (n_iter)" in capsys.readouterr().out


def test_the_progress_bar_shows_the_score_and_the_rules_state(synthetic_store, two_workers,
                                                               monkeypatch):
    """Guards against a bar that hides where the rule stands: after each score it
    shows the held-out perplexity and the change per pass against the tolerance."""
    posts = []

    class Bar:
        def __init__(self, *args, **kwargs):
            pass

        def set_postfix(self, values, refresh=False):
            posts.append(dict(values))

        def update(self, n):
            pass

        def close(self):
            pass

    monkeypatch.setattr("dscir.progress.tqdm", Bar)
    store, _ = synthetic_store
    auto_lda(max_passes=2, progress=True).fit(store, client=two_workers)
    scored = [p for p in posts if "perplexity" in p]
    assert scored and all("stop" in p for p in posts)
    assert re.fullmatch(r"(burn-in|kept mean), Δ/pass -?\d+\.\d\d% \(stop < 0\.30%\)",
                        scored[-1]["stop"])
