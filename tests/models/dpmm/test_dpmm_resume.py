"""DP mixture runs: checkpoint, interruption and resume give the uninterrupted chain."""

from __future__ import annotations

import numpy as np
import pytest

from dscir import DPMixture
from dscir.cli import main
from dscir.runs import read_arrays, read_checkpoint
from dscir.errors import DscirError
from support.runs import assert_same_stored_run as assert_same_run, interrupt_after

def mixture(**kw) -> DPMixture:
    base = dict(batch_size=100, n_iter=12, eval_every=4, burn_in=2, thin=2, seed=4,
                progress=False)
    base.update(kw)
    return DPMixture(**base)


@pytest.mark.parametrize("sampler,split_merge", [("scir", 0), ("sgrld", 0), ("gibbs", 0),
                                                ("scir", 5), ("gibbs", 5)])
def test_interrupted_and_resumed_equals_uninterrupted(dpmm_store, two_workers, tmp_path,
                                                       monkeypatch, sampler, split_merge):
    """With split-merge moves too (the stochastic chain's at iterations 6 and 12)."""
    path, _ = dpmm_store
    client = None if sampler == "gibbs" else two_workers
    whole = mixture(sampler=sampler, split_merge=split_merge).fit(
        path, client=client, out=tmp_path / "whole")

    with monkeypatch.context() as m:
        interrupt_after(m, 7)
        with pytest.raises(KeyboardInterrupt):
            mixture(sampler=sampler, split_merge=split_merge).fit(
                path, client=client, out=tmp_path / "run", checkpoint_every=3)
    ckpt = read_checkpoint(tmp_path / "run")
    assert ckpt.iteration == 6 and ckpt.n_samples == 2  # samples at 4 and 6
    assert read_arrays(tmp_path / "run", "samples")["iteration"].tolist() == [4, 6]

    resumed = mixture(sampler=sampler, split_merge=split_merge).fit(
        path, client=client, resume=tmp_path / "run")
    assert_same_run(tmp_path / "whole", tmp_path / "run")
    assert resumed.score() == whole.score()
    assert [(e.iteration, e.log_predictive) for e in resumed.evaluations_] == \
        [(e.iteration, e.log_predictive) for e in whole.evaluations_]
    np.testing.assert_array_equal(resumed.history_["n_clusters"], whole.history_["n_clusters"])


def test_finished_run_is_extended_and_checked(dpmm_store, two_workers, tmp_path):
    path, _ = dpmm_store
    mixture(n_iter=8).fit(path, client=two_workers, out=tmp_path / "run", checkpoint_every=4)
    mixture(n_iter=12).fit(path, client=two_workers, resume=tmp_path / "run")
    mixture(n_iter=12).fit(path, client=two_workers, out=tmp_path / "whole")
    assert_same_run(tmp_path / "whole", tmp_path / "run")
    with pytest.raises(DscirError, match="a0="):
        mixture(n_iter=14, a0=0.3).fit(path, client=two_workers, resume=tmp_path / "run")
    with pytest.raises(DscirError, match="past n_iter"):
        mixture(n_iter=4).fit(path, client=two_workers, resume=tmp_path / "run")
    with pytest.raises(DscirError, match="is a dpmm run, not lda"):
        from dscir import LDA
        LDA(n_topics=3, n_iter=2, progress=False).fit(path, client=two_workers,
                                                      resume=tmp_path / "run")


def test_cli_out_checkpoint_and_resume(dpmm_store, tmp_path, capsys):
    path, _ = dpmm_store
    common = ["fit", "dpmm", path, "--sampler", "gibbs", "--eval-every", "2", "--thin", "2",
              "--burn-in", "2", "--no-progress", "--seed", "1"]
    assert main([*common, "--iterations", "4", "--out", str(tmp_path / "run"),
                 "--checkpoint-every", "2"]) == 0
    capsys.readouterr()
    assert main([*common, "--iterations", "8", "--resume", str(tmp_path / "run")]) == 0
    resumed = capsys.readouterr().out
    assert main([*common, "--iterations", "8", "--out", str(tmp_path / "whole")]) == 0
    assert capsys.readouterr().out == resumed
    assert_same_run(tmp_path / "whole", tmp_path / "run")
    assert main([*common, "--iterations", "8", "--checkpoint-every", "2"]) == 2
    assert "--checkpoint-every needs --out" in capsys.readouterr().err
    assert main([*common, "--iterations", "8", "--out", str(tmp_path / "whole")]) == 2
    assert "exists" in capsys.readouterr().err
