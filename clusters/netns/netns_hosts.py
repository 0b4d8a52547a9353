"""Hosts on one machine: Linux network namespaces joined by veth pairs and a bridge.

Every run gets a unique name prefix (``dscir-<pid>-<random>``) so that runs in
parallel never collide. A "switch" namespace holds the bridge; host ``i`` is
namespace ``<prefix>-h<i>`` with ``eth0`` at ``198.18.0.<i+1>/24`` (RFC 2544's
benchmarking range), linked to port ``p<i>`` of the bridge. The addresses exist
only inside the namespaces: the machine's own network is not touched, and
nothing outside a run can reach its hosts. The file system is shared, as a
cluster's shared file system would be.

Teardown kills every process in the run's namespaces and deletes them, which
deletes the veths and the bridge; it is idempotent, so it is safe to call from
a finally block, a signal handler and an atexit hook alike. Needs root and
iproute2's ``ip``.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

SUBNET = "198.18.0"


def unavailable() -> str | None:
    """Why namespaces cannot be made here (None: they can)."""
    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed"
    if os.geteuid() != 0:
        return "network namespaces need root"
    probe = f"dscir-probe-{os.getpid()}-{secrets.token_hex(3)}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode:
        return f"`ip netns add` fails here: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def exit_on_sigterm() -> None:
    """Make SIGTERM raise SystemExit, so that ``with Hosts(...)`` blocks (and
    ``finally`` clauses) tear the hosts down when a script is terminated."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and done.returncode:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done


class Hosts:
    """``n`` hosts on a bridge; ``with Hosts(3) as h:`` builds and tears them down."""

    def __init__(self, n: int, prefix: str | None = None):
        self.n = n
        self.prefix = prefix or f"dscir-{os.getpid()}-{secrets.token_hex(3)}"
        self.switch = f"{self.prefix}-sw"
        self.names = [f"{self.prefix}-h{i}" for i in range(n)]

    def address(self, i: int) -> str:
        """Host ``i``'s IPv4 address."""
        return f"{SUBNET}.{i + 1}"

    def up(self) -> Hosts:
        """Create the switch and the hosts (tearing down what was made if this fails)."""
        try:
            _ip("netns", "add", self.switch)
            _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
            _ip("-n", self.switch, "link", "set", "br0", "up")
            for i, ns in enumerate(self.names):
                _ip("netns", "add", ns)
                _ip("link", "add", "name", "eth0", "netns", ns, "type", "veth",
                    "peer", "name", f"p{i}", "netns", self.switch)
                _ip("-n", self.switch, "link", "set", f"p{i}", "master", "br0", "up")
                _ip("-n", ns, "addr", "add", f"{self.address(i)}/24", "dev", "eth0")
                _ip("-n", ns, "link", "set", "lo", "up")
                _ip("-n", ns, "link", "set", "eth0", "up")
        except BaseException:
            self.down()
            raise
        return self

    def popen(self, i: int, argv: Sequence[str], **kw) -> subprocess.Popen:
        """Start ``argv`` on host ``i`` (``ip netns exec`` execs it: the pid is argv's)."""
        return subprocess.Popen(["ip", "netns", "exec", self.names[i], *argv], **kw)

    def run(self, i: int, argv: Sequence[str], **kw) -> subprocess.CompletedProcess:
        """Run ``argv`` on host ``i`` to completion."""
        return subprocess.run(["ip", "netns", "exec", self.names[i], *argv], **kw)

    def pids(self, i: int) -> list[int]:
        """Every process running on host ``i``."""
        done = _ip("netns", "pids", self.names[i], check=False)
        return [int(p) for p in done.stdout.split()]

    def kill(self, i: int) -> list[int]:
        """Host ``i`` lost: SIGKILL every process on it at once; returns their pids."""
        pids = self.pids(i)
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return pids

    def link(self, i: int, up: bool) -> None:
        """Cut (``up=False``) or restore host ``i``'s link to the bridge."""
        _ip("-n", self.switch, "link", "set", f"p{i}", "up" if up else "down")

    def down(self) -> None:
        """Kill every process of the run's namespaces and delete them (idempotent)."""
        mine = [ns for ns in self.names + [self.switch] if os.path.exists(f"/run/netns/{ns}")]
        for _ in range(50):
            pids = [p for ns in mine for p in
                    _ip("netns", "pids", ns, check=False).stdout.split()]
            if not pids:
                break
            for p in pids:
                try:
                    os.kill(int(p), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.05)
        for ns in mine:
            _ip("netns", "del", ns, check=False)

    def __enter__(self) -> Hosts:
        return self.up()

    def __exit__(self, *exc) -> None:
        self.down()
