"""The embedded LocalCluster is private: every socket of its processes (scheduler,
nannies, workers, the dashboard with dscir's run page) is on 127.0.0.1 unless
the user asks for the dashboard elsewhere (``dashboard_address``,
``--dashboard-address``). Guards against a dashboard on every interface (Dask's
default for ``:PORT``, dscir's before), which anyone on the network could read.

The cluster runs in a subprocess (``support/embedded_sockets.py``), started as a fit
starts it, so that only its own processes are listed; the second test runs it
in one network namespace and connects from another (skipped, saying why, where
namespaces cannot be made).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dscir.engine.cluster import dask_client
from dscir.errors import DscirError

TESTS = Path(__file__).resolve().parents[1]
HELPER = TESTS / "support" / "embedded_sockets.py"
sys.path.insert(0, str(TESTS.parent / "clusters" / "netns"))
from netns_hosts import Hosts, unavailable  # noqa: E402

ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(
    [str(TESTS.parent), os.environ.get("PYTHONPATH", "")]))


class Embedded:
    """The helper's cluster; ``prefix`` runs it elsewhere (``ip netns exec NS``)."""

    def __init__(self, kwargs: dict, *, control: bool = False, prefix: tuple = ()):
        argv = [*prefix, sys.executable, str(HELPER), json.dumps(kwargs)]
        self.proc = subprocess.Popen(argv + (["--control"] if control else []),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=ENV)
        line = self.proc.stdout.readline()
        if not line:
            self.close()
            raise AssertionError(f"the embedded cluster did not start: {self.proc.stderr.read()}")
        self.report = json.loads(line)

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def test_every_socket_of_the_embedded_cluster_is_on_loopback():
    with Embedded({"n_workers": 2}) as cluster:
        sockets = cluster.report["sockets"]
        assert len({s["pid"] for s in sockets}) == 3  # the driver and two workers
        assert len(sockets) >= 6  # scheduler, dashboard, nannies; workers' comms and http
        assert [s for s in sockets if s["ip"] != "127.0.0.1"] == []
        dashboard = cluster.report["dashboard"]
        assert dashboard.startswith("http://127.0.0.1:")
        port = int(dashboard.split(":")[2].split("/")[0])
        assert {"pid": cluster.proc.pid, "ip": "127.0.0.1", "port": port, "tcp": True} \
            in sockets


def test_the_default_in_process_cluster_listens_on_loopback_only():
    """The shared embedded cluster (no keywords): one process, no sockets but the
    HTTP ones of its scheduler (the dashboard) and worker, on 127.0.0.1, and the
    link that announces the dashboard says so (Dask's names the machine's address)."""
    with Embedded({}) as cluster:
        sockets = cluster.report["sockets"]
        dashboard = cluster.report["dashboard"]
        assert dashboard.startswith("http://127.0.0.1:")
        port = int(dashboard.split(":")[2].split("/")[0])
        assert len(sockets) == 2 and port in {s["port"] for s in sockets}
        assert {(s["pid"], s["ip"], s["tcp"]) for s in sockets} == \
            {(cluster.proc.pid, "127.0.0.1", True)}


def test_dashboard_address_moves_only_the_dashboard():
    """127.0.0.2 is loopback too: the request is honoured without opening anything."""
    with Embedded({"n_workers": 1, "dashboard_address": "127.0.0.2:0"}) as cluster:
        sockets = cluster.report["sockets"]
        moved = [s for s in sockets if s["ip"] != "127.0.0.1"]
        assert [s["ip"] for s in moved] == ["127.0.0.2"]
        assert f":{moved[0]['port']}/" in cluster.report["dashboard"]


@pytest.mark.parametrize("address", ["8787", "host:port", "host:70000", ":"])
def test_a_bad_dashboard_address_is_one_clear_error(address):
    with pytest.raises(DscirError, match=r"dashboard_address \(--dashboard-address\) must be"):
        with dask_client(n_workers=1, dashboard_address=address):
            pass


def test_a_dashboard_address_for_a_running_cluster_is_refused():
    with pytest.raises(DscirError, match="applies to the embedded cluster"):
        with dask_client(address="tcp://127.0.0.1:1", dashboard_address=":8787"):
            pass


def _connect_from(hosts: Hosts, i: int, address: str, ports: list[int]) -> dict[int, str]:
    """How a TCP connection from host ``i`` to each of ``address``'s ports ends."""
    code = ("import json, socket, sys\n"
            "out = {}\n"
            "for p in map(int, sys.argv[2:]):\n"
            "    s = socket.socket(); s.settimeout(5)\n"
            "    try:\n"
            "        s.connect((sys.argv[1], p)); out[p] = 'connected'\n"
            "    except OSError as e:\n"
            "        out[p] = type(e).__name__\n"
            "    s.close()\n"
            "print(json.dumps(out))\n")
    done = hosts.run(i, [sys.executable, "-c", code, address, *map(str, ports)],
                     capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return {int(k): v for k, v in json.loads(done.stdout).items()}


WHY = unavailable()


@pytest.mark.skipif(WHY is not None, reason=f"no network namespaces: {WHY}")
def test_another_host_cannot_reach_the_embedded_cluster(tmp_path):
    """Host 0 runs the embedded cluster; host 1, on the same bridge, is refused on
    every one of its ports, while it reaches a control socket host 0 opens on
    every interface (so the refusals are the cluster's binding, not a dead link)."""
    with Hosts(2) as hosts:
        prefix = ("ip", "netns", "exec", hosts.names[0])
        with Embedded({"n_workers": 2}, control=True, prefix=prefix) as cluster:
            ports = sorted({s["port"] for s in cluster.report["sockets"] if s["tcp"]})
            control = cluster.report["control"]
            seen = _connect_from(hosts, 1, hosts.address(0), ports + [control])
    assert seen.pop(control) == "connected"
    assert len(seen) >= 6 and set(seen.values()) == {"ConnectionRefusedError"}, seen
