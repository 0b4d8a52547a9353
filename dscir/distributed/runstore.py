"""A fitted run on disk: a Zarr v3 group with a versioned ``dscir_run`` attribute.

Layout::

    RUN/                      attrs["dscir_run"] = {format_version, model, config,
                              store, iteration, n_samples}
      vocabulary              str [W]
      phi_mean                float64 [K, W]  mean of the kept phi samples
      state/<field>           the sampler state's arrays (e.g. log_theta, r)
      samples/phi             float32 [S, K, W]  thinned posterior samples
      samples/iteration       int64 [S]
      history/<field>         per-iteration timings (IterationStats fields)
      evaluations/iteration   int64 [E]
      evaluations/perplexity  float64 [E]
      checkpoints/NNNNNNNNNNNN  the latest checkpoint (checkpointed runs), at
                                iteration N: attrs["dscir_checkpoint"] = {format_version,
                                config, store, iteration, epoch, offset, n_samples}
        state/<field>, phi_sum, history/<field>, evaluations/<field>

That is an LDA run; a DP-mixture run (``model: "dpmm"``) holds ``vocabulary``,
``weights``, ``components``, ``labels``, ``state/``, ``history/``,
``evaluations/`` and its kept samples stacked as ``samples/log_w`` [sum K],
``samples/log_phi`` [sum K, W] with ``samples/n_components``, ``alpha``,
``log_rest`` and ``iteration`` per sample. Checkpoints of either model are
named arrays plus a JSON attribute (``lda.Checkpoint``, ``dpmm.Checkpoint``).

A run is written into a hidden sibling directory and renamed into place when
complete, so an interrupted or failed fit leaves nothing at ``RUN``; an
existing run is replaced only with ``overwrite=True``.

A checkpointed run is written in place instead and marked
``attrs["dscir_resumable"] = {format_version, model, checkpoint_every}`` from
the start; ``dscir_run`` is set last, when it completes. A checkpoint is
written as a hidden group beside the others and renamed to its iteration's
name (a directory rename is atomic), and only then are older ones removed, so
a crash at any moment leaves the previous checkpoint intact. Samples are
appended as the chain keeps them; a resumed run cuts them back to the
checkpoint's ``n_samples``. Everything is arrays and JSON attributes: no pickle.
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

from dscir.errors import DscirError

class ChainCheckpoint(Protocol):
    """What a model's checkpoint gives the run store (``lda.Checkpoint``, ``dpmm.Checkpoint``)."""

    iteration: int

    def to_stored(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]: ...

    def sample_rows(self) -> dict[str, int]: ...


def flat(**groups: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Groups of arrays (a checkpoint's ``state``, ``history``...) as ``group/name`` arrays."""
    return {f"{g}/{k}": v for g, arrays in groups.items() for k, v in arrays.items()}


def nested(arrays: dict[str, np.ndarray], group: str) -> dict[str, np.ndarray]:
    """The arrays of one group of ``flat`` arrays, by their names in it."""
    return {k.split("/", 1)[1]: v for k, v in arrays.items() if k.startswith(group + "/")}


def absolute_store(store: str) -> str:
    """A local store path made absolute (so a run resumes from any directory); URLs as given."""
    return store if "://" in store else os.path.realpath(store)


def check_continues(saved_config: dict[str, Any], saved_store: str, config, store: str) -> None:
    """Raise unless a checkpoint of ``saved_config`` on ``saved_store`` continues a
    chain of ``config`` (a model's config with ``to_dict``) on ``store``."""
    mine = config.to_dict()
    differ = [k for k in mine if saved_config.get(k) != mine[k]]
    if differ:
        was = ", ".join(f"{k}={saved_config.get(k)!r}" for k in differ)
        now = ", ".join(f"{k}={mine[k]!r}" for k in differ)
        raise DscirError(f"the run was checkpointed with {was}, this fit has {now}; "
                         "resume with the run's settings")
    if absolute_store(saved_store) != absolute_store(store):
        raise DscirError(f"the run is a chain on {saved_store}, not on {store}")


FORMAT_VERSION = 1
ATTR = "dscir_run"
RESUMABLE = "dscir_resumable"
CHECKPOINT = "dscir_checkpoint"
_CHECKPOINT_NAME = re.compile(r"^\d{12}$")


class RunWriter:
    """Writes a run incrementally, then commits it.

    With ``checkpoint_every`` > 0 the run is written in place (an existing
    run is removed at once with ``overwrite``) and can be resumed
    (``RunWriter.resume``) from its latest ``checkpoint``; otherwise it is
    written into a temporary directory and renamed into place by ``commit``.
    """

    def __init__(self, path: str | Path, *, overwrite: bool = False, model: str = "lda",
                 checkpoint_every: int = 0):
        self.path = Path(path)
        if self.path.exists() and not overwrite:
            raise DscirError(f"{self.path} exists; pass overwrite=True (--overwrite) to replace it")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.overwrite = overwrite
        self.checkpoint_every = int(checkpoint_every)
        self._checkpointed = False
        if self.checkpoint_every > 0:
            if self.path.exists():
                shutil.rmtree(self.path)
            self.tmp = self.path
            self.group = zarr.open_group(str(self.path), mode="w")
            self.group.attrs[RESUMABLE] = {
                "format_version": FORMAT_VERSION, "model": model,
                "checkpoint_every": self.checkpoint_every,
            }
        else:
            self.tmp = self.path.parent / f".{self.path.name}.partial-{uuid.uuid4().hex[:8]}"
            self.group = zarr.open_group(str(self.tmp), mode="w")
        self._growing: dict[str, zarr.Array] = {}

    @classmethod
    def resume(cls, path: str | Path, ckpt: ChainCheckpoint, *, model: str = "lda",
               checkpoint_every: int | None = None) -> RunWriter:
        """Reopen a checkpointed run (finished or not) to continue it from
        ``ckpt``, its latest checkpoint (``read_checkpoint``).

        Samples kept after that checkpoint are dropped (the resumed chain keeps
        them again); ``checkpoint_every`` None keeps the run's own.
        """
        path = Path(path)
        meta = _resumable(path)
        if meta["model"] != model:
            raise DscirError(f"{path} is a {meta['model']} run, not {model}")
        self = cls.__new__(cls)
        self.path = self.tmp = path
        self.overwrite = False
        self._checkpointed = True
        self.checkpoint_every = int(
            meta["checkpoint_every"] if checkpoint_every is None else checkpoint_every
        )
        if self.checkpoint_every < 1:
            raise DscirError("a resumed run keeps checkpointing: checkpoint_every must be >= 1")
        self.group = zarr.open_group(str(path), mode="r+")
        self.group.attrs.pop(ATTR, None)  # unfinished again until it commits
        self.group.attrs[RESUMABLE] = dict(meta, checkpoint_every=self.checkpoint_every)
        self._growing = {}
        for name, rows in ckpt.sample_rows().items():
            if name in self.group:
                arr = self._growing[name] = self.group[name]
                arr.resize((rows,) + arr.shape[1:])
        return self

    def checkpoint(self, ckpt: ChainCheckpoint) -> Path:
        """Write ``ckpt`` atomically as the run's latest checkpoint."""
        if self.checkpoint_every <= 0:
            raise DscirError("this run was not started with checkpoint_every > 0")
        self._checkpointed = True
        return write_checkpoint(self.path, ckpt)

    def append(self, rows: dict[str, np.ndarray]) -> None:
        """Append rows to growing arrays of the run (created at the first call with
        chunks of about 1 MiB, at least one row)."""
        for name, value in rows.items():
            value = np.asarray(value)
            if name not in self._growing:
                if name in self.group:
                    self._growing[name] = self.group[name]
                else:
                    row_bytes = value.dtype.itemsize * int(np.prod(value.shape[1:]))
                    chunks = (max(1, 2**20 // row_bytes),) + value.shape[1:]
                    self._growing[name] = self.group.create_array(
                        name, shape=(0,) + value.shape[1:], chunks=chunks, dtype=value.dtype)
            self._growing[name].append(value)

    def add_sample(self, iteration: int, phi: np.ndarray) -> None:
        """An LDA posterior sample (phi, K x W, stored as float32)."""
        self.append({"samples/phi": phi.astype(np.float32)[None],
                     "samples/iteration": np.array([iteration], dtype=np.int64)})

    def commit(self, *, model: str, config: dict[str, Any], store: str, iteration: int,
               n_samples: int, arrays: dict[str, np.ndarray]) -> Path:
        """Write the final arrays and the ``dscir_run`` attribute; move the run into place."""
        g = self.group
        in_place = self.tmp == self.path
        for name, value in arrays.items():
            _put(g, name, value)
        g.attrs[ATTR] = {
            "format_version": FORMAT_VERSION,
            "model": model,
            "config": config,
            "store": store,
            "iteration": int(iteration),
            "n_samples": int(n_samples),
        }
        if in_place:
            return self.path
        if self.path.exists():
            shutil.rmtree(self.path)
        self.tmp.rename(self.path)
        return self.path

    def abort(self) -> None:
        """Remove what a failed fit wrote, except a run that a checkpoint can resume."""
        if not self._checkpointed:
            shutil.rmtree(self.tmp, ignore_errors=True)


def _put(group: zarr.Group, name: str, value: np.ndarray) -> None:
    value = np.asarray(value)
    dtype = str if value.dtype.kind == "U" else value.dtype
    arr = group.create_array(name, shape=value.shape, dtype=dtype, overwrite=True)
    if value.size:
        arr[...] = value


def _resumable(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise DscirError(f"no run at {path} to resume")
    try:
        meta = zarr.open_group(str(path), mode="r").attrs.get(RESUMABLE)
    except (FileNotFoundError, ValueError, zarr.errors.GroupNotFoundError) as exc:
        raise DscirError(f"{path} is not a dscir run ({exc})") from exc
    if meta is None:
        raise DscirError(
            f"{path} has no checkpoints to resume from (it was fitted without "
            "checkpoint_every / --checkpoint-every)"
        )
    if meta.get("format_version") != FORMAT_VERSION:
        raise DscirError(
            f"{path} has run format {meta.get('format_version')}, this dscir reads "
            f"{FORMAT_VERSION}"
        )
    return dict(meta)


def write_checkpoint(run: str | Path, ckpt: ChainCheckpoint) -> Path:
    """Write ``ckpt`` into ``run/checkpoints`` under a temporary name, rename it
    into place, then delete older checkpoints and leftovers of interrupted writes.
    A checkpoint of the same iteration already there is kept (the same chain)."""
    root = Path(run) / "checkpoints"
    if not root.exists():
        zarr.open_group(str(root), mode="w")
    name = f"{ckpt.iteration:012d}"
    final = root / name
    if final.exists():  # this iteration's chain is already saved (e.g. a run's last one)
        return final
    tmp = root / f".{name}.partial-{uuid.uuid4().hex[:8]}"
    g = zarr.open_group(str(tmp), mode="w")
    meta, arrays = ckpt.to_stored()
    for k, v in arrays.items():
        _put(g, k, v)
    g.attrs[CHECKPOINT] = {"format_version": FORMAT_VERSION, **meta}
    tmp.rename(final)
    for entry in os.listdir(root):
        if entry.startswith(".") or (_CHECKPOINT_NAME.match(entry) and entry < name):
            shutil.rmtree(root / entry, ignore_errors=True)
    return final


def read_checkpoint(run: str | Path) -> ChainCheckpoint:
    """The latest complete checkpoint of ``run`` (an ``lda`` or ``dpmm`` Checkpoint)."""
    model = _resumable(Path(run))["model"]
    root = Path(run) / "checkpoints"
    names = sorted(e for e in os.listdir(root) if _CHECKPOINT_NAME.match(e)) \
        if root.exists() else []
    if not names:
        raise DscirError(
            f"{run} has no complete checkpoint yet; start the fit again "
            "(--out with --overwrite, or overwrite=True)"
        )
    g = zarr.open_group(str(root / names[-1]), mode="r")
    meta = g.attrs[CHECKPOINT]
    if meta.get("format_version") != FORMAT_VERSION:
        raise DscirError(f"{root / names[-1]} has checkpoint format {meta.get('format_version')}")
    return _checkpoint_class(model).from_stored(dict(meta), _arrays(g))


def checkpoint_to_resume(run: str | Path, model: str, config, store: str) -> ChainCheckpoint:
    """The latest checkpoint of ``run``, checked to continue a ``model`` chain of
    ``config`` on ``store`` (one clear error otherwise)."""
    kind = _resumable(Path(run))["model"]
    if kind != model:
        raise DscirError(f"{run} is a {kind} run, not {model}")
    ckpt = read_checkpoint(run)
    ckpt.check(config, store)
    return ckpt


def read_arrays(run: str | Path, group: str) -> dict[str, np.ndarray]:
    """The arrays of one group of a run (e.g. ``"samples"``), by name; {} if absent."""
    g = zarr.open_group(str(run), mode="r")
    return _arrays(g[group]) if group in g else {}


def _checkpoint_class(model: str):
    from dscir.distributed import dpmm, lda

    classes = {"lda": lda.Checkpoint, "dpmm": dpmm.Checkpoint}
    if model not in classes:
        raise DscirError(f"no checkpoints for a {model!r} run")
    return classes[model]


def _arrays(group: zarr.Group, prefix: str = "") -> dict[str, np.ndarray]:
    """Every array below ``group`` by its path, groups walked in sorted order."""
    out = {}
    for name, member in sorted(group.members(), key=lambda m: m[0]):
        if isinstance(member, zarr.Array):
            out[prefix + name] = member[...]
        else:
            out.update(_arrays(member, prefix + name + "/"))
    return out


@dataclass
class Run:
    """An LDA run read back from disk."""

    path: Path
    model: str
    config: dict[str, Any]
    store: str
    iteration: int
    n_samples: int
    vocabulary: np.ndarray
    phi_mean: np.ndarray
    state: dict[str, np.ndarray]
    history: dict[str, np.ndarray]
    evaluations: dict[str, np.ndarray]

    @classmethod
    def open(cls, path: str | Path) -> Run:
        path = Path(path)
        if not path.exists():
            raise DscirError(f"no run at {path}")
        try:
            g = zarr.open_group(str(path), mode="r")
            if ATTR not in g.attrs and RESUMABLE in g.attrs:
                raise DscirError(
                    f"{path} is an unfinished run; continue it with `dscir fit ... --resume "
                    f"{path}` (or fit(..., resume=...))"
                )
            meta = dict(g.attrs[ATTR])
        except (FileNotFoundError, KeyError, ValueError) as exc:
            raise DscirError(f"{path} is not a dscir run ({exc})") from exc
        if meta.get("format_version") != FORMAT_VERSION:
            raise DscirError(
                f"{path} has run format {meta.get('format_version')}, this dscir reads "
                f"{FORMAT_VERSION}"
            )
        if meta.get("model") != "lda":
            raise DscirError(f"{path} is a {meta.get('model')} run, not an LDA run")

        def arrays(name: str) -> dict[str, np.ndarray]:
            if name not in g:
                return {}
            return {k: v[...] for k, v in g[name].arrays()}

        return cls(
            path=path,
            model=meta["model"],
            config=meta["config"],
            store=meta["store"],
            iteration=meta["iteration"],
            n_samples=meta["n_samples"],
            vocabulary=g["vocabulary"][...],
            phi_mean=g["phi_mean"][...],
            state=arrays("state"),
            history=arrays("history"),
            evaluations=arrays("evaluations"),
        )

    def samples(self) -> tuple[np.ndarray, np.ndarray]:
        """(iterations, phi samples) of the stored thinned chain."""
        g = zarr.open_group(str(self.path), mode="r")
        if "samples" not in g:
            return np.zeros(0, dtype=np.int64), np.zeros((0,) + self.phi_mean.shape, np.float32)
        return g["samples/iteration"][...], g["samples/phi"][...]
