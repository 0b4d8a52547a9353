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

A run is written into a hidden sibling directory and renamed into place when
complete, so an interrupted or failed fit leaves nothing at ``RUN``; an
existing run is replaced only with ``overwrite=True``.
"""

from __future__ import annotations

import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import zarr

from dscir.errors import DscirError

FORMAT_VERSION = 1
ATTR = "dscir_run"


class RunWriter:
    """Writes a run incrementally into a temporary directory, then commits it."""

    def __init__(self, path: str | Path, *, overwrite: bool = False):
        self.path = Path(path)
        if self.path.exists() and not overwrite:
            raise DscirError(f"{self.path} exists; pass overwrite=True (--overwrite) to replace it")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = self.path.parent / f".{self.path.name}.partial-{uuid.uuid4().hex[:8]}"
        self.overwrite = overwrite
        self.group = zarr.open_group(str(self.tmp), mode="w")
        self._samples: zarr.Array | None = None
        self._sample_its: zarr.Array | None = None

    def add_sample(self, iteration: int, phi: np.ndarray) -> None:
        if self._samples is None:
            k, w = phi.shape
            self._samples = self.group.create_array(
                "samples/phi", shape=(0, k, w), chunks=(1, k, w), dtype="float32"
            )
            self._sample_its = self.group.create_array(
                "samples/iteration", shape=(0,), chunks=(1024,), dtype="int64"
            )
        self._samples.append(phi.astype(np.float32)[None])
        self._sample_its.append(np.array([iteration], dtype=np.int64))

    def commit(
        self,
        *,
        model: str,
        config: dict[str, Any],
        store: str,
        iteration: int,
        n_samples: int,
        vocabulary: np.ndarray,
        phi_mean: np.ndarray,
        state: dict[str, np.ndarray],
        history: dict[str, np.ndarray],
        evaluations: dict[str, np.ndarray],
    ) -> Path:
        g = self.group
        _put(g, "vocabulary", np.array([str(v) for v in vocabulary]))
        _put(g, "phi_mean", phi_mean)
        for name, value in state.items():
            _put(g, f"state/{name}", np.asarray(value))
        for name, value in history.items():
            _put(g, f"history/{name}", np.asarray(value))
        for name, value in evaluations.items():
            _put(g, f"evaluations/{name}", np.asarray(value))
        g.attrs[ATTR] = {
            "format_version": FORMAT_VERSION,
            "model": model,
            "config": config,
            "store": store,
            "iteration": int(iteration),
            "n_samples": int(n_samples),
        }
        if self.path.exists():
            shutil.rmtree(self.path)
        self.tmp.rename(self.path)
        return self.path

    def abort(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)


def _put(group: zarr.Group, name: str, value: np.ndarray) -> None:
    value = np.asarray(value)
    dtype = str if value.dtype.kind == "U" else value.dtype
    arr = group.create_array(name, shape=value.shape, dtype=dtype)
    if value.size:
        arr[...] = value


@dataclass
class Run:
    """A run read back from disk."""

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
            meta = dict(g.attrs[ATTR])
        except (FileNotFoundError, KeyError, ValueError) as exc:
            raise DscirError(f"{path} is not a dscir run ({exc})") from exc
        if meta.get("format_version") != FORMAT_VERSION:
            raise DscirError(
                f"{path} has run format {meta.get('format_version')}, this dscir reads "
                f"{FORMAT_VERSION}"
            )

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
