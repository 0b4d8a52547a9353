"""Comparing runs bit for bit, and reading checkpoints outside a run."""

from __future__ import annotations

import numpy as np
import zarr

from dscir.engine.chain import Chain
from dscir.runs import Run, read_arrays, read_checkpoint, store as runstore

def interrupt_after(monkeypatch, n: int) -> None:
    """Make the n+1-th chain step raise ``KeyboardInterrupt``, as a crash would."""
    steps = {"n": 0}
    real = Chain.step

    def step(self, prefetch=True):
        steps["n"] += 1
        if steps["n"] > n:
            raise KeyboardInterrupt
        return real(self, prefetch)

    monkeypatch.setattr(Chain, "step", step)


class Interrupt(Exception):
    pass


def assert_same_run(a: Run, b: Run, evaluations: bool = True) -> None:
    assert a.iteration == b.iteration and a.n_samples == b.n_samples
    assert a.config == b.config
    for name in a.state:
        assert np.array_equal(a.state[name], b.state[name]), name
    assert np.array_equal(a.phi_mean, b.phi_mean)
    sa, sb = a.samples(), b.samples()
    assert sorted(sa) == sorted(sb)
    for name in sa:
        assert np.array_equal(sa[name], sb[name]), name
    assert np.array_equal(a.history["iteration"], b.history["iteration"])
    if evaluations:
        assert np.array_equal(a.evaluations["iteration"], b.evaluations["iteration"])
        assert np.array_equal(a.evaluations["perplexity"], b.evaluations["perplexity"])


def read_checkpoint_dir(path):
    """read_checkpoint on a bare directory holding checkpoints (no run around them)."""
    import zarr

    zarr.open_group(str(path), mode="a").attrs[runstore.RESUMABLE] = {
        "format_version": runstore.FORMAT_VERSION, "model": "lda", "checkpoint_every": 1}
    return read_checkpoint(path)


TIMINGS = {f"history/{f}" for f in
           ("wall", "compute", "compute_sum", "transfer", "queue", "update")}


def run_arrays(path) -> dict[str, np.ndarray]:
    g = zarr.open_group(str(path), mode="r")
    out = {}
    for group in ("state", "samples", "evaluations", "history"):
        out.update({f"{group}/{k}": v for k, v in read_arrays(path, group).items()})
    for name in ("weights", "components", "labels"):
        out[name] = g[name][...]
    return out


def assert_same_stored_run(a, b) -> None:
    a, b = run_arrays(a), run_arrays(b)
    assert sorted(a) == sorted(b)
    for name in a:
        if name not in TIMINGS:  # timings differ, everything else is the chain
            np.testing.assert_array_equal(a[name], b[name], err_msg=name)
