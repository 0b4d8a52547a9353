"""Fitted runs on disk, for every model: the run store and its checkpoints."""

from dscir.runs.checkpoint import Checkpoint, read_checkpoint, write_checkpoint
from dscir.runs.store import Run, RunWriter, read_arrays

__all__ = ["Checkpoint", "Run", "RunWriter", "read_arrays", "read_checkpoint",
           "write_checkpoint"]
