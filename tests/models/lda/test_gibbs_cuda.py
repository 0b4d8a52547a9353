"""The CUDA Gibbs kernel (``dscir.models.lda.gibbs_cuda``): its laws under numba's
CUDA simulator, and the clear error of ``device="cuda"`` where no device is.

The simulator checks live in ``cuda_sim.py`` and run once, in a process of their
own with ``NUMBA_ENABLE_CUDASIM=1`` (numba reads it on import: this process
never sees it); each test below asserts one of their results.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import dscir
from dscir.errors import DscirError
from dscir.models.lda import gibbs_cuda

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
FORMS = ("dense", "sparse")


def _device_here() -> bool:
    """Whether numba sees a device (asked directly: the check under test is not)."""
    try:
        from numba import cuda

        return bool(cuda.is_available())
    except Exception:
        return False


#: The simulator check each test asserts (with ``[form]`` where it has one).
CHECKS = {"test_counts_conserve_tokens_in_the_cpu_order": "conservation",
          "test_single_token_document_follows_alpha_phi": "single_token_law",
          "test_two_token_document_follows_the_chains_exact_law": "two_token_law",
          "test_streams_by_document_whatever_the_grid": "streams_by_document",
          "test_gibbs_task_dispatches_to_the_device": "task",
          "test_dense_form_is_the_cpu_kernel_where_it_searches_in_its_order":
              "matches_cpu[dense]"}


def _check_of(item) -> str | None:
    if Path(item.path) != Path(__file__):
        return None
    name = CHECKS.get(getattr(item, "originalname", item.name))
    form = getattr(item, "callspec", None) and item.callspec.params.get("form")
    return name and (f"{name}[{form}]" if form else name)


@pytest.fixture(scope="module")
def simulated(request):
    """The results of the checks this session's selected tests assert, from one run
    of ``cuda_sim.py`` under the simulator (it is slow: only those checks run)."""
    names = sorted({c for c in map(_check_of, request.session.items) if c})
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    run = subprocess.run([sys.executable, str(HERE / "cuda_sim.py"), *names], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def _passed(simulated, name):
    assert name in simulated, f"no check {name}"
    assert simulated[name] is None, simulated[name]


@pytest.mark.parametrize("form", FORMS)
def test_counts_conserve_tokens_in_the_cpu_order(simulated, form):
    _passed(simulated, f"conservation[{form}]")


@pytest.mark.parametrize("form", FORMS)
def test_single_token_document_follows_alpha_phi(simulated, form):
    _passed(simulated, f"single_token_law[{form}]")


@pytest.mark.parametrize("form", FORMS)
def test_two_token_document_follows_the_chains_exact_law(simulated, form):
    _passed(simulated, f"two_token_law[{form}]")


@pytest.mark.parametrize("form", FORMS)
def test_streams_by_document_whatever_the_grid(simulated, form):
    _passed(simulated, f"streams_by_document[{form}]")


def test_gibbs_task_dispatches_to_the_device(simulated):
    _passed(simulated, "task")


def test_dense_form_is_the_cpu_kernel_where_it_searches_in_its_order(simulated):
    _passed(simulated, "matches_cpu[dense]")


def test_two_token_law_enumeration_is_a_law():
    from cuda_sim import two_token_law

    kept = two_token_law(np.array([[1.0, 0.2], [0.3, 1.0]]), 0.5, 6)
    assert len(kept) == 3 and all(np.isclose(x.sum(), 1.0) and x.min() > 0 for x in kept)


@pytest.mark.skipif(_device_here(), reason="a CUDA device is here")
def test_fit_on_cuda_without_a_device_is_one_clear_error(monkeypatch):
    """A small matrix with no cluster running is fitted in this process, whose device
    check names the missing device (another test's running client is hidden)."""
    from dscir.engine import cluster

    monkeypatch.setattr(cluster, "current_client", lambda: None)
    x = sp.csr_matrix(np.random.default_rng(0).integers(0, 3, (12, 20)))
    with pytest.raises(DscirError, match="no CUDA device"):
        dscir.LDA(3, device="cuda", n_iter=2, progress=False).fit(x)


@pytest.mark.skipif(_device_here(), reason="a CUDA device is here")
def test_cli_fit_on_cuda_without_a_device_exits_with_the_convention(zipf_store, tmp_path):
    store, _ = zipf_store
    run = subprocess.run([sys.executable, "-m", "dscir", "fit", "lda", store, "--topics", "3",
                          "--iterations", "2", "--device", "cuda", "--workers", "1",
                          "--out", str(tmp_path / "r"), "-q"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == DscirError.exit_code, run.stderr
    # the embedded cluster's workers have no GPU resource: that is the error here
    assert "--resources GPU=1" in run.stderr and not (tmp_path / "r").exists()


def test_bad_device_and_warm_start_are_refused():
    with pytest.raises(DscirError, match="device must be one of"):
        dscir.LDA(3, device="tpu").chain_config()
    with pytest.raises(DscirError, match="cold-started"):
        dscir.LDA(3, device="cuda", warm_start=True, policy="reference").chain_config()


def test_gibbs_tasks_need_gpu_workers_on_a_cluster(one_worker, zipf_store):
    from dscir.engine.dask import DaskExecutor

    executor = DaskExecutor(one_worker, zipf_store[0], "lda", model_resident=True)
    with pytest.raises(DscirError, match="--resources GPU=1"):
        executor.require("gibbs", {"GPU": 1}, gibbs_cuda.check_device)
    assert executor.resources == {}
