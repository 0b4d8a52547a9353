"""A worker process killed mid-iteration costs a retry, not the run, and leaves the chain unchanged.

A worker plugin pauses the worker that starts a chosen task (a Gibbs task of
one iteration, or a held-out scoring task) and names its pid in a file; the
test then kills that pid with SIGKILL, so the kill lands while the worker holds
the task and the iteration's documents. Both clusters run their workers under
nannies, which start a fresh worker process in place of the dead one.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import cloudpickle
import numpy as np
import pytest
from distributed import Client, LocalCluster
from distributed.diagnostics.plugin import WorkerPlugin

from chains import dpmm_chain, lda_chain
from dscir.engine.chain import run_chain
from test_cluster_tcp import tcp_cluster  # noqa: F401  (fixture)
from test_dpmm_driver import config as dpmm_config
from test_dpmm_driver import store as dpmm_store  # noqa: F401  (fixture)
from test_lda_driver import small_config, synthetic_store  # noqa: F401  (fixture)

# `dask worker` processes cannot import this test module: send the plugin by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


class StallOnTask(WorkerPlugin):
    """The first worker to start a task whose key names ``part`` (and, if given,
    iteration ``iteration``) writes its pid to ``flag`` and stalls there until killed."""

    def __init__(self, flag: str, part: str, iteration: int | None = None):
        self.flag, self.part, self.iteration = flag, part, iteration

    def transition(self, key, start, finish, **kwargs):
        if finish != "executing" or not isinstance(key, tuple) or self.part not in key[0]:
            return
        if self.iteration is not None and key[1] != self.iteration:
            return
        try:
            fd = os.open(self.flag, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:  # killed once already (this may be its replacement)
            return
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        time.sleep(120)  # blocks this worker, task in hand, until the test kills it


class Killer(threading.Thread):
    """Kills the pid a StallOnTask plugin writes to ``flag``, once."""

    def __init__(self, flag: Path):
        super().__init__(daemon=True)
        self.flag, self.killed, self.stop = flag, None, threading.Event()

    def run(self):
        while not self.stop.is_set():
            if self.flag.exists() and self.flag.read_text():
                self.killed = int(self.flag.read_text())
                os.kill(self.killed, signal.SIGKILL)
                return
            time.sleep(0.01)


@pytest.fixture(scope="module", params=["localcluster", "dask-worker-tcp"])
def client(request):
    if request.param == "localcluster":
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                          dashboard_address="127.0.0.1:0") as cluster, Client(cluster) as c:
            yield c
    else:
        with Client(request.getfixturevalue("tcp_cluster"), timeout="30s") as c:
            yield c


def chain(client, store):
    driver = lda_chain(client, store, small_config(burn_in=2, thin=2))
    evaluations = run_chain(driver, 8, eval_every=4, progress=False)
    return driver, [e.perplexity for e in evaluations]


def killing(client, tmp_path, kills: dict[str, int | None], run):
    """Run ``run()`` while the first worker to start each named task is killed in it;
    returns run()'s result, the pids killed and the pids the cluster had before."""
    client.wait_for_workers(2, timeout=120)
    pids = set(client.run(os.getpid).values())
    killers = []
    for part, iteration in kills.items():
        flag = tmp_path / part
        client.register_plugin(StallOnTask(str(flag), part, iteration), name=f"stall-{part}")
        killers.append(Killer(flag))
        killers[-1].start()
    try:
        result = run()
    finally:
        for k in killers:
            k.stop.set()
        for part in kills:
            try:
                client.unregister_worker_plugin(f"stall-{part}")
            except KeyError:
                # A replacement worker still starting had not installed it yet (the
                # scheduler has dropped it; if it lands later it is inert: its flag
                # is set, so it never stalls again).
                pass
    killed = [k.killed for k in killers]
    # Both kills happened mid-task: the first of one of the cluster's workers,
    # the second of another one or of the first one's replacement.
    assert killed[0] in pids, (killed, pids)
    assert killed[1] is not None and killed[1] != killed[0]
    if getattr(client, "cluster", None) is not None:
        # A nanny whose replacement worker is killed while it is still starting
        # (seen on a loaded machine) closes instead of restarting it: bring the
        # LocalCluster back to its size, so the session's later tests get theirs.
        client.cluster.scale(2)
    client.wait_for_workers(2, timeout=120)  # the nannies replaced them
    assert not set(killed) & set(client.run(os.getpid).values())
    return result


def test_killed_workers_leave_the_chain_unchanged(synthetic_store, client, tmp_path):  # noqa: F811
    store, _ = synthetic_store
    client.wait_for_workers(2, timeout=120)
    undisturbed, scores = chain(client, store)
    disturbed, disturbed_scores = killing(
        client, tmp_path, {"gibbs": 3, "perplexity": None}, lambda: chain(client, store))
    assert np.array_equal(disturbed.model.topics.state_.log_theta, undisturbed.model.topics.state_.log_theta)
    assert np.array_equal(disturbed.model.mean_phi(), undisturbed.model.mean_phi())
    assert disturbed_scores == scores


def test_killed_workers_leave_the_dp_mixture_unchanged(dpmm_store, client, tmp_path):  # noqa: F811
    path, _ = dpmm_store

    def mixture():
        driver = dpmm_chain(client, path, dpmm_config(burn_in=2, thin=2))
        scores = [e.log_predictive for e in run_chain(driver, 8, eval_every=4,
                                                      progress=False)]
        return driver, scores

    client.wait_for_workers(2, timeout=120)
    undisturbed, scores = mixture()
    disturbed, disturbed_scores = killing(
        client, tmp_path, {"dpmm-allocation": 3, "dpmm-score": None}, mixture)
    a, b = disturbed.model, undisturbed.model
    np.testing.assert_array_equal(a.z, b.z)
    np.testing.assert_array_equal(a.theta.log_theta, b.theta.log_theta)
    np.testing.assert_array_equal(a.sticks.log_theta, b.sticks.log_theta)
    assert disturbed_scores == scores


def test_cli_reports_a_killed_worker_in_one_line(monkeypatch, capsys):
    """Dask's KilledWorker (a task whose workers all died: often out of memory)
    ends a command with one readable line and exit 2, not a traceback; any other
    exception still propagates. Guards against the handler swallowing real bugs
    or a KilledWorker escaping as a traceback."""
    from distributed import KilledWorker

    from dscir import cli
    from dscir.cli import corpus

    key = ("dscir-lda-gibbs-0a1b2c3d", 7, 21, 1)

    def killed(args):
        raise KilledWorker(key, None, 3)

    monkeypatch.setattr(corpus, "_info", killed)
    assert cli.main(["info", "whatever.zarr"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("dscir: error: task ")
    assert "dscir-lda-gibbs-0a1b2c3d" in err[0] and "--resume" in err[0]

    def broken(args):
        raise ValueError("a bug")

    monkeypatch.setattr(corpus, "_info", broken)
    with pytest.raises(ValueError, match="a bug"):
        cli.main(["info", "whatever.zarr"])
