"""`dask scheduler` and `dask worker` processes for the tests that need a real
cluster over the network (TCP or TLS on loopback)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

DASK = shutil.which("dask", path=str(Path(sys.executable).parent)) or shutil.which("dask")


def wait_for_file(path: Path, proc: subprocess.Popen, what: str) -> None:
    """Wait until ``proc`` has written ``path``; raise if it exits or takes 60 s."""
    for _ in range(1200):
        if path.exists() and path.stat().st_size:
            return
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        time.sleep(0.05)
    raise RuntimeError(f"{what} wrote no {path.name} in 60 s")


def stop(procs: list[subprocess.Popen]) -> None:
    """Terminate ``procs`` last first; kill what does not exit in 30 s."""
    for p in procs[::-1]:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


@contextlib.contextmanager
def dask_processes(tmp: Path, n_workers: int, *, host: str = "127.0.0.1",
                   scheduler_args: tuple[str, ...] = ("--no-dashboard",),
                   worker_args: tuple[str, ...] = (), env: dict | None = None) -> Iterator[str]:
    """Start a scheduler on ``host`` (``tls://127.0.0.1`` for TLS) and ``n_workers``
    single-threaded workers; yield the scheduler's address. Waiting for the workers
    to join is the caller's (it knows the security to connect with)."""
    env = env or dict(os.environ, PYTHONUNBUFFERED="1")
    sched_file = tmp / "scheduler.json"
    procs = [subprocess.Popen(
        [DASK, "scheduler", "--host", host, "--port", "0", "--scheduler-file", str(sched_file),
         *scheduler_args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)]
    try:
        wait_for_file(sched_file, procs[0], "dask scheduler")
        address = json.loads(sched_file.read_text())["address"]
        for _ in range(n_workers):
            procs.append(subprocess.Popen(
                [DASK, "worker", address, "--nthreads", "1", "--no-dashboard",
                 "--host", "127.0.0.1", *worker_args],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env))
        yield address
    finally:
        stop(procs)
