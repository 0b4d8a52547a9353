"""A fit's run options (``out``, ``resume``, ``overwrite``), and when a fit with a run
store checkpoints: ``checkpoint_every`` and ``checkpoint_interval``.

A fit with ``out`` checkpoints by default every ``DEFAULT_INTERVAL`` seconds of wall
time and at Ctrl-C or SIGTERM (at the end of the iteration under way), so an
interrupted fit always has a checkpoint to resume from. ``checkpoint_every=N`` adds
one every N iterations; ``checkpoint_interval=S`` sets the seconds (0: none by
time); ``checkpoint_every=0`` turns every checkpoint off (the run is then written
only when it completes, as an atomic rename). A checkpoint never changes the
chain: where the clock puts it leaves the chain reproducible.
"""

from __future__ import annotations

import numbers
from pathlib import Path

from dscir.params import Interval
from dscir.errors import DscirError, spell

#: Seconds of wall time between a fit's checkpoints unless ``checkpoint_interval`` says.
DEFAULT_INTERVAL = 300.0

_FLAGS = {"checkpoint_every": "--checkpoint-every", "checkpoint_interval": "--checkpoint-interval"}


def check_run_options(out, resume, checkpoints: tuple[int | None, float | None],
                      n_iter: int, overwrite: bool) -> None:
    """One clear error for run options that cannot be honoured (before any cluster):
    ``checkpoints`` is ``fit``'s (checkpoint_every, checkpoint_interval)."""
    from dscir.runs.store import check_out_path

    if resume is not None and out is not None and Path(out) != Path(resume):
        raise DscirError(f"a resumed run is written back to {resume}, not to out={out}")
    check_checkpoints(out, resume, *checkpoints)
    if out is not None and resume is None:
        if n_iter == 0:
            raise DscirError(f"{spell('n_iter=0', '--iterations 0')} with "
                             f"{spell('out', '--out')} would write a finished run of the "
                             "random initial state; ask for at least 1 iteration")
        check_out_path(out, overwrite)


def check_checkpoints(out, resume, checkpoint_every: int | None,
                      checkpoint_interval: float | None) -> None:
    """One clear error for run options that cannot go together (before any cluster)."""
    Interval(numbers.Integral, 0, none=True).check("checkpoint_every", checkpoint_every)
    Interval(numbers.Real, 0, none=True).check("checkpoint_interval", checkpoint_interval)
    given = {"checkpoint_every": checkpoint_every, "checkpoint_interval": checkpoint_interval}
    if out is None and resume is None:
        for name, value in given.items():
            if value:
                raise DscirError(f"{spell(name, _FLAGS[name])} needs {spell('out', '--out')}, "
                                 "the run store to checkpoint into")
    if resume is not None and checkpoint_every == 0:
        raise DscirError(f"a resumed run keeps checkpointing: "
                         f"{spell('checkpoint_every=0', '--checkpoint-every 0')} cannot "
                         f"go with {spell('resume', '--resume')}")


def new_run(checkpoint_every: int | None, checkpoint_interval: float | None
            ) -> tuple[int, float]:
    """A new run's checkpoints: every N iterations (0: none by count) and every S
    seconds (0: none by time); both 0: no checkpoints."""
    if checkpoint_every == 0:
        return 0, 0.0
    seconds = DEFAULT_INTERVAL if checkpoint_interval is None else checkpoint_interval
    return int(checkpoint_every or 0), float(seconds)
