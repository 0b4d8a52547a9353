"""Worker preload for tests/engine/test_netns.py: stall a worker inside a Gibbs task (or runner call) on demand.

With ``DSCIR_TEST_STALL=DIR`` in a worker's environment, once ``DIR/arm``
holds an iteration number the first such worker to start a Gibbs task of
that iteration or later writes its pid to ``DIR/stalled`` and blocks there,
task in hand, until the test kills its host.
"""

from __future__ import annotations

import os
import time

from distributed.diagnostics.plugin import WorkerPlugin


class StallInGibbs(WorkerPlugin):
    """Stalls in a Gibbs task, or in a Gibbs call of a worker's runner (the rounds
    that run without tasks: ``dscir.engine.worker.PartRunner``)."""

    def __init__(self, root: str):
        self.root = root

    def setup(self, worker):
        from dscir.engine.worker import PartRunner

        run = PartRunner.run

        def stalling(runner, key, *args):
            self.transition(key, "ready", "executing")
            return run(runner, key, *args)

        PartRunner.run = stalling

    def transition(self, key, start, finish, **kwargs):
        if finish != "executing" or not isinstance(key, tuple) or "-gibbs-" not in key[0]:
            return
        try:
            with open(os.path.join(self.root, "arm")) as f:
                at = int(f.read())
        except (OSError, ValueError):
            return
        if key[1] < at:
            return
        try:
            fd = os.open(os.path.join(self.root, "stalled"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return
        os.write(fd, f"{os.getpid()} {key[1]}".encode())
        os.close(fd)
        time.sleep(600)


async def dask_setup(worker):
    root = os.environ.get("DSCIR_TEST_STALL")
    if root:
        await worker.plugin_add(StallInGibbs(root), name="dscir-test-stall")
