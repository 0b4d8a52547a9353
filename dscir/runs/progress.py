"""How far an unfinished run got: one still running, or one interrupted.

A checkpointed run is written in place (``dscir.runs.store``): until it
completes it has the ``dscir_resumable`` attribute (the iterations asked for
among it), checkpoints, and the samples kept so far. ``Progress.open`` reads
that much and no K x W array, so it is cheap on a run in progress; a run written
without checkpoints leaves nothing in place until it completes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import zarr

from dscir import integrity
from dscir.errors import DscirError
from dscir.runs.checkpoint import checkpoint_meta, group_arrays, latest_checkpoint
from dscir.runs.store import ATTR, RESUMABLE, resumable


@dataclass
class Progress:
    """An unfinished checkpointed run: where its latest checkpoint is, what it kept."""

    path: Path
    model: str
    checkpoint_every: int
    n_iter: int | None  # the iterations asked for (None: not recorded)
    iteration: int | None  # of the latest complete checkpoint (None: none yet)
    written: float | None  # when that checkpoint was written (seconds since the epoch)
    config: dict[str, Any] = field(default_factory=dict)
    store: str | None = None
    n_samples: int = 0  # samples kept so far (some may follow the latest checkpoint)
    last_sample: int | None = None  # the iteration of the last one
    evaluations: dict[str, np.ndarray] = field(default_factory=dict)  # to the checkpoint
    checkpoint_interval: float = 0.0  # seconds between checkpoints (0: not by time)

    @classmethod
    def open(cls, path: str | Path) -> Progress:
        """The progress of the unfinished run at ``path`` (a clear error for a finished
        run or anything else)."""
        path = Path(path)
        meta = resumable(path)
        if ATTR in integrity.open_group(path, "run").attrs:
            raise DscirError(f"{path} is a finished run")
        self = cls(path=path, model=meta["model"],
                   checkpoint_every=int(meta["checkpoint_every"]),
                   n_iter=meta.get("n_iter"), iteration=None, written=None,
                   checkpoint_interval=float(meta.get("checkpoint_interval", 0.0)))
        kept = path / "samples" / "iteration"
        if kept.exists():
            iterations = integrity.read(zarr.open_array(str(kept), mode="r"))
            self.n_samples = int(iterations.size)
            self.last_sample = int(iterations[-1]) if iterations.size else None
        ckpt = latest_checkpoint(path)
        if ckpt is not None:
            then = checkpoint_meta(ckpt)
            self.iteration, self.written = int(then["iteration"]), ckpt.stat().st_mtime
            self.config, self.store = dict(then["config"]), then["store"]
            g = integrity.open_group(ckpt, "checkpoint")
            if "evaluations" in g:
                self.evaluations = group_arrays(integrity.member(g, "evaluations",
                                                                 "checkpoint"))
        return self

    def cadence(self) -> str:
        """When the run checkpoints, in words."""
        every = [f"every {self.checkpoint_every:,} iterations"] if self.checkpoint_every else []
        if self.checkpoint_interval:
            every.append(f"every {self.checkpoint_interval:g} s")
        return " and ".join(every + ["at Ctrl-C"])

    def to_dict(self) -> dict[str, Any]:
        """Plain values (JSON-ready)."""
        return {"path": str(self.path), "model": self.model, "finished": False,
                "checkpoint_every": self.checkpoint_every,
                "checkpoint_interval": self.checkpoint_interval, "n_iter": self.n_iter,
                "checkpoint_iteration": self.iteration, "checkpoint_written": self.written,
                "config": self.config, "store": self.store, "n_samples": self.n_samples,
                "last_sample": self.last_sample,
                "evaluations": {k: v.tolist() for k, v in self.evaluations.items()}}


def unfinished(path: str | Path) -> bool:
    """Whether ``path`` holds a checkpointed run that has not completed (running, or
    interrupted)."""
    path = Path(path)
    if not (path / "zarr.json").exists():
        return False
    attrs = integrity.open_group(path, "run").attrs
    return RESUMABLE in attrs and ATTR not in attrs
