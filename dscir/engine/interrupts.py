"""Ctrl-C and SIGTERM during a fit: one exception in the driver, none elsewhere.

A terminal's Ctrl-C sends SIGINT to every process of its foreground group, a
batch system's cancel (Slurm's ``scancel``) SIGTERM to every process of the
job. Left alone, each worker process of an embedded LocalCluster prints its
own ``KeyboardInterrupt`` traceback or dies under the scheduler's feet, and an
exception raised at an arbitrary point of the driver's main thread can break
a lock (``RuntimeError: release unlocked lock``), vanish in a finaliser, or
leave an event loop waiting for a wake-up that never comes.

So: ``signals_to_driver`` blocks both signals in the threads that start the
embedded cluster, and so in the worker processes they spawn (a blocked signal
stays blocked across ``fork`` and ``exec``); the driver alone stops the
workers, by closing the cluster. ``interruptible`` makes, in the main thread,
SIGINT raise ``KeyboardInterrupt`` and SIGTERM raise ``Terminated`` (a
``SystemExit`` with status 143: a script ended by SIGTERM exits as one killed
by it would, after its ``finally`` blocks ran), only where that is safe (in
dscir's code, or blocked in a condition's wait; elsewhere the signal is sent
again a moment later), and once: further signals while the fit unwinds
(closing the cluster) are ignored. Inside ``deferred`` (starting a cluster:
half a cluster could not be closed) a signal is raised at the end of the block.
Inside ``held`` (a checkpointed chain's iterations) the first signal waits for
the loop to reach a point where the chain is whole (the end of an iteration:
it checkpoints, then raises it); a second one is raised at once.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import signal
import threading
import weakref
from collections.abc import Iterator
from multiprocessing import resource_tracker

#: A signal that lands where raising is unsafe is sent again after this many seconds.
RETRY = 0.02


class Terminated(SystemExit):
    """SIGTERM arrived during a fit; exit status 143 (128 + SIGTERM) when uncaught."""

    def __init__(self) -> None:
        super().__init__(128 + signal.SIGTERM)

    def __str__(self) -> str:
        return "terminated (SIGTERM)"


def exit_status(exc: BaseException) -> int | None:
    """The shell's status for an interrupted command (130 SIGINT, 143 SIGTERM), or
    None when ``exc`` is no interrupt."""
    if isinstance(exc, Terminated):
        return 128 + signal.SIGTERM
    if isinstance(exc, KeyboardInterrupt):
        return 128 + signal.SIGINT
    return None


def _lock_waits() -> frozenset[int]:
    """The lines of ``threading.Condition.wait`` that block on its lock inside its
    ``try``/``finally`` (every wait of Dask's client and of zarr's ends there): an
    exception raised on them leaves the condition whole."""
    try:
        lines, start = inspect.getsourcelines(threading.Condition.wait)
    except (OSError, TypeError):
        return frozenset()
    text = [line.strip() for line in lines]
    inside = [i for i, t in enumerate(text) if t.startswith(("try:", "finally:"))]
    if len(inside) < 2:
        return frozenset()
    return frozenset(start + i for i in range(inside[0], inside[1])
                     if "waiter.acquire(" in text[i])


_WAITS = _lock_waits()
_OWN = os.path.dirname(os.path.dirname(__file__)) + os.sep  # the dscir package


def _safe(frame) -> bool:
    """Whether an exception may be raised in ``frame``, the main thread's current
    one: in dscir's own code or blocked in a condition's wait, and not inside a
    finaliser (whose exceptions are printed and dropped)."""
    if frame is None:
        return False
    code = frame.f_code
    if code.co_filename == threading.__file__:
        if code.co_name != "wait" or frame.f_lineno not in _WAITS:
            return False
    elif not code.co_filename.startswith(_OWN):
        return False
    while frame is not None:
        if frame.f_code.co_name == "__del__" or frame.f_code.co_filename == weakref.__file__:
            return False
        frame = frame.f_back
    return True


class _Handler:
    """The main thread's handler of SIGINT and SIGTERM inside ``interruptible``."""

    def __init__(self) -> None:
        self.raised = False
        self.deferring = False
        self.holding = False
        self.pending: int | None = None

    def __call__(self, signum: int, frame) -> None:
        if self.raised:
            return  # the fit is unwinding already
        if self.deferring or (self.holding and self.pending is None):
            self.pending = self.pending or signum
            return
        if not _safe(frame):  # raise a moment later, elsewhere
            threading.Timer(RETRY, signal.pthread_kill,
                            (threading.main_thread().ident, signum)).start()
            return
        self.raise_(signum)

    def raise_(self, signum: int) -> None:
        self.raised = True
        if signum == signal.SIGTERM:
            raise Terminated()
        raise KeyboardInterrupt()


#: The handler of the outermost ``interruptible`` block of the main thread.
_active: _Handler | None = None


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """In the main thread, SIGINT and SIGTERM raise once, where that is safe, for
    the duration of the block (see the module). Handlers a program set itself (or
    a signal ignored, as in a background job) are left alone; a nested block uses
    the outermost's handler, armed again (an earlier interrupt was dealt with)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    global _active
    if _active is not None:
        _active.raised, _active.pending = False, None
        yield
        return
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    ours = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL}
    handler = _Handler()
    taken = [s for s, h in previous.items() if h is ours[s]]
    for s in taken:
        signal.signal(s, handler)
    _active = handler
    try:
        yield
    finally:
        _active = None
        for s in taken:
            signal.signal(s, previous[s])


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Inside ``interruptible``, a signal arriving in the block is raised when the
    block ends (elsewhere nothing changes)."""
    handler = _active
    if handler is None or handler.deferring or \
            threading.current_thread() is not threading.main_thread():
        yield
        return
    handler.deferring = True
    try:
        yield
    finally:
        handler.deferring = False
    if handler.pending is not None and not handler.raised and not handler.holding:
        handler.raise_(handler.pending)


class Held:
    """The signal a ``held`` block holds (none outside ``interruptible``)."""

    def __init__(self, handler: _Handler | None) -> None:
        self._handler = handler

    @property
    def pending(self) -> bool:
        """Whether a signal waits to be raised."""
        h = self._handler
        return h is not None and h.pending is not None and not h.raised

    def raise_pending(self) -> None:
        """Raise the signal that waits, if one does (call where the work is whole)."""
        if self.pending:
            self._handler.raise_(self._handler.pending)


@contextlib.contextmanager
def held(hold: bool = True) -> Iterator[Held]:
    """Inside ``interruptible`` (and ``hold``), the first signal arriving in the block
    waits for ``Held.raise_pending`` (or the block's end); a second is raised at once,
    where safe. Elsewhere nothing changes."""
    handler = _active
    if not hold or handler is None or handler.holding or \
            threading.current_thread() is not threading.main_thread():
        yield Held(None)
        return
    handler.holding = True
    try:
        yield Held(handler)
    finally:
        handler.holding = False
    if handler.pending is not None and not handler.raised:
        handler.raise_(handler.pending)


@contextlib.contextmanager
def signals_to_driver() -> Iterator[None]:
    """SIGINT and SIGTERM blocked in this thread for the block: threads started
    here, and the processes they start (an embedded cluster's workers), keep them
    blocked, so only the driver acts on them (a pending one reaches this thread
    when the block ends). The nanny still stops its workers: by message, then
    SIGKILL (also past a memory limit, after SIGTERM)."""
    # Starting multiprocessing's resource tracker unblocks these signals in the
    # thread that starts it (CPython's bpo-33613 guard): start it before the block.
    resource_tracker.ensure_running()
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
