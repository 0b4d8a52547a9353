"""A Dask cluster on several hosts of one machine, and `dscir` driven from a host of its own.

Host 0 runs ``dask scheduler``; hosts 1..H run ``dask worker`` processes
(``--workers-per-host`` each, one thread, under nannies); host H+1 is the
driver's, where ``dscir`` runs. Hosts are network namespaces on a bridge
(``netns_hosts.py``), so every connection between scheduler, workers and
driver crosses a veth link, as between machines; the store and the run are
read and written at the same paths everywhere (the shared file system).

With ``--delay-ms D`` every listening socket between hosts (the scheduler's
and each worker's) sits behind a delaying proxy (``delayproxy.py``) on its own
host, and the processes advertise the proxy's address: each connection from
one host to another (driver to scheduler, worker to scheduler, scheduler to
worker, worker to worker) then has D ms added to each direction. Nannies'
control connections are not delayed. With ``--tls`` the cluster and the
driver use mutual TLS with certificates from ``clusters/tls/make-certs.sh``.

    sudo python clusters/netns/netns_cluster.py [--worker-hosts 3] [--workers-per-host 2]
        [--tls] [--delay-ms 5] -- fit lda STORE --topics 20 --iterations 10 --out RUN

builds the hosts, starts the cluster, runs ``python -m dscir ARGS --address
SCHEDULER`` on the driver's host, prints its output and exits with its code;
the hosts and every process on them are torn down on exit, on an error, on
Ctrl-C and on SIGTERM.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from netns_hosts import Hosts, exit_on_sigterm, unavailable

HERE = Path(__file__).resolve().parent
SCHEDULER_PORT, WORKER_PORT, PROXY_OFFSET = 8786, 9000, 100

_WAIT = """
import sys
from distributed import Client, Security
address, n, tls = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
security = None
if tls:
    ca, cert, key = tls
    security = Security(require_encryption=True, tls_ca_file=ca, tls_client_cert=cert,
                        tls_client_key=key)
with Client(address, security=security, timeout="60s") as c:
    c.wait_for_workers(n, timeout=600)
"""


def _wait_for_file(path: Path, proc: subprocess.Popen, seconds: float = 600) -> None:
    """Wait until the scheduler ``proc`` has written ``path``; raise if it exits
    first or takes ``seconds`` (minutes on a heavily loaded machine)."""
    end = time.monotonic() + seconds
    while not (path.exists() and path.stat().st_size):
        if proc.poll() is not None or time.monotonic() > end:
            raise RuntimeError(f"the Dask scheduler wrote no {path.name} (exit status "
                               f"{proc.poll()}); see its log")
        time.sleep(0.05)


class NetnsCluster:
    """Scheduler, worker hosts and a driver host; ``with NetnsCluster(...) as c:``."""

    def __init__(self, workdir: Path, worker_hosts: int = 3, workers_per_host: int = 2, *,
                 tls: bool = False, delay_ms: float | None = None, env: dict | None = None,
                 worker_args: tuple[str, ...] = ()):
        self.workdir = Path(workdir)
        self.worker_hosts, self.per_host = worker_hosts, workers_per_host
        self.delay_ms = delay_ms
        self.hosts = Hosts(worker_hosts + 2)
        self.driver_host = worker_hosts + 1
        self.env = dict(env or os.environ, PYTHONUNBUFFERED="1")
        self.worker_args = list(worker_args)
        self.proto = "tls" if tls else "tcp"
        self.certs = self.workdir / "certs" if tls else None
        self.procs: list[subprocess.Popen] = []
        self.logs = self.workdir / "logs"

    # -- addresses -----------------------------------------------------------

    def _contact(self, host: int, port: int) -> str:
        """Where others reach ``port`` of ``host``: its delaying proxy, if any."""
        offset = PROXY_OFFSET if self.delay_ms is not None else 0
        return f"{self.proto}://{self.hosts.address(host)}:{port + offset}"

    @property
    def address(self) -> str:
        """The scheduler's address, as workers and the driver reach it."""
        return self._contact(0, SCHEDULER_PORT)

    def tls_args(self, role: str) -> list[str]:
        """``--tls-ca-file/--tls-cert/--tls-key`` for ``role`` (empty without TLS)."""
        if self.certs is None:
            return []
        c = self.certs
        return ["--tls-ca-file", str(c / "ca.pem"), "--tls-cert", str(c / f"{role}.pem"),
                "--tls-key", str(c / f"{role}-key.pem")]

    # -- processes -----------------------------------------------------------

    def _start(self, host: int, name: str, argv: list[str], **kw) -> subprocess.Popen:
        log = open(self.logs / f"{name}.log", "a")
        proc = self.hosts.popen(host, argv, stdout=kw.pop("stdout", log), stderr=log,
                                env=kw.pop("env", self.env), **kw)
        log.close()
        self.procs.append(proc)
        return proc

    def _proxy(self, host: int, ports: list[int]) -> None:
        ip = self.hosts.address(host)
        pairs = [f"{ip}:{p + PROXY_OFFSET}={ip}:{p}" for p in ports]
        proc = self._start(host, f"proxy-h{host}", [
            sys.executable, str(HERE / "delayproxy.py"), "--delay-ms", str(self.delay_ms),
            *pairs], stdout=subprocess.PIPE, text=True)
        if proc.stdout.readline().strip() != "ready":
            raise RuntimeError(f"the delay proxy on host {host} did not start")

    def start_workers(self, host: int, env: dict | None = None) -> None:
        """Start ``workers_per_host`` workers on worker host ``host`` (1..H), with
        the cluster's environment updated by ``env``."""
        ip = self.hosts.address(host)
        ports = [WORKER_PORT + j for j in range(self.per_host)]
        if self.delay_ms is not None:
            self._proxy(host, ports)
        for j, port in enumerate(ports):
            self._start(host, f"worker-h{host}-{j}", [
                sys.executable, "-m", "distributed.cli.dask_worker", self.address,
                "--nthreads", "1", "--no-dashboard", "--name", f"h{host}-w{j}",
                "--listen-address", f"{self.proto}://{ip}:{port}",
                "--contact-address", self._contact(host, port), *self.tls_args("worker"),
                *self.worker_args], env={**self.env, **(env or {})})

    def wait_for_workers(self, n: int | None = None) -> None:
        """Block until ``n`` (default all) workers have joined, probing from the driver's host."""
        n = self.worker_hosts * self.per_host if n is None else n
        tls = [str(self.certs / f) for f in ("ca.pem", "client.pem", "client-key.pem")] \
            if self.certs else []
        done = self.hosts.run(self.driver_host, [sys.executable, "-c", _WAIT, self.address,
                                                 str(n), *tls],
                              env=self.env, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"{n} workers did not join {self.address}: "
                               f"{done.stderr.strip().splitlines()[-1:]}")

    def start(self) -> NetnsCluster:
        """Build the hosts and start the scheduler and all workers; wait for them."""
        self.logs.mkdir(parents=True, exist_ok=True)
        self.hosts.up()
        try:
            if self.certs is not None:
                ips = [self.hosts.address(i) for i in range(self.hosts.n)]
                subprocess.run([str(HERE.parent / "tls" / "make-certs.sh"), str(self.certs),
                                *ips], check=True, capture_output=True)
            if self.delay_ms is not None:
                self._proxy(0, [SCHEDULER_PORT])
            sched_file = self.workdir / "scheduler.json"
            sched_file.unlink(missing_ok=True)
            scheduler = self._start(0, "scheduler", [
                sys.executable, "-m", "distributed.cli.dask_scheduler", "--no-dashboard",
                "--host", f"{self.proto}://{self.hosts.address(0)}",
                "--port", str(SCHEDULER_PORT), "--scheduler-file", str(sched_file),
                *self.tls_args("scheduler")])
            _wait_for_file(sched_file, scheduler)  # listening: workers may connect
            for h in range(1, self.worker_hosts + 1):
                self.start_workers(h)
            self.wait_for_workers()
        except BaseException:
            self.close()
            raise
        return self

    def dscir(self, args: list[str], **kw) -> subprocess.Popen:
        """Start ``python -m dscir ARGS --address SCHEDULER`` on the driver's host."""
        argv = [sys.executable, "-m", "dscir", *args, "--address", self.address,
                *self.tls_args("client")]
        kw.setdefault("env", self.env)
        return self.hosts.popen(self.driver_host, argv, **kw)

    def close(self) -> None:
        """Tear down every host and every process on them (idempotent)."""
        self.hosts.down()
        for p in self.procs:
            p.wait()
            if p.stdout is not None:
                p.stdout.close()
        self.procs.clear()

    def __enter__(self) -> NetnsCluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--worker-hosts", type=int, default=3)
    p.add_argument("--workers-per-host", type=int, default=2)
    p.add_argument("--tls", action="store_true", help="mutual TLS everywhere")
    p.add_argument("--delay-ms", type=float, default=None,
                   help="one-way delay added to every connection between hosts")
    p.add_argument("--logs", type=Path, default=None,
                   help="keep the processes' logs (and certificates) here")
    p.add_argument("args", nargs=argparse.REMAINDER, help="-- and the dscir arguments")
    a = p.parse_args()
    args = a.args[1:] if a.args[:1] == ["--"] else a.args
    if not args:
        p.error("give the dscir command after --, e.g. -- fit lda STORE --out RUN")
    why = unavailable()
    if why:
        print(f"netns_cluster: {why}", file=sys.stderr)
        return 2
    exit_on_sigterm()
    with tempfile.TemporaryDirectory() as tmp:
        work = a.logs or Path(tmp)
        with NetnsCluster(work, a.worker_hosts, a.workers_per_host, tls=a.tls,
                          delay_ms=a.delay_ms) as cluster:
            print(f"hosts {cluster.hosts.prefix}-h0..h{cluster.driver_host}: scheduler "
                  f"{cluster.address}, {a.worker_hosts} x {a.workers_per_host} workers, "
                  f"driver on {cluster.hosts.address(cluster.driver_host)}", flush=True)
            return cluster.dscir(args).wait()


if __name__ == "__main__":
    sys.exit(main())
