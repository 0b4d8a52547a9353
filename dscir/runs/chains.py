"""Several chains of one model in one run directory.

Layout::

    RUN/                 attrs["dscir_chains"] = {format_version, model, n_chains, seed,
                                                  seeds}
      chains/0 ... chains/<n-1>   each a complete run (``dscir.runs.store``)

Each chain is an ordinary run, so everything that reads a run reads a chain,
and ``Run.open(RUN)`` opens chain 0 (the chain of the fit's own seed, equal to
a single-chain fit of it). One directory rather than a list of runs: the
chains are one fit, moved, verified and removed together, and ``dscir
diagnose RUN`` needs nothing but RUN. Like a single run, the whole directory
is written into a hidden sibling and renamed into place when every chain has
finished, so a failed fit leaves nothing at RUN.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import Any

import zarr

from dscir import integrity
from dscir.errors import DscirError
from dscir.runs.store import CHAINS as ATTR
from dscir.runs.store import FORMAT_VERSION, Run, RunWriter, chain_path, check_out_path

__all__ = ["ATTR", "ChainsWriter", "chain_path", "chains_meta", "open_chains"]


class ChainsWriter:
    """Writes ``n_chains`` runs side by side, then commits them as one directory."""

    def __init__(self, path: str | Path, *, model: str, n_chains: int, overwrite: bool = False):
        self.path = Path(path)
        check_out_path(self.path, overwrite)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = self.path.parent / f".{self.path.name}.partial-{uuid.uuid4().hex[:8]}"
        zarr.open_group(str(self.tmp), mode="w").create_group("chains")
        self.model = model
        self.writers = [RunWriter(chain_path(self.tmp, c), model=model)
                        for c in range(n_chains)]

    def commit(self, seed: int, seeds: list[int]) -> Path:
        """Mark the directory as a multi-chain run and move it into place (every
        chain's writer must have committed)."""
        g = zarr.open_group(str(self.tmp), mode="r+")
        g.attrs[ATTR] = {"format_version": FORMAT_VERSION, "model": self.model,
                         "n_chains": len(self.writers), "seed": int(seed),
                         "seeds": [int(s) for s in seeds]}
        if self.path.exists():
            shutil.rmtree(self.path)
        self.tmp.rename(self.path)
        return self.path

    def abort(self) -> None:
        integrity.remove_unfinished(self.tmp)


def chains_meta(path: str | Path) -> dict[str, Any] | None:
    """The ``dscir_chains`` attribute of a multi-chain run; None for any other path."""
    path = Path(path)
    if not (path / "zarr.json").exists():
        return None
    meta = integrity.open_group(path, "run").attrs.get(ATTR)
    return None if meta is None else dict(meta)


def open_chains(path: str | Path) -> list[Run]:
    """Every chain of a run: the chains of a multi-chain run, or the run itself."""
    meta = chains_meta(path)
    if meta is None:
        return [Run.open(path)]
    if meta.get("format_version") != FORMAT_VERSION:
        raise DscirError(f"{path} has run format {meta.get('format_version')}, this dscir "
                         f"reads {FORMAT_VERSION}")
    return [Run.open(chain_path(path, c)) for c in range(int(meta["n_chains"]))]
