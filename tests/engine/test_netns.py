"""dscir across hosts: a scheduler, three worker hosts (2 workers each) and a driver
host, each a network namespace on a bridge (clusters/netns/).

The chain must not notice: a fit across hosts equals the same fit on one host
(an embedded cluster) bit for bit, run store against run store; so does a fit
during which a whole worker host is lost mid-iteration, one during which a
host's link is cut for longer than Dask's timeouts and restored, and one whose
driver host is killed and which is resumed from its checkpoint. Needs root and
``ip`` (skipped, saying which, where namespaces cannot be made).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.digests import run_digest

NETNS = Path(__file__).resolve().parents[2] / "clusters" / "netns"
sys.path.insert(0, str(NETNS))
from netns_cluster import NetnsCluster  # noqa: E402
from netns_hosts import unavailable  # noqa: E402

WHY = unavailable()
pytestmark = pytest.mark.skipif(WHY is not None, reason=f"no network namespaces: {WHY}")

STALL = Path(__file__).resolve().parents[1] / "support" / "netns_stall.py"
# A short TCP timeout (Dask's shortest: 11 s and up) so that a cut link is
# noticed in seconds, not minutes: Dask sets it as the sockets' keepalive and
# TCP_USER_TIMEOUT, which the kernel enforces however busy the processes are.
# The worker TTL stays at its default (5 min): heartbeats are late when a
# loaded machine stalls a worker's event loop, and a short TTL drops live
# workers until a task is declared a KilledWorker.
TIMEOUTS = {"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "5s",
            "DASK_DISTRIBUTED__COMM__TIMEOUTS__TCP": "12s"}
ITERATIONS = 10


def fit_args(store: str) -> list[str]:
    return ["fit", "lda", store, "--topics", "4", "--iterations", str(ITERATIONS),
            "--batch-size", "30", "--sweeps", "10", "--eval-sweeps", "10", "--eval-every", "5",
            "--thin", "2", "--seed", "5", "--checkpoint-every", "2", "--no-progress"]


def last_checkpoint(run: Path) -> int:
    root = run / "checkpoints"
    return max((int(e) for e in os.listdir(root) if e.isdigit()), default=0) \
        if root.exists() else 0


@pytest.fixture(scope="module")
def reference(synthetic_store, tmp_path_factory):
    """The digest of the fit on one host: an embedded cluster of two workers."""
    store, _ = synthetic_store
    out = tmp_path_factory.mktemp("one-host") / "run"
    done = subprocess.run([sys.executable, "-m", "dscir", *fit_args(store), "--workers", "2",
                           "--out", str(out)], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    return run_digest(out)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Scheduler on host 0, workers on hosts 1-3, the driver on host 4; torn
    down (namespaces, every process) whatever the tests do."""
    work = tmp_path_factory.mktemp("netns")
    env = dict(os.environ, **TIMEOUTS, DSCIR_TEST_STALL=str(work))
    c = NetnsCluster(work, worker_hosts=3, workers_per_host=2, env=env,
                     worker_args=("--preload", str(STALL)))
    try:
        c.start()
        yield c
    finally:
        c.close()


class Driver:
    """``dscir ARGS`` on the driver's host, output in files."""

    def __init__(self, cluster: NetnsCluster, args: list[str], log: Path):
        self.log = log
        with open(log, "w") as f:
            self.proc = cluster.dscir(args, stdout=f, stderr=subprocess.STDOUT)

    def wait(self) -> int:
        try:
            return self.proc.wait(timeout=900)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def until(condition, what: str, proc: subprocess.Popen, seconds: float = 600) -> None:
    """Poll ``condition`` while ``proc`` runs; fail if it exits first or never holds."""
    end = time.monotonic() + seconds
    while not condition():
        assert proc.poll() is None, f"the driver exited ({proc.returncode}) before {what}"
        assert time.monotonic() < end, f"no {what} in {seconds} s"
        time.sleep(0.05)


def test_three_hosts_give_the_one_host_chain(cluster, reference, synthetic_store,
                                             tmp_path):
    store, _ = synthetic_store
    driver = Driver(cluster, [*fit_args(store), "--out", str(tmp_path / "run")],
                    tmp_path / "driver.log")
    assert driver.wait() == 0, driver.output()
    assert "held-out perplexity" in driver.output()
    assert run_digest(tmp_path / "run") == reference


@pytest.mark.slow  # a host's loss; test_worker_failure kills workers in the default run
def test_a_host_lost_mid_iteration_costs_retries_not_the_chain(
        cluster, reference, synthetic_store, tmp_path):
    store, _ = synthetic_store
    stalled = cluster.workdir / "stalled"
    (cluster.workdir / "arm").write_text("4")  # the first Gibbs task of iteration >= 4 stalls
    try:
        driver = Driver(cluster, [*fit_args(store), "--out", str(tmp_path / "run")],
                        tmp_path / "driver.log")
        until(lambda: stalled.exists() and stalled.read_text(), "stalled task", driver.proc)
        pid, iteration = map(int, stalled.read_text().split())
        host = next(h for h in range(1, 4) if pid in cluster.hosts.pids(h))
        killed = cluster.hosts.kill(host)  # its dask-worker, nannies, workers: all at once
        assert len(killed) >= 2 * 2 and driver.proc.poll() is None
        assert driver.wait() == 0, driver.output()
    finally:
        (cluster.workdir / "arm").unlink()
    assert run_digest(tmp_path / "run") == reference
    assert 4 <= iteration < ITERATIONS
    # The host's workers are gone for good; bring them back for the next tests.
    stalled.unlink()
    cluster.start_workers(host)
    cluster.wait_for_workers()


def test_driver_host_killed_and_resumed_gives_the_chain(
        cluster, reference, synthetic_store, tmp_path):
    store, _ = synthetic_store
    run = tmp_path / "run"
    driver = Driver(cluster, [*fit_args(store), "--out", str(run)], tmp_path / "driver.log")
    until(lambda: last_checkpoint(run) >= 4, "checkpoint at iteration 4", driver.proc)
    cluster.hosts.kill(cluster.driver_host)
    assert driver.wait() < 0  # killed, not finished
    assert last_checkpoint(run) < ITERATIONS
    resumed = Driver(cluster, [*fit_args(store), "--resume", str(run)],
                     tmp_path / "resumed.log")
    assert resumed.wait() == 0, resumed.output()
    assert run_digest(run) == reference


@pytest.mark.slow  # waits out the TCP timeouts; test_worker_failure kills workers in the default run
def test_a_worker_host_cut_off_past_the_timeouts_leaves_the_chain(
        cluster, reference, synthetic_store, tmp_path):
    """The scheduler and the cut host's workers give each other up after the TCP
    timeout (12 s here; 30 s by default): the scheduler reruns the host's tasks on the other
    hosts, and the workers, having lost the scheduler, close with their nannies.
    Restoring the link brings nothing back: the host's processes are gone, and
    the run goes on without them to the same chain."""
    store, _ = synthetic_store
    run = tmp_path / "run"
    host = 2
    driver = Driver(cluster, [*fit_args(store), "--out", str(run)], tmp_path / "driver.log")
    until(lambda: last_checkpoint(run) >= 2, "checkpoint at iteration 2", driver.proc)
    cluster.hosts.link(host, False)
    try:
        # past comm.timeouts.tcp: both sides declare the other dead
        end = time.monotonic() + 25
        while time.monotonic() < end and cluster.hosts.pids(host):
            time.sleep(0.2)
    finally:
        cluster.hosts.link(host, True)
    assert driver.wait() == 0, driver.output()
    assert run_digest(run) == reference
    assert cluster.hosts.pids(host) == []  # the host's dask processes closed themselves
    log = (cluster.logs / "scheduler.log").read_text()
    assert f"Remove worker addr: tcp://{cluster.hosts.address(host)}:" in log
    cluster.start_workers(host)
    cluster.wait_for_workers()


def test_a_driver_cut_off_stops_cleanly_and_resumes_to_the_chain(
        cluster, reference, synthetic_store, tmp_path):
    """Cut off past the TCP timeout (12 s here) and the client's reconnect window
    (the connect timeout, 5 s), the driver's client gives the scheduler up: the
    fit stops with one error line saying so and how to resume, its checkpoints
    intact, and --resume completes the same chain. (A cut shorter than the TCP
    timeout only pauses the run: TCP retransmits once the link is back.)"""
    store, _ = synthetic_store
    run = tmp_path / "run"
    driver = Driver(cluster, [*fit_args(store), "--out", str(run)], tmp_path / "driver.log")
    until(lambda: last_checkpoint(run) >= 4, "checkpoint at iteration 4", driver.proc)
    cluster.hosts.link(cluster.driver_host, False)
    try:  # cut until the driver gives up, so it cannot reconnect in between
        code = driver.wait()
    finally:
        cluster.hosts.link(cluster.driver_host, True)
    last = driver.output().strip().splitlines()[-1]
    assert code == 1, driver.output()
    assert last.startswith("dscir: error: lost the connection to the Dask scheduler"), last
    assert "--resume" in last
    assert 4 <= last_checkpoint(run) < ITERATIONS
    resumed = Driver(cluster, [*fit_args(store), "--resume", str(run)], tmp_path / "resumed.log")
    assert resumed.wait() == 0, resumed.output()
    assert run_digest(run) == reference
