"""``dscir tune`` / ``dscir.tune``: short chains over a step-size grid, the choice is
the smallest reported KSD and not a stuck chain; ``diagnose --ksd`` gives the same
KSD of a run; bad input is one clear error."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from support.chains import topic_corpus
from dscir.api.diagnose import diagnose
from dscir.cli import main
from dscir.corpus import Corpus

GRID = [1e-5, 1e-3, 0.1]  # SGLD: 1e-5 barely leaves its random start in 20 iterations
ARGS = ["--sampler", "sgld", "--topics", "3", "--iterations", "20", "--burn-in", "8",
        "--thin", "1", "--batch-size", "40", "--sweeps", "6", "--eval-sweeps", "6",
        "--seed", "3", "--no-progress"]



@pytest.fixture(scope="module")
def tuned(tmp_path_factory, one_worker):
    root = tmp_path_factory.mktemp("tune")
    store = topic_corpus(root / "docs.zarr")
    address = one_worker.scheduler.address
    argv = ["tune", store, "--out", str(root / "runs"), "--grid", ",".join(map(str, GRID)),
            "--address", address, *ARGS]
    return store, root, address, argv


def test_the_choice_is_the_smallest_ksd_and_not_the_stuck_chain(tuned, capsys):
    """A choice taken from the wrong column (perplexity), the largest KSD, or KSDs
    of the wrong runs shows here; the stuck chain's KSD is far above the others."""
    store, root, _, argv = tuned
    assert main(argv) == 0
    out = capsys.readouterr().out
    doc = json.loads((root / "runs" / "tune.json").read_text())
    rows = doc["rows"]
    assert [r["step_size"] for r in rows] == GRID
    ksds = np.array([r["ksd"] for r in rows])
    assert np.all(np.isfinite(ksds)) and np.all(ksds > 0)
    assert doc["best_step_size"] == GRID[int(np.argmin(ksds))]
    assert doc["best_step_size"] != GRID[0]
    assert ksds[0] > 1.5 * ksds.min(), ksds  # 1.8x on this seed's chain
    assert all(r["perplexity"] > 1 for r in rows)
    assert "<- smallest KSD" in out and f"chosen step size: {doc['best_step_size']:.4g}" in out
    assert len(doc["loadavg"]) == 3
    # the KSD of a run is the same number when diagnose computes it again
    run = rows[-1]["run"]
    d = diagnose(run, None, score=False, ksd=True, address=tuned[2])
    assert d.ksd.values[0] == pytest.approx(rows[-1]["ksd"], rel=1e-12)
    assert len(d.ksd.words) == 10 and "KSD over 10 most frequent words" in d.table()
    wide = diagnose(run, None, score=False, ksd=True, ksd_batch_size=100, address=tuned[2])
    assert wide.ksd.batch_size == 100 and wide.ksd.values[0] != d.ksd.values[0]
    full = diagnose(run, None, score=False, ksd=True, ksd_batch_size="all", address=tuned[2])
    n_train = Corpus.open(store).train_docs().size
    assert full.ksd.full and full.ksd.batch_size == n_train and not d.ksd.full
    assert f"scores from the full data ({n_train} documents)" in full.table()
    capsys.readouterr()
    assert main(["diagnose", run, "--no-score", "--ksd", "--address", tuned[2]]) == 0
    assert f"chain 0: {rows[-1]['ksd']:.4g}" in capsys.readouterr().out


def test_choose_takes_the_ksd_column_and_never_an_exploded_chain():
    """Where KSD and perplexity disagree the KSD decides; inf (non-finite samples) loses."""
    from dscir.api.tune import TuneRow, choose

    rows = [TuneRow(0.01, 5.0, 900.0, "a"), TuneRow(0.1, 2.0, 1200.0, "b"),
            TuneRow(1.0, 3.0, 800.0, "c"), TuneRow(10.0, math.inf, math.nan, "d")]
    assert choose(rows) == (0.1, 1.0)
    assert choose([TuneRow(1.0, math.inf, math.nan, "d"), TuneRow(2.0, 7.0, 10.0, "e")]) \
        == (2.0, 2.0)


@pytest.mark.parametrize("grid,message", [(",", "the step-size grid is empty"),
                                          ("0.1,-1", "step sizes must be finite and > 0"),
                                          ("0.1,x", "must be numbers")])
def test_bad_grid_is_one_clear_error(tuned, capsys, grid, message, tmp_path):
    store = tuned[0]
    assert main(["tune", store, "--out", str(tmp_path / "o"), "--grid", grid, *ARGS]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
    assert not (tmp_path / "o").exists()


def test_bad_ksd_batch_size_is_one_clear_error(tuned, capsys, tmp_path):
    assert main(["tune", tuned[0], "--out", str(tmp_path / "o"), "--ksd-batch-size", "most",
                 *ARGS]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "whole number or 'all'" in err
    assert not (tmp_path / "o").exists()


def test_missing_store_is_one_clear_error(capsys, tmp_path):
    assert main(["tune", str(tmp_path / "none.zarr"), "--out", str(tmp_path / "o"),
                 *ARGS]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no corpus store" in err
