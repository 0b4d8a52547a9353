"""The one line a fit interrupted in Python ends with (the command line prints its own).

Ctrl-C or SIGTERM during ``fit`` (``dscir.engine.interrupts`` turns them into
``KeyboardInterrupt`` and ``Terminated`` in the driver alone) is logged once,
at WARNING on the ``dscir.api`` logger: the iteration the chain reached, and
the checkpoint it can resume from (or why it cannot), then the exception goes
on: a Python user expects ``KeyboardInterrupt``. Without logging configured,
Python's last-resort handler writes the line to stderr.
"""

from __future__ import annotations

import logging

from dscir.engine.interrupts import Terminated
from dscir.errors import on_command_line

log = logging.getLogger("dscir.api")


def report_interrupt(exc: BaseException, chain, writer, end: int) -> None:
    """Log the line for ``exc`` if it is an interrupt of ``chain``, which was to reach
    iteration ``end``, writing to ``writer`` (None: no run store)."""
    if not isinstance(exc, (KeyboardInterrupt, Terminated)) or on_command_line():
        return
    what = "terminated (SIGTERM)" if isinstance(exc, Terminated) else "interrupted"
    log.warning("%s at iteration %d of %d; %s", what, chain.iteration, end,
                _where(writer))


def _where(writer) -> str:
    """Where the interrupted fit can continue."""
    from dscir.runs.checkpoint import latest_checkpoint

    if writer is None:
        return "nothing was written (fit with out=RUN to resume)"
    run = writer.path
    ckpt = latest_checkpoint(run) if writer.checkpoints else None
    if ckpt is None:
        return f"{run} has no checkpoint and cannot be resumed"
    return (f"checkpoint at {run} (iteration {int(ckpt.name)}), resumable with "
            f"fit(..., resume={str(run)!r})")
