"""Worker memory (issue 36): each worker's resident memory per topic-word entry,
with the topics on the workers, and its projection to K = 1,000 x W = 10^6.

Each cell (K, W) runs in its own process against a new 2-worker embedded
LocalCluster (``dscir.engine.cluster.dask_client``, as ``LDA.fit(n_workers=2)``
starts): ``LDA.fit`` (SCIR, dense step, ``placement="workers"``, every
iteration kept: burn_in 0, thin 1, so the kept-sample sums are resident as in
a long run), then ``top_words(10)``, ``transform`` of ``--transform-docs``
documents and ``score`` on the same cluster. Per phase, each worker's peak
resident set (VmHWM, reset on the worker's pid before the phase); during the
fit, polled every 0.2 s, the largest number of bytes Dask holds on a worker
(``sizeof`` of its keys in memory) and the most topic blocks (keys named
``block``) a worker holds at once. Per cell also the peak of the pure block
functions (``block_accounting``: tracemalloc of one K x width block's start,
step, keep and outputs, in words of 8 bytes per entry of the block).

The projection: a least-squares line of the largest per-worker peak over all
phases against the entries each worker holds (K x W / workers), evaluated at
K x W = 10^9 over 2 workers; its slope in bytes per entry / 8 is the words
each entry costs a worker, its intercept the fixed overhead. ``--label``
names the code measured (e.g. "before", "after"); the results of other labels
already in the output file are kept.

    nice -n 10 python benchmarks/worker_memory.py --label after [--words 20000 50000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, cpu_model  # noqa: E402
from scale import make_corpus  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "worker_memory.json"
TARGET_ENTRIES = 1000 * 10**6  # K = 1,000 x W = 10^6
TARGET_WORKERS = 2


def worker_hwm_mb(pid: int) -> float:
    """A process's peak resident set since its last reset (VmHWM), MB."""
    with open(f"/proc/{pid}/status") as f:
        return next(int(x.split()[1]) for x in f if x.startswith("VmHWM")) / 1024


def reset_hwm(pid: int) -> None:
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")


def held(dask_worker) -> tuple[int, int]:
    """(bytes Dask holds on this worker, topic blocks among its keys)."""
    from dask.sizeof import sizeof

    data = dask_worker.data
    keys = list(data.keys())
    n_bytes = sum(sizeof(data[k]) for k in keys if k in data)
    return n_bytes, sum("block" in str(k[0] if isinstance(k, tuple) else k) for k in keys)


class HeldPoller:
    """Polls every worker's ``held`` figures from a thread; keeps their maxima."""

    def __init__(self, client, every: float = 0.2):
        self.client, self.every = client, every
        self.peak: dict[str, list[int]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                for addr, (b, n) in self.client.run(held).items():
                    old = self.peak.get(addr, [0, 0])
                    self.peak[addr] = [max(old[0], b), max(old[1], n)]
            except Exception:  # the cluster closing under the poll
                return
            self._stop.wait(self.every)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def estimator(k: int, args):
    from dscir.api import LDA

    return LDA(n_topics=k, sampler="scir", sweeps=args.sweeps, batch_size=args.batch,
               n_iter=args.iterations, burn_in=0, thin=1, seed=0, placement="workers",
               scir_step="dense", policy="reference", progress=False)


def run_cell(store: str, k: int, w: int, args) -> dict:
    """One cell in this process: each worker's peak per phase (MB)."""
    from dscir.corpus import Corpus
    from dscir.engine.cluster import dask_client
    from dscir.models.column_blocks import block_bounds
    from dscir.models.lda.config import BLOCK_ENTRIES

    est = estimator(k, args)
    docs = Corpus.open(store).read(np.arange(args.transform_docs))
    calls = {"fit": lambda c: est.fit(store, client=c),
             "top_words": lambda c: est.top_words(10),
             "transform": lambda c: est.transform(docs, client=c),
             "score": lambda c: est.score(client=c)}
    out: dict = {"phases": {}}
    with dask_client(n_workers=args.workers, dashboard_address=None) as client:
        pids = client.run(os.getpid)
        out["start_rss_mb"] = {a: worker_hwm_mb(p) for a, p in pids.items()}
        for name, call in calls.items():
            for p in pids.values():
                reset_hwm(p)
            start = time.time()
            with HeldPoller(client) as poll:
                call(client)
            out["phases"][name] = {"s": time.time() - start,
                                   "worker_peak_rss_mb": {a: worker_hwm_mb(p)
                                                          for a, p in pids.items()}}
            if name == "fit":
                out["phases"][name]["dask_held_peak_mb"] = {
                    a: v[0] / 2**20 for a, v in poll.peak.items()}
                out["phases"][name]["blocks_held_peak"] = {a: v[1] for a, v in poll.peak.items()}
    out["worker_peak_rss_mb"] = max(max(p["worker_peak_rss_mb"].values())
                                    for p in out["phases"].values())
    out["n_blocks"] = int(block_bounds(k, w, BLOCK_ENTRIES).size - 1)
    return out


def traced_words(fn, *args, entries: int) -> tuple[float, object]:
    """``fn(*args)`` and its peak of new traced bytes (beside what its arguments
    already hold) in words of 8 bytes per entry."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    value = fn(*args)
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return peak / 8 / entries, value


def block_accounting(k: int, width: int, seed: int = 0) -> dict:
    """Peak new memory of the pure block functions on one K x ``width`` block, in
    words per entry: start, a step with counts on every tenth column, a keep,
    the fitted mean's output (what a worker computes per block)."""
    import functools

    from dscir.models.lda import vocabulary_blocks as vb
    from dscir.models.lda.tasks import SparseCounts
    from dscir.samplers import get_sampler

    sampler, n = get_sampler("scir"), k * width
    init = functools.partial(vb.init_block, seed, k, sampler)
    out = {}
    out["start"], block = traced_words(vb.start_block, 0, 0, width, init, entries=n)
    rng = np.random.default_rng(seed)
    words = np.arange(0, width, 10, dtype=np.int32)
    topics = rng.integers(0, k, words.size).astype(np.int32)
    counts = SparseCounts(words, topics, np.ones(words.size, np.int64), 1, int(words.size))
    step = (sampler, 0.5, 1.0, 0.5, seed, 1, None, (counts, None))
    out["step"], block = traced_words(vb.step_block, block, *step, entries=n)
    norm = vb.combine([block.lse])
    out["keep"], block = traced_words(vb.keep_block, block, norm, entries=n)
    out["phi_mean"], _ = traced_words(vb.block_output, block, "phi_mean", 1, norm, entries=n)
    return out


def fit_line(cells: list[dict], workers: int) -> dict:
    """Per-worker peak = intercept + slope x entries per worker, least squares;
    evaluated at the target size."""
    x = np.array([c["topics"] * c["words"] / workers for c in cells], float)
    y = np.array([c["worker_peak_rss_mb"] for c in cells], float) * 2**20
    slope, intercept = np.polyfit(x, y, 1)
    target = TARGET_ENTRIES / TARGET_WORKERS
    return {"bytes_per_entry": slope, "words_per_entry": slope / 8,
            "fixed_mb": intercept / 2**20,
            "projected_worker_peak_gb_at_1e9_over_2": (intercept + slope * target) / 1e9}


def cell_main(argv: list[str]) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("store")
    for name in ("topics", "words", "workers", "batch", "sweeps", "iterations",
                 "transform_docs"):
        p.add_argument(f"--{name.replace('_', '-')}", type=int, required=True)
    a = p.parse_args(argv)
    out = run_cell(a.store, a.topics, a.words, a)
    print("RESULT " + json.dumps(out))


def one_cell(store: Path, k: int, w: int, args) -> dict:
    cmd = [sys.executable, __file__, "--cell", str(store), f"--topics={k}", f"--words={w}",
           f"--workers={args.workers}", f"--batch={args.batch}", f"--sweeps={args.sweeps}",
           f"--iterations={args.iterations}", f"--transform-docs={args.transform_docs}"]
    cell = {"topics": k, "words": w, "workers": args.workers, "load_before": os.getloadavg()}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    if proc.returncode or not lines:
        raise RuntimeError(f"cell K={k} W={w} failed: {proc.stderr[-2000:]}")
    cell.update(json.loads(lines[-1][7:]))
    cell["block_words_per_entry"] = block_accounting(k, args.block_width)
    cell["load_after"] = os.getloadavg()
    return cell


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--cell":
        return cell_main(sys.argv[2:])
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--label", required=True, help="the code measured, e.g. before / after")
    p.add_argument("--topics", type=int, default=1000)
    p.add_argument("--words", type=int, nargs="+", default=[20_000, 50_000])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--docs", type=int, default=2000)
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--sweeps", type=int, default=10)
    p.add_argument("--iterations", type=int, default=3)
    p.add_argument("--transform-docs", type=int, default=1000)
    p.add_argument("--block-width", type=int, default=4194, help="of block_accounting")
    p.add_argument("--timeout", type=float, default=1800.0)
    p.add_argument("--out", default=str(OUT))
    args = p.parse_args()
    cells = []
    with tempfile.TemporaryDirectory() as tmp:
        for w in args.words:
            store = Path(tmp) / f"zipf-{w}.zarr"
            make_corpus(store, args.docs, w)
            cells.append(one_cell(store, args.topics, w, args))
            print(json.dumps(cells[-1]), flush=True)
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    path = Path(args.out)
    result = json.loads(path.read_text()) if path.exists() else {}
    result.setdefault("runs", {})[args.label] = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]), "commit": commit,
        "cpu": cpu_model(), "n_cpus": os.cpu_count(),
        "note": "shared machine, contended (see each cell's load): seconds are not "
                "comparable; the memory figures are the workers' own",
        "cells": cells, "projection": fit_line(cells, args.workers)}
    path.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
