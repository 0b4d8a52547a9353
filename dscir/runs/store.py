"""A fitted run on disk, any model: a Zarr v3 group with a versioned ``dscir_run`` attribute.

Layout (every model)::

    RUN/                      attrs["dscir_run"] = {format_version, model, metric,
                              config, store, iteration, n_samples, params}
      vocabulary              str [W]
      state/<field>           the chain's parameters (sampler state fields)
      history/<field>         per-iteration statistics and timings
      evaluations/<field>     iteration, the model's held-out score, extras
      samples/<name>          the kept posterior samples, appended as kept
      <summary>               the model's summaries (LDA: phi_mean; DP
                              mixture: weights, components, labels)
      checkpoints/NNNNNNNNNNNN  the latest checkpoint (``dscir.runs.checkpoint``)

LDA keeps ``samples/phi`` float32 [S, K, W] and ``samples/iteration``; the DP
mixture stacks its components (``samples/log_w`` [sum K], ``samples/log_phi``
[sum K, W], ``samples/n_components``, ``alpha``, ``log_rest``, ``iteration``).

A run is written into a hidden sibling directory and renamed into place when
complete, so an interrupted or failed fit leaves nothing at ``RUN``; an
existing run is replaced only with ``overwrite=True``. A checkpointed run is
written in place instead and marked ``attrs["dscir_resumable"] = {format_version,
model, checkpoint_every, checkpoint_interval, n_iter}`` from the start (``n_iter``:
the iterations asked for, at most; ``checkpoint_interval``: seconds, absent in runs
checkpointed by iterations alone); ``dscir_run`` is set last, when it completes
(``dscir.runs.progress`` reads how far an unfinished one got). Everything is arrays and JSON attributes: no pickle.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import zarr

from dscir import integrity
from dscir.corpus.store import ATTR as CORPUS_ATTR
from dscir.errors import DscirError, spell
from dscir.runs.checkpoint import (Checkpoint, group_arrays, put, read_checkpoint,
                                   write_checkpoint)

FORMAT_VERSION = 1
ATTR = "dscir_run"
RESUMABLE = "dscir_resumable"
#: The attribute of a directory of several chains (``dscir.runs.chains``),
#: each chain a run at ``chain_path``; ``Run.open`` of it opens chain 0.
CHAINS = "dscir_chains"


def chain_path(run: str | Path, chain: int) -> Path:
    """Where chain ``chain`` of a multi-chain run lives."""
    return Path(run) / "chains" / str(int(chain))


class RunWriter:
    """Writes a run incrementally, then commits it.

    With checkpoints (every ``checkpoint_every`` > 0 iterations, or every
    ``checkpoint_interval`` > 0 seconds) the run is written in place (an existing
    run is removed at once with ``overwrite``) and can be resumed
    (``RunWriter.resume``) from its latest checkpoint; otherwise it is written
    into a temporary directory and renamed into place by ``commit``.
    """

    def __init__(self, path: str | Path, *, model: str, overwrite: bool = False,
                 checkpoint_every: int = 0, checkpoint_interval: float = 0.0,
                 n_iter: int | None = None):
        self.path = Path(os.path.abspath(path))  # workers may write into it from another cwd
        check_out_path(self.path, overwrite)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.checkpoint_every = int(checkpoint_every)
        self.checkpoint_interval = float(checkpoint_interval)
        self._checkpointed = False
        if self.checkpoints:
            if self.path.exists():
                shutil.rmtree(self.path)
            self.tmp = self.path
            self.group = zarr.open_group(str(self.path), mode="w")
            self.group.attrs[RESUMABLE] = {"format_version": FORMAT_VERSION, "model": model,
                                           "checkpoint_every": self.checkpoint_every,
                                           "checkpoint_interval": self.checkpoint_interval,
                                           **_planned(n_iter)}
        else:
            self.tmp = self.path.parent / f".{self.path.name}.partial-{uuid.uuid4().hex[:8]}"
            self.group = zarr.open_group(str(self.tmp), mode="w")
        self._growing: dict[str, zarr.Array] = {}

    @property
    def checkpoints(self) -> bool:
        """Whether the run is checkpointed (so written in place, and resumable)."""
        return self.checkpoint_every > 0 or self.checkpoint_interval > 0

    @classmethod
    def resume(cls, path: str | Path, ckpt: Checkpoint, *,
               checkpoint_every: int | None = None, checkpoint_interval: float | None = None,
               n_iter: int | None = None) -> RunWriter:
        """Reopen a checkpointed run (finished or not) to continue it from ``ckpt``,
        its latest checkpoint, up to ``n_iter`` iterations. Samples kept after that
        checkpoint are dropped (the resumed chain keeps them again);
        ``checkpoint_every`` / ``checkpoint_interval`` None keep the run's own."""
        path = Path(os.path.abspath(path))
        meta = resumable(path)
        self = cls.__new__(cls)
        self.path = self.tmp = path
        self._checkpointed = True
        self.checkpoint_every = int(meta["checkpoint_every"] if checkpoint_every is None
                                    else checkpoint_every)
        self.checkpoint_interval = float(meta.get("checkpoint_interval", 0.0)
                                         if checkpoint_interval is None else checkpoint_interval)
        if checkpoint_every == 0 or not self.checkpoints:
            raise DscirError(f"a resumed run keeps checkpointing: "
                             f"{spell('checkpoint_every=0', '--checkpoint-every 0')} "
                             "cannot resume a run")
        self.group = zarr.open_group(str(path), mode="r+")
        self.group.attrs.pop(ATTR, None)  # unfinished again until it commits
        self.group.attrs[RESUMABLE] = dict(meta, checkpoint_every=self.checkpoint_every,
                                           checkpoint_interval=self.checkpoint_interval,
                                           **_planned(n_iter))
        self._growing = {}
        for name, rows in ckpt.sample_rows.items():
            if name in self.group:
                arr = self._growing[name] = self.group[name]
                arr.resize((rows,) + arr.shape[1:])
        return self

    def checkpoint(self, ckpt: Checkpoint) -> Path:
        """Write ``ckpt`` atomically as the run's latest checkpoint."""
        if not self.checkpoints:
            raise DscirError("this run was started without checkpoints")
        self._checkpointed = True
        return write_checkpoint(self.path, ckpt)

    def append(self, rows: dict[str, np.ndarray]) -> None:
        """Append rows to growing arrays of the run (created at the first call with
        chunks of about 1 MiB, ``append_chunks``)."""
        for name, value in rows.items():
            value = np.asarray(value)
            if name not in self._growing:
                if name in self.group:
                    self._growing[name] = self.group[name]
                else:
                    chunks = append_chunks(value.shape[1:], value.dtype.itemsize)
                    self._growing[name] = self.group.create_array(
                        name, shape=(0,) + value.shape[1:], chunks=chunks, dtype=value.dtype,
                        **integrity.array_options())
            self._growing[name].append(value)

    def commit(self, *, model: str, metric: str, config: dict[str, Any], store: str,
               iteration: int, n_samples: int, arrays: dict[str, np.ndarray],
               params: dict[str, Any] | None = None) -> Path:
        """Write the final arrays and the ``dscir_run`` attribute (with ``params``, the
        estimator's parameters as given); move the run into place."""
        g = self.group
        for name, value in arrays.items():
            put(g, name, value)
        g.attrs[ATTR] = {"format_version": FORMAT_VERSION, "model": model, "metric": metric,
                         "config": config,
                         "store": store, "iteration": int(iteration),
                         "n_samples": int(n_samples), "params": params}
        if self.tmp == self.path:
            return self.path
        if self.path.exists():
            shutil.rmtree(self.path)
        self.tmp.rename(self.path)
        return self.path

    def abort(self) -> None:
        """Remove what a failed fit wrote, except a run that a checkpoint can resume."""
        if not self._checkpointed:
            integrity.remove_unfinished(self.tmp)


def _planned(n_iter: int | None) -> dict[str, int]:
    """The ``n_iter`` entry of the resumable attribute (none when not known)."""
    return {} if n_iter is None else {"n_iter": int(n_iter)}


def check_out_path(path: str | Path, overwrite: bool = False) -> None:
    """Raise unless a run can be written at ``path``: it does not exist (or
    ``overwrite`` and it is a directory), and its nearest existing ancestor is a
    directory this process can create entries in (tried, not guessed)."""
    import tempfile

    path = Path(path)
    if path.exists() or path.is_symlink():
        if not overwrite:
            raise DscirError(f"{path} exists; pass {spell('overwrite=True', '--overwrite')} to "
                             "replace it")
        if not path.is_dir():
            raise DscirError(f"cannot write the run to {path}: it exists and is not a "
                             "directory (a run store is one)")
    parent = Path(os.path.abspath(path)).parent
    while not parent.exists() and not parent.is_symlink() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise DscirError(f"cannot write the run to {path}: {parent} is a file, not a "
                         "directory")
    try:
        tempfile.TemporaryDirectory(dir=parent, prefix=".dscir-probe-").cleanup()
    except OSError as exc:
        raise DscirError(f"cannot write the run to {path}: directory {parent} is not "
                         f"writable (creating an entry in it failed: {exc.strerror or exc})"
                         ) from None


def _open(path: Path) -> zarr.Group:
    """The run's group; a path that holds something else is one error saying what."""
    written = f"a run is what {spell('fit(..., out=RUN)', '`dscir fit ... --out RUN`')} writes"
    if not path.exists():
        raise DscirError(f"no run at {path}")
    if not (path / "zarr.json").is_file():
        what = "a directory" if path.is_dir() else "a file"
        raise DscirError(f"{path} is {what}, not a dscir run (no zarr.json); {written}")
    try:
        group = integrity.open_group(path, "run")
    except (FileNotFoundError, ValueError, zarr.errors.GroupNotFoundError) as exc:
        raise DscirError(f"{path} is not a dscir run ({exc})") from exc
    if CORPUS_ATTR in group.attrs:
        raise DscirError(f"{path} is a corpus store, not a run; {written} from a store")
    return group


def _check_version(path: Path, meta: dict[str, Any]) -> None:
    if meta.get("format_version") != FORMAT_VERSION:
        raise DscirError(f"{path} has run format {meta.get('format_version')}, this dscir "
                         f"reads {FORMAT_VERSION}")


def resumable(path: str | Path) -> dict[str, Any]:
    """The ``dscir_resumable`` attribute of a checkpointed run (a clear error otherwise)."""
    path = Path(path)
    if not path.exists():
        raise DscirError(f"no run at {path} to resume")
    meta = _open(path).attrs.get(RESUMABLE)
    if meta is None:
        raise DscirError(f"{path} has no checkpoints to resume from (it was fitted with "
                         f"{spell('checkpoint_every=0', '--checkpoint-every 0')}, or "
                         "without checkpoints by an earlier dscir)")
    _check_version(path, meta)
    return dict(meta)


def checkpoint_to_resume(run: str | Path, model: str, config: dict[str, Any],
                         store: str, predated: dict[str, Any] | None = None) -> Checkpoint:
    """The latest checkpoint of ``run``, checked to continue a ``model`` chain of
    ``config`` on ``store`` (one clear error otherwise; ``Checkpoint.check``)."""
    kind = resumable(run)["model"]
    if kind != model:
        raise DscirError(f"{run} is a {kind} run, not {model}")
    ckpt = read_checkpoint(run)
    ckpt.check(model, config, store, predated)
    return ckpt


def is_run(path: str | Path) -> bool:
    """Whether ``path`` holds a dscir run (finished, resumable or several chains), not a
    corpus store."""
    path = Path(path)
    if not (path / "zarr.json").exists():
        return False
    attrs = integrity.open_group(path, "dscir store").attrs
    return ATTR in attrs or RESUMABLE in attrs or CHAINS in attrs


def append_chunks(row: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """Chunks of about 1 MiB of an array grown by rows shaped ``row``: whole rows,
    at least one; a row over 1 MiB is cut along its last axis too, so reading a
    block of columns of the kept samples (``dscir.api.kept_samples``) decodes no
    whole row."""
    row_bytes = itemsize * int(np.prod(row))
    if row_bytes <= 2**20:
        return (max(1, 2**20 // row_bytes),) + row
    return (1,) + row[:-1] + (max(1, 2**20 // (row_bytes // row[-1])),)


def read_arrays(run: str | Path, group: str) -> dict[str, np.ndarray]:
    """The arrays of one group of a run (e.g. ``"samples"``), by name; {} if absent."""
    g = integrity.open_group(run, "run")
    return group_arrays(integrity.member(g, group, "run")) if group in g else {}


def group_members(group: zarr.Group, name: str) -> list[tuple[str, zarr.Array]]:
    """The arrays below ``group[name]`` by their path ([] without that group)."""
    if name not in group:
        return []
    return list(integrity.walk_arrays(integrity.member(group, name, "run")))


class LazyArrays(Mapping):
    """Arrays of a run by name, each read (whole, checksums checked) when first
    asked for: opening a run reads none of its K x W arrays."""

    def __init__(self, arrays: dict[str, zarr.Array]):
        self.arrays, self.read = arrays, {}

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self.read:
            self.read[name] = integrity.read(self.arrays[name])
        return self.read[name]

    def __iter__(self):
        return iter(self.arrays)

    def __len__(self) -> int:
        return len(self.arrays)


@dataclass
class Run:
    """A finished run of any model read back from disk.

    ``state``, ``history``, ``evaluations`` are mappings of arrays; the model's
    summaries (``phi_mean``, ``weights``...) are in ``summaries`` and read as
    attributes (``run.phi_mean``); ``samples()`` reads the kept samples. The
    state and the summaries are read when first asked for (``LazyArrays``).
    """

    path: Path
    model: str
    metric: str  # the name of the held-out score in evaluations/
    config: dict[str, Any]
    store: str
    iteration: int
    n_samples: int
    vocabulary: np.ndarray
    params: dict[str, Any] | None  # the estimator's parameters (None: an older run)
    summaries: Mapping[str, np.ndarray]
    state: Mapping[str, np.ndarray]
    history: dict[str, np.ndarray]
    evaluations: dict[str, np.ndarray]

    @classmethod
    def open(cls, path: str | Path) -> Run:
        path = Path(path)
        g = _open(path)
        if CHAINS in g.attrs:  # several chains (dscir.runs.chains): chain 0 is the fit's
            return cls.open(chain_path(path, 0))
        if ATTR not in g.attrs:
            if RESUMABLE in g.attrs:
                raise DscirError(f"{path} is an unfinished run; continue it with `dscir fit ... "
                                 f"--resume {path}` (or fit(..., resume=...))")
            raise DscirError(f"{path} is not a dscir run (no {ATTR} attribute)")
        meta = dict(g.attrs[ATTR])
        _check_version(path, meta)
        groups = ("state", "history", "evaluations", "samples", "checkpoints")
        summaries = LazyArrays({name: arr for name, arr in g.arrays()
                                if name not in groups and name != "vocabulary"})
        state = LazyArrays({name: arr for name, arr in group_members(g, "state")})
        return cls(path=path, model=meta["model"], metric=meta.get("metric", "perplexity"),
                   config=meta["config"], store=meta["store"],
                   iteration=meta["iteration"], n_samples=meta["n_samples"],
                   vocabulary=integrity.read(integrity.member(g, "vocabulary", "run")),
                   params=meta.get("params"), summaries=summaries,
                   state=state, history=read_arrays(path, "history"),
                   evaluations=read_arrays(path, "evaluations"))

    def __getattr__(self, name: str) -> np.ndarray:
        summaries = self.__dict__.get("summaries", {})
        if name in summaries:
            return summaries[name]
        raise AttributeError(f"a {self.__dict__.get('model')} run has no {name!r}")

    def samples(self) -> dict[str, np.ndarray]:
        """The kept samples' arrays by name ({} if none were kept)."""
        return read_arrays(self.path, "samples")


def verify(path: str | Path) -> tuple[list[str], list[str]]:
    """Read every chunk of every array of the run (or checkpointed run) at
    ``path``. Returns (arrays found sound, problems as "array: what")."""
    path = Path(path)
    g = _open(path)
    if ATTR not in g.attrs and RESUMABLE not in g.attrs and CHAINS not in g.attrs:
        raise DscirError(f"{path} is not a dscir run (no {ATTR} attribute)")
    ok, problems = [], []
    try:
        arrays = list(integrity.walk_arrays(g))
    except Exception as exc:  # a member's zarr.json cannot be parsed
        return ok, [f"metadata: an array's or group's zarr.json under {path} is damaged "
                    f"({integrity._reason(exc)})"]
    for name, arr in arrays:
        found = integrity.check_array(arr)
        problems.extend(f"{name}: {p}" for p in found)
        if not found:
            ok.append(name)
    if ATTR in g.attrs and "vocabulary" not in g:
        problems.append("vocabulary: missing")
    return ok, problems
