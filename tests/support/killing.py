"""Killing a worker process while it holds a chosen task: a plugin stalls the worker
that starts the task and names its pid, a thread kills that pid."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import cloudpickle
from distributed.diagnostics.plugin import WorkerPlugin

# `dask worker` processes cannot import this module: send the plugin by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _hooked_run(runner, key, *args):
    for hook in list(type(runner).test_hooks.values()):
        hook(key)
    return type(runner).plain_run(runner, key, *args)


def hook_runner_calls(name: str, hook) -> None:
    """In this worker process, call ``hook(key)`` as every ``PartRunner`` call
    starts (the rounds that run without tasks), until ``unhook_runner_calls``."""
    from dscir.engine.worker import PartRunner

    if "test_hooks" not in PartRunner.__dict__:
        PartRunner.test_hooks, PartRunner.plain_run = {}, PartRunner.run
        PartRunner.run = _hooked_run
    PartRunner.test_hooks[name] = hook


def unhook_runner_calls(name: str) -> None:
    from dscir.engine.worker import PartRunner

    PartRunner.__dict__.get("test_hooks", {}).pop(name, None)


class StallOnTask(WorkerPlugin):
    """The first worker to start a task (or a runner call) whose key names ``part``
    (and, if given, iteration ``iteration``) writes its pid to ``flag`` and stalls
    there until killed."""

    def __init__(self, flag: str, part: str, iteration: int | None = None):
        self.flag, self.part, self.iteration = flag, part, iteration

    def setup(self, worker):
        hook_runner_calls(self.flag, lambda key: self.transition(key, "ready", "executing"))

    def teardown(self, worker):
        unhook_runner_calls(self.flag)

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
