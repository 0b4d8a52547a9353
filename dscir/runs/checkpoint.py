"""Checkpoints: a whole chain at one iteration as named arrays plus JSON (no pickle).

A checkpoint is model-agnostic: the engine's counters (iteration, minibatch
position, kept samples), the history and scores, and the model's own
``state()`` (arrays and JSON values). It lives in ``RUN/checkpoints/NNNNNNNNNNNN``
(the iteration), written under a hidden name and renamed into place (a
directory rename is atomic), and only then are older ones removed, so a crash
at any moment leaves the previous checkpoint intact.

A model whose parameters live on the workers gives its K x W arrays as a
``HeldState``: its holders write them into the checkpoint under the hidden
name, in parallel, before the rename (so they land with the rest, as a set), and
they are read back as ``HeldArray`` parts, each holder its own columns.
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import zarr

from dscir import integrity
from dscir.errors import DscirError

FORMAT_VERSION = 2  # 1: one checkpoint class per model (dscir 0.1)
ATTR = "dscir_checkpoint"
_NAME = re.compile(r"^\d{12}$")


def flat(**groups: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Groups of arrays as ``group/name`` arrays."""
    return {f"{g}/{k}": v for g, arrays in groups.items() for k, v in arrays.items()}


def nested(arrays: dict[str, np.ndarray], group: str) -> dict[str, np.ndarray]:
    """The arrays of one group of ``flat`` arrays, by their names in it."""
    return {k.split("/", 1)[1]: v for k, v in arrays.items() if k.startswith(group + "/")}


def absolute_store(store: str) -> str:
    """A local store path made absolute (so a run resumes from any directory); URLs as given."""
    return store if "://" in store else os.path.realpath(store)


class HeldState(Protocol):
    """A model's checkpoint arrays written by whoever holds them (not the driver)."""

    names: list[str]  # the arrays, by their names in the model's state

    def write(self, group: str) -> None:
        """Write ``state/<name>`` for every name into the Zarr group at ``group``."""

    def restart(self, arrays: dict[str, HeldArray]) -> None:
        """Continue from the written arrays (once the checkpoint is in place)."""


@dataclass(frozen=True)
class HeldArray:
    """An array of a checkpoint left on disk for whoever holds its parts to read:
    ``x[rows, cols]`` narrows it (nothing is read), ``np.asarray(x)`` reads that
    part, checksums verified."""

    path: str
    shape: tuple[int, ...]
    selection: tuple = ()

    def __getitem__(self, key) -> HeldArray:
        if self.selection:
            raise TypeError("a HeldArray part cannot be narrowed again")
        key = key if isinstance(key, tuple) else (key,)
        return HeldArray(self.path, np.broadcast_to(0, self.shape)[key].shape, key)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        array = integrity.read(zarr.open_array(self.path, mode="r"), self.selection or ...)
        return array if dtype is None else array.astype(dtype)


def held_arrays(path: str | Path, names: list[str]) -> dict[str, HeldArray]:
    """The ``HeldArray`` of each held ``state/<name>`` of the checkpoint at ``path``."""
    return {n: HeldArray(str(Path(path) / "state" / n),
                         tuple(zarr.open_array(str(Path(path) / "state" / n), mode="r").shape))
            for n in names}


@dataclass
class Checkpoint:
    """One chain at one iteration."""

    model: str
    config: dict[str, Any]
    store: str
    iteration: int
    position: tuple[int, int]  # (epoch, offset) of the minibatch order
    n_samples: int
    sample_rows: dict[str, int]  # rows of the run's samples/ arrays up to here
    arrays: dict[str, np.ndarray]  # the model's state arrays
    values: dict[str, Any]  # the model's JSON values
    history: dict[str, np.ndarray]
    evaluations: dict[str, np.ndarray]
    held: HeldState | None = None  # arrays written by their holders, not in ``arrays``

    def to_stored(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        epoch, offset = self.position
        meta = {"model": self.model, "config": self.config, "store": self.store,
                "iteration": int(self.iteration), "epoch": int(epoch), "offset": int(offset),
                "n_samples": int(self.n_samples), "sample_rows": self.sample_rows,
                "values": self.values, "held": list(self.held.names) if self.held else []}
        return meta, flat(state=self.arrays, history=self.history,
                          evaluations=self.evaluations)

    @classmethod
    def from_stored(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> Checkpoint:
        return cls(model=meta["model"], config=dict(meta["config"]), store=meta["store"],
                   iteration=int(meta["iteration"]),
                   position=(int(meta["epoch"]), int(meta["offset"])),
                   n_samples=int(meta["n_samples"]), sample_rows=dict(meta["sample_rows"]),
                   arrays=nested(arrays, "state"), values=dict(meta["values"]),
                   history=nested(arrays, "history"),
                   evaluations=nested(arrays, "evaluations"))

    def check(self, model: str, config: dict[str, Any], store: str,
              predated: dict[str, Any] | None = None) -> None:
        """Raise unless this checkpoint continues a ``model`` chain of ``config`` on
        ``store``. A setting the checkpoint predates (absent from it) counts at its
        ``predated`` value, the one chains had before the setting existed."""
        if self.model != model:
            raise DscirError(f"the checkpoint is of a {self.model} chain, not {model}")
        then = {**(predated or {}), **self.config}
        differ = [k for k in config if then.get(k) != config[k]]
        if differ:
            was = ", ".join(f"{k}={then.get(k)!r}" for k in differ)
            now = ", ".join(f"{k}={config[k]!r}" for k in differ)
            raise DscirError(f"the run was checkpointed with {was}, this fit has {now}; "
                             "resume with the run's settings")
        if absolute_store(self.store) != absolute_store(store):
            raise DscirError(f"the run is a chain on {self.store}, not on {store}")


def put(group: zarr.Group, name: str, value: np.ndarray) -> None:
    """Write one array (strings as Zarr strings)."""
    value = np.asarray(value)
    dtype = str if value.dtype.kind == "U" else value.dtype
    arr = group.create_array(name, shape=value.shape, dtype=dtype, overwrite=True,
                             **integrity.array_options())
    if value.size:
        arr[...] = value


def group_arrays(group: zarr.Group, prefix: str = "",
                 skip: frozenset[str] = frozenset()) -> dict[str, np.ndarray]:
    """Every array below ``group`` by its path (except those in ``skip``), groups
    walked in sorted order."""
    out = {}
    for name, member in sorted(group.members(), key=lambda m: m[0]):
        if prefix + name in skip:
            continue
        if isinstance(member, zarr.Array):
            out[prefix + name] = integrity.read(member)
        else:
            out.update(group_arrays(member, prefix + name + "/", skip))
    return out


def write_checkpoint(run: str | Path, ckpt: Checkpoint) -> Path:
    """Write ``ckpt`` into ``run/checkpoints`` under a temporary name, rename it
    into place, then delete older checkpoints and leftovers of interrupted writes.
    A checkpoint of the same iteration already there is kept (the same chain).
    Held arrays (``ckpt.held``) are written by their holders before the rename,
    and the holders restart from the checkpoint before older ones are removed."""
    root = Path(run) / "checkpoints"
    if not root.exists():
        zarr.open_group(str(root), mode="w")
    name = f"{ckpt.iteration:012d}"
    final = root / name
    if not final.exists():
        tmp = root / f".{name}.partial-{uuid.uuid4().hex[:8]}"
        try:
            g = zarr.open_group(str(tmp), mode="w")
            meta, arrays = ckpt.to_stored()
            for k, v in arrays.items():
                put(g, k, v)
            if ckpt.held is not None:
                ckpt.held.write(str(tmp))
            g.attrs[ATTR] = {"format_version": FORMAT_VERSION, **meta}
            tmp.rename(final)
        except (KeyboardInterrupt, SystemExit):  # Ctrl-C, SIGTERM: the run stays verifiable
            integrity.remove_unfinished(tmp)
            raise
    if ckpt.held is not None:
        ckpt.held.restart(held_arrays(final, ckpt.held.names))
    for entry in os.listdir(root):
        if entry.startswith(".") or (_NAME.match(entry) and entry < name):
            shutil.rmtree(root / entry, ignore_errors=True)
    return final


def latest_checkpoint(run: str | Path) -> Path | None:
    """The directory of the latest complete checkpoint of ``run`` (None: none yet)."""
    root = Path(run) / "checkpoints"
    names = sorted(e for e in os.listdir(root) if _NAME.match(e)) if root.is_dir() else []
    return root / names[-1] if names else None


def checkpoint_meta(path: Path) -> dict[str, Any]:
    """The JSON part of the checkpoint at ``path`` (iteration, configuration, ...):
    no array is read."""
    meta = dict(integrity.open_group(path, "checkpoint").attrs[ATTR])
    if meta.get("format_version") != FORMAT_VERSION:
        raise DscirError(f"{path} has checkpoint format "
                         f"{meta.get('format_version')}, this dscir reads {FORMAT_VERSION}")
    return meta


def started_with(run: str | Path, name: str) -> Any:
    """Setting ``name`` of the configuration of ``run``'s latest checkpoint (None: no
    checkpoint, or no such setting)."""
    path = latest_checkpoint(run) if Path(run).is_dir() else None
    return None if path is None else checkpoint_meta(path)["config"].get(name)


def read_checkpoint(run: str | Path) -> Checkpoint:
    """The latest complete checkpoint of ``run``."""
    path = latest_checkpoint(run)
    if path is None:
        raise DscirError(f"{run} has no complete checkpoint yet; start the fit again "
                         "(--out with --overwrite, or overwrite=True)")
    meta = checkpoint_meta(path)
    held = list(meta.get("held", []))
    g = integrity.open_group(path, "checkpoint")
    arrays = group_arrays(g, skip=frozenset(f"state/{n}" for n in held))
    arrays.update({f"state/{k}": v for k, v in held_arrays(path, held).items()})
    return Checkpoint.from_stored(meta, arrays)
