"""Unfinished runs: ``dscir info`` shows how far one got, and ``--resume`` with more
``--iterations`` extends a finished or interrupted run with the burn-in it
started with (recorded in the run), as a run started with those iterations and
that burn-in would have gone. Guards against ``info`` refusing an unfinished
run, and against the burn-in's default (half of n_iter) being recomputed on
resume, which refused every extension of a run fitted without ``--burn-in``.
"""

from __future__ import annotations

import numpy as np
import pytest

from dscir.api import LDA
from dscir.cli import main
from dscir.engine.chain import Chain
from dscir.errors import DscirError
from dscir.runs import Run, read_checkpoint
from dscir.runs.progress import Progress
from support.lda import K_TRUE
from support.runs import Interrupt, assert_same_run

PARAMS = dict(n_topics=K_TRUE, batch_size=30, sweeps=10, eval_every=5, eval_sweeps=10,
              thin=2, seed=7, progress=False)
ARGS = ["--topics", str(K_TRUE), "--batch-size", "30", "--sweeps", "10", "--eval-every", "5",
        "--eval-sweeps", "10", "--thin", "2", "--seed", "7", "--no-progress"]


@pytest.fixture
def interrupted(synthetic_store, two_workers, tmp_path, monkeypatch):  # noqa: F811
    """A 14-iteration run without burn_in (so 7) whose driver dies after iteration 9;
    its last checkpoint is at 8."""
    store, _ = synthetic_store
    step = Chain.step

    def step_until_9(self, prefetch=True):
        if self.iteration == 9:
            raise Interrupt
        return step(self, prefetch)

    monkeypatch.setattr(Chain, "step", step_until_9)
    with pytest.raises(Interrupt):
        LDA(n_iter=14, **PARAMS).fit(store, client=two_workers, out=tmp_path / "cut",
                                     checkpoint_every=4)
    monkeypatch.setattr(Chain, "step", step)
    return tmp_path / "cut"


def test_info_reports_an_unfinished_runs_progress(interrupted, capsys):
    progress = Progress.open(interrupted)
    assert (progress.model, progress.iteration, progress.n_iter) == ("lda", 8, 14)
    assert progress.config["burn_in"] == 7 and progress.checkpoint_every == 4
    # samples are kept every 2 iterations after 7: the first at 9, past the checkpoint
    assert (progress.n_samples, progress.last_sample) == (1, 9)
    assert progress.evaluations["iteration"].tolist() == [5]
    assert main(["info", str(interrupted)]) == 0
    out = capsys.readouterr().out
    assert f"{interrupted} (lda, unfinished" in out and f"--resume {interrupted}" in out
    assert "iterations:  8 of 14 at the latest checkpoint" in out
    assert "samples:     1 kept (the last at iteration 9)" in out
    assert "perplexity:" in out and "at iteration 5" in out
    with pytest.raises(DscirError, match="unfinished run"):
        Run.open(interrupted)  # what needs a finished run still says so


def test_an_interrupted_run_resumed_with_more_iterations_is_the_longer_run(
        interrupted, synthetic_store, two_workers, tmp_path):  # noqa: F811
    store, _ = synthetic_store
    extended = LDA(n_iter=18, **PARAMS).fit(store, client=two_workers, resume=interrupted)
    assert extended.config_.burn_in == 7  # the run's, not 18 // 2
    LDA(n_iter=18, burn_in=7, **PARAMS).fit(store, client=two_workers,
                                            out=tmp_path / "longer")
    assert_same_run(Run.open(tmp_path / "longer"), Run.open(interrupted))


def test_cli_resume_with_more_iterations_extends_a_finished_run(
        synthetic_store, two_workers, tmp_path, capsys):  # noqa: F811
    store, _ = synthetic_store
    address = ["--address", two_workers.scheduler.address]
    run, longer = str(tmp_path / "run"), str(tmp_path / "longer")
    assert main(["fit", "lda", store, *ARGS, "--iterations", "14", "--checkpoint-every", "4",
                 "--out", run, *address]) == 0
    assert main(["fit", "lda", store, *ARGS, "--iterations", "18", "--resume", run,
                 *address]) == 0, capsys.readouterr().err
    assert main(["fit", "lda", store, *ARGS, "--iterations", "18", "--burn-in", "7",
                 "--out", longer, *address]) == 0
    extended, whole = Run.open(run), Run.open(longer)
    assert extended.config["burn_in"] == 7 and read_checkpoint(run).iteration == 18
    # the same chain and samples; the extended run also scored where it first ended
    assert_same_run(whole, extended, evaluations=False)
    scores = dict(zip(extended.evaluations["iteration"].tolist(),
                      extended.evaluations["perplexity"].tolist()))
    assert list(scores) == [5, 10, 14, 15, 18]
    assert np.array_equal([scores[i] for i in whole.evaluations["iteration"].tolist()],
                          whole.evaluations["perplexity"])

    capsys.readouterr()
    assert main(["fit", "lda", store, *ARGS, "--iterations", "20", "--burn-in", "5",
                 "--resume", run, *address]) == 2  # a burn-in asked for is checked
    assert "checkpointed with burn_in=7" in capsys.readouterr().err
