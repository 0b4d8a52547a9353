"""Digests of arrays and of run stores, for pinning chains bit for bit."""

from __future__ import annotations

import hashlib

import numpy as np
import zarr

TIMINGS = {"wall", "compute", "compute_sum", "transfer", "queue", "update"}



def digest(arrays: dict[str, np.ndarray]) -> str:
    """sha256 over sorted names, dtypes, shapes and bytes (first 16 hex digits)."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        if a.dtype.kind == "U":
            a = np.array([s.encode() for s in a.ravel()])
        h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def run_digest(path) -> str:
    """Digest of a run store: every array except timings, checkpoints and the
    local state's store (``local/``: where a warm chain's flushes are kept for
    resuming, a storage layout that tests/engine/test_local_state.py pins)."""
    g = zarr.open_group(str(path), mode="r")
    arrays = {}

    def walk(group, prefix):
        for name, member in group.members():
            full = prefix + name
            if full.startswith(("checkpoints", "local")) \
                    or name in TIMINGS and prefix == "history/":
                continue
            if isinstance(member, zarr.Array):
                arrays[full] = member[...]
            else:
                walk(member, full + "/")

    walk(g, "")
    return digest(arrays)
