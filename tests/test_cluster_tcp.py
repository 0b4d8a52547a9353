"""`dscir fit lda` against `dask scheduler` and two `dask worker` processes over TCP."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from distributed import Client

from dscir.distributed.runstore import Run
from test_lda_driver import synthetic_store  # noqa: F401  (fixture)

DASK = shutil.which("dask", path=str(Path(sys.executable).parent)) or shutil.which("dask")


@pytest.fixture(scope="module")
def tcp_cluster(tmp_path_factory):
    if DASK is None:
        pytest.skip("the `dask` command is not installed")
    tmp = tmp_path_factory.mktemp("tcp")
    sched_file = tmp / "scheduler.json"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    procs = [subprocess.Popen(
        [DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
         "--scheduler-file", str(sched_file)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)]
    try:
        for _ in range(600):
            if sched_file.exists() and sched_file.stat().st_size:
                break
            time.sleep(0.1)
        address = json.loads(sched_file.read_text())["address"]
        assert address.startswith("tcp://")
        for _ in range(2):
            procs.append(subprocess.Popen(
                [DASK, "worker", address, "--nthreads", "1", "--no-dashboard",
                 "--host", "127.0.0.1"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env))
        with Client(address, timeout="30s") as client:
            client.wait_for_workers(2, timeout=120)
        yield address
    finally:
        for p in procs[::-1]:
            p.terminate()
        for p in procs:
            p.wait(timeout=30)


def test_fit_lda_over_tcp_matches_embedded_cluster(tcp_cluster, synthetic_store, tmp_path):  # noqa: F811
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


def test_unreachable_scheduler_is_a_clean_error(synthetic_store, tmp_path):  # noqa: F811
    store, _ = synthetic_store
    out = subprocess.run(
        [sys.executable, "-m", "dscir", "fit", "lda", store, "--topics", "4",
         "--iterations", "2", "--address", "tcp://127.0.0.1:9", "--out", str(tmp_path / "r")],
        capture_output=True, text=True, timeout=120,
        env=dict(os.environ, DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT="2s"))
    assert out.returncode == 2
    assert "cannot connect to the Dask scheduler" in out.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("where", ["embedded", "tcp"])
def test_old_task_arguments_are_not_kept(where, request):
    """Dask logs each connection's recent messages under 1 MB (1,000 by
    default), task arguments included; through dscir's clients the driver
    keeps at most MESSAGE_LOG_LENGTH of them, not every phi column it sent."""
    import gc
    import weakref

    from dscir.distributed.cluster import MESSAGE_LOG_LENGTH, dask_client

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
