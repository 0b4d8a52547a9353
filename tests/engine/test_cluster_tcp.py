"""`dscir fit lda` against `dask scheduler` and two `dask worker` processes over TCP."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from dscir.runs import Run
from support.daskprocs import dask_processes



def test_fit_lda_over_tcp_matches_embedded_cluster(tcp_cluster, synthetic_store, tmp_path):
    store, _ = synthetic_store
    common = ["fit", "lda", store, "--topics", "4", "--iterations", "6", "--batch-size", "30",
              "--sweeps", "10", "--eval-sweeps", "10", "--thin", "2", "--seed", "5",
              "--no-progress"]
    out = subprocess.run(
        [sys.executable, "-m", "dscir", *common, "--address", tcp_cluster,
         "--out", str(tmp_path / "tcp")],
        capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "held-out perplexity" in out.stdout and "topic 3:" in out.stdout
    local = subprocess.run(
        [sys.executable, "-m", "dscir", *common, "--workers", "1",
         "--out", str(tmp_path / "local")],
        capture_output=True, text=True, timeout=600)
    assert local.returncode == 0, local.stderr
    a, b = Run.open(tmp_path / "tcp"), Run.open(tmp_path / "local")
    assert np.array_equal(a.state["log_theta"], b.state["log_theta"])


def test_unreachable_scheduler_is_a_clean_error(synthetic_store, tmp_path):
    store, _ = synthetic_store
    out = subprocess.run(
        [sys.executable, "-m", "dscir", "fit", "lda", store, "--topics", "4",
         "--iterations", "2", "--address", "tcp://127.0.0.1:9", "--out", str(tmp_path / "r")],
        capture_output=True, text=True, timeout=120,
        env=dict(os.environ, DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT="2s"))
    assert out.returncode == 1  # a runtime failure
    assert "cannot connect to the Dask scheduler" in out.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("where", ["embedded", "tcp"])
def test_old_task_arguments_are_not_kept(where, request):
    """Dask logs each connection's recent messages under 1 MB (1,000 by
    default), task arguments included; through dscir's clients the driver
    keeps at most MESSAGE_LOG_LENGTH of them, not every phi column it sent."""
    import gc
    import weakref

    from dscir.engine.cluster import MESSAGE_LOG_LENGTH, dask_client

    target = ({"n_workers": 1} if where == "embedded"
              else {"address": request.getfixturevalue("tcp_cluster")})
    sent = []
    with dask_client(**target) as client:
        for i in range(2 * MESSAGE_LOG_LENGTH):
            cols = np.full((50, 1000), float(i))  # 400 kB: below the logging limit
            sent.append(weakref.ref(cols))
            assert client.submit(np.size, cols, key=f"cols-{i}").result() == cols.size
            del cols
        gc.collect()
        alive = sum(r() is not None for r in sent)
    assert alive <= MESSAGE_LOG_LENGTH + 5, f"{alive} of {len(sent)} arguments still held"


def test_lost_scheduler_stops_the_fit_with_one_line_and_it_resumes(
        synthetic_store, tmp_path, two_workers):
    """The scheduler killed mid-fit: the driver's client cannot reconnect, and
    the fit stops with one error line saying how to resume (not a traceback);
    resumed on another cluster it completes the uninterrupted chain."""
    import signal
    import time

    import psutil

    from support.digests import run_digest

    store, _ = synthetic_store
    args = ["fit", "lda", store, "--topics", "4", "--iterations", "30", "--batch-size", "30",
            "--sweeps", "10", "--eval-sweeps", "10", "--seed", "5", "--no-progress",
            "--checkpoint-every", "2"]
    env = dict(os.environ, DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT="2s")
    run = tmp_path / "run"
    with dask_processes(tmp_path, 1) as address:
        driver = subprocess.Popen([sys.executable, "-m", "dscir", *args, "--address", address,
                                   "--out", str(run)], stderr=subprocess.PIPE, text=True,
                                  env=env)
        ckpts = run / "checkpoints"
        while not (ckpts.exists() and any(e.isdigit() for e in os.listdir(ckpts))):
            assert driver.poll() is None, driver.stderr.read()
            time.sleep(0.05)
        # this test's scheduler (the module's TCP cluster has another one)
        ours = str(tmp_path / "scheduler.json")
        scheduler, = (p for p in psutil.Process().children() if ours in p.cmdline())
        os.kill(scheduler.pid, signal.SIGKILL)
        err = driver.communicate(timeout=600)[1]
    assert driver.returncode == 1, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("dscir: error: lost the connection to the Dask scheduler"), last
    assert "--resume" in last
    other = two_workers.scheduler.address
    for extra in (["--resume", str(run)], ["--out", str(tmp_path / "whole")]):
        done = subprocess.run([sys.executable, "-m", "dscir", *args, "--address", other, *extra],
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
    assert run_digest(run) == run_digest(tmp_path / "whole")
